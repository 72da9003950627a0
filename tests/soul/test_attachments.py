"""Images attached to a prompt: a chip each, sent in the user's message in Kimi CLI's form to a
model that takes images (the request checked on the loopback server), refused in one line with
nothing sent for one that does not."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from PIL import Image

from kode_tui.config import Config
from kode_tui.humanize import format_size
from kode_tui.message import ImageURLPart, Message, TextPart, parse_record
from kode_tui.soul.attachments import attach_image, prompt_content
from kode_tui.soul.facade import AgentSession, mentioned_images, pasted_paths
from kode_tui.soul.llm.litellm_provider import LiteLLMProvider
from kode_tui.tools.images import ImageError
from kode_tui.wire import events as ev
from tests.llm_server import LLMServer, loopback_choice
from tests.soul.conftest import KEY_ENV
from tests.soul_helpers import record_events


async def test_an_attached_image_has_a_chip_and_goes_after_the_text_in_kimis_wrapper(
    tmp_path: Path,
) -> None:
    shot = tmp_path / "shot.png"
    Image.new("RGB", (1280, 720), "white").save(shot)
    wide = tmp_path / "wide.jpg"
    Image.new("RGB", (4096, 1024), "black").save(wide)
    first, second = await attach_image(shot), await attach_image(wide)
    assert (
        first.chip(1)
        == "[image 1 · shot.png · 1280x720 · " + format_size(shot.stat().st_size) + "]"
    )
    assert second.chip(2).endswith(" · sent at 2048x512]")
    content = prompt_content("Compare them", [first, second])
    assert isinstance(content, list)
    assert [p.type for p in content] == ["text", *["text", "image_url", "text"] * 2]
    assert content[1] == TextPart(text=f'<image path="{shot}">')
    assert prompt_content("just text", []) == "just text"
    (tmp_path / "notes.png").write_text("not an image")
    with pytest.raises(ImageError, match="not an image"):
        await attach_image(tmp_path / "notes.png")


async def started(work: Path, server: LLMServer, *, images: bool) -> AgentSession:
    provider = LiteLLMProvider(
        "openai/test-model", api_base=server.url, api_key_env=KEY_ENV, images=images
    )
    opened = await AgentSession.open(work)
    await opened.start(Config(), loopback_choice(server, KEY_ENV), provider=provider, yolo=True)
    return opened


async def test_a_prompts_image_reaches_a_model_that_takes_images_and_is_stored_as_kimi_does(
    tmp_path: Path, server: LLMServer
) -> None:
    shot = tmp_path / "shot.png"
    Image.new("RGB", (16, 16), "red").save(shot)
    opened = await started(tmp_path, server, images=True)
    server.reply_text("A red square.")
    try:
        result = await opened.run("What is this?", [await attach_image(shot)])
    finally:
        await opened.close()
    assert result.stop_reason == "done", result.error
    (sent,) = [m for m in server.requests[0]["messages"] if "What is this?" in str(m["content"])]
    (stored,) = [
        record
        for line in (opened.session.context_file).read_text().splitlines()
        if isinstance(record := parse_record(line), Message) and "What is this?" in record.text
    ]
    image = stored.parts[2]
    assert isinstance(image, ImageURLPart)
    assert sent == {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is this?"},
            {"type": "text", "text": f'<image path="{shot}">'},
            {"type": "image_url", "image_url": {"url": image.image_url.url}},
            {"type": "text", "text": "</image>"},
        ],
    }


async def test_a_prompts_image_for_a_model_that_takes_none_is_refused_in_one_line(
    tmp_path: Path, server: LLMServer
) -> None:
    shot = tmp_path / "shot.png"
    Image.new("RGB", (16, 16), "red").save(shot)
    opened = await started(tmp_path, server, images=False)
    events = record_events(opened.bus)
    try:
        result = await opened.run("What is this?", [await attach_image(shot)])
    finally:
        await opened.close()
    assert result.stop_reason == "blocked"
    assert result.error is not None and "does not take images" in result.error
    assert "\n" not in result.error
    assert [e.message for e in events if isinstance(e, ev.Warning)] == [result.error]
    assert server.requests == []


def test_a_paste_of_dropped_files_is_their_paths_and_anything_else_is_text(
    tmp_path: Path,
) -> None:
    spaced = tmp_path / "my shot.png"
    plain = tmp_path / "b.jpg"
    for path in (spaced, plain):
        path.write_bytes(b"x")
    quoted = shlex.quote(str(spaced))
    assert pasted_paths(f"{quoted} {plain}\n", tmp_path) == [spaced, plain]
    assert pasted_paths(str(spaced).replace(" ", "\\ "), tmp_path) == [spaced]
    assert pasted_paths(f"file://{str(spaced).replace(' ', '%20')}", tmp_path) == [spaced]
    assert pasted_paths("b.jpg", tmp_path) == [plain]
    for text in ("fix b.jpg please", f"{plain} missing.png", "'unclosed", "", "   "):
        assert pasted_paths(text, tmp_path) is None, text


def test_at_mentions_name_the_work_dirs_image_files_and_tell_those_outside_apart(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    (work / "docs").mkdir(parents=True)
    for path in (work / "shot.png", work / "docs" / "b.JPG", tmp_path / "out.png"):
        Image.new("RGB", (4, 4)).save(path, format="PNG")
    (work / "notes.txt").write_text("text")
    found = mentioned_images(
        "see @shot.png, @docs/b.JPG and @shot.png again; not @notes.txt, @gone.png, "
        "a@shot.png nor @../out.png.",
        work,
    )
    assert found.inside == [work / "shot.png", work / "docs" / "b.JPG"]
    assert found.outside == ["../out.png"]
    assert mentioned_images(f"@{tmp_path / 'out.png'}", work).outside == [str(tmp_path / "out.png")]


@pytest.mark.parametrize("images", [True, False])
async def test_readmediafile_is_offered_only_to_a_model_that_takes_images(
    tmp_path: Path, server: LLMServer, images: bool
) -> None:
    """As Kimi CLI offers it: a model that takes no images is not told of ReadMediaFile (the
    other tools stay)."""
    opened = await started(tmp_path, server, images=images)
    server.reply_text("Hello.")
    try:
        result = await opened.run("hi")
    finally:
        await opened.close()
    assert result.stop_reason == "done", result.error
    offered = {tool["function"]["name"] for tool in server.requests[0]["tools"]}
    assert {"ReadFile", "FetchURL", "Shell"} <= offered
    assert ("ReadMediaFile" in offered) is images
