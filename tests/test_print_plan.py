"""Print mode's `--permission-mode` (plan mode above all): the modes by name, and a plan-mode
turn that ends with its plan as the result, as a script reads it (cli.main, in process, with the
loopback model server)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from kode_tui.session import Session
from tests.cli_helpers import Kode, in_process
from tests.llm_server import KEY_ENV, LLMServer, write_loopback_config

PLAN = "# Plan\n1. Add greet() to hello.py\n2. Test it\n"


@pytest.fixture
def kode(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Kode:
    return in_process(capsys, monkeypatch)


def planning_session(project: Path, home: Path) -> tuple[str, Path]:
    """A session whose plan file is named already (as a plan-mode session's is): its id and
    the plan file, so the scripted model can write there."""

    async def create() -> Session:
        return await Session.create(project)

    session = asyncio.run(create())
    session.state.plan_slug = "plan-0a1b2c3d"
    session.save_state()
    return session.id, home / "plans" / "plan-0a1b2c3d.md"


def script_a_plan(server: LLMServer, plan_file: Path) -> None:
    """The model tries an edit (refused), writes the plan file, then asks to approve it."""
    server.reply_tool_calls(
        [
            ("call_edit", "WriteFile", json.dumps({"path": "code.py", "content": "x = 1\n"})),
            ("call_plan", "WriteFile", json.dumps({"path": str(plan_file), "content": PLAN})),
        ],
        text="Planning.",
    )
    server.reply_tool_calls([("call_exit", "ExitPlanMode", "{}")])


def test_plan_mode_streams_the_plan_and_ends_the_turn_with_it_as_the_result(
    project: Path, home: Path, server: LLMServer, kode: Kode
) -> None:
    write_loopback_config(home, server, KEY_ENV)
    session_id, plan_file = planning_session(project, home)
    script_a_plan(server, plan_file)

    done = kode(
        *("-S", session_id, "--print", "--permission-mode", "plan"),
        *("--output-format", "stream-json", "-p", "Add a greeting", str(project)),
    )

    assert done.returncode == 0, done.stderr
    values = [json.loads(line) for line in done.stdout.splitlines()]
    [shown] = [v for v in values if v["type"] == "plan_display"]
    assert (shown["content"], shown["file_path"]) == (PLAN, str(plan_file))
    result = values[-1]
    assert result["type"] == "result"
    assert (result["stop_reason"], result["result"], result["is_error"]) == ("plan", PLAN, False)
    edit = next(
        v for v in values if v["type"] == "tool_result" and v["tool_call_id"] == "call_edit"
    )
    assert "Plan mode is active" in edit["message"]
    assert not (project / "code.py").exists()
    assert plan_file.read_text() == PLAN
    # The mode was for this run only: the session's own mode is unchanged.
    state = json.loads(next(home.glob(f"sessions/*/{session_id}/state.json")).read_text())
    assert state.get("plan_mode") is not True


def test_plan_mode_in_text_prints_the_plan_and_bad_modes_are_one_line(
    project: Path, home: Path, server: LLMServer, kode: Kode
) -> None:
    write_loopback_config(home, server, KEY_ENV)
    session_id, plan_file = planning_session(project, home)
    script_a_plan(server, plan_file)

    done = kode("-S", session_id, "--permission-mode", "plan", "-p", "Add it", str(project))

    assert done.returncode == 0, done.stderr
    assert PLAN in done.stdout
    assert "the plan above waits for approval" in done.stderr

    bad = kode("--print", "--permission-mode", "planning", "-p", "hi", str(project))
    assert bad.returncode == 2 and len(bad.stderr.splitlines()) == 1
    assert "planning" in bad.stderr and bad.stdout == ""
    both = kode("--print", "--yolo", "--permission-mode", "ask", "-p", "hi", str(project))
    assert both.returncode == 2 and both.stderr == (
        "kode-tui: --yolo and --permission-mode ask disagree.\n"
    )
    alone = kode("--permission-mode", "ask", str(project))
    assert alone.returncode == 2 and "goes with --print" in alone.stderr
    with (home / "config.toml").open("a") as config:
        config.write("[sandbox]\nenabled = false\n")
    asked = len(server.requests)
    off = kode("--print", "--permission-mode", "sandbox", "-p", "hi", str(project))
    assert off.returncode == 2 and off.stderr == (
        "kode-tui: the sandbox mode needs the Shell sandbox, which is off here.\n"
    )
    assert len(server.requests) == asked  # nothing was sent to the model
