"""The whole agent against a loopback OpenAI-compatible server, through the real LiteLLMProvider."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kode_tui.config import Config
from kode_tui.session import Session
from kode_tui.soul.agent import Agent, open_agent
from kode_tui.soul.stream import INTERRUPTED_NOTE
from kode_tui.wire import events as ev
from kode_tui.wire.recorder import read_wire
from tests.llm_server import LLMServer, loopback_choice, write_loopback_config
from tests.soul_helpers import record_events

KEY_ENV = "KODE_TEST_LLM_KEY"
KEY = "sk-test-not-a-secret-1234"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LLMServer]:
    monkeypatch.setenv(KEY_ENV, KEY)
    with LLMServer() as server:
        yield server


@pytest.fixture
def project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "README.md").write_text("# Greeter\n")
    return project


async def start(project: Path, server: LLMServer) -> tuple[Agent, list[ev.Event]]:
    session = await Session.create(project)
    agent = await open_agent(session, Config(), loopback_choice(server, KEY_ENV))
    return agent, record_events(agent.bus)


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_a_two_step_tool_turn_writes_context_and_wire(
    project: Path, server: LLMServer
) -> None:
    hello = json.dumps({"path": "hello.py", "content": "print('hello')\n"})
    server.reply_tool_calls([("call_w1", "WriteFile", hello)], text="Writing it.", usage=(120, 20))
    server.reply_text("Created hello.py.", usage=(180, 6))
    agent, events = await start(project, server)

    result = await agent.soul.run("Create hello.py")
    await agent.close()

    assert result.stop_reason == "done", result.error
    assert (project / "hello.py").read_text() == "print('hello')\n"
    lines = records(agent.session.context_file)
    # D-Mail is on by default, so each checkpoint is followed by its CHECKPOINT n message.
    assert [r["role"] for r in lines] == [
        "_system_prompt",
        "_checkpoint",
        "user",
        "user",
        "_checkpoint",
        "user",
        "_usage",
        "_file_edit",
        "assistant",
        "_usage",
        "tool",
        "_checkpoint",
        "user",
        "_usage",
        "assistant",
        "_usage",
    ]
    assert lines[3]["content"] == "Create hello.py"
    assert lines[5]["content"] == "<system>CHECKPOINT 1</system>"
    assert [r["token_count"] for r in lines if r["role"] == "_usage"] == [120, 140, 180, 186]
    assistant = lines[8]
    assert assistant["content"] == "Writing it."
    assert assistant["tool_calls"] == [
        {"type": "function", "id": "call_w1", "function": {"name": "WriteFile", "arguments": hello}}
    ]
    assert lines[10]["tool_call_id"] == "call_w1"
    assert lines[10]["content"][0]["text"].startswith("<system>")
    edit = lines[7]
    assert (edit["path"], edit["before"], edit["tool_call_id"]) == ("hello.py", None, "call_w1")
    blob = agent.session.dir / "blobs" / edit["after"]
    assert blob.read_text() == "print('hello')\n"
    # The second request carried the tool result, the tools, and asked for usage.
    second = server.requests[1]
    assert second["stream_options"] == {"include_usage": True}
    assert {t["function"]["name"] for t in second["tools"]} >= {"WriteFile", "Shell", "ReadFile"}
    assert second["messages"][0]["role"] == "system"
    assert second["messages"][-2]["role"] == "tool"
    assert second["messages"][-2]["tool_call_id"] == "call_w1"
    assert second["messages"][-1] == {"role": "user", "content": "<system>CHECKPOINT 2</system>"}
    wire = [r for r in read_wire(agent.session.wire_file)]
    kinds = [r.type for r in wire]
    assert kinds[0] == "TurnBegin" and kinds[-1] == "TurnEnd"
    for kind in ("StepBegin", "ToolCall", "ApprovalRequest", "ApprovalResponse", "ToolResult"):
        assert kind in kinds
    call_records = [r.raw["message"]["payload"] for r in wire if r.type == "ToolCall"]
    assert call_records[0]["function"]["name"] == "WriteFile"
    # The streamed arguments are merged into the call's record, as Kimi CLI stores them.
    assert call_records[0]["function"]["arguments"] == hello
    assert "ToolCallPart" not in kinds
    assert any(isinstance(e, ev.StatusUpdate) and e.usage for e in events)


async def test_transient_server_errors_are_retried_after_the_wait_the_server_asks(
    project: Path, server: LLMServer
) -> None:
    server.reply_status(429, "rate limited", headers={"Retry-After": "6"})
    server.reply_status(503, "overloaded", headers={"retry-after-ms": "1500"})
    server.reply_status(500, "internal")
    server.reply_text("Finally.")
    agent, events = await start(project, server)
    slept: list[float] = []

    async def take(seconds: float) -> None:
        slept.append(seconds)

    agent.soul.retry_sleep = take
    result = await agent.soul.run("hi")
    await agent.close()

    assert result.stop_reason == "done"
    retries = [e for e in events if isinstance(e, ev.StepRetry)]
    assert [(r.attempt, r.max_attempts) for r in retries] == [(1, 10), (2, 10), (3, 10)]
    # The model process read the headers and passed the waits on; the 500 said nothing.
    assert slept[:2] == [6.0, 1.5] and [r.server_wait for r in retries] == [True, True, False]
    assert 2 <= slept[2] <= 2.5
    assert "429" in retries[0].error or "rate" in retries[0].error
    assert [r["role"] for r in records(agent.session.context_file)].count("assistant") == 1


async def test_a_401_fails_at_once_and_leaves_the_context_intact(
    project: Path, server: LLMServer
) -> None:
    server.reply_status(401, "invalid api key")
    server.reply_text("never sent")
    agent, events = await start(project, server)

    result = await agent.soul.run("hi")
    await agent.close()

    assert result.stop_reason == "error"
    assert KEY_ENV in (result.error or "") and KEY not in (result.error or "")
    assert server.pending == 1
    assert not any(isinstance(e, ev.StepRetry) for e in events)
    assert [r["role"] for r in records(agent.session.context_file)] == [
        "_system_prompt",
        "_checkpoint",
        "user",
        "user",
        "_checkpoint",
        "user",
    ]


async def test_cancel_mid_stream_keeps_what_was_shown_marked(
    project: Path, server: LLMServer
) -> None:
    held = server.reply_hang("Thinking hard about it")
    server.reply_text("Fresh start.")
    agent, _ = await start(project, server)

    task = asyncio.create_task(agent.soul.run("hi"))
    await held.wait_started(timeout=60)
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    held.release()

    [kept] = [r["content"] for r in records(agent.session.context_file) if r["role"] == "assistant"]
    shown, note = kept.split("\n\n")
    assert shown and "Thinking hard about it".startswith(shown) and note == INTERRUPTED_NOTE
    assert (await agent.soul.run("again")).stop_reason == "done"
    await agent.close()


def test_print_mode_against_the_loopback_server(
    project: Path, server: LLMServer, home: Path
) -> None:
    write_loopback_config(home, server, KEY_ENV)
    listing = json.dumps({"pattern": "*.md"})
    server.reply_tool_calls([("call_g", "Glob", listing)], text="Looking.")
    server.reply_text("There is one Markdown file: README.md.")

    done = subprocess.run(
        [sys.executable, "-m", "kode_tui", "-p", "Which docs are there?", "--print", str(project)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ},
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "Looking.",
        '· Glob "*.md"  ✔ ' + done.stdout.splitlines()[1].split("✔ ", 1)[1],
        "There is one Markdown file: README.md.",
    ]
    assert server.requests[0]["model"] == "test-model"


async def test_an_api_key_printed_by_a_tool_never_reaches_the_context(
    project: Path, server: LLMServer
) -> None:
    # From a file: the Shell sandbox keeps the key out of a command's environment.
    (project / "key.txt").write_text(f"{KEY}\n")
    server.reply_tool_calls([("call_env", "Shell", json.dumps({"command": "cat key.txt"}))])
    server.reply_text("I saw a masked key.")
    agent, events = await start(project, server)

    assert (await agent.soul.run("print the key")).stop_reason == "done"
    await agent.close()

    assert KEY not in agent.session.context_file.read_text()
    assert KEY not in agent.session.wire_file.read_text()
    assert KEY not in json.dumps(server.requests)
    assert f"[masked: {KEY_ENV}]" in next(e for e in events if isinstance(e, ev.ToolResult)).output
