"""`kode-tui acp` driven as a process by the agent-client-protocol package's own client, with
the loopback model server behind it.

Each test is one agent process (they are slow to start) taking a session through several
scenarios; every update the client gets is checked as a strict client (Toad) would: raw input
and output are objects, ids are unique in the session, and no call is left without a final
status (`RecordingClient.check`)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process, text_block
from acp.core import ClientSideConnection
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    AllowedOutcome,
    AvailableCommandsUpdate,
    CurrentModeUpdate,
    FileEditToolCallContent,
    Implementation,
    PermissionOption,
    RequestPermissionResponse,
    SessionInfoUpdate,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UserMessageChunk,
)

from kode_tui.paths import work_dir_hash
from kode_tui.session import Session
from kode_tui.tools.sandbox import support as sandbox_support
from tests.conftest import KIMI_DEFAULT_FIXTURE
from tests.llm_server import KEY_ENV, LLMServer, write_loopback_config

FINAL = ("completed", "failed")


class RecordingClient:
    """An ACP client that keeps every update and answers permissions with `answer`."""

    def __init__(self) -> None:
        self.updates: list[Any] = []
        self.asked: list[tuple[ToolCallUpdate, list[PermissionOption]]] = []
        self.answer = "approve"
        self.asking = asyncio.Event()
        self._changed = asyncio.Condition()

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
        async with self._changed:
            self._changed.notify_all()

    async def wait_for(self, condition: Callable[[], bool]) -> None:
        """Until an update makes `condition` true."""
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(condition), 30)

    def of(self, kind: type[Any]) -> list[Any]:
        return [u for u in self.updates if isinstance(u, kind)]

    def text(self, kind: type[Any] = AgentMessageChunk) -> str:
        return "".join(u.content.text for u in self.of(kind))

    def messages(self, kind: type[Any] = AgentMessageChunk) -> list[str]:
        """The text of each message of `kind`, its chunks joined by their message id."""
        texts: dict[str, str] = {}
        for update in self.of(kind):
            assert update.message_id, "every chunk says which message it belongs to"
            texts[update.message_id] = texts.get(update.message_id, "") + update.content.text
        return [text.strip() for text in texts.values()]

    def statuses(self, call_id: str) -> list[str | None]:
        """The status of each update of the call `call_id`, in order."""
        return [
            u.status
            for u in self.updates
            if isinstance(u, ToolCallStart | ToolCallProgress) and u.tool_call_id == call_id
        ]

    def call_ids(self) -> list[str]:
        return [u.tool_call_id for u in self.of(ToolCallStart)]

    def check(self) -> None:
        """What a strict client needs: ids unique in the session, raw input and output
        objects, titles without raw JSON, and every call ended."""
        ids = self.call_ids()
        assert len(ids) == len(set(ids)), ids
        for update in self.of(ToolCallStart) + self.of(ToolCallProgress):
            assert update.raw_input is None or isinstance(update.raw_input, dict)
            assert update.raw_output is None or isinstance(update.raw_output, dict)
            assert update.title is None or "{" not in update.title, update.title
        for call_id in ids:
            final = [status for status in self.statuses(call_id) if status is not None]
            assert final[-1] in FINAL, (call_id, final)


@asynccontextmanager
async def agent(
    client: RecordingClient, name: str = "kode-tui-tests"
) -> AsyncIterator[ClientSideConnection]:
    """A `kode-tui acp` process, initialized by a client called `name`, with this test's home
    and environment."""
    async with spawn_agent_process(
        client, sys.executable, "-m", "kode_tui", "acp", env=dict(os.environ)
    ) as (conn, _process):
        info = Implementation(name=name, version="1")
        ready = await asyncio.wait_for(
            conn.initialize(protocol_version=PROTOCOL_VERSION, client_info=info), 60
        )
        assert ready.agent_capabilities is not None and ready.agent_capabilities.load_session
        assert ready.auth_methods == []
        yield conn


def write_call(path: str, content: str) -> tuple[str, str, str]:
    return ("call_w", "WriteFile", json.dumps({"path": path, "content": content}))


def shell_call(call_id: str, command: str) -> tuple[str, str, str]:
    return (call_id, "Shell", json.dumps({"command": command}))


def todo_call(*titles: str) -> tuple[str, str, str]:
    todos = [{"title": title, "status": "in_progress"} for title in titles]
    return ("call_t", "TodoWrite", json.dumps({"todos": todos}))


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
            ["ask", "auto-edit", "plan", "sandbox", "yolo"]
            if sandbox_support().available
            else ["ask", "auto-edit", "plan", "yolo"]
        )
        done = await conn.prompt(session_id=made.session_id, prompt=[text_block("Write notes")])
        advertised = client.of(AvailableCommandsUpdate)[-1].available_commands
        assert {"compact", "revert", "restore", "clear", "context"} <= {c.name for c in advertised}

    assert done.stop_reason == "end_turn"
    assert (project / "notes.txt").read_text() == "hello\n"
    (asked, options) = client.asked[0]
    assert asked.tool_call_id == "call_w" and asked.kind == "edit"
    assert asked.title == "WriteFile notes.txt"  # never the JSON with the file's content
    assert asked.raw_input == {"path": "notes.txt", "content": "hello\n"}
    assert [o.kind for o in options] == ["allow_once", "allow_always", "reject_once"]
    start = client.of(ToolCallStart)[0]
    assert (start.tool_call_id, start.kind, start.title) == ("call_w", "edit", "WriteFile")
    titled = next(u for u in client.of(ToolCallProgress) if u.title)
    assert titled.title == "WriteFile notes.txt" and titled.status is None  # still pending
    # Approved, it runs: `in_progress` with its whole input, then the result.
    assert client.statuses("call_w") == ["pending", None, "in_progress", "completed"]
    final = next(u for u in client.of(ToolCallProgress) if u.status == "completed")
    diff = next(c for c in final.content if isinstance(c, FileEditToolCallContent))
    assert diff.path == str(project / "notes.txt") and diff.new_text == "hello\n"
    assert final.raw_output["is_error"] is False  # an object, as clients' types want
    assert client.text() == "Writing.Done."
    assert client.messages() == ["Writing.", "Done."]  # a tool call came between
    [titled_session] = client.of(SessionInfoUpdate)
    assert titled_session.title == "Write notes" and titled_session.updated_at
    client.check()

    # A new agent process loads the session and replays it.
    again = RecordingClient()
    async with agent(again) as conn:
        await conn.load_session(cwd=str(project), session_id=made.session_id, mcp_servers=[])
    assert again.text(UserMessageChunk) == "Write notes"
    assert again.text() == "Writing.Done."
    replayed = next(u for u in again.of(ToolCallProgress) if u.status == "completed")
    assert any(isinstance(c, FileEditToolCallContent) for c in replayed.content)
    assert again.of(ToolCallStart)[0].title == "WriteFile notes.txt"
    assert again.of(AvailableCommandsUpdate)
    assert [u.title for u in again.of(SessionInfoUpdate)] == ["Write notes"]
    assert again.of(AgentPlanUpdate)[-1].entries == []  # it has no todo list
    again.check()


async def test_calls_are_in_progress_while_they_run_and_every_turn_ends_each_call(
    project: Path, loopback: LLMServer
) -> None:
    loopback.reply_tool_calls(
        [
            write_call("a.txt", "a\n"),
            todo_call("write a"),
            ("call_r", "ReadFile", json.dumps({"path": "README.md"})),
            shell_call("call_g", "while [ ! -e go ]; do sleep 0.05; done; echo went"),
        ]
    )
    loopback.reply_text("Wrote a.")
    client = RecordingClient()
    async with agent(client) as conn:
        made = await conn.new_session(cwd=str(project), mcp_servers=[])
        session = made.session_id
        await conn.set_session_mode(session_id=session, mode_id="yolo")
        turn = asyncio.ensure_future(conn.prompt(session_id=session, prompt=[text_block("a")]))
        # The command runs (it waits for `go`): the client sees it in progress, with its input.
        await client.wait_for(lambda: "in_progress" in client.statuses("call_g"))
        running = next(u for u in client.of(ToolCallProgress) if u.status == "in_progress")
        assert running.tool_call_id == "call_w"  # each call in its turn
        shown = [u for u in client.of(ToolCallProgress) if u.tool_call_id == "call_g"]
        assert shown[-1].raw_input == {
            "command": "while [ ! -e go ]; do sleep 0.05; done; echo went"
        }
        assert shown[-1].title.startswith("Shell: while [ ! -e go ]")
        assert "completed" not in client.statuses("call_g")
        (project / "go").touch()
        done = await asyncio.wait_for(turn, 30)
        assert done.stop_reason == "end_turn" and client.asked == []
        assert (project / "a.txt").read_text() == "a\n"
        assert client.statuses("call_g")[-2:] == ["in_progress", "completed"]
        plan = client.of(AgentPlanUpdate)[-1].entries
        assert [(e.content, e.status) for e in plan] == [("write a", "in_progress")]
        # Shell, TodoWrite and ReadFile give an object as their raw output (Toad drops a string).
        results = {u.tool_call_id: u for u in client.of(ToolCallProgress) if u.status in FINAL}
        assert results["call_g"].raw_output["output"].strip() == "went"
        assert results["call_t"].raw_output["output"] == "Todo list updated"
        assert "Tiny project" in results["call_r"].raw_output["output"]
        assert results["call_r"].raw_output["brief"] == "1 line"

        # In ask mode a rejected edit is not made, and the client sees the call fail.
        await conn.set_session_mode(session_id=session, mode_id="ask")
        loopback.reply_tool_calls([("call_b", *write_call("b.txt", "b\n")[1:])])
        client.answer = "reject"
        done = await conn.prompt(session_id=session, prompt=[text_block("write b")])
        assert done.stop_reason == "end_turn" and not (project / "b.txt").exists()
        assert client.statuses("call_b")[-1] == "failed"

        # A shell call waits for the client; cancelling stops the turn, and the call ends.
        loopback.reply_tool_calls([shell_call("call_s", "echo hi")])
        client.answer = "wait"
        client.asking.clear()
        turn = asyncio.ensure_future(conn.prompt(session_id=session, prompt=[text_block("run")]))
        await asyncio.wait_for(client.asking.wait(), 30)
        assert client.asked[-1][0].kind == "execute"
        assert client.asked[-1][0].title == "Shell: echo hi"
        await conn.cancel(session_id=session)
        assert (await asyncio.wait_for(turn, 30)).stop_reason == "cancelled"
        assert client.statuses("call_s")[-1] == "failed"

        # An edit waiting for the client goes ahead when the mode switches to one allowing it.
        loopback.reply_tool_calls([("call_c", *write_call("c.txt", "c\n")[1:])])
        loopback.reply_text("Wrote c.")
        client.asking.clear()
        turn = asyncio.ensure_future(conn.prompt(session_id=session, prompt=[text_block("c")]))
        await asyncio.wait_for(client.asking.wait(), 30)
        await conn.set_session_mode(session_id=session, mode_id="auto-edit")
        assert (await asyncio.wait_for(turn, 30)).stop_reason == "end_turn"
        assert (project / "c.txt").read_text() == "c\n"
        assert client.statuses("call_c")[-1] == "completed"

        # A running command is stopped by a cancel, and ends `failed` too.
        await conn.set_session_mode(session_id=session, mode_id="yolo")
        loopback.reply_tool_calls([shell_call("call_n", "while true; do sleep 0.05; done")])
        turn = asyncio.ensure_future(conn.prompt(session_id=session, prompt=[text_block("loop")]))
        await client.wait_for(lambda: "in_progress" in client.statuses("call_n"))
        await conn.cancel(session_id=session)
        assert (await asyncio.wait_for(turn, 30)).stop_reason == "cancelled"
        assert client.statuses("call_n")[-1] == "failed"

        # A model call that fails and is tried again says so in a message of its own.
        loopback.reply_status(503, "overloaded")
        loopback.reply_text("Recovered.")
        client.updates.clear()
        done = await conn.prompt(session_id=session, prompt=[text_block("retry")])
        assert done.stop_reason == "end_turn"
        [retry, answer] = client.messages()
        assert re.fullmatch(r".*overloaded.*; retrying in [\d.]+ s \(attempt 2 of 10\)", retry)
        assert answer == "Recovered."

        # A model error is a JSON-RPC error, as Kimi CLI answers; an unknown session is -32002.
        loopback.reply_status(400, "the request is malformed")
        with pytest.raises(RequestError) as failed:
            await conn.prompt(session_id=session, prompt=[text_block("fail")])
        assert failed.value.code == -32603 and "malformed" in str(failed.value)
        for request in (
            conn.prompt(session_id="nope", prompt=[text_block("hi")]),
            conn.set_session_mode(session_id="nope", mode_id="ask"),
            conn.load_session(cwd=str(project), session_id="nope", mcp_servers=[]),
        ):
            with pytest.raises(RequestError) as unknown:
                await request
            assert unknown.value.code == -32002
    client.check()


async def test_revert_and_restore_replay_the_conversation_and_kimi_sessions_load(
    project: Path, loopback: LLMServer, home: Path, tmp_path: Path
) -> None:
    veto = tmp_path / "veto"
    veto.write_text("#!/bin/sh\nif grep -q secret; then echo 'no secrets' >&2; exit 2; fi\n")
    veto.chmod(0o755)
    with (home / "config.toml").open("a") as config:
        config.write(f'\n[[hooks]]\nevent = "UserPromptSubmit"\ncommand = "{veto}"\n')
    loopback.reply_tool_calls([("call_r", "ReadFile", json.dumps({"path": "README.md"}))])
    loopback.reply_text("First answer.")
    loopback.reply_tool_calls([todo_call("second")])
    loopback.reply_text("Second answer.")
    client = RecordingClient()
    async with agent(client) as conn:
        made = await conn.new_session(cwd=str(project), mcp_servers=[])
        for text in ("one", "two"):
            await conn.prompt(session_id=made.session_id, prompt=[text_block(text)])
        assert [e.content for e in client.of(AgentPlanUpdate)[-1].entries] == ["second"]
        await conn.prompt(session_id=made.session_id, prompt=[text_block("/revert")])
        listed = client.text()
        assert "- 0: before the user's “one”" in listed and "before the user's “two”" in listed
        before_two = re.search(r"- (\d+): before the user's “two”", listed)
        assert before_two is not None
        client.updates.clear()
        revert = f"/revert {before_two.group(1)}"
        done = await conn.prompt(session_id=made.session_id, prompt=[text_block(revert)])
        assert done.stop_reason == "end_turn"
        with pytest.raises(RequestError, match="absolute"):
            await conn.new_session(cwd="relative/dir", mcp_servers=[])
        # The replay holds the first turn: its call under a fresh id, no plan (the todo list
        # came later), and the command's reply is a message of its own.
        assert client.text(UserMessageChunk) == "one"
        assert client.messages() == [
            "First answer.",
            f"Reverted to checkpoint {before_two.group(1)}; the rest is kept in context_1.jsonl.",
        ]
        assert client.call_ids() == ["call_r#2"]
        assert client.of(AgentPlanUpdate)[-1].entries == []
        assert len(loopback.requests) == 4  # the commands were no model turns

        # A prompt a hook blocks is refused, and the client is told why.
        client.updates.clear()
        refused = await conn.prompt(session_id=made.session_id, prompt=[text_block("a secret")])
        assert refused.stop_reason == "refusal" and "no secrets" in client.text()

        # Restoring the rotated context brings the whole conversation back, replayed.
        client.updates.clear()
        await conn.prompt(session_id=made.session_id, prompt=[text_block("/restore 1")])
        assert client.text(UserMessageChunk) == "onetwo"
        assert client.text().startswith("First answer.Second answer.")
        assert client.messages()[-1] == (
            "Restored context_1.jsonl; the previous one is kept as context_2.jsonl."
        )
        assert client.call_ids() == ["call_r#3", "call_t#2"]
        assert [e.content for e in client.of(AgentPlanUpdate)[-1].entries] == ["second"]

        # The same agent loads a session Kimi CLI wrote, by its id, from Kimi's own store
        # (the user's: its approvals hold), then by its folder's path; both go on.
        kimi = Path(os.environ["HOME"]) / ".kimi/sessions" / work_dir_hash(project) / "kimi"
        shutil.copytree(KIMI_DEFAULT_FIXTURE, kimi)
        state = json.loads((kimi / "state.json").read_text())
        state["approval"]["yolo"] = True
        (kimi / "state.json").write_text(json.dumps(state))
        client.updates.clear()
        loaded = await conn.load_session(cwd=str(project), session_id="kimi", mcp_servers=[])
        assert loaded.modes is not None and loaded.modes.current_mode_id == "yolo"
        assert client.text(UserMessageChunk).endswith("Count the answers")
        assert "compacted" not in client.text(UserMessageChunk)
        assert "The user said hello twice." in client.text(AgentThoughtChunk)  # the summary
        assert client.text() == "Two answers so far."
        assert client.of(SessionInfoUpdate)[-1].title == "What is here?"
        loopback.reply_text("Three now.")
        done = await conn.prompt(session_id="kimi", prompt=[text_block("Count again")])
        assert done.stop_reason == "end_turn"

        copied = kimi.with_name("kimi-by-path")
        shutil.copytree(KIMI_DEFAULT_FIXTURE, copied)
        await conn.load_session(cwd=str(project), session_id=str(copied), mcp_servers=[])
        loopback.reply_text("Four now.")
        done = await conn.prompt(session_id=str(copied), prompt=[text_block("Once more")])
        assert done.stop_reason == "end_turn"
    assert "Three now." in (kimi / "context.jsonl").read_text()
    assert "Four now." in (copied / "context.jsonl").read_text()
    client.check()


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
    # Toad checks every update against its own types, which have no session_info_update.
    async with agent(client, "toad") as conn:
        for cwd, why in (("/", "is the root folder"), (str(user_home), "is your home folder")):
            with pytest.raises(RequestError, match=why):
                await conn.new_session(cwd=cwd, mcp_servers=[])
            with pytest.raises(RequestError, match=why):
                await conn.load_session(cwd=cwd, session_id=str(shipped), mcp_servers=[])
        made = await conn.new_session(cwd=str(project), mcp_servers=[])
        cleared = await conn.prompt(session_id=made.session_id, prompt=[text_block("/clear")])
        assert cleared.stop_reason == "end_turn"
        assert client.messages() == ["Cleared the conversation."]
        advertised = [c.name for c in client.of(AvailableCommandsUpdate)[-1].available_commands]
        client.updates.clear()
        with pytest.raises(RequestError, match="deeper than 64 levels") as failed:
            await conn.prompt(session_id=made.session_id, prompt=[text_block("/deep")])
        assert failed.value.code == -32603  # a command that cannot run is an error, told
        assert "deep.md has front matter that is nested deeper than 64 levels" in client.text()
        assert loopback.requests == []  # neither was a model turn

        client.updates.clear()
        loaded = await conn.load_session(cwd=str(project), session_id=str(shipped), mcp_servers=[])
        assert loaded.modes is not None and loaded.modes.current_mode_id == "ask"
        assert "is not in your session stores" in client.text()
        # Loaded by its path, the session goes by that path for the client.
        done = await conn.prompt(session_id=str(shipped), prompt=[text_block("go on")])

    assert sorted(advertised) == sorted(set(advertised))
    assert {"clear", "revert", "review"} <= set(advertised) and "deep" not in advertised
    assert done.stop_reason == "end_turn"
    assert [call.tool_call_id for call, _ in client.asked] == ["call_s"]
    assert not (project / "owned").exists()
    assert client.of(SessionInfoUpdate) == []  # the shipped session has a title: not told
    client.check()


async def test_plan_mode_asks_to_approve_the_plan_with_its_text(
    project: Path, loopback: LLMServer, home: Path
) -> None:
    """In plan mode ExitPlanMode's permission request carries the plan's Markdown and offers
    to approve into each mode (the mode before plan first) or reject, staying in plan mode or
    not; approved into auto-edit, the session continues in that mode (the client is told)."""
    session = await Session.create(project)
    session.state.approval_mode = "plan"
    session.state.plan_slug = "plan-acp0test"
    session.save_state()
    plan_file = home / "plans" / "plan-acp0test.md"
    plan = "# Plan\n1. Greet\n"
    args = json.dumps({"path": str(plan_file), "content": plan})
    loopback.reply_tool_calls([("call_p", "WriteFile", args)])
    loopback.reply_tool_calls([("call_x", "ExitPlanMode", "{}")])
    loopback.reply_text("Carrying it out.")
    client = RecordingClient()
    client.answer = "plan:approve:auto-edit"
    async with agent(client) as conn:
        await conn.load_session(cwd=str(project), session_id=session.id, mcp_servers=[])
        done = await conn.prompt(session_id=session.id, prompt=[text_block("Plan a greeting")])

    assert done.stop_reason == "end_turn"
    [(asked, options)] = client.asked  # the plan file was written without asking
    assert asked.tool_call_id == "call_x"
    assert [c.content.text for c in asked.content or []] == [plan]
    ids = [o.option_id for o in options]
    assert ids[:2] == ["plan:approve:ask", "plan:approve:auto-edit"]
    assert "plan:approve:yolo" in ids and "plan:approve:plan" not in ids
    assert ids[-2:] == ["plan:reject", "plan:reject_and_exit"]
    assert [o.kind for o in options][-2:] == ["reject_once", "reject_once"]
    assert plan_file.read_text() == plan
    assert client.of(CurrentModeUpdate)[-1].current_mode_id == "auto-edit"
