"""`kode-tui acp` driven as a process by the agent-client-protocol package's own client, with
the loopback model server behind it."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process, text_block
from acp.core import ClientSideConnection
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AllowedOutcome,
    AvailableCommandsUpdate,
    FileEditToolCallContent,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UserMessageChunk,
)

from kode_tui.paths import Paths
from kode_tui.tools.sandbox import support as sandbox_support

from .conftest import KIMI_DEFAULT_FIXTURE
from .llm_server import KEY_ENV, LLMServer, write_loopback_config


class RecordingClient:
    """An ACP client that keeps every update and answers permissions with `answer`."""

    def __init__(self) -> None:
        self.updates: list[Any] = []
        self.asked: list[tuple[ToolCallUpdate, list[PermissionOption]]] = []
        self.answer = "approve"
        self.asking = asyncio.Event()

    async def request_permission(
        self, options: list[PermissionOption], session_id: str, tool_call: ToolCallUpdate,
        **kwargs: Any,
    ) -> RequestPermissionResponse:  # fmt: skip
        self.asked.append((tool_call, options))
        self.asking.set()
        if self.answer == "wait":
            await asyncio.Event().wait()
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=self.answer)
        )

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    def of(self, kind: type[Any]) -> list[Any]:
        return [u for u in self.updates if isinstance(u, kind)]

    def text(self, kind: type[Any] = AgentMessageChunk) -> str:
        return "".join(u.content.text for u in self.of(kind))


@asynccontextmanager
async def agent(client: RecordingClient) -> AsyncIterator[ClientSideConnection]:
    """A `kode-tui acp` process, initialized, with this test's home and environment."""
    async with spawn_agent_process(
        client, sys.executable, "-m", "kode_tui", "acp", env=dict(os.environ)
    ) as (conn, _process):
        ready = await asyncio.wait_for(conn.initialize(protocol_version=PROTOCOL_VERSION), 60)
        assert ready.agent_capabilities is not None and ready.agent_capabilities.load_session
        assert ready.auth_methods == []
        yield conn


def write_call(path: str, content: str) -> tuple[str, str, str]:
    return ("call_w", "WriteFile", json.dumps({"path": path, "content": content}))


@pytest.fixture
def loopback(home: Path, server: LLMServer) -> LLMServer:
    write_loopback_config(home, server, KEY_ENV)
    return server


async def test_a_prompt_asks_permission_streams_the_edit_as_a_diff_and_loads_again(
    project: Path, loopback: LLMServer
) -> None:
    loopback.reply_tool_calls([write_call("notes.txt", "hello\n")], text="Writing.")
    loopback.reply_text("Done.")
    client = RecordingClient()
    client.answer = "approve_for_session"
    async with agent(client) as conn:
        made = await conn.new_session(cwd=str(project), mcp_servers=[])
        assert made.modes is not None and made.modes.current_mode_id == "ask"
        assert [m.id for m in made.modes.available_modes] == (
            ["ask", "auto-edit", "sandbox", "yolo"]
            if sandbox_support().available
            else ["ask", "auto-edit", "yolo"]
        )
        done = await conn.prompt(session_id=made.session_id, prompt=[text_block("Write notes")])
        advertised = client.of(AvailableCommandsUpdate)[-1].available_commands
        assert {"compact", "revert", "restore", "clear", "context"} <= {c.name for c in advertised}

    assert done.stop_reason == "end_turn"
    assert (project / "notes.txt").read_text() == "hello\n"
    (asked, options) = client.asked[0]
    assert asked.tool_call_id == "call_w" and asked.kind == "edit"
    assert [o.kind for o in options] == ["allow_once", "allow_always", "reject_once"]
    start = client.of(ToolCallStart)[0]
    assert (start.tool_call_id, start.kind) == ("call_w", "edit")
    final = next(u for u in client.of(ToolCallProgress) if u.status == "completed")
    diff = next(c for c in final.content if isinstance(c, FileEditToolCallContent))
    assert diff.path == str(project / "notes.txt") and diff.new_text == "hello\n"
    assert client.text() == "Writing.Done."

    # A new agent process loads the session and replays it.
    again = RecordingClient()
    async with agent(again) as conn:
        await conn.load_session(cwd=str(project), session_id=made.session_id, mcp_servers=[])
    assert again.text(UserMessageChunk) == "Write notes"
    assert again.text() == "Writing.Done."
    replayed = next(u for u in again.of(ToolCallProgress) if u.status == "completed")
    assert any(isinstance(c, FileEditToolCallContent) for c in replayed.content)
    assert again.of(AvailableCommandsUpdate)


async def test_yolo_mode_skips_the_permission_todos_become_the_plan_and_cancel_stops_the_turn(
    project: Path, loopback: LLMServer
) -> None:
    todos = {"todos": [{"title": "write a", "status": "in_progress"}]}
    loopback.reply_tool_calls(
        [write_call("a.txt", "a\n"), ("call_t", "TodoWrite", json.dumps(todos))]
    )
    loopback.reply_text("Wrote a.")
    client = RecordingClient()
    async with agent(client) as conn:
        made = await conn.new_session(cwd=str(project), mcp_servers=[])
        await conn.set_session_mode(session_id=made.session_id, mode_id="yolo")
        done = await conn.prompt(session_id=made.session_id, prompt=[text_block("write a")])
        assert done.stop_reason == "end_turn" and client.asked == []
        assert (project / "a.txt").read_text() == "a\n"
        plan = client.of(AgentPlanUpdate)[-1].entries
        assert [(e.content, e.status) for e in plan] == [("write a", "in_progress")]

        # In ask mode a rejected edit is not made, and the client sees the call fail.
        await conn.set_session_mode(session_id=made.session_id, mode_id="ask")
        loopback.reply_tool_calls([("call_b", *write_call("b.txt", "b\n")[1:])])
        client.answer = "reject"
        done = await conn.prompt(session_id=made.session_id, prompt=[text_block("write b")])
        assert done.stop_reason == "end_turn" and not (project / "b.txt").exists()
        ends = [u.status for u in client.of(ToolCallProgress) if u.tool_call_id == "call_b"]
        assert ends[-1] == "failed"

        # A shell call waits for the client; cancelling stops the turn.
        loopback.reply_tool_calls([("call_s", "Shell", json.dumps({"command": "echo hi"}))])
        client.answer = "wait"
        client.asking.clear()
        turn = asyncio.ensure_future(
            conn.prompt(session_id=made.session_id, prompt=[text_block("run it")])
        )
        await asyncio.wait_for(client.asking.wait(), 30)
        assert client.asked[-1][0].kind == "execute"
        await conn.cancel(session_id=made.session_id)
        assert (await asyncio.wait_for(turn, 30)).stop_reason == "cancelled"


async def test_revert_and_restore_replay_the_conversation_and_kimi_sessions_load(
    project: Path, loopback: LLMServer, home: Path, tmp_path: Path
) -> None:
    veto = tmp_path / "veto"
    veto.write_text("#!/bin/sh\nif grep -q secret; then echo 'no secrets' >&2; exit 2; fi\n")
    veto.chmod(0o755)
    with (home / "config.toml").open("a") as config:
        config.write(f'\n[[hooks]]\nevent = "UserPromptSubmit"\ncommand = "{veto}"\n')
    loopback.reply_text("First answer.")
    loopback.reply_text("Second answer.")
    client = RecordingClient()
    async with agent(client) as conn:
        made = await conn.new_session(cwd=str(project), mcp_servers=[])
        for text in ("one", "two"):
            await conn.prompt(session_id=made.session_id, prompt=[text_block(text)])
        await conn.prompt(session_id=made.session_id, prompt=[text_block("/revert")])
        listed = client.text()
        assert "- 0: before the user's “one”" in listed and "before the user's “two”" in listed
        client.updates.clear()
        done = await conn.prompt(session_id=made.session_id, prompt=[text_block("/revert 1")])
        assert done.stop_reason == "end_turn"
        with pytest.raises(RequestError, match="absolute"):
            await conn.new_session(cwd="relative/dir", mcp_servers=[])
        # Checkpoint 1 follows the first message: the answers after it are gone from the replay.
        assert client.text(UserMessageChunk) == "one"
        assert client.text() == "Reverted to checkpoint 1; the rest is kept in context_1.jsonl."
        assert len(loopback.requests) == 2  # the commands were no model turns

        # A prompt a hook blocks is refused, and the client is told why.
        client.updates.clear()
        refused = await conn.prompt(session_id=made.session_id, prompt=[text_block("a secret")])
        assert refused.stop_reason == "refusal" and "no secrets" in client.text()

        # Restoring the rotated context brings the whole conversation back, replayed.
        client.updates.clear()
        await conn.prompt(session_id=made.session_id, prompt=[text_block("/restore 1")])
        assert client.text(UserMessageChunk) == "onetwo"
        assert client.text().startswith("First answer.Second answer.Restored context_1.jsonl")

        # The same agent loads a session Kimi CLI wrote (the same process: tests stay cheap).
        shutil.copytree(KIMI_DEFAULT_FIXTURE, Paths.current().work_dir_sessions(project) / "kimi")
        client.updates.clear()
        await conn.load_session(cwd=str(project), session_id="kimi", mcp_servers=[])
        assert client.text(UserMessageChunk).endswith("Count the answers")
        assert client.text() == "Two answers so far."


async def test_a_repos_files_grant_nothing_and_replace_no_built_in(
    project: Path, loopback: LLMServer, tmp_path: Path
) -> None:
    commands = project / ".claude/commands"
    commands.mkdir(parents=True)
    (commands / "clear.md").write_text("The repo's words for the model.")
    (commands / "revert.md").write_text("More of the repo's words.")
    (commands / "deep.md").write_text("---\ndescription: " + "[" * 5000 + "\n---\nbody")
    (commands / "review.md").write_text("---\ndescription: Review it\n---\nReview.")
    # A session folder the repo ships, in yolo by Kimi's key, with a session approval.
    shipped = project / "docs/transcript"
    shutil.copytree(KIMI_DEFAULT_FIXTURE, shipped)
    state = json.loads((shipped / "state.json").read_text())
    state["approval"]["yolo"] = True
    state["session_approvals"] = ["shell:touch"]
    (shipped / "state.json").write_text(json.dumps(state))
    user_home = tmp_path / "user-home"  # $HOME in tests
    user_home.mkdir()
    loopback.reply_tool_calls([("call_s", "Shell", json.dumps({"command": "touch owned"}))])
    loopback.reply_text("Stopped.")
    client = RecordingClient()
    client.answer = "reject"
    async with agent(client) as conn:
        for cwd, why in (("/", "is the root folder"), (str(user_home), "is your home folder")):
            with pytest.raises(RequestError, match=why):
                await conn.new_session(cwd=cwd, mcp_servers=[])
            with pytest.raises(RequestError, match=why):
                await conn.load_session(cwd=cwd, session_id=str(shipped), mcp_servers=[])
        made = await conn.new_session(cwd=str(project), mcp_servers=[])
        cleared = await conn.prompt(session_id=made.session_id, prompt=[text_block("/clear")])
        assert cleared.stop_reason == "end_turn" and client.text() == "Cleared the conversation."
        advertised = [c.name for c in client.of(AvailableCommandsUpdate)[-1].available_commands]
        client.updates.clear()
        await conn.prompt(session_id=made.session_id, prompt=[text_block("/deep")])
        assert "deep.md has front matter that is nested deeper than 64 levels" in client.text()
        assert loopback.requests == []  # neither was a model turn

        client.updates.clear()
        loaded = await conn.load_session(cwd=str(project), session_id=str(shipped), mcp_servers=[])
        assert loaded.modes is not None and loaded.modes.current_mode_id == "ask"
        assert "is not in your session stores" in client.text()
        done = await conn.prompt(session_id=shipped.name, prompt=[text_block("go on")])

    assert sorted(advertised) == sorted(set(advertised))
    assert {"clear", "revert", "review"} <= set(advertised) and "deep" not in advertised
    assert done.stop_reason == "end_turn"
    assert [call.tool_call_id for call, _ in client.asked] == ["call_s"]
    assert not (project / "owned").exists()
