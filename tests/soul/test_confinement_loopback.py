"""What reaches the model from a hostile or odd work dir, through the real agent and a loopback
server: symlinks that lead outside the work dir, and file names that are not UTF-8."""

from __future__ import annotations

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
from kode_tui.soul.agent import open_agent
from kode_tui.wire import events as ev
from tests.llm_server import LLMServer, loopback_choice, write_loopback_config

KEY_ENV = "KODE_TEST_LLM_KEY"
MARKER = "MARKER-outside-the-work-dir"
LATIN_NAME = b"caf\xe9.txt"
"""A file name in Latin-1: not valid UTF-8."""


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LLMServer]:
    monkeypatch.setenv(KEY_ENV, "sk-test-not-a-secret")
    with LLMServer() as server:
        yield server
    assert server.errors == []


@pytest.fixture
def project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    return project


async def run_turn(project: Path, server: LLMServer, prompt: str) -> tuple[Any, list[ev.Event]]:
    session = await Session.create(project)
    agent = await open_agent(session, Config(), loopback_choice(server, KEY_ENV))
    events: list[ev.Event] = []
    agent.bus.subscribe(callback=events.append)
    result = await agent.soul.run(prompt)
    await agent.close()
    return result, events


async def test_docs_linked_outside_the_work_dir_never_reach_the_first_request(
    project: Path, server: LLMServer, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(f"{MARKER}: the user's private notes\n")
    for name in ("README.md", "AGENTS.md", "CLAUDE.md"):
        (project / name).symlink_to(outside / "secret.md")
    (project / "shared").symlink_to(outside)
    (project / "main.py").write_text("print('hi')\n")
    server.reply_text("Hello.")

    result, _ = await run_turn(project, server, "What is here?")

    assert result.stop_reason == "done", result.error
    [request] = server.requests
    assert MARKER not in json.dumps(request)
    assert "main.py" in request["messages"][0]["content"]


async def test_a_work_dir_holding_a_name_that_is_not_utf8_still_gets_answers(
    project: Path, server: LLMServer
) -> None:
    with open(os.fsencode(project) + b"/" + LATIN_NAME, "wb") as file:
        file.write(b"latin-1 content\n")
    server.reply_text("Hello.")

    result, events = await run_turn(project, server, "What is here?")

    assert result.stop_reason == "done", result.error
    assert not [e for e in events if isinstance(e, ev.StepRetry)]
    [request] = server.requests
    assert "caf\\xe9.txt" in request["messages"][0]["content"]


def test_print_mode_globs_and_reads_a_name_that_is_not_utf8(
    project: Path, server: LLMServer, home: Path
) -> None:
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    with open(os.fsencode(project) + b"/" + LATIN_NAME, "wb") as file:
        file.write(b"latin-1 content\n")
    write_loopback_config(home, server, KEY_ENV)
    server.reply_tool_calls([("call_g", "Glob", json.dumps({"pattern": "*.txt"}))], text="Looking.")
    # The model sends the name back as it was shown; one more that does not exist.
    server.reply_tool_calls(
        [
            ("call_r", "ReadFile", json.dumps({"path": "caf\\xe9.txt"})),
            ("call_m", "ReadFile", json.dumps({"path": "caf\\xe8.txt"})),
        ]
    )
    server.reply_text("It holds latin-1 content.")

    done = subprocess.run(
        [sys.executable, "-m", "kode_tui", "-p", "What is there?", "--print", str(project)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ},
    )

    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout.splitlines()[-1] == "It holds latin-1 content."
    assert len(server.requests) == 3
    tool_results = {
        message["tool_call_id"]: message["content"]
        for message in server.requests[2]["messages"]
        if message["role"] == "tool"
    }
    assert "caf\\xe9.txt" in tool_results["call_g"]
    assert "latin-1 content" in tool_results["call_r"]
    assert "caf\\xe8.txt` does not exist" in tool_results["call_m"]
    [context_file] = home.glob("sessions/*/*/context.jsonl")
    answered = {
        json.loads(line).get("tool_call_id") for line in context_file.read_text().splitlines()
    }
    assert {"call_g", "call_r", "call_m"} <= answered


async def test_an_approved_edit_of_a_name_that_is_not_utf8_is_asked_shown_and_logged(
    project: Path, server: LLMServer
) -> None:
    real = os.fsencode(project) + b"/" + LATIN_NAME
    with open(real, "wb") as file:
        file.write(b"hi\n")
    edit = {"path": "caf\\xe9.txt", "edit": {"old": "hi", "new": "ho"}}
    server.reply_tool_calls([("call_e", "StrReplaceFile", json.dumps(edit))])
    server.reply_text("Done.")
    session = await Session.create(project)
    agent = await open_agent(session, Config(), loopback_choice(server, KEY_ENV))
    asked: list[str] = []

    def approve(event: ev.Event) -> None:
        if isinstance(event, ev.ApprovalRequest):
            asked.append(event.description)
            event.resolve("approve")

    agent.bus.subscribe(callback=approve)
    result = await agent.soul.run("Change it")
    await agent.close()

    assert result.stop_reason == "done", result.error
    assert asked == ["StrReplaceFile caf\\xe9.txt"]
    with open(real, "rb") as file:
        assert file.read() == b"ho\n"
    wire = session.wire_file.read_text(encoding="utf-8")
    assert '"type": "ApprovalRequest"' in wire and "caf\\\\xe9.txt" in wire


def test_print_mode_sends_a_prompt_that_is_not_utf8_escaped(
    project: Path, server: LLMServer, home: Path
) -> None:
    write_loopback_config(home, server, KEY_ENV)
    server.reply_text("Read it.")

    # A prompt typed in a Latin-1 terminal: argv holds a byte that is not UTF-8.
    done = subprocess.run(
        [sys.executable, "-m", "kode_tui", "-p", b"open caf\xe9.txt", "--print", str(project)],
        capture_output=True,
        timeout=60,
        env={**os.environ},
    )

    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr
    assert len(server.requests) == 1
    assert "open caf\\\\xe9.txt" in json.dumps(server.requests[0]["messages"])
    context = next((home / "sessions").glob("*/*/context.jsonl")).read_text()
    assert "open caf\\\\xe9.txt" in context
