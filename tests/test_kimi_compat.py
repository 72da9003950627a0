"""Kimi CLI 1.52's own Context restores the files we write, and we restore the files it writes.

Needs a Python with kimi-cli installed (`../shared/bench/setup_kimi.sh` makes /tmp/kimi-ref);
point KODE_TUI_KIMI_PYTHON at it, or the tests skip.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kode_tui.message import FileEditRecord
from kode_tui.session.context import Context
from tests.session_helpers import user, write_turns


def _kimi_python() -> str | None:
    candidates = [os.environ.get("KODE_TUI_KIMI_PYTHON"), "/tmp/kimi-ref/bin/python"]
    for candidate in candidates:
        if candidate and Path(candidate).exists():
            probe = subprocess.run(
                [candidate, "-c", "import kimi_cli.soul.context"], capture_output=True, timeout=120
            )
            if probe.returncode == 0:
                return candidate
    return None


KIMI_PYTHON = _kimi_python()
pytestmark = pytest.mark.skipif(
    KIMI_PYTHON is None,
    reason="kimi-cli is not installed (run ../shared/bench/setup_kimi.sh, "
    "or set KODE_TUI_KIMI_PYTHON to a Python that has it)",
)

# Prints what Kimi's Context holds, for comparison with ours.
KIMI_PRINT_STATE = textwrap.dedent(
    """
    import json

    def print_state(context):
        print(json.dumps({
            "history": [m.model_dump(mode="json", exclude_none=True) for m in context.history],
            "token_count": context.token_count,
            "n_checkpoints": context.n_checkpoints,
            "system_prompt": context.system_prompt,
        }))
    """
)

KIMI_RESTORE = KIMI_PRINT_STATE + textwrap.dedent(
    """
    import asyncio, json, sys
    from pathlib import Path
    from kimi_cli.soul.context import Context

    async def main():
        context = Context(Path(sys.argv[1]))
        await context.restore()
        print_state(context)

    asyncio.run(main())
    """
)

KIMI_WRITE = KIMI_PRINT_STATE + textwrap.dedent(
    """
    import asyncio, json, sys
    from pathlib import Path
    from kimi_cli.soul.context import Context
    from kosong.message import Message, TextPart, ThinkPart, ToolCall

    async def main():
        context = Context(Path(sys.argv[1]))
        await context.write_system_prompt("You are Kimi — a helper.")
        for turn in range(4):
            await context.checkpoint(add_user_message=turn % 2 == 0)
            await context.append_message(Message(role="user", content=f"turn {turn} ✓"))
            await context.checkpoint(add_user_message=False)
            await context.update_token_count(1000 + turn)
            body = ToolCall.FunctionBody(name="Shell", arguments='{"command": "ls"}')
            call = ToolCall(id=f"c{turn}", function=body)
            await context.append_message(Message(
                role="assistant",
                content=[ThinkPart(think="hmm"), TextPart(text="Listing.")],
                tool_calls=[call],
            ))
            result = Message(role="tool", content="a.py", tool_call_id=f"c{turn}")
            await context.append_message(result)
        await context.revert_to(5)
        await context.append_message(Message(role="user", content="after revert"))
        print_state(context)

    asyncio.run(main())
    """
)


# Runs each script it is sent as `python -c SCRIPT PATH` would, in one process: importing Kimi
# costs most of a second, and the tests here ask Kimi some twenty times.
KIMI_SERVER = textwrap.dedent(
    """
    import contextlib, io, json, os, sys, traceback

    replies = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = ["-c", *request["args"]]
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(request["script"], "<script>", "exec"), {"__name__": "__main__"})
            reply = {"stdout": out.getvalue()}
        except BaseException:
            reply = {"error": traceback.format_exc()}
        replies.write(json.dumps(reply) + "\\n")
        replies.flush()
    """
)

_kimi_server: subprocess.Popen[str] | None = None


@pytest.fixture(scope="module", autouse=True)
def _close_kimi_server() -> Iterator[None]:
    yield
    global _kimi_server
    if _kimi_server is not None and _kimi_server.stdin is not None:
        _kimi_server.stdin.close()
        _kimi_server.wait(timeout=60)
        _kimi_server = None


def kimi(script: str, path: Path) -> dict[str, Any]:
    """What `script` run by Kimi's Python with `path` prints last, as JSON."""
    global _kimi_server
    assert KIMI_PYTHON is not None
    if _kimi_server is None:
        _kimi_server = subprocess.Popen(
            [KIMI_PYTHON, "-c", KIMI_SERVER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,  # a script's failure comes back as its traceback
            text=True,
        )
    assert _kimi_server.stdin is not None and _kimi_server.stdout is not None
    env = {**os.environ, "HOME": str(path.parent)}
    request = {"script": script, "args": [str(path)], "env": env}
    _kimi_server.stdin.write(json.dumps(request) + "\n")
    _kimi_server.stdin.flush()
    line = _kimi_server.stdout.readline()
    assert line, "Kimi's Python ended"
    reply = json.loads(line)
    assert "error" not in reply, reply["error"]
    result: dict[str, Any] = json.loads(reply["stdout"].strip().splitlines()[-1])
    return result


def ours(context: Context) -> dict[str, Any]:
    return {
        "history": [json.loads(m.to_json()) for m in context.history],
        # Kimi takes the last `_usage` for the size. So do we when the model reported it; a
        # compaction's (before checkpoint 1) is an estimate we count afresh (`Scan.token_count`).
        "token_count": context.token_count or last_usage(context.path),
        "n_checkpoints": context.n_checkpoints,
        "system_prompt": context.system_prompt,
    }


def last_usage(path: Path) -> int:
    counts = [r["token_count"] for r in map(json.loads, path.open()) if r["role"] == "_usage"]
    return counts[-1] if counts else 0


def kimi_view(state: dict[str, Any]) -> dict[str, Any]:
    """Kimi reads `content: [one text part]` back as a plain string; so compare that way."""
    for message in state["history"]:
        content = message.get("content")
        if isinstance(content, list) and len(content) == 1 and content[0].get("type") == "text":
            message["content"] = content[0]["text"]
    return state


async def test_kimi_restores_what_we_write_including_after_a_revert(tmp_path: Path) -> None:
    live = tmp_path / "session" / "context.jsonl"
    async with Context(live) as context:
        await context.write_system_prompt("You are kode — a helper.")
        await write_turns(context, 4)
        await context.append_file_edit(FileEditRecord(path="a.py", before=None, after="ab"))
        await context.checkpoint(add_user_message=True)
        await context.revert_to(5)
        await context.append_message(user("after the revert ✓"))
        expected = kimi_view(ours(context))
    assert kimi(KIMI_RESTORE, live) == expected
    (rotated,) = context.rotations()
    restored = Context(rotated.path.with_name("copy") / "context.jsonl")
    rotated.path.with_name("copy").mkdir()
    (rotated.path.with_name("copy") / "context.jsonl").write_bytes(rotated.path.read_bytes())
    await restored.restore()
    assert kimi(KIMI_RESTORE, restored.path) == kimi_view(ours(restored))
    await restored.close()


async def test_we_restore_what_kimi_writes(tmp_path: Path) -> None:
    live = tmp_path / "session" / "context.jsonl"
    live.parent.mkdir()
    written_by_kimi = kimi(KIMI_WRITE, live)
    context = Context(live)
    await context.restore()
    assert context.warnings == []
    assert kimi_view(ours(context)) == written_by_kimi
    assert [r.number for r in context.rotations()] == [1]
    # Our revert of Kimi's file stays readable by Kimi.
    await context.revert_to(3)
    await context.append_message(user("ours now"))
    expected = kimi_view(ours(context))
    await context.close()
    assert kimi(KIMI_RESTORE, live) == expected


async def test_kimi_restores_a_session_our_agent_wrote(tmp_path: Path) -> None:
    from kode_tui.config import Config, resolve_model
    from kode_tui.session import Session
    from kode_tui.soul.agent import open_agent
    from kode_tui.soul.llm.demo import DemoProvider

    project = tmp_path / "project"
    project.mkdir()
    (project / "README.md").write_text("# Demo\n")
    session = await Session.create(project)
    agent = await open_agent(
        session,
        Config(),
        resolve_model(Config()),
        provider=DemoProvider(delay=0),
        approval_override="yolo",
    )
    assert (await agent.soul.run("Show me around")).stop_reason == "done"
    await agent.close()

    async with Context(session.context_file) as context:
        await context.restore()
        expected = kimi_view(ours(context))
    assert '"_file_edit"' in session.context_file.read_text()
    assert kimi(KIMI_RESTORE, session.context_file) == expected


async def test_kimi_restores_a_session_whose_shell_edits_were_recorded_and_reverted(
    tmp_path: Path,
) -> None:
    from tests.session.test_shell_snapshots import make_project, shell_turns
    from tests.session.test_timetravel import user_checkpoint

    project = make_project(tmp_path)
    agent = await shell_turns(project, "echo after > change.txt && rm gone.txt", "echo x > y")
    await agent.soul.travel.revert(user_checkpoint(agent, "turn 1"), files=True)
    await agent.close()

    async with Context(agent.session.context_file) as context:
        await context.restore()
        expected = kimi_view(ours(context))
    assert '"_file_edit"' in agent.session.context_file.read_text()
    assert kimi(KIMI_RESTORE, agent.session.context_file) == expected


async def test_kimi_restores_a_session_we_compacted(tmp_path: Path) -> None:
    from kode_tui.config import Config, resolve_model
    from kode_tui.session import Session
    from kode_tui.soul.agent import open_agent
    from kode_tui.soul.llm.scripted import ScriptedProvider

    project = tmp_path / "project"
    project.mkdir()
    provider = ScriptedProvider(
        [
            {"text": "First answer."},
            {"text": "Second answer."},
            {"text": "<current_focus>\nAnswering\n</current_focus>"},
            {"text": "Third answer."},
        ]
    )
    session = await Session.create(project)
    agent = await open_agent(session, Config(), resolve_model(Config()), provider=provider)
    await agent.soul.run("one")
    await agent.soul.run("two")
    assert await agent.soul.compact()
    await agent.soul.run("three")
    await agent.close()

    async with Context(session.context_file) as context:
        await context.restore()
        expected = kimi_view(ours(context))
    assert "compacted" in expected["history"][1]["content"][0]["text"]
    assert kimi(KIMI_RESTORE, session.context_file) == expected
    for rotated in session.dir.glob("context_*.jsonl"):
        async with Context(rotated) as old:
            await old.restore()
            assert kimi(KIMI_RESTORE, rotated) == kimi_view(ours(old))


async def test_kimi_restores_its_session_after_we_restored_a_rotation_and_back(
    tmp_path: Path,
) -> None:
    import shutil

    from tests.conftest import KIMI_FIXTURE

    folder = tmp_path / "kimi-session"
    shutil.copytree(KIMI_FIXTURE, folder)
    original = (folder / "context.jsonl").read_bytes()
    async with Context(folder / "context.jsonl") as context:
        await context.restore()
        rotated = await context.restore_from(folder / "context_1.jsonl")
        assert rotated is not None
        assert kimi(KIMI_RESTORE, folder / "context.jsonl") == kimi_view(ours(context))
        await context.restore_from(rotated)
        expected = kimi_view(ours(context))
    assert (folder / "context.jsonl").read_bytes() == original
    assert kimi(KIMI_RESTORE, folder / "context.jsonl") == expected


KIMI_READ_WIRE = textwrap.dedent(
    """
    import json, sys
    from kimi_cli.wire.file import WireFileMetadata, parse_wire_file_line

    read, unread = [], []
    for line in open(sys.argv[1], encoding="utf-8"):
        kind = json.loads(line).get("message", {}).get("type", "metadata")
        try:
            record = parse_wire_file_line(line)
            if not isinstance(record, WireFileMetadata):
                record.to_wire_message()
            read.append(kind)
        except Exception:
            unread.append(kind)
    print(json.dumps({"read": sorted(set(read)), "unread": sorted(set(unread))}))
    """
)


async def test_kimi_reads_the_wire_records_it_has_types_for(tmp_path: Path) -> None:
    # Our tool results and approval requests are in Kimi's shapes. (Records of events Kimi has
    # no type for make its shell replay a resumed session from context.jsonl instead.)
    from kode_tui.config import Config, resolve_model
    from kode_tui.session import Session
    from kode_tui.soul.agent import open_agent
    from kode_tui.soul.llm.scripted import ScriptedProvider
    from kode_tui.wire import events

    project = tmp_path / "project"
    project.mkdir()
    provider = ScriptedProvider(
        [
            {
                "text": "Writing and running it.",
                "tool_calls": [
                    {"name": "WriteFile", "arguments": {"path": "a.py", "content": "print(1)\n"}},
                    {"name": "Shell", "arguments": {"command": "python3 a.py"}},
                ],
            },
            {"text": "Done."},
        ]
    )
    session = await Session.create(project)
    agent = await open_agent(session, Config(), resolve_model(Config()), provider=provider)
    agent.bus.subscribe(events.ApprovalRequest, callback=lambda request: request.resolve("approve"))
    assert (await agent.soul.run("Write a.py and run it")).stop_reason == "done"
    await agent.close()

    seen = kimi(KIMI_READ_WIRE, session.wire_file)
    for kind in ("metadata", "TurnBegin", "StepBegin", "ContentPart", "ToolCall", "ToolResult"):
        assert kind in seen["read"], kind
    assert "ApprovalRequest" in seen["read"]
    assert not {"ToolResult", "ApprovalRequest", "StatusUpdate", "TurnEnd"} & set(seen["unread"])


async def test_kimi_reads_the_interrupted_result_given_to_an_unanswered_tool_call(
    tmp_path: Path,
) -> None:
    from tests.session_helpers import assistant_with_tool_call

    live = tmp_path / "session" / "context.jsonl"
    live.parent.mkdir()
    # A kill left the tool call without its result.
    live.write_text(
        user("list").to_json() + "\n" + assistant_with_tool_call("call_cut", "ls").to_json() + "\n"
    )
    async with Context(live) as context:
        await context.restore()
        expected = kimi_view(ours(context))
    assert expected["history"][-1]["tool_call_id"] == "call_cut"
    assert kimi(KIMI_RESTORE, live) == expected


KIMI_REWRITE_STATE = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from kimi_cli.session_state import load_session_state, save_session_state

    # What Kimi does after a turn (it names the session): load, change a key, save.
    folder = Path(sys.argv[1]).parent
    state = load_session_state(folder)
    state.custom_title = "Named by Kimi"
    save_session_state(state, folder)
    print(json.dumps({"yolo": state.approval.yolo}))
    """
)


@pytest.mark.parametrize("mode", ["yolo", "ask"])
async def test_a_state_json_kimi_rewrites_keeps_our_approval_mode(
    tmp_path: Path, mode: str
) -> None:
    from kode_tui.session import Session

    project = tmp_path / "project"
    project.mkdir()
    session = await Session.create(project)
    session.state.approval_mode = mode  # type: ignore[assignment]
    session.save_state()

    assert kimi(KIMI_REWRITE_STATE, session.state_file) == {"yolo": mode == "yolo"}

    assert "approval_mode" not in json.loads(session.state_file.read_text())  # Kimi dropped it
    reopened = await Session.from_dir(session.dir)
    assert reopened.state.approval_mode == mode
    assert reopened.state.custom_title == "Named by Kimi"


async def test_kimi_restores_a_compaction_whose_summary_was_edited_in_review(
    tmp_path: Path,
) -> None:
    from kode_tui.config import Config, resolve_model
    from kode_tui.session import Session
    from kode_tui.soul.agent import open_agent
    from kode_tui.soul.llm.scripted import ScriptedProvider

    project = tmp_path / "project"
    project.mkdir()
    provider = ScriptedProvider(
        [{"text": "First."}, {"text": "Second."}, {"text": "THE MODEL'S SUMMARY"}]
    )
    session = await Session.create(project)
    agent = await open_agent(session, Config(), resolve_model(Config()), provider=provider)
    await agent.soul.run("one")
    await agent.soul.run("two")
    plan = await agent.soul.compactor.plan(None)
    assert plan is not None
    await agent.soul.compactor.apply(plan.with_summary("THE USER'S SUMMARY"))
    await agent.close()

    async with Context(session.context_file) as context:
        await context.restore()
        expected = kimi_view(ours(context))
    restored = kimi(KIMI_RESTORE, session.context_file)
    assert restored == expected
    assert "THE USER'S SUMMARY" in json.dumps(restored["history"])


async def test_kimi_reads_the_size_of_a_context_we_compacted(tmp_path: Path) -> None:
    from kode_tui.config import Config, resolve_model
    from kode_tui.session import Session
    from kode_tui.soul.agent import open_agent
    from kode_tui.soul.llm.scripted import ScriptedProvider

    project = tmp_path / "project"
    project.mkdir()
    summary = "<current_focus>\nAnswering\n</current_focus>"
    provider = ScriptedProvider([{"text": "One."}, {"text": "Two."}, {"text": summary}])
    session = await Session.create(project)
    agent = await open_agent(session, Config(), resolve_model(Config()), provider=provider)
    await agent.soul.run("one")
    await agent.soul.run("two")
    assert await agent.soul.compact()
    shown = agent.soul.status().context_tokens
    await agent.close()

    assert kimi(KIMI_RESTORE, session.context_file)["token_count"] == shown > 0


@pytest.mark.parametrize("name", ["kimi-default", "kimi-okabe"])
async def test_kimi_restores_its_session_after_our_turn_and_compaction(
    tmp_path: Path, name: str
) -> None:
    import shutil

    from kode_tui.config import Config, resolve_model
    from kode_tui.session import Session
    from kode_tui.soul.agent import open_agent
    from kode_tui.soul.llm.scripted import ScriptedProvider
    from tests.conftest import KIMI_FIXTURE

    folder = tmp_path / name
    shutil.copytree(KIMI_FIXTURE.with_name(name), folder)
    summary = "<current_focus>\nAnswering\n</current_focus>"
    provider = ScriptedProvider([{"text": "Ours."}, {"text": summary}])
    (tmp_path / "work").mkdir()
    session = await Session.from_dir(folder, tmp_path / "work")
    agent = await open_agent(session, Config(), resolve_model(Config()), provider=provider)
    await agent.soul.run("one of ours")
    assert await agent.soul.compact()
    await agent.close()

    for path in folder.glob("context*.jsonl"):
        async with Context(path) as context:
            await context.restore()
            assert kimi(KIMI_RESTORE, path) == kimi_view(ours(context)), path.name
    assert kimi(KIMI_RESTORE, folder / "context.jsonl")["token_count"] > 0


@pytest.mark.parametrize("name", ["kimi-default", "kimi-okabe"])
async def test_kimi_continues_its_session_after_we_compacted_it(tmp_path: Path, name: str) -> None:
    import shutil

    from kode_tui.config import Config, resolve_model
    from kode_tui.session import Session
    from kode_tui.soul.agent import open_agent
    from kode_tui.soul.llm.scripted import ScriptedProvider
    from tests.conftest import KIMI_FIXTURE
    from tests.kimi_helpers import kimi_session_dir, run_kimi
    from tests.llm_server import LLMServer

    folder = tmp_path / name
    shutil.copytree(KIMI_FIXTURE.with_name(name), folder)
    work_dir = tmp_path / "work"
    work_dir.mkdir()
    summary = "<current_focus>\nAnswering\n</current_focus>"
    provider = ScriptedProvider([{"text": "Ours."}, {"text": summary}])
    session = await Session.from_dir(folder, work_dir)
    agent = await open_agent(session, Config(), resolve_model(Config()), provider=provider)
    await agent.soul.run("one of ours")
    assert await agent.soul.compact()
    await agent.close()

    assert KIMI_PYTHON is not None
    with LLMServer() as server:
        server.reply_text("Kimi goes on.", usage=(321, 4))
        plan = {
            "url": server.url,
            "work_dir": str(work_dir),
            "session_id": folder.name,
            "agent": "okabe" if name == "kimi-okabe" else "default",
            "turns": [{"input": "and now Kimi"}],
            "continue_dir": str(folder),
        }
        done = run_kimi(KIMI_PYTHON, plan, tmp_path / "kimi-home")
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr
    # Kimi sent what we left (our compaction's summary) and kept its answer after it.
    sent = [m.get("content") for m in server.requests[0]["messages"]]
    assert any("compacted" in json.dumps(content) for content in sent)
    written = [json.loads(line) for line in (kimi_session_dir(done) / "context.jsonl").open()]
    assert written[-2:] == [
        {"role": "assistant", "content": "Kimi goes on."},
        {"role": "_usage", "token_count": 325},
    ]


async def test_kimi_restores_a_session_we_dropped_a_tool_call_from(tmp_path: Path) -> None:
    from kode_tui.config import Config, ModelChoice
    from kode_tui.soul.facade import AgentSession
    from kode_tui.soul.llm.scripted import ScriptedProvider

    project = tmp_path / "project"
    project.mkdir()
    (project / "README.md").write_text("# Tiny\n")
    script: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "ReadFile", "arguments": {"path": "README.md"}}]},
        {"text": "It is tiny."},
    ]
    opened = await AgentSession.open(project)
    choice = ModelChoice(name="scripted", model="scripted", source="flag")
    await opened.start(Config(), choice, provider=ScriptedProvider(script), yolo=True)
    await opened.run("read it")
    history = list(opened.travel.timeline().history)
    await opened.drops.apply(
        opened.drops.plan([i for i, m in enumerate(history) if m.role == "tool"])
    )
    await opened.close()

    async with Context(opened.session.context_file) as context:
        await context.restore()
        expected = kimi_view(ours(context))
    assert not any(m["role"] == "tool" for m in expected["history"])
    assert kimi(KIMI_RESTORE, opened.session.context_file) == expected


async def test_kimi_reads_a_state_json_with_pins_and_after_its_rewrite_they_come_back(
    tmp_path: Path,
) -> None:
    from kode_tui.session import Session
    from kode_tui.session.state import Pin

    project = tmp_path / "project"
    project.mkdir()
    session = await Session.create(project)
    session.state.pins = [Pin(text="Tabs, not spaces.")]
    session.state.approval_mode = "auto-edit"
    session.save_state()

    assert kimi(KIMI_REWRITE_STATE, session.state_file) == {"yolo": False}

    # Kimi's writer keeps only the keys it knows; ours come back from state.kode.json.
    assert "pins" not in json.loads(session.state_file.read_text())
    reopened = await Session.from_dir(session.dir)
    assert [pin.text for pin in reopened.state.pins] == ["Tabs, not spaces."]
    assert reopened.state.approval_mode == "auto-edit"
    assert reopened.state.custom_title == "Named by Kimi"


async def test_kimi_restores_every_file_after_pins_a_drop_a_fork_and_a_reviewed_compaction(
    tmp_path: Path,
) -> None:
    from kode_tui.config import Config, ModelChoice
    from kode_tui.soul.facade import AgentSession
    from kode_tui.soul.llm.scripted import ScriptedProvider

    project = tmp_path / "project"
    project.mkdir()
    (project / "README.md").write_text("# Tiny\n")
    read = {"tool_calls": [{"name": "ReadFile", "arguments": {"path": "README.md"}}]}
    script: list[dict[str, Any]] = [read, {"text": "It is tiny."}, {"text": "Two."}]
    choice = ModelChoice(name="scripted", model="scripted", source="flag")
    opened = await AgentSession.open(project)
    await opened.start(Config(), choice, provider=ScriptedProvider(script), yolo=True)
    await opened.pins.add("Tabs, not spaces.")
    await opened.run("read it")
    await opened.run("and again")
    history = list(opened.travel.timeline().history)
    await opened.drops.apply(
        opened.drops.plan([i for i, m in enumerate(history) if m.role == "tool"])
    )
    fork = await opened.lineage.fork()
    await opened.close()

    forked = await AgentSession.open(project, fork)
    summary = {"text": "THE MODEL'S SUMMARY"}
    await forked.start(Config(), choice, provider=ScriptedProvider([summary]), yolo=True)
    await forked.pins.add("Only in the fork.")
    plan = await forked.compaction.plan()
    assert plan is not None
    await forked.compaction.apply(plan, "THE USER'S SUMMARY")
    await forked.close()

    folders = [opened.session.dir, fork.dir]
    for folder in folders:
        files = sorted(folder.glob("context*.jsonl"))
        assert files, folder
        for path in files:
            async with Context(path) as context:
                await context.restore()
                assert kimi(KIMI_RESTORE, path) == kimi_view(ours(context)), path
        # Kimi renames the session (rewriting state.json); our keys come back.
        kimi(KIMI_REWRITE_STATE, folder / "state.json")
    assert len(list(fork.dir.glob("context_*.jsonl"))) == 1  # the compaction's rotation
    restored = kimi(KIMI_RESTORE, fork.dir / "context.jsonl")
    assert "THE USER'S SUMMARY" in json.dumps(restored["history"])

    from kode_tui.session import Session

    original, copy = [await Session.from_dir(folder) for folder in folders]
    assert [p.text for p in original.state.pins] == ["Tabs, not spaces."]
    assert [p.text for p in copy.state.pins] == ["Tabs, not spaces.", "Only in the fork."]
    assert copy.state.forked_from is not None
    assert copy.state.forked_from.session == original.id
    assert copy.state.custom_title == "Named by Kimi"
