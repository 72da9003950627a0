"""The model process started as kode-tui starts: it reads the config to know its library, and
the first request is served by it, not by a process of its own."""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path
from typing import Any

import pytest

from kode_tui import model_launch
from kode_tui.message import Message, TextPart
from kode_tui.soul.llm import openai_route, process
from kode_tui.soul.llm.openai_route import OpenAIProvider
from kode_tui.soul.llm.process import ProcessProvider
from kode_tui.soul.llm.worker import (
    _configured,
    _prepare_first,
    _Server,
    decode,
    message_json,
    route,
)
from tests.child_python import printed
from tests.llm_server import KEY_ENV, LLMServer, write_loopback_config


def write_config(folder: Path, model: str) -> Path:
    config = folder / "config.toml"
    config.write_text(f'default_model = "main"\n[models.main]\nmodel = "{model}"\n')
    return config


@pytest.mark.parametrize(
    ("model", "flag", "library"),
    [
        ("openai/gpt-4.1", None, "openai"),
        ("anthropic/claude-sonnet-4-5", None, "litellm"),
        ("anthropic/claude-sonnet-4-5", "openai/local", "openai"),
        ("openai/gpt-4.1", "demo", None),
    ],
)
def test_the_early_process_imports_the_library_of_the_model_the_config_chooses(
    home: Path, tmp_path: Path, model: str, flag: str | None, library: str | None
) -> None:
    arguments = ["--config", str(write_config(tmp_path, model))]
    if flag is not None:
        arguments += ["--model", flag]
    first = _configured(arguments)
    assert (route(first.model_name) if first is not None else None) == library


def test_no_config_or_a_broken_one_imports_nothing_early(home: Path, tmp_path: Path) -> None:
    assert _configured([]) is None  # no model configured, no key: the demo
    broken = tmp_path / "broken.toml"
    broken.write_text("default_model = \n")
    assert _configured(["--config", str(broken)]) is None


async def test_the_process_started_early_serves_the_first_request(
    home: Path, server: LLMServer
) -> None:
    process.stop()
    write_loopback_config(home, server, KEY_ENV)
    model_launch.start_early(None, None)
    early = process.worker_pid()
    assert early is not None
    server.reply_text("From the early one.")

    provider = ProcessProvider("openai/test-model", api_base=server.url, api_key_env=KEY_ENV)
    items = [i async for i in provider.stream("sys", [Message(role="user", content="hi")], [])]

    # The stream may split the text where its chunks arrive.
    assert "".join(i.text for i in items if isinstance(i, TextPart)) == "From the early one."
    assert process.worker_pid() == early


def test_an_early_process_nobody_took_ends_when_stopped(home: Path) -> None:
    model_launch.start_early(None, None)
    early = model_launch._early
    assert early is not None and model_launch.early_pid() == early.pid

    model_launch.stop_early()

    assert early.wait(timeout=60) == 0
    assert model_launch.early_pid() is None


def _request(model: str, server: LLMServer) -> dict[str, Any]:
    """The request the UI sends for the loopback config's model (process.ProcessProvider),
    with the config's default timeouts."""
    history = [decode(bytes(message_json(Message(role="user", content="hi"))))]
    return {
        "op": "stream", "model": model, "api_base": server.url, "api_key_env": KEY_ENV,
        "max_context_size": None, "timeout": 120, "first_token_timeout": 300, "extra": {},
        "images": True, "env": dict(os.environ), "system_prompt": "sys", "history": history,
        "tools": [],
    }  # fmt: skip


async def _serve_one(request_id: int, request: dict[str, Any]) -> list[Any]:
    """`request` served as the model process serves it; its replies."""
    read, write = os.pipe()
    try:
        await _Server(write)._stream(request_id, request)
        os.close(write)
        with os.fdopen(read, "rb") as replies:
            return [decode(line) for line in replies]
    finally:
        for fd in (read, write):
            with contextlib.suppress(OSError):
                os.close(fd)


async def test_the_first_request_goes_out_on_the_client_made_at_start(
    home: Path, server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_loopback_config(home, server, KEY_ENV)
    first = _configured([])
    assert isinstance(first, OpenAIProvider)
    loop = asyncio.get_running_loop()

    await _prepare_first(first)  # what the early process does before it reads a request
    made = dict(openai_route._clients[loop])
    assert len(made) == 1
    server.reply_text("Hi.")
    replies = await _serve_one(1, _request(first.model_name, server))

    assert replies[-1][1] == "end"
    assert dict(openai_route._clients[loop]) == made  # no client of its own: the one made
    assert server.headers[-1]["authorization"] == f"Bearer {os.environ[KEY_ENV]}"

    # A key changed after the start is the one sent: read at the request, as before.
    monkeypatch.setenv(KEY_ENV, "sk-changed")
    server.reply_text("Hi again.")
    replies = await _serve_one(2, _request(first.model_name, server))
    assert replies[-1][1] == "end"
    assert server.headers[-1]["authorization"] == "Bearer sk-changed"


def test_the_model_process_loads_none_of_the_wire_or_the_ui() -> None:
    """What the model process imports before it can send is its start-up time: the wire's
    events and models (~20 ms) are none of its business."""
    code = (
        "import sys, kode_tui.soul.llm.worker\n"
        "print(*sorted({m.split('.')[1] for m in sys.modules if m.startswith('kode_tui.')}))\n"
    )
    loaded = set(printed(code))
    assert "soul" in loaded and not loaded & {"wire", "ui", "session", "tools"}


def test_the_model_process_imports_with_the_collector_off_and_no_pydantic_plugins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its start-up is the first request's wait: no collection walks the objects its imports
    make, and pydantic does not read every installed package's entry points for plugins (a
    value the user set is kept)."""
    code = (
        "import gc, os, sys\n"
        "print(gc.isenabled(), os.environ.get('PYDANTIC_DISABLE_PLUGINS'))\n"
        "sys.exit(0)\n"
    )
    run_worker = model_launch._RUN_WORKER.replace(
        f"from {model_launch.WORKER} import main; main()", code
    )
    monkeypatch.delenv("PYDANTIC_DISABLE_PLUGINS", raising=False)
    assert printed(run_worker) == ["False", "__all__"]
    monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", "logfire")
    assert model_launch._child_environment()["PYDANTIC_DISABLE_PLUGINS"] == "logfire"


def test_the_first_client_is_made_without_http2s_library(home: Path, server: LLMServer) -> None:
    """The SDK's client never speaks HTTP/2, but its HTTP core imports h2 when it can (~7 ms of
    the start): the client made at the start leaves it out (a request goes out on that client:
    `test_the_first_request_goes_out_on_the_client_made_at_start`)."""
    code = (
        "import asyncio, sys\n"
        "from kode_tui.soul.llm import openai_route, worker\n"
        "async def main():\n"
        "    await worker._prepare_first(worker._configured([]))\n"
        "    print(len(openai_route._clients[asyncio.get_running_loop()]), 'h2' in sys.modules)\n"
        "asyncio.run(main())\n"
    )
    write_loopback_config(home, server, KEY_ENV)
    assert printed(code) == ["1", "False"]
