"""The whole app driven with Pilot: what the user sees, and what lands on disk."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from kode_tui.config import load_config
from kode_tui.message import Message, is_checkpoint_note
from kode_tui.session import Context, Session, SessionLocked
from kode_tui.soul.llm.demo import NOTES_FILE, DemoProvider
from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.soul.stream import INTERRUPTED_NOTE
from kode_tui.ui.screens.dialogs import ContextScreen, LockedScreen
from kode_tui.ui.screens.help import HelpScreen
from kode_tui.ui.screens.sessions import SessionPicker
from kode_tui.ui.widgets.approval import ApprovalPanel
from kode_tui.ui.widgets.conversation import Conversation
from kode_tui.ui.widgets.gauge import TokenGauge
from kode_tui.ui.widgets.history import HistoryPane
from kode_tui.ui.widgets.prompt import PromptInput
from kode_tui.ui.widgets.timeline import CheckpointTimeline
from tests.conftest import KIMI_FIXTURE
from tests.ui_helpers import make_app, ready, screen_text, send, started, turn_running, wait_for


def records(session: Session | None) -> list[dict[str, Any]]:
    assert session is not None
    return [json.loads(line) for line in session.context_file.read_text().splitlines()]


async def test_first_run_demo_banner_then_approve_an_edit_with_y(project: Path) -> None:
    app = make_app(project, DemoProvider(delay=0))
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        assert "Offline demo" in screen_text(app) and "not an LLM" in screen_text(app)

        await send(pilot, "What is this?")
        panel = app.screen.query_one(ApprovalPanel)
        await wait_for(pilot, lambda: panel.current is not None)
        assert "WriteFile" in screen_text(app) and "+# Notes from the kode-tui demo" in screen_text(
            app
        )
        await pilot.press("y")
        await wait_for(pilot, lambda: not turn_running(app))

        assert (project / NOTES_FILE).exists()
        assert len(app.screen.query_one(CheckpointTimeline).checkpoint_ids) >= 5
        assert "✎" in screen_text(app)
        gauge = app.screen.query_one(TokenGauge)
        assert "0%" not in str(gauge.render()) or "1%" in str(gauge.render())
        assert "That was the whole demo" in screen_text(app)
    assert any(r["role"] == "_file_edit" for r in records(app.session))


async def test_n_rejects_and_the_turn_ends(project: Path) -> None:
    app = make_app(project, DemoProvider(delay=0))
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        await send(pilot, "go")
        panel = app.screen.query_one(ApprovalPanel)
        await wait_for(pilot, lambda: panel.current is not None)
        await pilot.press("n")
        await wait_for(pilot, lambda: not turn_running(app))
        assert not (project / NOTES_FILE).exists()
        assert "That was the whole demo" not in screen_text(app)
    tools = [r for r in records(app.session) if r["role"] == "tool"]
    assert "rejected by the user" in tools[-1]["content"][0]["text"]


async def test_f_sends_feedback_and_the_turn_goes_on(project: Path) -> None:
    app = make_app(project, DemoProvider(delay=0))
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        await send(pilot, "go")
        panel = app.screen.query_one(ApprovalPanel)
        await wait_for(pilot, lambda: panel.current is not None)
        await pilot.press("f")
        await pilot.press(*"not now")
        await pilot.press("enter")
        await wait_for(pilot, lambda: not turn_running(app))
        assert "rejected the edit with feedback" in screen_text(app)
    assert not (project / NOTES_FILE).exists()


async def test_escape_interrupts_and_a_queued_message_is_sent_after(project: Path) -> None:
    provider = ScriptedProvider(
        [{"text": "Thinking about it", "hang": True}, {"text": "Second answer."}]
    )
    app = make_app(project, provider)
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        await send(pilot, "first")
        await wait_for(pilot, lambda: "Thinking about it" in screen_text(app))
        await send(pilot, "second")  # typed while the turn runs: queued
        assert app._queue == [("second", ())]  # with no images
        await pilot.press("escape")
        await wait_for(pilot, lambda: len(provider.requests) == 2 and not turn_running(app))
        assert "Second answer." in screen_text(app)
    assistant = [r["content"] for r in records(app.session) if r["role"] == "assistant"]
    # The interrupted answer is kept as it was shown, marked; the queued message was answered.
    assert assistant == [f"Thinking about it\n\n{INTERRUPTED_NOTE}", "Second answer."]


async def test_a_failing_model_shows_one_clear_message_and_the_app_goes_on(
    project: Path,
) -> None:
    provider = ScriptedProvider(
        [{"error": {"status": 401, "message": "invalid api key"}}, {"text": "Back again."}]
    )
    app = make_app(project, provider)
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        await send(pilot, "hi")
        await wait_for(pilot, lambda: "invalid api key" in screen_text(app))
        await wait_for(pilot, lambda: not turn_running(app))
        # The model never answered: the message is back in the prompt, Enter sends it again.
        prompt = app.screen.query_one(PromptInput)
        assert prompt.text == "hi"
        prompt.focus()
        await pilot.press("enter")
        await wait_for(pilot, lambda: "Back again." in screen_text(app))
        await wait_for(pilot, lambda: not turn_running(app))
    # Sent twice, kept once: the second turn went on from the first one's message.
    said = [r["content"] for r in records(app.session) if r["role"] == "user"]
    assert [text for text in said if not is_checkpoint_note(text)] == ["hi"]


async def test_mode_cycles_with_ctrl_t_shift_tab_and_slash_mode(project: Path) -> None:
    app = make_app(project, DemoProvider(delay=0))
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        assert app.sub_title.endswith("· ask")
        await pilot.press("ctrl+t")
        await wait_for(pilot, lambda: app.sub_title.endswith("· auto-edit"))
        await send(pilot, "/mode yolo")
        await wait_for(pilot, lambda: app.sub_title.endswith("· yolo"))
        await send(pilot, "/mode")
        await wait_for(pilot, lambda: app.sub_title.endswith("· ask"))
        await pilot.press("shift+tab")  # in the prompt: Claude Code's key, as Ctrl+T
        await wait_for(pilot, lambda: app.sub_title.endswith("· auto-edit"))
        await pilot.press("shift+tab")
        await wait_for(pilot, lambda: app.sub_title.endswith("· plan"))
        await send(pilot, "/mode ask")
        await wait_for(pilot, lambda: app.sub_title.endswith("· ask"))
        # Read while open: a session nobody said anything in is removed when it closes.
        assert app.session is not None
        state = json.loads(app.session.state_file.read_text())
        assert state["approval_mode"] == "ask"


async def test_slash_title_clear_and_context(project: Path) -> None:
    provider = ScriptedProvider([{"text": "One."}])
    app = make_app(project, provider)
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        await send(pilot, "hello")
        await wait_for(pilot, lambda: "One." in screen_text(app) and not turn_running(app))

        await send(pilot, "/title Greeting test")
        await wait_for(pilot, lambda: "Greeting test" in app.sub_title)

        await send(pilot, "/clear")
        history = app.screen.query_one(HistoryPane)
        await wait_for(pilot, lambda: len(history.paths) == 1)
        assert "clear" in screen_text(app)

        await send(pilot, "/context")
        await wait_for(pilot, lambda: isinstance(app.screen, ContextScreen))
        assert "directoryStructure" in screen_text(app)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, ContextScreen))
    assert app.session is not None and app.session.title == "Greeting test"
    assert records(app.session) == []


async def test_theme_switch_is_saved_to_config(project: Path, home: Path) -> None:
    app = make_app(project, DemoProvider(delay=0))
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        assert app.theme == "kode-dark"
        await send(pilot, "/theme kode-light")
        await wait_for(pilot, lambda: app.theme == "kode-light")
        # Saved by the theme signal's subscriber, which runs after the switch.
        await wait_for(pilot, lambda: load_config().theme == "kode-light")
    assert load_config().theme == "kode-light"


async def test_f1_shows_the_focused_panes_keys_first_and_folds_textuals_generic_ones(
    project: Path,
) -> None:
    """F1 shows the keys, then the commands; the focused pane's and kode-tui's own keys come
    first and Textual's generic ones are folded away."""
    from textual.widgets import Collapsible, DataTable

    def descriptions(table: DataTable[Any]) -> list[str]:
        return [str(table.get_row_at(n)[1]) for n in range(table.row_count)]

    app = make_app(project, DemoProvider(delay=0))
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        # The palette's mode entry names the modes Ctrl+T / Shift+Tab go through, plan too.
        assert app.agent_session is not None and "plan" in app.agent_session.modes
        palette = {c.title: c.help for c in app.get_system_commands(app.screen)}
        assert all(mode in palette["Approval mode"] for mode in app.agent_session.modes)
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        assert "Approval mode" in screen_text(app)
        await pilot.press("end")  # the commands follow the keys
        await pilot.pause()
        assert "/compact" in screen_text(app)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, HelpScreen))

        app.screen.query_one("#timeline").focus()
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        own = descriptions(app.screen.query_one("#help-keys", DataTable))
        assert "Help" in own and "Focus Next" in own and "Diff to now" in own
        assert "Page Up" not in own
        folded = app.screen.query_one("#help-generic", Collapsible)
        assert folded.collapsed
        assert "Page Up" in descriptions(folded.query_one(DataTable))
        await pilot.press("escape")
        # The prompt's own keys, and a text area's editing keys folded away.
        app.screen.query_one("#prompt").focus()
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        own = descriptions(app.screen.query_one("#help-keys", DataTable))
        assert "Send" in own and "Cursor word left" not in own
        folded = app.screen.query_one("#help-generic", Collapsible)
        assert "Cursor word left" in descriptions(folded.query_one(DataTable))


async def test_narrow_terminals_put_the_side_panes_behind_a_tab(project: Path) -> None:
    app = make_app(project, DemoProvider(delay=0))
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        screen = app.screen
        assert screen.has_class("-narrow")
        assert not screen.query_one("#side").display or not screen.query_one("#side").region
        await pilot.click("#tab-context")
        await pilot.pause()
        assert screen.query_one("#side").region.width > 0
        assert "Checkpoints" in screen_text(app)
        await pilot.click("#tab-conversation")
        await pilot.pause()
        assert screen.query_one(Conversation).region.width > 0


async def test_tab_at_80_columns_walks_every_pane_and_the_tab_bar_follows(project: Path) -> None:
    app = make_app(project, DemoProvider(delay=0))
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        screen = app.screen
        walked = []
        for _ in range(5):
            await pilot.press("tab")
            await pilot.pause()
            focused = app.focused
            assert focused is not None and focused.region.width > 0  # on screen, not behind
            walked.append((type(focused).__name__, screen.has_class("-show-context")))
        assert walked == [
            ("Conversation", False),
            ("CheckpointTimeline", True),
            ("HistoryPane", True),
            ("PromptInput", True),
            ("Conversation", False),
        ]
        await pilot.press("shift+tab")
        await pilot.pause()
        assert isinstance(app.focused, PromptInput)
        await pilot.press("shift+tab")  # in the prompt it cycles the mode, as Ctrl+T
        await wait_for(pilot, lambda: app.sub_title.endswith("· auto-edit"))
        assert isinstance(app.focused, PromptInput)


async def test_a_resumed_kimi_session_shows_its_history(tmp_path: Path) -> None:
    folder = tmp_path / "kimi-session"
    shutil.copytree(KIMI_FIXTURE, folder)
    session = await Session.from_dir(folder)
    app = make_app(tmp_path, ScriptedProvider([]), session=session)
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        # The conversation and the History pane are filled after the agent is up.
        await wait_for(pilot, lambda: all(s in screen_text(app) for s in ("hello.py", "context_3")))
        text = screen_text(app)
        assert "We created hello.py" in text
        assert "context_3" in text and "context_1" in text
        assert len(app.screen.query_one(CheckpointTimeline).checkpoint_ids) == 3


def damaged_kimi_copy(tmp_path: Path) -> Path:
    """A copy of the Kimi session whose context ends with a line that is not JSON, then a
    message after it."""
    folder = tmp_path / "kimi-session"
    shutil.copytree(KIMI_FIXTURE, folder)
    with (folder / "context.jsonl").open("a") as file:
        file.write("this line is not JSON\n" + '{"role": "user", "content": "after it"}\n')
    return folder


async def test_opening_a_session_with_damaged_lines_says_so_at_once(tmp_path: Path) -> None:
    folder = damaged_kimi_copy(tmp_path)
    # Kimi's yolo, saved in a folder outside the user's session stores: no grant here.
    state = json.loads((folder / "state.json").read_text())
    (folder / "state.json").write_text(json.dumps({**state, "approval": {"yolo": True}}))
    session = await Session.from_dir(folder)
    app = make_app(tmp_path, ScriptedProvider([]), session=session)
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        # Before anything is sent: the user learns it when the session opens.
        await wait_for(pilot, lambda: "1 damaged line was skipped" in screen_text(app))
        assert "after it" in screen_text(app)
        assert "is not in your session stores" in screen_text(app)
        assert app.agent_session is not None and app.agent_session.mode == "ask"


async def test_a_session_open_elsewhere_can_be_viewed_read_only(tmp_path: Path) -> None:
    folder = tmp_path / "kimi-session"
    shutil.copytree(KIMI_FIXTURE, folder)
    holder = Context(folder / "context.jsonl")
    await holder.restore()
    session = await Session.from_dir(folder)
    locked = SessionLocked(folder / "lock", 4242)
    app = make_app(tmp_path, ScriptedProvider([]), session=session, locked=locked)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, LockedScreen))
        await wait_for(pilot, lambda: "process 4242" in screen_text(app))  # drawn, not only pushed
        await pilot.press("r")
        await ready(pilot)
        assert app.read_only and "read-only" in app.sub_title
        assert "We created hello.py" in screen_text(app)
        prompt = app.screen.query_one(PromptInput)
        assert prompt.read_only_reason and prompt.border_title == "read-only"
        # What is typed stays in the prompt: nothing is sent, nothing is lost.
        await pilot.press(*"keep me", "enter")
        await pilot.pause()
        assert prompt.text == "keep me"
        # The writer goes on: its new turn, checkpoint and rotation show up here.
        await holder.checkpoint()
        await holder.append_message(Message(role="user", content="a turn written meanwhile"))
        await wait_for(pilot, lambda: "a turn written meanwhile" in screen_text(app))
        timeline = app.screen.query_one(CheckpointTimeline)
        assert len(timeline.checkpoint_ids) == 4
        await holder.clear()
        await wait_for(pilot, lambda: "context_4" in screen_text(app))
        await wait_for(pilot, lambda: "a turn written meanwhile" not in screen_text(app))
    await holder.close()


async def test_a_read_only_view_says_damaged_lines_were_skipped(tmp_path: Path) -> None:
    folder = damaged_kimi_copy(tmp_path)
    session = await Session.from_dir(folder)
    locked = SessionLocked(folder / "lock", 4242)
    app = make_app(tmp_path, ScriptedProvider([]), session=session, locked=locked)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, LockedScreen))
        await pilot.press("r")
        await ready(pilot)
        await wait_for(
            pilot,
            lambda: any("1 damaged line was skipped" in n.message for n in app._notifications),
        )


async def test_sessions_picker_switches_session(project: Path) -> None:
    first = await Session.create(project)
    first.context_file.write_text(
        json.dumps({"role": "user", "content": "the older session"}) + "\n"
    )
    first.state.custom_title = "Older work"
    first.save_state()
    app = make_app(project, ScriptedProvider([]), pick_session=True)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, SessionPicker))
        await wait_for(pilot, lambda: "Older work" in screen_text(app))
        await pilot.press("enter")
        await ready(pilot)
        assert app.session is not None and app.session.id == first.id
        assert "the older session" in screen_text(app)


async def test_new_starts_another_session(project: Path) -> None:
    app = make_app(project, ScriptedProvider([{"text": "Hi."}]))
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        await send(pilot, "hello")
        await wait_for(pilot, lambda: "Hi." in screen_text(app) and not turn_running(app))
        first = app.session
        await send(pilot, "/new")
        await wait_for(pilot, lambda: app.session is not first)
        await ready(pilot)
        assert "Hi." not in screen_text(app)


async def test_the_configured_theme_is_used_at_start(project: Path, home: Path) -> None:
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text('theme = "kode-high-contrast"\n')
    app = make_app(project, DemoProvider(delay=0), config=load_config())
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        assert app.theme == "kode-high-contrast"
        assert "Offline demo" not in screen_text(app) or app.choice.is_demo


async def test_slash_commands_are_in_the_palette(project: Path) -> None:
    app = make_app(project, DemoProvider(delay=0))
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        await pilot.press("ctrl+p")
        await pilot.pause(0.2)
        await pilot.press(*"cycle or set")
        await pilot.pause(0.3)
        assert "/mode" in screen_text(app)
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.sub_title.endswith("· auto-edit"))


async def test_tab_moves_between_the_panes(project: Path) -> None:
    app = make_app(project, DemoProvider(delay=0))
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        seen = set()
        for _ in range(8):
            await pilot.press("tab")
            await pilot.pause()
            seen.add(type(app.focused).__name__)
        assert {"Conversation", "CheckpointTimeline", "HistoryPane", "PromptInput"} <= seen
        await pilot.press("ctrl+l")
        assert isinstance(app.focused, PromptInput)


async def test_a_large_terminal_shows_every_pane(project: Path) -> None:
    app = make_app(project, DemoProvider(delay=0))
    async with app.run_test(size=(200, 60)) as pilot:
        await ready(pilot)
        assert not app.screen.has_class("-narrow")
        for pane in ("Conversation", "Context", "Checkpoints", "History"):
            assert pane in screen_text(app)
        assert app.screen.query_one("#side").region.width >= 34


async def test_a_bad_config_stops_the_app_with_exit_status_2(project: Path, home: Path) -> None:
    from kode_tui.ui.app import KodeApp

    bad = home / "bad.toml"
    bad.parent.mkdir(exist_ok=True)
    bad.write_text("[loop_control]\nmax_steps_per_run = 'many'\n")
    app = KodeApp(project, config_file=bad)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.config_error is not None)
    assert app.return_code == 2
    assert str(app.config_error).startswith(f"{bad}:2: loop_control.max_steps_per_run")


async def test_a_command_typed_while_the_agent_starts_waits_for_it(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from kode_tui.soul import agent as agent_module

    real_open_agent = agent_module.open_agent

    async def slow_open_agent(*args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(0.5)
        return await real_open_agent(*args, **kwargs)

    monkeypatch.setattr(agent_module, "open_agent", slow_open_agent)
    app = make_app(project, ScriptedProvider([]))
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(pilot, lambda: app.agent_session is not None)  # its agent being built
        assert not started(app)
        await send(pilot, "/mode auto-edit")
        await wait_for(pilot, lambda: started(app))
        await wait_for(pilot, lambda: app.agent_session.mode == "auto-edit")  # type: ignore[union-attr]
        assert "read-only" not in screen_text(app)


async def test_ctrl_c_interrupts_then_clears_the_prompt_then_quits_on_a_second_press(
    project: Path,
) -> None:
    provider = ScriptedProvider([{"text": "Thinking about it", "hang": True}])
    app = make_app(project, provider)
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        await send(pilot, "first")
        await wait_for(pilot, lambda: "Thinking about it" in screen_text(app))
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: not turn_running(app))
        assert app.is_running

        prompt = app.screen.query_one(PromptInput)
        prompt.focus()
        prompt.text = "half a thought"
        prompt.select_all()
        await pilot.press("ctrl+c")  # a selection is copied, as in any text field
        await pilot.pause()
        assert prompt.text == "half a thought"
        prompt.move_cursor(prompt.document.end)
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert prompt.text == ""

        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.is_running
        notices = [notice.message for notice in app._notifications]
        assert "Press Ctrl+C again to quit." in notices
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: not app.is_running)


async def test_the_help_lists_ctrl_c(project: Path) -> None:
    from kode_tui.ui.screens.help import collect_bindings

    app = make_app(project, ScriptedProvider([]))
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        rows = {description: keys for keys, description, _ in collect_bindings(app)}
        assert rows["Interrupt, clear the prompt, or quit"] == "^c"


async def test_a_turn_ending_after_the_last_screen_closed_does_not_crash_the_exit(
    tmp_path: Path,
) -> None:
    from textual.worker import Worker, WorkerState

    app = make_app(tmp_path, ScriptedProvider([]))
    async with app.run_test() as pilot:
        await ready(pilot)
    # What shutdown does when it cancels a turn still running: the screens are gone by then.
    turn: Worker[None] = Worker(app, lambda: None, name="turn")
    app._turn = turn
    assert not app.screen_stack
    app.on_worker_state_changed(Worker.StateChanged(turn, WorkerState.CANCELLED))
