"""The approval panel: requests from the wire, the answers, the queue, focus and the full view."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import ClassVar

from textual import events
from textual.app import App
from textual.binding import Binding, BindingType
from textual.geometry import Region
from textual.message import Message
from textual.widgets import Button, Input, OptionList, Static

from kode_tui.ui.screens.diff import DiffScreen
from kode_tui.ui.screens.question import QuestionScreen
from kode_tui.ui.widgets import approval as approval_module
from kode_tui.ui.widgets.approval import ApprovalPanel
from kode_tui.wire import WireBus
from kode_tui.wire.events import (
    ApprovalRequest,
    ApprovalResolved,
    ApprovalResponse,
    DiffBlock,
    QuestionItem,
    QuestionOption,
    QuestionRequest,
    RejectWithFeedback,
    ShellBlock,
    TurnEnd,
)
from tests.ui_helpers import Host, wait_for

OLD = "".join(f"line {n}\n" for n in range(1, 41))
NEW = "".join(
    f"line {n}\n" if n not in (3, 4, 5, 6, 7, 8, 30) else f"line {n}!\n" for n in range(1, 41)
)
"""Two hunks, the second beyond the panel's excerpt."""


class ApprovalHost(Host):
    """The approval panel between a stand-in conversation and prompt, with the App's Esc."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "interrupt", "Interrupt")]

    def __init__(self, bus: WireBus) -> None:
        super().__init__(
            Static("conversation"),
            ApprovalPanel(bus, id="approval"),
            Input(id="prompt"),
            css_path=Path(approval_module.__file__).with_name("prompt.tcss"),
        )
        self.bus = bus
        self.messages: list[Message] = []
        self.interrupts = 0

    def on_mount(self) -> None:
        # The guard against keys typed before the panel showed is tested on its own.
        self.query_one(ApprovalPanel).key_delay_s = 0
        self.query_one("#prompt").focus()

    def on_approval_panel_answered(self, message: ApprovalPanel.Answered) -> None:
        self.messages.append(message)

    def on_approval_panel_done(self, message: ApprovalPanel.Done) -> None:
        self.messages.append(message)

    def action_interrupt(self) -> None:
        self.interrupts += 1


def edit_request(
    request_id: str = "r1", *, scope: str = "all edits in the work dir", outside: bool = False
) -> ApprovalRequest:
    return ApprovalRequest(
        id=request_id,
        tool_call_id=f"call-{request_id}",
        action="edit file",
        description="notes.txt",
        display=[DiffBlock(path="notes.txt", old_text=OLD, new_text=NEW)],
        tool_name="StrReplaceFile",
        scope_label=scope,
        outside_work_dir=outside,
    )


def shell_request(request_id: str = "r2") -> ApprovalRequest:
    return ApprovalRequest(
        id=request_id,
        tool_call_id=f"call-{request_id}",
        action="run command",
        description="git status",
        display=[ShellBlock(command="git status --short")],
        tool_name="Shell",
        scope_label="git status",
    )


def text(app: App[None], selector: str) -> str:
    return str(app.query_one(selector, Static).render())


async def answer_of(request: ApprovalRequest) -> ApprovalResponse:
    return await asyncio.wait_for(request.wait(), timeout=2)


async def test_panel_is_hidden_until_a_request_arrives() -> None:
    bus = WireBus()
    app = ApprovalHost(bus)
    async with app.run_test(size=(120, 40)) as pilot:
        panel = app.query_one(ApprovalPanel)
        assert not panel.display
        bus.send(edit_request(outside=True))
        await pilot.pause()
        assert panel.display
        assert app.focused is panel
        assert text(app, "#approval-title") == "Approve StrReplaceFile: notes.txt?"
        action = text(app, "#approval-action")
        assert action.startswith("edit file")
        assert "outside the working directory" in action
        excerpt = text(app, "#approval-display").splitlines()
        assert len(excerpt) <= 13
        # Beside their old and new line numbers, as the full view shows them.
        assert "3   │-line 3" in excerpt
        assert "  3 │+line 3!" in excerpt
        assert excerpt[-1] == "… d for the full diff"
        label = str(app.query_one("#approval-session", Button).label)
        assert label == "a  for this session: all edits in the work dir"


async def test_no_warning_for_a_call_inside_the_work_dir() -> None:
    bus = WireBus()
    app = ApprovalHost(bus)
    async with app.run_test() as pilot:
        bus.send(shell_request())
        await pilot.pause()
        # No warning; at 80 columns the scope moves from the `a` button to this line, whole.
        assert text(app, "#approval-action") == "run command  · a covers git status"
        assert text(app, "#approval-display") == "$ git status --short"
        assert str(app.query_one("#approval-full-view", Button).label) == "d  full command"


async def test_keys_answer_each_queued_request_in_turn() -> None:
    bus = WireBus()
    app = ApprovalHost(bus)
    requests = [edit_request(f"r{n}") for n in range(1, 5)]
    async with app.run_test() as pilot:
        for request in requests:
            bus.send(request)
        await pilot.pause()
        assert text(app, "#approval-title").endswith("(+3 more)")
        await pilot.press("y")
        assert await answer_of(requests[0]) == "approve"
        assert text(app, "#approval-title").endswith("(+2 more)")
        await pilot.press("a")
        assert await answer_of(requests[1]) == "approve_for_session"
        await pilot.press("n")
        assert await answer_of(requests[2]) == "reject"
        await pilot.press("f", "t", "a", "b", "s", "space", "!", "enter")
        assert await answer_of(requests[3]) == RejectWithFeedback(feedback="tabs !")
        await pilot.pause()
        answered = [m for m in app.messages if isinstance(m, ApprovalPanel.Answered)]
        assert [(m.request_id, m.response) for m in answered[:3]] == [
            ("r1", "approve"),
            ("r2", "approve_for_session"),
            ("r3", "reject"),
        ]
        assert isinstance(app.messages[-1], ApprovalPanel.Done)


async def test_panel_hides_and_gives_focus_back_after_the_last_answer() -> None:
    bus = WireBus()
    app = ApprovalHost(bus)
    async with app.run_test() as pilot:
        bus.send(edit_request())
        await pilot.pause()
        assert app.focused is app.query_one(ApprovalPanel)
        await pilot.press("y")
        await pilot.pause()
        assert not app.query_one(ApprovalPanel).display
        assert app.focused is app.query_one("#prompt")
        assert any(isinstance(m, ApprovalPanel.Done) for m in app.messages)


async def test_feedback_escape_goes_back_to_the_choices() -> None:
    bus = WireBus()
    app = ApprovalHost(bus)
    request = edit_request()
    async with app.run_test() as pilot:
        bus.send(request)
        await pilot.pause()
        panel = app.query_one(ApprovalPanel)
        await pilot.press("f")
        await pilot.pause()
        assert panel.feedback_open
        assert app.focused is app.query_one("#approval-feedback", Input)
        # Typed into the input, not taken as answers.
        await pilot.press("y", "n", "escape")
        await pilot.pause()
        assert not panel.feedback_open
        assert app.focused is panel
        assert panel.current is request
        assert app.interrupts == 0
        # With the choices showing, Esc is the App's (it interrupts the turn).
        await pilot.press("escape")
        assert app.interrupts == 1
        await pilot.press("n")
        assert await answer_of(request) == "reject"


async def test_d_opens_the_full_diff_and_escape_comes_back() -> None:
    bus = WireBus()
    app = ApprovalHost(bus)
    request = edit_request()
    async with app.run_test() as pilot:
        bus.send(request)
        await pilot.pause()
        await pilot.press("d")
        await pilot.pause()
        assert isinstance(app.screen, DiffScreen)
        shown = "\n".join(str(widget.render()) for widget in app.screen.query(".diff-text"))
        assert "+line 30!" in shown
        assert "-line 30" in shown
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, DiffScreen)
        assert app.focused is app.query_one(ApprovalPanel)
        await pilot.press("y")
        assert await answer_of(request) == "approve"


async def test_the_full_view_answers_with_the_panels_keys() -> None:
    bus = WireBus()
    app = ApprovalHost(bus)
    first, second, third = edit_request("r1"), edit_request("r2"), edit_request("r3")
    async with app.run_test() as pilot:
        for request in (first, second, third):
            bus.send(request)
        await pilot.pause()
        await pilot.press("d", "y")
        assert await answer_of(first) == "approve"
        await pilot.pause()
        assert not isinstance(app.screen, DiffScreen)
        await pilot.press("d", "f")
        await pilot.pause()
        assert app.focused is app.query_one("#approval-feedback", Input)
        await pilot.press(*"no", "enter")
        assert await answer_of(second) == RejectWithFeedback(feedback="no")
        await pilot.pause()
        # A view whose call is answered elsewhere closes: its keys must not answer the next.
        await pilot.press("d")
        await pilot.pause()
        bus.send(ApprovalResolved(id="r3", response="reject"))
        await pilot.pause()
        assert not isinstance(app.screen, DiffScreen)


async def test_buttons_answer_when_clicked() -> None:
    bus = WireBus()
    app = ApprovalHost(bus)
    first, second, third = edit_request("r1"), shell_request("r2"), edit_request("r3")
    async with app.run_test(size=(120, 40)) as pilot:
        for request in (first, second, third):
            bus.send(request)
        await pilot.pause()
        assert await pilot.click("#approval-session")
        assert await answer_of(first) == "approve_for_session"
        await pilot.pause()
        assert await pilot.click("#approval-approve")
        assert await answer_of(second) == "approve"
        await pilot.pause()
        assert await pilot.click("#approval-reject")
        assert await answer_of(third) == "reject"


async def test_a_request_resolved_elsewhere_leaves_the_queue() -> None:
    bus = WireBus()
    app = ApprovalHost(bus)
    requests = [edit_request("r1"), shell_request("r2"), edit_request("r3")]
    async with app.run_test() as pilot:
        panel = app.query_one(ApprovalPanel)
        for request in requests:
            bus.send(request)
        bus.send(ApprovalResolved(id="r2", response="reject"))
        await pilot.pause()
        assert [request.id for request in panel.pending] == ["r1", "r3"]
        assert text(app, "#approval-title").endswith("(+1 more)")
        # The one on show, cancelled by an interrupted turn: the next one takes its place.
        bus.send(ApprovalResolved(id="r1", response="reject"))
        await pilot.pause()
        assert panel.current is requests[2]
        bus.send(ApprovalResolved(id="r3", response="reject"))
        await pilot.pause()
        assert not panel.display
        assert app.focused is app.query_one("#prompt")


async def test_a_is_not_offered_without_a_scope() -> None:
    bus = WireBus()
    app = ApprovalHost(bus)
    request = edit_request(scope="", outside=True)
    async with app.run_test() as pilot:
        bus.send(request)
        await pilot.pause()
        panel = app.query_one(ApprovalPanel)
        assert not app.query_one("#approval-session", Button).display
        assert panel.check_action("approve_for_session", ()) is False
        assert panel.check_action("approve", ()) is True
        await pilot.press("a")
        await pilot.pause()
        assert panel.current is request
        await pilot.press("y")
        assert await answer_of(request) == "approve"


async def test_a_word_typed_on_as_the_panel_shows_goes_on_into_the_prompt() -> None:
    bus = WireBus()
    app = ApprovalHost(bus)
    request = edit_request()
    async with app.run_test() as pilot:
        panel = app.query_one(ApprovalPanel)
        panel.key_delay_s = 60
        prompt = app.query_one("#prompt", Input)
        await pilot.press("m", "a")
        bus.send(request)
        await pilot.pause()
        await pilot.press("n", "y")
        await pilot.pause()
        # "many" was being typed: its end answers nothing and is not lost.
        assert panel.current is request
        assert prompt.value == "many"
        # The mouse is deliberate: a button answers at once.
        assert await pilot.click("#approval-reject")
        assert await answer_of(request) == "reject"


async def test_a_key_that_answers_nothing_sends_the_word_being_typed_on_into_the_prompt() -> None:
    """A request shown while nothing was typed (a background agent's, between turns): the
    user starts a message ("/tasks") not having seen it; its "a" must not approve for the
    session. The first key that answers nothing sends it and the next ones to the prompt."""
    bus = WireBus()
    app = ApprovalHost(bus)
    request = edit_request()
    async with app.run_test() as pilot:
        panel = app.query_one(ApprovalPanel)
        panel.key_delay_s = 60
        bus.send(request)
        await wait_for(pilot, lambda: panel.current is request)
        await pilot.press("slash", "t", "a", "s")
        await pilot.pause()
        assert panel.current is request, "nothing was answered"
        assert app.query_one("#prompt", Input).value == "/tas"
        assert await pilot.click("#approval-reject")
        assert await answer_of(request) == "reject"


async def test_a_key_pressed_the_instant_a_request_is_sent_answers_it() -> None:
    bus = WireBus()
    app = ApprovalHost(bus)
    request = edit_request()
    async with app.run_test():
        panel = app.query_one(ApprovalPanel)
        panel.key_delay_s = 60
        busy = asyncio.Event()
        panel.call_next(busy.wait)  # the panel is busy: the request waits in its queue
        bus.send(request)
        await asyncio.sleep(0.05)  # not pilot.pause(): it would wait for the panel
        # Before the panel had its turn to show the request (the conversation may say
        # "waiting for approval" by then): the key is kept for the panel, not lost.
        app.post_message(events.Key("n", "n"))
        await asyncio.sleep(0.05)
        busy.set()
        assert await answer_of(request) == "reject"
        assert app.query_one("#prompt", Input).value == ""


async def test_a_toast_leaves_a_dialogs_key_line_in_sight() -> None:
    from kode_tui.ui import app as app_module

    app = Host(
        screen=DiffScreen("notes.txt", [DiffBlock(path="notes.txt", old_text=OLD, new_text=NEW)]),
        css_path=Path(app_module.__file__).with_name("app.tcss"),
    )
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        app.notify("Queued: it is sent when this turn ends (Esc interrupts). " * 3)
        # Laid out, not only mounted (under load the first frame after mounting can be late).
        await wait_for(
            pilot,
            lambda: bool(app.screen.query("Toast")) and app.screen.query_one("Toast").size.height,
        )
        toast = app.screen.query_one("Toast").region
        frame = app.screen.query_one(".dialog-frame").region
        # The frame's lower edge, where its keys are, is not under the toast.
        assert toast.height > 0
        assert not toast.overlaps(Region(frame.x, frame.bottom - 1, frame.width, 1))


def asking(app: App[object]) -> bool:
    """A question dialog is up and ready for keys (its options shown and focused)."""
    screen = app.screen
    if not isinstance(screen, QuestionScreen):
        return False
    options = screen.query_one(OptionList)
    return options.option_count > 0 and options.has_focus


async def test_the_models_questions_are_answered_by_option_typed_answer_or_esc() -> None:
    bus = WireBus()
    asked = QuestionRequest(
        id="q1",
        tool_call_id="call-q1",
        questions=[
            QuestionItem(
                question="Which database?",
                header="[b]DB",
                options=[QuestionOption(label="SQLite"), QuestionOption(label="Postgres")],
            ),
            QuestionItem(
                question="Which checks?",
                options=[QuestionOption(label="ruff"), QuestionOption(label="mypy")],
                multi_select=True,
            ),
        ],
    )
    dismissed = QuestionRequest(id="q2", tool_call_id="call-q2", questions=asked.questions[:1])
    app = ApprovalHost(bus)
    async with app.run_test(size=(100, 30)) as pilot:
        bus.send(asked)
        await wait_for(pilot, lambda: asking(app))
        title = str(app.screen.query_one("#question-title", Static).render())
        assert title == "[[b]DB] Which database? (1/2)", "the model's text, not markup"
        await pilot.press("down", "enter")  # Postgres
        await wait_for(
            pilot,
            lambda: (
                "Which checks?" in str(app.screen.query_one("#question-title", Static).render())
            ),
        )
        await pilot.press("enter")  # ruff chosen; then the "Other" row, and an answer typed
        await pilot.press("down", "down", "enter", *"pyright", "enter")
        answers = await asyncio.wait_for(asked.wait(), 30)
        assert answers == {"Which database?": "Postgres", "Which checks?": "ruff, pyright"}
        await wait_for(pilot, lambda: not isinstance(app.screen, QuestionScreen))

        bus.send(dismissed)
        await wait_for(pilot, lambda: asking(app))
        await pilot.press("escape")
        assert await asyncio.wait_for(dismissed.wait(), 30) == {}
        assert app.interrupts == 0, "Esc dismissed the questions, it did not interrupt the turn"

        # A number key picks its option at once.
        picked = QuestionRequest(id="q3", tool_call_id="call-q3", questions=asked.questions[:1])
        bus.send(picked)
        await wait_for(pilot, lambda: asking(app))
        await pilot.press("2")
        assert await asyncio.wait_for(picked.wait(), 30) == {"Which database?": "Postgres"}
        await wait_for(pilot, lambda: not isinstance(app.screen, QuestionScreen))

        # The turn ended (interrupted) while the dialog was up: it closes.
        stale = QuestionRequest(id="q4", tool_call_id="call-q4", questions=asked.questions[:1])
        bus.send(stale)
        await wait_for(pilot, lambda: asking(app))
        bus.send(TurnEnd())
        await wait_for(pilot, lambda: not isinstance(app.screen, QuestionScreen))


async def test_a_panel_mounted_after_a_turn_began_takes_what_its_backlog_kept() -> None:
    """A new session's first message goes before its panel is mounted: the requests and
    questions sent meanwhile, kept by a subscription made before, show once it is, in order."""
    bus = WireBus()
    app = Host(
        Static("conversation"),
        Input(id="prompt"),
        css_path=Path(approval_module.__file__).with_name("prompt.tcss"),
    )
    async with app.run_test(size=(120, 40)) as pilot:
        backlog = bus.subscribe()
        first, second = shell_request("r1"), shell_request("r2")
        bus.send(first)
        bus.send(second)
        bus.send(ApprovalResolved(id="r1", response="approve"))  # answered elsewhere meanwhile
        panel = ApprovalPanel(bus, backlog=backlog, id="approval")
        panel.key_delay_s = 0
        await app.mount(panel, before=app.query_one("#prompt"))
        await wait_for(pilot, lambda: panel.display and panel.current is second)
        await pilot.press("y")
        assert await answer_of(second) == "approve"
        assert not panel.display  # r1 was resolved elsewhere: nothing waits any more
