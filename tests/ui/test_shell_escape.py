"""`!cmd` from the prompt (a shell command whose output goes into the context, run unasked: the
user typed it), and `/context` adding up to the gauge."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from kode_tui import prompt_history
from kode_tui.config import Config
from kode_tui.message import Message
from kode_tui.session import Context, Session, SessionLocked
from kode_tui.soul.facade import read_record
from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.ui.app import KodeApp
from kode_tui.ui.screens.dialogs import ContextScreen, LockedScreen
from kode_tui.ui.widgets.approval import ApprovalPanel
from kode_tui.ui.widgets.gauge import TokenGauge
from kode_tui.ui.widgets.prompt import PromptInput
from kode_tui.ui.widgets.tool_block import ToolBlock
from tests.conftest import KIMI_FIXTURE
from tests.llm_server import KEY_ENV, LLMServer, loopback_choice
from tests.ui_helpers import make_app, ready, screen_text, send, turn_running, wait_for


def context_messages(app: KodeApp) -> list[Message]:
    assert app.session is not None
    lines = [json.loads(line) for line in app.session.context_file.read_text().splitlines()]
    return [Message.model_validate(line) for line in lines if not line["role"].startswith("_")]


def shown_lines(app: KodeApp) -> list[str]:
    """The screen's lines without the panes' borders and margins."""
    return [line.strip(" │▌┃") for line in screen_text(app).splitlines()]


def shell_line(app: KodeApp, command: str, status: str) -> bool:
    """Whether a Shell block's title line shows `command` and `status` (the exported screen
    drops some spaces between styled spans)."""
    pattern = r"\s*".join(re.escape(word) for word in ["Shell:", *command.split(), *status.split()])
    return re.search(pattern, screen_text(app)) is not None


def request_text(body: dict[str, Any]) -> str:
    """Everything the messages of a request to the loopback server said, as one text."""
    return json.dumps(body["messages"], ensure_ascii=False)


async def test_a_bang_command_runs_shows_its_output_and_goes_with_the_next_request(
    project: Path, server: LLMServer, home: Path
) -> None:
    server.reply_text("It printed a greeting.", usage=(900, 8))
    app = KodeApp(project, Config(), loopback_choice(server, KEY_ENV), yolo=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        prompt = app.screen.query_one(PromptInput)
        prompt.focus()
        prompt.text = "!echo hi-from-bang"
        await pilot.pause()
        assert prompt.has_class("-shell") and "shell" in str(prompt.border_title)

        await pilot.press("enter")
        await wait_for(pilot, lambda: shell_line(app, "echo hi-from-bang", "✔ 1 line of output"))
        await wait_for(pilot, lambda: not turn_running(app))
        # The command's output shows under it, as a Shell call's first lines do.
        await wait_for(pilot, lambda: "hi-from-bang" in shown_lines(app))
        assert not prompt.has_class("-shell")
        assert server.requests == []  # no model turn
        [kept] = [r for m in context_messages(app) if (r := read_record(m)) is not None]
        assert (kept.command, kept.output, kept.is_error) == (
            "echo hi-from-bang",
            "hi-from-bang\n",
            False,
        )

        await send(pilot, "What did it print?")
        await wait_for(pilot, lambda: "It printed a greeting." in screen_text(app))
        await wait_for(pilot, lambda: not turn_running(app))
        # The session is named after what was asked, not after the command run before it.
        assert app.session is not None and app.session.title == "What did it print?"
    [request] = server.requests
    sent = request_text(request)
    assert "!echo hi-from-bang" in sent and "<bash-output>hi-from-bang\\n</bash-output>" in sent
    assert "!echo hi-from-bang" in prompt_history.load(prompt_history.history_file(project))


async def test_in_ask_mode_a_bang_command_runs_unasked_and_a_failing_one_shows_its_exit(
    project: Path,
) -> None:
    """The user typed it: no approval panel, even for a protected file in ask mode; a failing
    command shows its exit code."""
    app = make_app(project, ScriptedProvider([]))
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        assert app.agent_session is not None and app.agent_session.mode == "ask"
        panel = app.screen.query_one(ApprovalPanel)
        await send(pilot, "!touch .envrc made-by-bang.txt")
        await wait_for(pilot, lambda: not turn_running(app) and (project / ".envrc").exists())
        assert panel.current is None and (project / "made-by-bang.txt").exists()

        await send(pilot, "!echo oops; exit 3")
        await wait_for(pilot, lambda: "exit code 3" in screen_text(app))
        await wait_for(pilot, lambda: not turn_running(app))
    first, second = [r for m in context_messages(app) if (r := read_record(m)) is not None]
    assert first.command == "touch .envrc made-by-bang.txt" and not first.is_error
    assert second.is_error and "exit code: 3" in second.status and second.output == "oops\n"


async def test_a_bang_record_survives_resume_and_the_timeline_names_it(project: Path) -> None:
    app = make_app(project, ScriptedProvider([]), yolo=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        await send(pilot, "!echo kept-for-later")
        await wait_for(pilot, lambda: "1 line of output" in screen_text(app))
        await wait_for(pilot, lambda: not turn_running(app))
    session = app.session
    assert session is not None and session.title == "!echo kept-for-later"  # nothing else asked

    again = make_app(project, ScriptedProvider([]), session=session)
    async with again.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        shown = screen_text(again)
        assert "!echo kept-for-later" in shown  # the line typed, and in the timeline
        assert shell_line(again, "echo kept-for-later", "✔ 1 line of output")
        await pilot.click(again.screen.query_one(ToolBlock))  # the full view of its output
        await wait_for(pilot, lambda: "kept-for-later" in shown_lines(again))
        assert "bash-output" not in shown and "<system>" not in shown
        assert again.agent_session is not None
        [checkpoint] = again.agent_session.travel.timeline().checkpoints
        plan = await again.agent_session.travel.revert_plan(checkpoint.id)
        assert plan.label == "!echo kept-for-later"


async def test_esc_stops_a_running_bang_command_and_its_processes(project: Path) -> None:
    app = make_app(project, ScriptedProvider([]), yolo=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        await send(pilot, "!echo $$ > pid.txt; sleep 30")
        pid_file = project / "pid.txt"
        await wait_for(pilot, lambda: pid_file.exists() and pid_file.read_text().strip())
        await pilot.press("escape")
        await wait_for(
            pilot, lambda: not turn_running(app), timeout=20
        )  # well before the 30 s sleep ends
        assert "interrupted" in screen_text(app)
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert [m for m in context_messages(app) if read_record(m) is not None] == []


async def test_a_bang_command_waits_for_no_turn_it_stays_in_the_prompt(project: Path) -> None:
    app = make_app(project, ScriptedProvider([{"text": "slow", "hang": True}]), yolo=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        await send(pilot, "hello")
        await wait_for(pilot, lambda: turn_running(app))
        await send(pilot, "!echo later")
        prompt = app.screen.query_one(PromptInput)
        await wait_for(pilot, lambda: prompt.text == "!echo later")
        notices = [notice.message for notice in app._notifications]
        assert any("`!` commands run between turns" in notice for notice in notices)


# --- /context adds up to the gauge -----------------------------------------------------------


def gauge_tokens(app: KodeApp) -> int:
    status = app.screen.query_one(TokenGauge).status
    assert status is not None
    return status.context_tokens


async def shown_total(app: KodeApp, pilot: Any) -> int:
    """Open /context and read its total row."""
    await send(pilot, "/context")
    await wait_for(pilot, lambda: isinstance(app.screen, ContextScreen))
    [line] = [line for line in screen_text(app).splitlines() if "total (the gauge)" in line]
    total = int(re.findall(r"[\d,]+", line.split("total (the gauge)")[1])[0].replace(",", ""))
    await pilot.press("escape")
    await wait_for(pilot, lambda: not isinstance(app.screen, ContextScreen))
    return total


async def test_context_rows_add_up_to_the_gauge_before_and_after_a_call(project: Path) -> None:
    (project / "AGENTS.md").write_text("Answer in one word.\n")
    provider = ScriptedProvider([{"text": "Hi.", "usage": {"input": 9_000, "output": 10}}])
    app = make_app(project, provider)
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        opened = app.agent_session
        assert opened is not None
        # Before the first request: the known prompt (system prompt, project context, tools).
        await wait_for(pilot, lambda: gauge_tokens(app) > 1000)
        before = await opened.context_report()
        assert before is not None and before.reported_tokens == 0
        assert sum(row.tokens for row in before.rows) == before.context_tokens
        assert before.context_tokens == gauge_tokens(app)
        names = [row.name for row in before.rows]
        assert {"system prompt", "AGENTS.md", "messages"} <= set(names)
        assert any(name.startswith("tool definitions") for name in names)
        assert await shown_total(app, pilot) == gauge_tokens(app)

        await send(pilot, "hello")
        await wait_for(pilot, lambda: "Hi." in screen_text(app) and not turn_running(app))
        after = await opened.context_report()
        assert after is not None and after.reported_tokens == 9_010
        assert sum(row.tokens for row in after.rows) == after.context_tokens == gauge_tokens(app)
        assert await shown_total(app, pilot) == gauge_tokens(app)


async def test_a_read_only_session_runs_no_bang_command(tmp_path: Path) -> None:
    folder = tmp_path / "kimi-session"
    shutil.copytree(KIMI_FIXTURE, folder)
    holder = Context(folder / "context.jsonl")
    await holder.restore()
    session = await Session.from_dir(folder)
    app = make_app(
        tmp_path, ScriptedProvider([]), session=session, locked=SessionLocked(folder / "lock", 1)
    )
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, LockedScreen))
        await pilot.press("r")
        await ready(pilot)
        await send(pilot, "!touch from-read-only.txt")
        prompt = app.screen.query_one(PromptInput)
        await wait_for(pilot, lambda: prompt.text == "!touch from-read-only.txt")
        notices = [notice.message for notice in app._notifications]
        assert any("read-only" in notice for notice in notices)
    await holder.close()
    assert not (tmp_path / "from-read-only.txt").exists()
