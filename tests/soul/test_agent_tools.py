"""The real tool set inside the loop: whatever the model sends, the turn goes on."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from kode_tui.config import Config, SandboxConfig, resolve_model
from kode_tui.session import Session
from kode_tui.soul.agent import open_agent
from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.wire import events as ev


def call(name: str, arguments: object) -> dict[str, object]:
    return {"name": name, "arguments": arguments}


async def test_bad_calls_of_the_real_tools_are_errors_for_the_model(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.txt").write_text("alpha\n")
    outside = tmp_path / "secret.txt"
    outside.write_text("outside\n")
    script = [
        {
            "tool_calls": [
                call("ReadFile", {"path": "missing.txt"}),
                call("ReadFile", {"path": 42}),
                call("ReadFile", '{"path": '),
                call("StrReplaceFile", {"path": "a.txt", "edit": {"old": "beta", "new": "x"}}),
                call("Shell", {"command": "exit 3"}),
                call("Glob", {"pattern": "../*.txt"}),
                call("ReadFile", {"path": str(outside)}),
                call("WriteFile", {"path": str(tmp_path / "new.txt"), "content": "x"}),
            ]
        },
        {"text": "I will try again more carefully."},
    ]
    provider = ScriptedProvider(script)
    session = await Session.create(project)
    agent = await open_agent(session, Config(), resolve_model(Config()), provider=provider)
    requests: list[ev.ApprovalRequest] = []

    def answer(event: ev.ApprovalRequest) -> None:
        requests.append(event)
        if event.tool_name == "ReadFile":
            event.resolve("approve_for_session")
        elif event.tool_name == "Shell":
            event.resolve("approve")
        else:
            event.resolve(ev.RejectWithFeedback(feedback="stay in the project"))

    seen = agent.bus.subscribe(ev.ApprovalRequest, callback=answer)
    result = await agent.soul.run("break things")
    await seen.join()
    await agent.close()

    assert result.stop_reason == "done"
    history = provider.requests[1].history
    tool_texts = [m.text for m in history if m.role == "tool"]
    assert len(tool_texts) == 8
    assert all("ERROR" in text for text in tool_texts[:6])
    assert "outside" in tool_texts[6]  # approved: the file was read
    assert "User feedback: stay in the project" in tool_texts[7]
    assert "exit code: 3" in tool_texts[4]
    assert [(r.tool_name, r.outside_work_dir) for r in requests] == [
        ("Shell", False),
        ("ReadFile", True),
        ("WriteFile", True),
    ]
    assert session.state.session_approvals == []  # nothing outside is approved for the session
    assert not (tmp_path / "new.txt").exists()
    assert (project / "a.txt").read_text() == "alpha\n"


async def test_a_nul_byte_in_any_argument_is_a_clear_error_for_the_model(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.txt").write_text("alpha\n")
    calls = [
        call("ReadFile", {"path": "a.txt\0../../etc/passwd"}),
        call("WriteFile", {"path": "b\0.txt", "content": "x"}),
        call("StrReplaceFile", {"path": "a\0.txt", "edit": {"old": "alpha", "new": "b"}}),
        call("StrReplaceFile", {"path": "a.txt", "edit": [{"old": "alpha\0", "new": "b"}]}),
        call("Glob", {"pattern": "*.txt", "directory": "sub\0dir"}),
        call("Grep", {"pattern": "alpha", "path": "a\0.txt"}),
        call("Shell", {"command": "echo a\0b"}),
    ]
    provider = ScriptedProvider([{"tool_calls": calls}, {"text": "ok"}])
    session = await Session.create(project)
    agent = await open_agent(session, Config(), resolve_model(Config()), provider=provider)
    asked: list[ev.ApprovalRequest] = []
    seen = agent.bus.subscribe(ev.ApprovalRequest, callback=asked.append)
    result = await agent.soul.run("nul")
    await seen.join()
    await agent.close()

    assert result.stop_reason == "done"
    assert asked == []  # refused before anyone is asked
    tool_texts = [m.text for m in provider.requests[1].history if m.role == "tool"]
    fields = ["path", "path", "path", "edit.0.old", "directory", "path", "command"]
    assert len(tool_texts) == len(fields)
    for text, field in zip(tool_texts, fields, strict=True):
        assert f"`{field}` contains a NUL byte" in text
        assert "unexpected error" not in text
    assert (project / "a.txt").read_text() == "alpha\n"


@pytest.mark.parametrize("depth", [5_000, 100_000])
def test_arguments_nested_too_deeply_are_a_clear_error_for_the_model(depth: int) -> None:
    from kode_tui.message import FunctionBody, ToolCall
    from kode_tui.tools.files import ReadFile
    from kode_tui.tools.toolset import Toolset

    raw = '{"path": "a.txt", "x": ' + "[" * depth + "]" * depth + "}"
    call = ToolCall(id="c", function=FunctionBody(name="ReadFile", arguments=raw))

    prepared = Toolset([ReadFile()]).prepare(call)

    assert prepared.error is not None
    assert prepared.error.is_error and "nested too deeply" in prepared.error.message


@pytest.mark.skipif(
    not Path("/proc/self/environ").exists(), reason="finding background jobs needs Linux /proc"
)
async def test_closing_the_agent_stops_the_background_jobs_of_its_commands(tmp_path: Path) -> None:
    import os
    import signal

    project = tmp_path / "project"
    project.mkdir()
    command = "sleep 300 > /dev/null 2>&1 & echo $! > pid"
    provider = ScriptedProvider(
        [{"tool_calls": [call("Shell", {"command": command})]}, {"text": "ok"}]
    )
    session = await Session.create(project)
    # Outside the sandbox (in it, the job ends with its command: tests/tools/test_sandbox.py).
    config = Config(sandbox=SandboxConfig(enabled=False))
    agent = await open_agent(
        session, config, resolve_model(config), provider=provider, approval_override="yolo"
    )
    assert (await agent.soul.run("start a server")).stop_reason == "done"
    pid = int((project / "pid").read_text())
    try:
        os.kill(pid, 0)  # the job outlived its command, as the Shell tool says

        await agent.close()

        assert (
            not Path(f"/proc/{pid}").exists()
            or "Z" in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        )
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
