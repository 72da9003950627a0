"""Images reach the models that take them (litellm's `supports_vision`, or `vision = true|false`
on an alias); others read a note in each image's place and nothing is sent. Requests checked on
the loopback server, with a real PNG read by ReadMediaFile."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from kode_tui.config import Config, resolve_model
from kode_tui.message import FunctionBody, ImageURLPart, Message, TextPart, ToolCall
from kode_tui.soul.llm.demo import DemoProvider
from kode_tui.soul.llm.litellm_provider import LiteLLMProvider
from kode_tui.soul.llm.messages import IMAGE_NOT_SENT, TOOL_IMAGES_NOTE
from kode_tui.soul.llm.openai_route import OpenAIProvider
from kode_tui.soul.vision import supports_images, takes_images
from kode_tui.tools.base import ToolEnv, ToolError
from kode_tui.tools.media import ReadMediaFile, ReadMediaFileParams
from kode_tui.tools.toolset import tool_message
from tests.llm_server import LLMServer
from tests.soul.conftest import KEY_ENV


async def history_with_images(work: Path) -> list[Message]:
    """A prompt with an image, then a ReadMediaFile call and its result, then a question."""
    Image.new("RGB", (8, 8), "red").save(work / "a.png")
    Image.new("RGB", (8, 8), "blue").save(work / "b.png")
    env = ToolEnv(work_dir=work)
    read = await ReadMediaFile().run(ReadMediaFileParams(path="b.png"), env, "c1")
    prompt = await ReadMediaFile().run(ReadMediaFileParams(path="a.png"), env, "x")
    image = next(p for p in prompt.parts if isinstance(p, ImageURLPart))
    call = ToolCall(id="c1", function=FunctionBody(name="ReadMediaFile", arguments="{}"))
    return [
        Message(role="user", content=[TextPart(text="Compare a.png "), image]),
        Message(role="assistant", content="Reading b.png.", tool_calls=[call]),
        tool_message("c1", read),
        Message(role="user", content="Which is red?"),
    ]


def image_urls(value: Any) -> list[str]:
    text = json.dumps(value)
    return [part for part in text.split('"') if part.startswith("data:image/")]


@pytest.mark.parametrize("provider_class", [LiteLLMProvider, OpenAIProvider])
async def test_a_model_that_takes_images_gets_the_prompts_and_the_tool_results_images(
    tmp_path: Path, server: LLMServer, provider_class: type[LiteLLMProvider]
) -> None:
    history = await history_with_images(tmp_path)
    provider = provider_class("openai/test-model", api_base=server.url, api_key_env=KEY_ENV)
    server.reply_text("ok")
    _ = [item async for item in provider.stream("sys", history, [])]
    messages = server.requests[0]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "user", "user"]
    prompt_url = history[0].parts[1]
    assert isinstance(prompt_url, ImageURLPart)
    assert messages[1]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": prompt_url.image_url.url},
    }
    # OpenAI takes only text in a tool message: the image follows the results.
    assert isinstance(messages[3]["content"], str)
    assert messages[3]["content"].endswith(f'<image path="{tmp_path / "b.png"}"></image>')
    tool_image = history[2].parts[2]
    assert isinstance(tool_image, ImageURLPart)
    assert messages[4]["content"] == [
        {"type": "text", "text": TOOL_IMAGES_NOTE},
        {"type": "image_url", "image_url": {"url": tool_image.image_url.url}},
    ]
    assert messages[5] == {"role": "user", "content": "Which is red?"}


async def test_a_model_that_takes_no_images_is_sent_none_and_reads_a_note_in_their_place(
    tmp_path: Path, server: LLMServer
) -> None:
    history = await history_with_images(tmp_path)
    provider = LiteLLMProvider(
        "openai/test-model", api_base=server.url, api_key_env=KEY_ENV, images=False
    )
    server.reply_text("ok")
    _ = [item async for item in provider.stream("sys", history, [])]
    messages = server.requests[0]["messages"]
    assert image_urls(messages) == []
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "user"]
    assert messages[1]["content"][1] == {"type": "text", "text": IMAGE_NOT_SENT}
    assert f"{IMAGE_NOT_SENT}</image>" in messages[3]["content"]


def test_an_alias_says_whether_its_model_takes_images_else_litellms_map_does() -> None:
    config = Config.model_validate(
        {
            "models": {
                "local": {"model": "openai/my-llava", "vision": True},
                "blind": {"model": "openai/gpt-4o", "vision": False},
                "mapped": {"model": "openai/gpt-4o"},
                "unknown": {"model": "openai/my-llava"},
            }
        }
    )
    taken = {name: supports_images(resolve_model(config, name)) for name in config.models}
    assert taken == {"local": True, "blind": False, "mapped": True, "unknown": True}
    known_without = resolve_model(Config(), "deepseek/deepseek-chat")  # in the map, no vision
    assert not supports_images(known_without)
    assert not supports_images(resolve_model(config, "demo"))
    assert not takes_images(DemoProvider())
    assert takes_images(LiteLLMProvider("openai/gpt-4o"))
    assert not takes_images(LiteLLMProvider("openai/gpt-4o", images=False))


async def test_readmediafile_tells_a_model_that_takes_no_images_to_say_so(tmp_path: Path) -> None:
    Image.new("RGB", (8, 8)).save(tmp_path / "a.png")
    env = ToolEnv(work_dir=tmp_path, takes_images=lambda: False)
    with pytest.raises(ToolError, match="The current model does not support image input"):
        await ReadMediaFile().run(ReadMediaFileParams(path="a.png"), env, "c1")
