"""LiteLLMProvider against a loopback OpenAI-compatible server: the real litellm, no network.

The tests of an `openai/` model run twice: through litellm, and through the OpenAI SDK route
(`OpenAIProvider`) the model process takes for such models, which must behave the same."""

from __future__ import annotations

import asyncio
import datetime
import email.utils
import json
import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from kode_tui.message import (
    FunctionBody,
    ImageURL,
    ImageURLPart,
    Message,
    TextPart,
    ThinkPart,
    ToolCall,
)
from kode_tui.soul.llm import (
    DEFAULT_MAX_CONTEXT_SIZE,
    LLMConnectionError,
    LLMError,
    LLMStatusError,
    LLMTimeoutError,
    StreamItem,
    ToolCallDelta,
    ToolCallStart,
    is_retryable,
)
from kode_tui.soul.llm.litellm_provider import LiteLLMProvider, load_litellm, to_openai_messages
from kode_tui.soul.llm.openai_route import OpenAIProvider
from kode_tui.wire.events import TokenUsage
from tests.llm_server import SHELL_TOOL, LLMServer

# litellm's own pydantic deprecation noise; kode-tui silences it when it loads litellm, but
# pytest resets warning filters for each test.
pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning:litellm.*"),
    # These import litellm in this process (seconds): one xdist worker runs them all.
    pytest.mark.xdist_group("litellm"),
]

KEY_ENV = "KODE_TEST_LLM_KEY"
KEY = "sk-test-very-secret-4242"
MODEL = "openai/test-model"


@pytest.fixture(scope="session")
def litellm() -> Any:
    """litellm costs seconds to import: once per test session."""
    return load_litellm()


@pytest.fixture
def server(litellm: Any) -> Iterator[LLMServer]:
    with LLMServer() as server:
        yield server
    assert server.errors == []


@pytest.fixture(params=["litellm", "openai-sdk"])
def provider_class(request: pytest.FixtureRequest) -> type[LiteLLMProvider]:
    """The two routes an `openai/` model can take."""
    return LiteLLMProvider if request.param == "litellm" else OpenAIProvider


@pytest.fixture
def provider(
    server: LLMServer, monkeypatch: pytest.MonkeyPatch, provider_class: type[LiteLLMProvider]
) -> LiteLLMProvider:
    monkeypatch.setenv(KEY_ENV, KEY)
    return provider_class(MODEL, api_base=server.url, api_key_env=KEY_ENV, timeout=10)


async def collect(
    provider: LiteLLMProvider,
    history: Sequence[Message] = (),
    tools: Sequence[dict[str, Any]] = (),
    system_prompt: str | None = "You are a test.",
) -> list[StreamItem]:
    history = history or [Message(role="user", content="hi")]
    return [item async for item in provider.stream(system_prompt, history, tools)]


async def failure(provider: LiteLLMProvider) -> LLMError:
    with pytest.raises(LLMError) as caught:
        await collect(provider)
    return caught.value


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --- streaming ---------------------------------------------------------------------------------


async def test_text_deltas_arrive_as_separate_text_parts_in_order(
    server: LLMServer, provider: LiteLLMProvider
) -> None:
    server.reply_text(["Hel", "lo, ", "world", "!"])

    items = await collect(provider)

    assert items[:-1] == [TextPart(text=t) for t in ("Hel", "lo, ", "world", "!")]
    assert items[-1] == TokenUsage(input=10, output=5)


async def test_reasoning_content_streams_as_think_parts_before_the_text(
    server: LLMServer, provider: LiteLLMProvider
) -> None:
    server.reply_reasoning(["Let me ", "think."], "Done.")

    items = await collect(provider)

    assert items[:3] == [
        ThinkPart(think="Let me "),
        ThinkPart(think="think."),
        TextPart(text="Done."),
    ]


async def test_a_signed_thinking_block_becomes_an_encrypted_think_part(
    server: LLMServer, provider: LiteLLMProvider
) -> None:
    signed = {"type": "thinking", "thinking": "", "signature": "c2lnbmVk"}
    # Shaped as litellm's Anthropic handler emits it: the signature comes in its own delta.
    server.reply_chunks(
        [{"reasoning_content": "Hmm."}, {"reasoning_content": "", "thinking_blocks": [signed]}]
    )

    items = await collect(provider)

    assert items[:2] == [ThinkPart(think="Hmm."), ThinkPart(think="", encrypted="c2lnbmVk")]


async def test_two_tool_calls_assemble_from_their_start_and_argument_deltas(
    server: LLMServer, provider: LiteLLMProvider
) -> None:
    shell_args = '{"command": "ls -la src/"}'
    read_args = '{"path": "src/main.py", "line_offset": 10}'
    server.reply_tool_calls(
        [("call_a", "Shell", shell_args), ("call_b", "ReadFile", read_args)], text="Looking."
    )

    items = await collect(provider, tools=[SHELL_TOOL])

    starts = [item for item in items if isinstance(item, ToolCallStart)]
    assert starts == [ToolCallStart("call_a", "Shell"), ToolCallStart("call_b", "ReadFile")]
    arguments: dict[str, str] = {}
    for item in items:
        if isinstance(item, ToolCallDelta):
            assert item.id in arguments or item.id in {s.id for s in starts}
            arguments[item.id] = arguments.get(item.id, "") + item.arguments_delta
    assert arguments == {"call_a": shell_args, "call_b": read_args}
    assert sum(isinstance(item, ToolCallDelta) for item in items) > 4  # really streamed
    assert items[0] == TextPart(text="Looking.")


async def test_a_tool_call_without_an_id_gets_one_that_its_deltas_share(
    server: LLMServer, provider: LiteLLMProvider
) -> None:
    server.reply_tool_calls([("", "Shell", '{"command": "pwd"}')])

    items = await collect(provider, tools=[SHELL_TOOL])

    (start,) = [item for item in items if isinstance(item, ToolCallStart)]
    assert start.id and start.name == "Shell"
    deltas = [item for item in items if isinstance(item, ToolCallDelta)]
    assert {delta.id for delta in deltas} == {start.id}
    assert "".join(delta.arguments_delta for delta in deltas) == '{"command": "pwd"}'


async def test_the_usage_chunk_becomes_one_final_token_usage_with_cached_tokens(
    server: LLMServer, provider: LiteLLMProvider
) -> None:
    server.reply_text("Hi", usage=(1200, 34, 1000))

    items = await collect(provider)

    assert [item for item in items if isinstance(item, TokenUsage)] == [
        TokenUsage(input=1200, output=34, cache_read=1000)
    ]
    assert isinstance(items[-1], TokenUsage)


ANTHROPIC_USAGE = TokenUsage(input=1700, output=30, cache_read=1000, cache_creation=500)
"""200 fresh prompt tokens, 1000 read from the cache, 500 written to it; 30 out."""


async def test_anthropic_usage_as_litellm_shapes_it_counts_cached_tokens_once(
    server: LLMServer, provider: LiteLLMProvider
) -> None:
    # litellm puts an Anthropic model's cached tokens into prompt_tokens: not added twice.
    server.reply_text(
        "Hi",
        usage={
            "prompt_tokens": 1700,
            "completion_tokens": 30,
            "prompt_tokens_details": {"cached_tokens": 1000},
            "cache_read_input_tokens": 1000,
            "cache_creation_input_tokens": 500,
        },
    )

    items = await collect(provider)

    assert [item for item in items if isinstance(item, TokenUsage)] == [ANTHROPIC_USAGE]


async def test_anthropic_shaped_usage_passed_on_by_a_server_adds_cached_tokens_to_the_prompt(
    server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Anthropic's own shape leaves the cached tokens out of input_tokens. The OpenAI SDK route
    # hands a server's usage object on as it is (litellm's own route rebuilds it).
    monkeypatch.setenv(KEY_ENV, KEY)
    provider = OpenAIProvider(MODEL, api_base=server.url, api_key_env=KEY_ENV, timeout=10)
    server.reply_text(
        "Hi",
        usage={
            "input_tokens": 200,
            "output_tokens": 30,
            "cache_read_input_tokens": 1000,
            "cache_creation_input_tokens": 500,
        },
    )

    items = await collect(provider)

    assert [item for item in items if isinstance(item, TokenUsage)] == [ANTHROPIC_USAGE]


# --- what the model is sent --------------------------------------------------------------------


async def test_the_request_asks_for_usage_carries_tools_key_and_no_retries(
    server: LLMServer, provider: LiteLLMProvider
) -> None:
    server.reply_text("ok")

    await collect(provider, tools=[SHELL_TOOL])

    (body,) = server.requests
    assert body["model"] == "test-model"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["tools"][0]["function"]["name"] == "Shell"
    assert body["messages"][0] == {"role": "system", "content": "You are a test."}
    assert server.headers[0]["authorization"] == f"Bearer {KEY}"
    assert "num_retries" not in body and "max_retries" not in body


async def test_no_tools_means_no_tools_key(server: LLMServer, provider: LiteLLMProvider) -> None:
    server.reply_text("ok")

    await collect(provider, tools=[])

    assert "tools" not in server.requests[0]


async def test_history_is_sent_without_think_text_and_with_tool_calls_and_joined_tool_results(
    server: LLMServer, provider: LiteLLMProvider
) -> None:
    call = ToolCall(id="tool_1", function=FunctionBody(name="Shell", arguments='{"command": "ls"}'))
    history = [
        Message(role="user", content="List the files"),
        Message(
            role="assistant",
            content=[ThinkPart(think="secret plan"), TextPart(text="Listing.")],
            tool_calls=[call],
        ),
        Message(
            role="tool",
            tool_call_id="tool_1",
            content=[
                TextPart(text="<system>Command executed successfully.</system>"),
                TextPart(text="\nmain.py"),
            ],
        ),
        Message(role="assistant", content=[ThinkPart(think="only thinking")], tool_calls=[]),
        Message(
            role="user",
            content=[
                TextPart(text="What is in this picture?"),
                ImageURLPart(image_url=ImageURL(url="data:image/png;base64,AAAA")),
            ],
        ),
    ]
    server.reply_text("ok")

    await collect(provider, history)

    messages = server.requests[0]["messages"]
    assert messages[1] == {"role": "user", "content": "List the files"}
    assert messages[2]["content"] == "Listing."
    assert messages[2]["tool_calls"] == [
        {
            "id": "tool_1",
            "type": "function",
            "function": {"name": "Shell", "arguments": '{"command": "ls"}'},
        }
    ]
    assert messages[3] == {
        "role": "tool",
        "tool_call_id": "tool_1",
        "content": "<system>Command executed successfully.</system>\nmain.py",
    }
    assert messages[4]["role"] == "assistant" and not messages[4].get("content")
    assert messages[5]["content"] == [
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
    ]
    assert "secret plan" not in json.dumps(messages)


def test_anthropic_models_get_cache_marks_and_signed_thinking_blocks() -> None:
    history = [
        Message(role="user", content="First question"),
        Message(
            role="assistant",
            content=[
                ThinkPart(think="unsigned musing"),
                ThinkPart(think="signed reasoning", encrypted="sig-1"),
                TextPart(text="Answer."),
            ],
        ),
        Message(role="user", content=[TextPart(text="reminder"), TextPart(text="Second question")]),
    ]

    messages = to_openai_messages("Be brief.", history, anthropic=True)

    ephemeral = {"type": "ephemeral"}
    assert messages[0] == {
        "role": "system",
        "content": [{"type": "text", "text": "Be brief.", "cache_control": ephemeral}],
    }
    assert messages[1] == {"role": "user", "content": "First question"}  # only the last is marked
    assert messages[2]["thinking_blocks"] == [
        {"type": "thinking", "thinking": "signed reasoning", "signature": "sig-1"}
    ]
    assert messages[2]["content"] == "Answer."
    assert messages[3]["content"] == [
        {"type": "text", "text": "reminder"},
        {"type": "text", "text": "Second question", "cache_control": ephemeral},
    ]


def test_in_an_anthropic_tool_loop_the_last_tool_result_is_the_cache_breakpoint() -> None:
    call = ToolCall(id="t1", function=FunctionBody(name="Shell", arguments="{}"))
    history = [
        Message(role="user", content="Run it"),
        Message(role="assistant", content="", tool_calls=[call]),
        Message(role="tool", tool_call_id="t1", content="done"),
    ]

    messages = to_openai_messages("sys", history, anthropic=True)

    assert messages[1] == {"role": "user", "content": "Run it"}
    assert messages[3]["cache_control"] == {"type": "ephemeral"}


def test_other_models_get_no_cache_marks_and_no_thinking_blocks() -> None:
    history = [
        Message(role="user", content="q"),
        Message(role="assistant", content=[ThinkPart(think="t", encrypted="sig")]),
    ]

    messages = to_openai_messages("sys", history)

    assert "cache_control" not in json.dumps(messages)
    assert "thinking_blocks" not in messages[2]


async def test_importing_the_library_is_not_counted_as_the_model_keeping_silent(
    server: LLMServer, monkeypatch: pytest.MonkeyPatch, provider_class: type[LiteLLMProvider]
) -> None:
    from kode_tui.soul.llm import litellm_provider, openai_route

    monkeypatch.setenv(KEY_ENV, KEY)
    provider = provider_class(
        MODEL, api_base=server.url, api_key_env=KEY_ENV, timeout=10, first_token_timeout=0.2
    )
    litellm_route = provider_class is LiteLLMProvider
    module: Any = litellm_provider if litellm_route else openai_route
    name = "load_litellm" if litellm_route else "load_openai"
    load = getattr(module, name)
    load()  # imported for real now: only the slow import below is what this test is about
    monkeypatch.setattr(module, "_litellm" if litellm_route else "_openai", None)

    def slow_load() -> Any:
        time.sleep(0.5)  # the import on a loaded machine: longer than first_token_timeout
        return load()

    monkeypatch.setattr(module, name, slow_load)
    server.reply_text("Here.")

    items = await collect(provider)

    assert "".join(item.text for item in items if isinstance(item, TextPart)) == "Here."


# --- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [429, 500, 502, 503, 529])
async def test_throttling_and_server_errors_are_retryable_status_errors(
    server: LLMServer, provider: LiteLLMProvider, status: int
) -> None:
    server.reply_status(status, "try again later")

    error = await failure(provider)

    assert isinstance(error, LLMStatusError) and error.status_code == status
    assert is_retryable(error)
    assert "try again later" in str(error) and "litellm" not in str(error)


IN_30_SECONDS = "an HTTP date 30 s from now"


@pytest.mark.parametrize(
    ("headers", "wait"),
    [
        ({"Retry-After": "6"}, 6.0),
        ({"retry-after-ms": "1500", "Retry-After": "2"}, 1.5),
        ({"Retry-After": IN_30_SECONDS}, 30.0),
        ({"Retry-After": "soon"}, None),
        ({}, None),
    ],
)
async def test_the_wait_a_server_asks_for_comes_with_the_error(
    server: LLMServer, provider: LiteLLMProvider, headers: dict[str, str], wait: float | None
) -> None:
    if headers.get("Retry-After") == IN_30_SECONDS:
        when = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=30)
        headers = {"Retry-After": email.utils.format_datetime(when, usegmt=True)}
    server.reply_status(429, "slow down", headers=headers)

    error = await failure(provider)

    assert isinstance(error, LLMStatusError) and error.status_code == 429
    if wait is None:
        assert error.retry_after is None
    else:  # a date counts from when it is read (to the second): less on a loaded machine
        assert error.retry_after is not None and wait / 3 <= error.retry_after <= wait


async def test_text_that_is_not_valid_utf8_is_sent_escaped_instead_of_failing(
    server: LLMServer, provider: LiteLLMProvider
) -> None:
    # What os.listdir gives for the bytes name caf\xe9.txt: a lone surrogate.
    name = b"caf\xe9.txt".decode("utf-8", "surrogateescape")
    server.reply_text("Seen.")
    history = [
        Message(role="user", content=f"Look at {name}"),
        Message(
            role="assistant",
            content="",
            tool_calls=[ToolCall(id="c1", function=FunctionBody(name="Glob", arguments="{}"))],
        ),
        Message(role="tool", content=[TextPart(text=name)], tool_call_id="c1"),
        Message(role="user", content=[TextPart(text=f"and {name}")]),
    ]

    items = await collect(provider, history, system_prompt=f"Files: {name}")

    assert [item.text for item in items if isinstance(item, TextPart)] == ["Seen."]
    [request] = server.requests
    sent = json.dumps(request["messages"])
    assert sent.count("caf\\\\xe9.txt") == 4  # JSON escapes the backslash once more


async def test_a_local_encoding_error_is_not_a_server_error_and_not_retried(
    server: LLMServer, monkeypatch: pytest.MonkeyPatch, provider_class: type[LiteLLMProvider]
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    # An HTTP header must be ASCII: the request fails while it is built, before it is sent.
    provider = provider_class(
        MODEL,
        api_base=server.url,
        api_key_env=KEY_ENV,
        extra={"extra_headers": {"X-Note": "snow \u2603"}},
    )

    error = await failure(provider)

    assert not isinstance(error, LLMStatusError)
    assert not is_retryable(error)
    assert "could not be encoded, nothing was sent" in str(error)
    assert "server error" not in str(error) and "500" not in str(error)
    assert server.requests == []


async def test_a_401_names_the_key_variable_and_never_the_key(
    server: LLMServer, provider: LiteLLMProvider
) -> None:
    server.reply_status(401, f"Incorrect API key provided: {KEY}")

    error = await failure(provider)

    assert isinstance(error, LLMStatusError) and error.status_code == 401
    assert not is_retryable(error)
    assert KEY_ENV in str(error) and MODEL in str(error)
    assert KEY not in str(error)


async def test_a_bad_request_echoing_the_key_is_redacted(
    server: LLMServer, provider: LiteLLMProvider
) -> None:
    server.reply_status(400, f"invalid header {KEY}")

    error = await failure(provider)

    assert isinstance(error, LLMStatusError) and error.status_code == 400
    assert not is_retryable(error)
    assert KEY not in str(error) and "invalid header ***" in str(error)


async def test_a_404_says_model_not_found(server: LLMServer, provider: LiteLLMProvider) -> None:
    server.reply_status(404, "The model `test-model` does not exist")

    error = await failure(provider)

    assert isinstance(error, LLMStatusError) and error.status_code == 404
    assert "model not found" in str(error) and not is_retryable(error)


async def test_a_refused_connection_is_a_retryable_connection_error(
    litellm: Any, monkeypatch: pytest.MonkeyPatch, provider_class: type[LiteLLMProvider]
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    url = f"http://127.0.0.1:{closed_port()}/v1"
    provider = provider_class(MODEL, api_base=url, api_key_env=KEY_ENV)

    error = await failure(provider)

    assert isinstance(error, LLMConnectionError) and is_retryable(error)
    assert url in str(error) and "refused" in str(error)


async def test_a_stream_that_stalls_past_the_timeout_is_a_timeout_error(
    server: LLMServer, monkeypatch: pytest.MonkeyPatch, provider_class: type[LiteLLMProvider]
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    provider = provider_class(MODEL, api_base=server.url, api_key_env=KEY_ENV, timeout=0.5)
    server.reply_hang("Working")

    error = await failure(provider)

    assert isinstance(error, LLMTimeoutError) and is_retryable(error)


async def test_a_connection_dropped_mid_stream_is_a_connection_error(
    server: LLMServer, provider: LiteLLMProvider
) -> None:
    held = server.reply_hang("Working on it")
    received: list[StreamItem] = []

    async def consume() -> None:
        async for item in provider.stream("sys", [Message(role="user", content="hi")], []):
            received.append(item)

    task = asyncio.create_task(consume())
    await held.wait_started()
    await asyncio.to_thread(server.close)

    with pytest.raises(LLMConnectionError) as caught:
        await task
    assert is_retryable(caught.value)
    assert received == [TextPart(text="Working")]


async def test_cancelling_mid_stream_stops_promptly(
    server: LLMServer, provider: LiteLLMProvider
) -> None:
    held = server.reply_hang("Working")
    task = asyncio.create_task(collect(provider))
    await held.wait_started()

    task.cancel()

    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, timeout=30)


async def test_a_missing_key_variable_fails_before_any_request(
    server: LLMServer, provider_class: type[LiteLLMProvider]
) -> None:
    provider = provider_class(MODEL, api_base=server.url, api_key_env="OPENAI_API_KEY")

    error = await failure(provider)

    assert str(error) == "OPENAI_API_KEY is not set" and not is_retryable(error)
    assert server.requests == []


async def test_an_empty_script_answers_500_saying_so(
    server: LLMServer, provider: LiteLLMProvider
) -> None:
    error = await failure(provider)

    assert isinstance(error, LLMStatusError) and error.status_code == 500
    assert "no scripted reply left" in str(error)


# --- loading and model info --------------------------------------------------------------------


def test_importing_the_provider_does_not_import_litellm() -> None:
    code = (
        "import sys, kode_tui.soul.llm.litellm_provider as p; "
        "p.LiteLLMProvider('openai/x').max_context_size; "
        "print('litellm' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "False"


def test_litellm_logs_never_reach_the_terminal(
    litellm: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):
        logging.getLogger(name).error("should stay quiet")

    assert capfd.readouterr() == ("", "")


def test_max_context_size_comes_from_config_then_litellm_then_the_default(litellm: Any) -> None:
    assert LiteLLMProvider(MODEL, max_context_size=32_000).max_context_size == 32_000
    assert LiteLLMProvider("openai/no-such-model").max_context_size == DEFAULT_MAX_CONTEXT_SIZE
    known = litellm.get_model_info("anthropic/claude-sonnet-4-5")["max_input_tokens"]
    assert LiteLLMProvider("anthropic/claude-sonnet-4-5").max_context_size == known


async def test_without_a_key_variable_litellm_looks_for_its_own_and_the_error_names_it(
    server: LLMServer, provider_class: type[LiteLLMProvider]
) -> None:
    provider = provider_class(MODEL, api_base=server.url)  # conftest unset OPENAI_API_KEY

    error = await failure(provider)

    assert str(error) == "no API key for openai/test-model: set OPENAI_API_KEY"
    assert not is_retryable(error)
    assert server.requests == []


async def test_a_hosted_model_without_its_key_fails_before_any_request(
    litellm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[object] = []
    monkeypatch.setattr(litellm, "acompletion", lambda *a, **k: calls.append(k))
    provider = LiteLLMProvider("anthropic/claude-sonnet-4-5")  # conftest unset the key

    error = await failure(provider)

    assert str(error) == "no API key for anthropic/claude-sonnet-4-5: set ANTHROPIC_API_KEY"
    assert not is_retryable(error)
    assert calls == []
    # litellm's other credential variables count.
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "token")
    assert provider._api_key() is None


async def test_a_context_overflow_says_the_conversation_is_too_long(
    server: LLMServer, provider: LiteLLMProvider
) -> None:
    server.reply_status(
        400, "This model's maximum context length is 8192 tokens. However, you requested 9000."
    )

    error = await failure(provider)

    assert isinstance(error, LLMStatusError) and error.status_code == 400
    assert "too long" in str(error) and "8192" in str(error)


async def test_a_stream_that_stops_without_a_finish_reason_is_a_cut_off_answer_retried(
    server: LLMServer, provider: LiteLLMProvider
) -> None:
    server.reply_cut("This answer will be cut", usage=(10, 5))

    error = await failure(provider)

    assert isinstance(error, LLMConnectionError) and is_retryable(error)
    assert "cut off" in str(error) and "litellm" not in str(error)


# --- the OpenAI SDK route ----------------------------------------------------------------------


async def test_options_reach_the_server_as_litellm_sends_them(
    server: LLMServer, monkeypatch: pytest.MonkeyPatch, provider_class: type[LiteLLMProvider]
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    # temperature is an argument of the SDK; top_k is a server's own option (vLLM, Ollama).
    extra = {"temperature": 0.2, "top_k": 20, "extra_headers": {"X-Trace": "t1"}}
    provider = provider_class(MODEL, api_base=server.url, api_key_env=KEY_ENV, extra=extra)
    server.reply_text("ok")

    await collect(provider)

    [request] = server.requests
    assert (request["model"], request["temperature"], request["top_k"]) == ("test-model", 0.2, 20)
    assert request["stream"] is True and request["stream_options"] == {"include_usage": True}
    assert server.headers[-1]["x-trace"] == "t1"
    assert server.headers[-1]["authorization"] == f"Bearer {KEY}"


def test_the_openai_route_knows_litellms_context_size_for_an_openai_model(litellm: Any) -> None:
    known = litellm.get_model_info("openai/gpt-4.1")["max_input_tokens"]

    assert OpenAIProvider("openai/gpt-4.1").max_context_size == known
    assert OpenAIProvider("openai/no-such-model").max_context_size == DEFAULT_MAX_CONTEXT_SIZE
    assert OpenAIProvider("openai/gpt-4.1", max_context_size=9000).max_context_size == 9000


def test_the_openai_route_streams_without_ever_importing_litellm(server: LLMServer) -> None:
    server.reply_text("Hello from the SDK")
    code = (
        "import asyncio, sys\n"
        "from kode_tui.message import Message\n"
        "from kode_tui.soul.llm.openai_route import OpenAIProvider\n"
        f"p = OpenAIProvider({MODEL!r}, api_base={server.url!r}, api_key_env='K')\n"
        "async def main():\n"
        "    return [i async for i in p.stream(None, [Message(role='user', content='hi')], [])]\n"
        "items = asyncio.run(main())\n"
        "print(''.join(getattr(i, 'text', '') for i in items), p.max_context_size)\n"
        "print('litellm' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True, text=True, timeout=60, env={**os.environ, "K": KEY},
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == [
        f"Hello from the SDK {DEFAULT_MAX_CONTEXT_SIZE}",
        "False",
    ]


async def test_a_model_thinking_longer_than_the_request_timeout_is_waited_for(
    server: LLMServer, monkeypatch: pytest.MonkeyPatch, provider_class: type[LiteLLMProvider]
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    provider = provider_class(
        MODEL, api_base=server.url, api_key_env=KEY_ENV, timeout=0.3, first_token_timeout=5
    )
    server.reply_text("Thought it through.", first_delay=1.0)

    items = await collect(provider)

    assert "".join(i.text for i in items if isinstance(i, TextPart)) == "Thought it through."


async def test_no_first_token_in_time_and_a_silence_mid_answer_name_their_settings(
    server: LLMServer, monkeypatch: pytest.MonkeyPatch, provider_class: type[LiteLLMProvider]
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    waiting = provider_class(
        MODEL, api_base=server.url, api_key_env=KEY_ENV, timeout=5, first_token_timeout=0.4
    )
    server.reply_text("Too late.", first_delay=2.0)
    error = await failure(waiting)
    assert isinstance(error, LLMTimeoutError) and is_retryable(error)
    assert str(error) == f"{MODEL} sent nothing within 0.4 s (loop_control.first_token_timeout)"

    stalling = provider_class(
        MODEL, api_base=server.url, api_key_env=KEY_ENV, timeout=0.4, first_token_timeout=5
    )
    server.reply_hang("Working")
    error = await failure(stalling)
    assert str(error) == f"{MODEL} stopped sending for 0.4 s (loop_control.request_timeout)"
