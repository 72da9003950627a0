"""ProcessProvider: litellm in the model process, against the loopback server; its items and
errors are LiteLLMProvider's, and the process comes back after it died."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from kode_tui.message import Message, TextPart
from kode_tui.soul.agent import make_provider
from kode_tui.soul.llm import (
    ChatProvider,
    LLMConnectionError,
    LLMError,
    LLMStatusError,
    StreamItem,
)
from kode_tui.soul.llm.litellm_provider import LiteLLMProvider, load_litellm
from kode_tui.soul.llm.process import ProcessProvider, start, stop, worker_pid
from kode_tui.wire.events import TokenUsage
from tests.llm_server import SHELL_TOOL, LLMServer, loopback_choice

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning:litellm.*"),
    # These import litellm in this process (seconds): one xdist worker runs them all.
    pytest.mark.xdist_group("litellm"),
]

KEY_ENV = "KODE_TEST_LLM_KEY"
MODEL = "openai/test-model"
HISTORY = [Message(role="user", content="list the files")]


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LLMServer]:
    monkeypatch.setenv(KEY_ENV, "sk-test-process-4242")
    with LLMServer() as server:
        yield server


def in_process(server: LLMServer, model: str = MODEL) -> LiteLLMProvider:
    load_litellm()
    return LiteLLMProvider(model, api_base=server.url, api_key_env=KEY_ENV, timeout=60)


def in_worker(server: LLMServer, model: str = MODEL) -> ProcessProvider:
    return ProcessProvider(model, api_base=server.url, api_key_env=KEY_ENV, timeout=60)


async def collect(
    provider: ChatProvider, tools: Sequence[dict[str, Any]] = (SHELL_TOOL,)
) -> list[StreamItem]:
    return [item async for item in provider.stream("You are a test.", HISTORY, tools)]


def joined(items: Sequence[StreamItem]) -> list[StreamItem]:
    """`items` with each run of text parts joined: how many parts carry a text depends on how
    the model process batched them, the text and everything else do not."""
    result: list[StreamItem] = []
    for item in items:
        if result and isinstance(item, TextPart) and isinstance(result[-1], TextPart):
            result[-1] = TextPart(text=result[-1].text + item.text)
        else:
            result.append(item)
    return result


async def status_error(provider: ChatProvider) -> LLMStatusError:
    with pytest.raises(LLMStatusError) as caught:
        await collect(provider)
    return caught.value


def test_make_provider_calls_litellm_models_through_the_model_process() -> None:
    with LLMServer() as server:
        provider = make_provider(loopback_choice(server, KEY_ENV))

    assert isinstance(provider, ProcessProvider)
    assert provider.max_context_size == 32_000
    assert worker_pid() is not None


async def test_an_answer_with_a_tool_call_arrives_as_litellm_provider_streams_it(
    server: LLMServer,
) -> None:
    for _ in range(2):
        server.reply_tool_calls(
            [("call_a", "Shell", '{"command": "ls -la src/"}')],
            text=["Let me ", "look."],
            usage=(1200, 34, 1000),
        )

    direct = await collect(in_process(server))
    through_worker = await collect(in_worker(server))

    assert joined(through_worker) == joined(direct)
    assert len(direct) > 5  # text, the call's start, its argument pieces, the usage
    assert server.requests[1] == server.requests[0]  # the same request went out


@pytest.mark.parametrize("status", [429, 500])
async def test_an_http_error_status_is_the_same_status_error(
    server: LLMServer, status: int
) -> None:
    server.reply_status(status, "slow down")
    server.reply_status(status, "slow down")

    direct = await status_error(in_process(server))
    through_worker = await status_error(in_worker(server))

    assert (through_worker.status_code, str(through_worker)) == (status, str(direct))


async def test_the_model_info_context_size_is_learned_from_the_first_answer(
    server: LLMServer,
) -> None:
    server.reply_text("ok")
    provider = in_worker(server, "openai/gpt-4.1")

    await collect(provider)

    assert provider.max_context_size == in_process(server, "openai/gpt-4.1").max_context_size
    assert provider.max_context_size > 128_000


def test_an_openai_models_context_size_is_known_before_its_first_answer() -> None:
    from kode_tui.soul.llm.model_map import context_size

    size = ProcessProvider("openai/gpt-4.1").max_context_size

    assert size == context_size("openai/gpt-4.1")
    assert size > 128_000


async def test_a_model_process_killed_mid_stream_fails_the_request_and_the_next_starts_it(
    server: LLMServer,
) -> None:
    held = server.reply_hang("Working on it")
    provider = in_worker(server)
    received: list[StreamItem] = []

    async def consume() -> None:
        async for item in provider.stream("sys", HISTORY, []):
            received.append(item)

    task = asyncio.create_task(consume())
    await held.wait_started()
    killed = worker_pid()
    assert killed is not None
    os.kill(killed, signal.SIGKILL)

    with pytest.raises(LLMConnectionError) as caught:
        await task
    assert str(caught.value) == (
        "the model process stopped (killed by signal 9); the next request starts it again"
    )
    server.drop_pending()
    held.release()

    server.reply_text("Back again.")
    assert joined(await collect(provider)) == [
        TextPart(text="Back again."),
        TokenUsage(input=10, output=5),
    ]
    assert worker_pid() not in (None, killed)


async def test_cancelling_a_stream_leaves_the_model_process_serving(server: LLMServer) -> None:
    held = server.reply_hang("Working")
    provider = in_worker(server)
    task = asyncio.create_task(collect(provider))
    await held.wait_started()
    pid = worker_pid()

    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    server.reply_text("Still here.")
    items = await collect(provider)
    held.release()

    assert joined(items)[:1] == [TextPart(text="Still here.")]
    assert worker_pid() == pid


async def test_a_key_set_after_the_model_process_started_reaches_the_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    start()
    monkeypatch.setenv(KEY_ENV, "sk-set-after-launch-77")
    with LLMServer() as server:
        server.reply_text("ok")
        await collect(in_worker(server))

    assert server.headers[0]["authorization"] == "Bearer sk-set-after-launch-77"


async def test_an_openai_model_takes_the_sdk_route_and_any_other_model_litellm(
    server: LLMServer,
) -> None:
    from kode_tui.soul.llm.openai_route import OpenAIProvider
    from kode_tui.soul.llm.worker import _provider_class

    assert _provider_class(MODEL) is OpenAIProvider
    assert _provider_class("hosted_vllm/test-model") is LiteLLMProvider
    # litellm's vLLM provider speaks to the same server: the model process loads litellm for it.
    server.reply_text("through litellm")
    items = await collect(in_worker(server, "hosted_vllm/test-model"), tools=())

    assert "".join(item.text for item in items if isinstance(item, TextPart)) == "through litellm"
    assert server.requests[-1]["model"] == "test-model"


def loaded(pid: int, package: str) -> bool:
    """Whether process `pid` has loaded `package`'s compiled modules (what /proc maps show)."""
    return f"/{package}/" in Path(f"/proc/{pid}/maps").read_text()


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc")
async def test_an_openai_model_process_leaves_aiohttp_out_until_a_litellm_model_needs_it(
    server: LLMServer,
) -> None:
    stop()
    start(MODEL)
    server.reply_text("through the SDK")
    assert joined(await collect(in_worker(server), tools=()))[0] == TextPart(text="through the SDK")
    pid = worker_pid()
    assert pid is not None
    assert not loaded(pid, "aiohttp")

    # litellm, which needs aiohttp, still loads in the same process.
    server.reply_text("through litellm")
    items = await collect(in_worker(server, "hosted_vllm/test-model"), tools=())

    assert joined(items)[0] == TextPart(text="through litellm")
    assert worker_pid() == pid
    assert loaded(pid, "aiohttp")


async def test_text_streamed_faster_than_a_frame_arrives_in_fewer_bigger_parts(
    server: LLMServer,
) -> None:
    pieces = [f"w{i} " for i in range(300)]
    server.reply_chunks([{"content": piece} for piece in pieces])

    items = await collect(in_worker(server), tools=())

    texts = [item.text for item in items if isinstance(item, TextPart)]
    assert "".join(texts) == "".join(pieces)
    assert len(texts) < len(pieces) / 5


async def test_the_first_token_timeout_of_loop_control_reaches_the_model_process(
    server: LLMServer,
) -> None:
    from kode_tui.config import LoopControl

    provider = make_provider(
        loopback_choice(server, KEY_ENV), LoopControl(request_timeout=5, first_token_timeout=0.4)
    )
    server.reply_text("Too late.", first_delay=2.0)

    with pytest.raises(LLMError) as caught:
        await collect(provider, tools=())

    assert str(caught.value).endswith(
        "sent nothing within 0.4 s (loop_control.first_token_timeout)"
    )
