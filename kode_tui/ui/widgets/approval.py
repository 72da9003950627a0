"""The approval panel: asks the user whether a tool call may run (DESIGN.md §6)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from rich.cells import cell_len, set_cell_size
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.content import Content
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Button, Input, Static, TextArea

from kode_tui.safetext import visible
from kode_tui.soul.facade import Subscription, WireBus
from kode_tui.ui.wire_messages import WireListener, WireMessage
from kode_tui.wire.events import (
    ApprovalRequest,
    ApprovalResolved,
    ApprovalResponse,
    DiffBlock,
    Event,
    PlanVerdict,
    QuestionRequest,
    RejectWithFeedback,
    ShellBlock,
    TurnEnd,
)

if TYPE_CHECKING:  # loaded at first use: the diff, plan and excerpt views bring the Markdown
    # and syntax stack, which the conversation loads after the first request (preload.py)
    from kode_tui.ui.screens.diff import ApprovalView
    from kode_tui.ui.screens.plan import PlanReview

TITLE_CHARS = 60
"""The title quotes this much of a command the panel shows in full below it."""
PANEL_LINES = 5
"""Lines of the panel besides the excerpt: its border, title, action and choices."""

_GROUP = Binding.Group("Approval")

_BUTTON_ACTIONS = {
    "approval-approve": "approve",
    "approval-session": "approve_for_session",
    "approval-reject": "reject",
    "approval-feedback-button": "feedback",
    "approval-full-view": "full_view",
}
"""Which action each choice button runs."""

_ANSWER_ACTIONS = frozenset(_BUTTON_ACTIONS.values())

_RESPONSES: dict[str, ApprovalResponse] = {
    "approve": "approve",
    "approve_for_session": "approve_for_session",
    "reject": "reject",
}

KEY_DELAY_S = 0.5
"""The guard against keys meant for somewhere else. The panel takes focus from the prompt, and a
word being typed there must not answer it ("any" would approve for the session): when the
prompt holds text as the panel shows, keys typed this soon after go on into the prompt; so do
a key that answers nothing and those typed this soon after it. A key typed with nothing being
typed is an answer at once, even one pressed before the panel showed (the conversation says
"waiting for approval" first). The next request of a queue ignores keys
this soon after it shows: a key pressed twice must not answer two requests."""


class ApprovalPanel(WireListener, Widget, can_focus=True):
    """Shows the tool calls waiting for approval, one at a time, and answers them.

    It subscribes to `ApprovalRequest` and `ApprovalResolved` on the bus; it is hidden until a
    request arrives, then takes focus so its keys work at once, and hands focus back when the
    last request is answered (or resolved elsewhere, e.g. by an interrupted turn).
    """

    HELP: ClassVar[str] = """\
### Approval
A tool call waits for your answer.
- **y** run it once · **a** allow it for the rest of the session (the scope is shown)
- **n** reject (the turn ends) · **f** reject and tell the agent why (Enter sends, Esc goes back)
- **d** the full diff or command, where y/a/n/f answer too
- a plan (ExitPlanMode) opens as a document to read, edit and approve into a mode, or send
  back with feedback; Esc comes back here, **d** opens it again
"""

    DEFAULT_CSS = """
    ApprovalPanel {
        display: none;
        &.-active { display: block; }
        #approval-feedback { display: none; }
        &.-feedback {
            #approval-feedback { display: block; }
            #approval-choices { display: none; }
        }
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "approve", "Approve once", id="approval.approve", group=_GROUP),
        Binding(
            "a",
            "approve_for_session",
            "Approve for session",
            id="approval.approve_for_session",
            group=_GROUP,
        ),
        Binding("n", "reject", "Reject", id="approval.reject", group=_GROUP),
        Binding("f", "feedback", "Reject with feedback", id="approval.feedback", group=_GROUP),
        Binding("d", "full_view", "Full view", id="approval.full_view", group=_GROUP),
        Binding(
            "escape",
            "cancel_feedback",
            "Back to the choices",
            id="approval.cancel_feedback",
            group=_GROUP,
        ),
    ]
    ANSWER_KEYS: ClassVar[frozenset[str]] = frozenset(
        binding.key
        for binding in BINDINGS
        if isinstance(binding, Binding) and len(binding.key) == 1
    )
    """The one-key answers: any other printable key is typing."""

    feedback_open: reactive[bool] = reactive(False, toggle_class="-feedback")
    """The feedback input is showing instead of the choices."""

    @dataclass
    class Answered(Message):
        """The user answered request `request_id` (already resolved)."""

        request_id: str
        response: ApprovalResponse

    @dataclass
    class Done(Message):
        """No request is waiting any more; the panel hid itself."""

    def __init__(
        self, bus: WireBus, *, backlog: Subscription[Event] | None = None, id: str | None = None
    ) -> None:
        """`backlog`: a subscription to `bus` made before this panel, whose requests and
        questions it takes first (a turn that began before it mounted)."""
        super().__init__(id=id)
        self.bus = bus
        self._backlog = backlog
        self._queue: list[ApprovalRequest] = []
        self._previous_focus: Widget | None = None
        self._shown_at = 0.0
        self._excerpt_room = (0, 0)
        """The rows and the width the excerpt on show was fitted to (a resize that changes
        neither needs no new excerpt)."""
        self._clipped_rows = 0
        """Rows the panel's edge clipped off the excerpt of the request on show: taken off its
        room (the panel's height is a share of what the screen's docks leave)."""
        self._action = Content("")
        """The action line as the request gives it (the scope may be added to it)."""
        self.key_delay_s = KEY_DELAY_S
        """How long the guard lasts (`KEY_DELAY_S`); the buttons count at once."""
        self._typing_until = 0.0
        """Keys typed before this go back to the widget the user was typing in."""
        self._early_keys: list[events.Key] = []
        """Keys typed after the request was sent and before it showed, for it."""
        self._claim_subscription: Subscription[ApprovalRequest] | None = None
        self._questions: Subscription[Event] | None = None
        self._full_view: ApprovalView | PlanReview | None = None
        """The full view of the request on show, while it is open."""
        self._plan_drafts: dict[str, str] = {}
        """A plan's edit by its request's id, while its dialog is closed (Esc)."""

    @property
    def current(self) -> ApprovalRequest | None:
        """The request on show, if any."""
        return self._queue[0] if self._queue else None

    @property
    def pending(self) -> list[ApprovalRequest]:
        """Every request waiting, the one on show first."""
        return list(self._queue)

    def compose(self) -> ComposeResult:
        yield Static(id="approval-title")
        yield Static(id="approval-action")
        yield Static(id="approval-display")
        with Horizontal(id="approval-choices"):
            yield Button("y  once", id="approval-approve", compact=True)
            yield Button("a  for this session", id="approval-session", compact=True)
            yield Button("n  reject", id="approval-reject", compact=True)
            yield Button("f  feedback", id="approval-feedback-button", compact=True)
            yield Button("d  full diff", id="approval-full-view", compact=True)
        yield Input(
            placeholder="Tell the agent what to do instead · Enter send · Esc back",
            id="approval-feedback",
        )

    def on_mount(self) -> None:
        # The buttons are for the mouse; focus stays on the panel so y/a/n/f/d keep working.
        for button in self.query(Button):
            button.can_focus = False
        backlog, self._backlog = self._backlog, None
        missed = [] if backlog is None else backlog.take_queued()
        if backlog is not None:  # taken and closed before the bus can send the next: in order
            backlog.close()
        self.listen(self.bus, ApprovalRequest, ApprovalResolved)
        # The conversation may say "waiting for approval" before this panel's turn to show the
        # request comes: the keys are taken as the request is sent, and kept until it shows.
        self._claim_subscription = self.bus.subscribe(ApprovalRequest, callback=self._claim)
        # AskUserQuestion's questions come on the same bus: they show as a dialog of their own,
        # closed when their turn ends (interrupted, say): answering it then would reach no one.
        self._questions = self.bus.subscribe(QuestionRequest, TurnEnd, callback=self._ask)
        for event in missed:
            if isinstance(event, ApprovalRequest | ApprovalResolved):
                self.post_message(WireMessage(event))
            if isinstance(event, ApprovalRequest):
                self._claim(event)
            elif isinstance(event, QuestionRequest | TurnEnd):
                self._ask(event)

    def on_unmount(self) -> None:
        if self._claim_subscription is not None:
            self._claim_subscription.close()
        if self._questions is not None:
            self._questions.close()

    def _ask(self, event: Event) -> None:
        from kode_tui.ui.screens.question import QuestionScreen

        if isinstance(event, QuestionRequest):
            self.app.push_screen(QuestionScreen(event))
            return
        for screen in self.app.screen_stack:
            if isinstance(screen, QuestionScreen):
                screen.dismiss()

    def _claim(self, _request: ApprovalRequest | None = None) -> None:
        """Take the focus (the keys) for a request about to show, unless it has it already."""
        if not self.is_attached or self.has_class("-active"):
            return
        focused = self.screen.focused
        if focused is None or self._contains(focused):
            return
        self._previous_focus = focused
        typing = _holds_text(focused)
        self._typing_until = time.monotonic() + self.key_delay_s if typing else 0.0
        self.screen.set_focus(self, scroll_visible=False)

    # --- wire events -----------------------------------------------------------------------------

    def on_wire_message(self, message: WireMessage) -> None:
        event = message.event
        if isinstance(event, ApprovalRequest):
            self._queue.append(event)
            if len(self._queue) == 1:
                self._show_current()
            else:
                self._update_title()
        elif isinstance(event, ApprovalResolved):
            self._drop(event.id)

    def _drop(self, request_id: str) -> None:
        index = next((i for i, request in enumerate(self._queue) if request.id == request_id), None)
        if index is None:
            return
        if index == 0:
            self._advance()
        else:
            del self._queue[index]
            self._update_title()

    def _advance(self) -> None:
        self._queue.pop(0)
        view, self._full_view = self._full_view, None
        if view is not None and view is self.app.screen:
            # Answered elsewhere (an interrupt, a mode that covers it): its keys must not
            # answer the next request.
            view.dismiss(None)
        if self._queue:
            self._show_current()
        else:
            self._finish()

    # --- showing ---------------------------------------------------------------------------------

    def _show_current(self) -> None:
        request = self.current
        assert request is not None
        self._clipped_rows = 0
        self._update_title()
        action = Content.styled(visible(request.action, multiline=False), "$text-muted")
        if request.outside_work_dir:
            action = Content.assemble(
                action, ("  ⚠ outside the working directory", "bold $text-warning")
            )
        if request.always_ask:
            warning = f"  ⚠ {visible(request.always_ask, multiline=False)}: asks every time"
            action = Content.assemble(action, (warning, "bold $text-warning"))
        self._action = action
        self.query_one("#approval-action", Static).update(action)
        self._show_excerpt()
        self.query_one("#approval-session", Button).display = bool(request.scope_label)
        full_view = self.query_one("#approval-full-view", Button)
        only_commands = all(isinstance(block, ShellBlock) for block in request.display)
        full_view.label = "d  full command" if only_commands else "d  full diff"
        if request.plan is not None:
            full_view.label = "d  the plan"
        full_view.display = bool(request.display) or request.plan is not None
        # A Button's label is not a layout reactive; without this the old width sticks.
        full_view.refresh(layout=True)
        self._fit_session_label()
        self.feedback_open = False
        if not self.has_class("-active"):
            self._shown_at = 0.0  # keys typed while it mounts are for it
            self._claim()
            self.add_class("-active")
        else:
            self._shown_at = time.monotonic()  # keys meant for the request answered just now
        self.focus()
        self.refresh_bindings()
        early, self._early_keys = self._early_keys, []
        for key in early:
            self.post_message(key)
        if request.plan is not None:  # the plan is a document to read first
            self.call_after_refresh(self._open_plan, request)

    def _open_plan(self, request: ApprovalRequest) -> None:
        if self.current is request and self._full_view is None:
            self._open_full_view()

    def on_resize(self) -> None:
        self._fit_session_label()
        if self.current is not None:
            self._show_excerpt(again=True)

    def _show_excerpt(self, *, again: bool = False) -> None:
        from kode_tui.ui.widgets.excerpt import EXCERPT_LINES, excerpt, rows_of

        request = self.current
        assert request is not None
        # The panel takes at most half the screen, and a short one clips the excerpt's end,
        # where a long command's last lines are: fit the excerpt to the room there is.
        display = self.query_one("#approval-display", Static)
        # Long lines wrap: the excerpt counts rows, so it needs the width they wrap at (the
        # screen's, less the borders and paddings, until the panel is laid out).
        width = display.content_region.width or self.screen.size.width - 6
        # A title or an action line that wraps takes rows from the excerpt.
        above = sum(
            rows_of(static.visual, width + 2) - 1
            for static in self.query("#approval-title, #approval-action").results(Static)
            if isinstance(static.visual, Content)
        )
        room = max(3, min(EXCERPT_LINES, self.screen.size.height // 2 - PANEL_LINES - above))
        room = max(3, room - self._clipped_rows)
        if again and (room, width) == self._excerpt_room:
            return
        self._excerpt_room = (room, width)
        shown = excerpt(request, room, width)
        display.update(shown)
        display.display = bool(shown)
        self.call_after_refresh(self._check_clipped)

    def _check_clipped(self) -> None:
        """Show a shorter excerpt when the panel's edge clips this one: what it would cut off
        is its end, where a command's last lines and the note of what was left out are."""
        if self.current is None or not self.has_class("-active"):
            return
        display = self.query_one("#approval-display", Static)
        choices = self.query_one("#approval-choices")
        clipped = display.region.bottom - choices.region.y
        if display.display and clipped > 0 and self._excerpt_room[0] > 3:
            self._clipped_rows += clipped
            self._show_excerpt()

    def _fit_session_label(self) -> None:
        """Shorten the `a` label (the only long one) until the choices fit on their line."""
        request = self.current
        if request is None or not request.scope_label:
            return
        session = self.query_one("#approval-session", Button)
        scope = visible(request.scope_label, multiline=False)
        label = f"a  for this session: {scope}"
        # Not laid out yet (the panel was hidden): on_resize fits it once it is.
        if self.content_region.width:
            others = sum(
                cell_len(str(button.label)) + 3  # line-pad on both sides and the margin
                for button in self.query_one("#approval-choices").query(Button)
                if button is not session and button.display
            )
            room = self.content_region.width - others - 3
            action = self._action
            if cell_len(label) > room:
                label = f"a  session: {scope}"
            if cell_len(label) > room:
                # Too long for the button: the scope goes, whole, on the action line, so what
                # `a` approves is never cut.
                label = "a  for this session" if room >= 19 else "a  session"
                action = Content.assemble(
                    self._action, ("  · a covers ", "$text-muted"), (scope, "bold")
                )
            self.query_one("#approval-action", Static).update(action)
        # Content, not str: a Button reads a str label as markup.
        session.label = Content(label)
        session.refresh(layout=True)

    def _update_title(self) -> None:
        request = self.current
        if request is None:
            return
        title = Content.assemble(("Approve ", "bold"), (f"{_subject(request)}?", "bold"))
        if request.subagent_type:  # whose request it is, as Kimi's panel says its task
            asker = f"  subagent {request.subagent_type} {request.agent_id or ''}".rstrip()
            if request.source_description:
                asker += f": {request.source_description}"
            title = Content.assemble(title, (visible(asker, multiline=False), "$accent"))
        if len(self._queue) > 1:
            title = Content.assemble(title, (f"  (+{len(self._queue) - 1} more)", "$text-muted"))
        self.query_one("#approval-title", Static).update(title)

    def _finish(self) -> None:
        had_focus = self._contains(self.screen.focused)
        self.feedback_open = False
        self.remove_class("-active")
        previous, self._previous_focus = self._previous_focus, None
        if had_focus:
            if previous is not None and previous.is_attached and previous.focusable:
                previous.focus()
            else:
                self.screen.set_focus(None)
        self.refresh_bindings()
        self.post_message(self.Done())

    def _contains(self, widget: Widget | None) -> bool:
        return widget is not None and (widget is self or self in widget.ancestors)

    # --- answering -------------------------------------------------------------------------------

    def answer(self, response: ApprovalResponse) -> None:
        """Resolve the request on show with `response` and move on to the next one."""
        request = self.current
        if request is None:
            return
        request.resolve(response)
        self.post_message(self.Answered(request.id, response))
        self._advance()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        request = self.current
        if action in _ANSWER_ACTIONS:
            if request is None or self.feedback_open:
                return False
            if action == "approve_for_session":
                return bool(request.scope_label)
            if action == "full_view":
                return bool(request.display) or request.plan is not None
            return True
        if action == "cancel_feedback":
            return request is not None and self.feedback_open
        return True

    def action_approve(self) -> None:
        """Run this call once."""
        self._key_choice("approve")

    def action_approve_for_session(self) -> None:
        """Run this call and, for the rest of the session, the calls in its scope."""
        self._key_choice("approve_for_session")

    def action_reject(self) -> None:
        """Do not run it; the turn ends."""
        self._key_choice("reject")

    def action_feedback(self) -> None:
        """Open the input for a rejection with feedback."""
        self._key_choice("feedback")

    def action_full_view(self) -> None:
        """Open the whole diff or command in a screen of its own."""
        self._key_choice("full_view")

    def on_key(self, event: events.Key) -> None:
        if not event.is_printable or self.feedback_open:
            return
        # A key that answers nothing ("/" or "t" of "/tasks"): a message is being typed by
        # someone who has not seen the panel (a background agent's request, between turns).
        stray = self.current is not None and event.key not in self.ANSWER_KEYS
        if event.time >= self._typing_until and not stray:
            if self.current is None and not self.has_class("-active"):
                # Claimed, not shown yet: kept until the request shows.
                event.stop()
                event.prevent_default()
                self._early_keys.append(events.Key(event.key, event.character))
            return
        # Typed on from the prompt: the key goes on into it, and answers nothing; so do the
        # keys typed this soon after it (the "a" of "/tasks" must not approve for the session).
        event.stop()
        event.prevent_default()
        self._typing_until = max(self._typing_until, event.time + self.key_delay_s)
        previous = self._previous_focus
        if previous is not None and previous.is_attached:
            previous.post_message(events.Key(event.key, event.character))

    def _key_choice(self, action: str) -> None:
        if self._shown_at == 0.0 or time.monotonic() - self._shown_at >= self.key_delay_s:
            self._choose(action)

    def _choose(self, action: str) -> None:
        draft = self._draft()
        if draft is not None and action == "approve":  # the plan as the user left it
            self.answer(PlanVerdict(choice="approve", plan=draft))
        elif action in _RESPONSES:
            self.answer(_RESPONSES[action])
        elif action == "feedback":
            self._open_feedback()
        elif action == "full_view":
            self._open_full_view()

    def _open_feedback(self) -> None:
        self.feedback_open = True
        feedback = self.query_one("#approval-feedback", Input)
        feedback.value = ""
        feedback.focus()
        self.refresh_bindings()

    def action_cancel_feedback(self) -> None:
        """Back from the feedback input to the choices."""
        self.feedback_open = False
        self.focus()
        self.refresh_bindings()

    def _open_full_view(self) -> None:
        from kode_tui.ui.screens.diff import ApprovalView
        from kode_tui.ui.screens.plan import PlanReview

        request = self.current
        if request is None:
            return
        if request.plan is not None:
            draft = self._plan_drafts.get(request.id)
            self._full_view = PlanReview(request.description, request.plan, draft)
            self.app.push_screen(self._full_view, lambda got: self._plan_answered(request, got))
            return
        self._full_view = ApprovalView(
            _subject(request),
            request.display,
            answer=lambda choice: self._answer_from_view(request, choice),
            for_session=bool(request.scope_label),
        )
        self.app.push_screen(self._full_view)

    def _answer_from_view(self, request: ApprovalRequest, choice: str) -> None:
        """`choice` made in the full view of `request`, if it still waits."""
        self._full_view = None
        if self.current is request:
            self._choose(choice)

    def _draft(self) -> str | None:
        """The edit of the plan on show, kept when its dialog was left with Esc."""
        request = self.current
        return None if request is None else self._plan_drafts.get(request.id)

    def _plan_answered(self, request: ApprovalRequest, verdict: PlanVerdict | None) -> None:
        """The plan dialog closed: with a verdict, the answer (if `request` still waits)."""
        from kode_tui.ui.screens.plan import PlanReview

        dialog, self._full_view = self._full_view, None
        if isinstance(dialog, PlanReview) and verdict is None and dialog.draft:
            self._plan_drafts[request.id] = dialog.draft  # Esc: `d` opens it with the edit
        else:
            self._plan_drafts.pop(request.id, None)
        if verdict is not None and self.current is request:
            self.answer(verdict)

    @on(Input.Submitted, "#approval-feedback")
    def _feedback_sent(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        draft = self._draft()
        if text and draft is not None:
            self.answer(PlanVerdict(choice="revise", feedback=text, plan=draft))
        elif text:
            self.answer(RejectWithFeedback(feedback=text))

    @on(Button.Pressed)
    def _button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        action = _BUTTON_ACTIONS.get(event.button.id or "")
        if action is not None and self.check_action(action, ()):
            self._choose(action)


def _holds_text(widget: Widget) -> bool:
    """Whether `widget` is a text field with something typed in it."""
    if isinstance(widget, Input):
        return bool(widget.value.strip())
    return isinstance(widget, TextArea) and bool(widget.text.strip())


def _subject(request: ApprovalRequest) -> str:
    from kode_tui.ui.widgets.display_blocks import command_text

    description = request.description
    shown_below = any(
        isinstance(block, ShellBlock) and block.command == description for block in request.display
    )
    if shown_below:
        # A command shows whole in the body (and in the full view); the title only names it.
        lines = description.split("\n")
        first = command_text(lines[0].strip())
        if cell_len(first) > TITLE_CHARS:  # cells: wide characters would wrap the title
            first = set_cell_size(first, TITLE_CHARS - 1).rstrip() + "…"
        if len(lines) > 1:
            description = f"{first} … ({len(lines)} lines)" if first else f"({len(lines)} lines)"
        else:
            description = first
    else:
        description = visible(description, multiline=False)
    tool = visible(request.tool_name, multiline=False)
    # Edits describe themselves with the tool's name ("WriteFile a.py"); commands do not.
    if not tool or description.startswith(tool):
        return description
    return f"{tool}: {description}"


if __name__ == "__main__":
    from textual.app import App

    class ApprovalDemo(App[None]):
        CSS_PATH = "prompt.tcss"

        def compose(self) -> ComposeResult:
            self.bus = WireBus()
            yield Static("The conversation would be here.")
            yield ApprovalPanel(self.bus)

        def on_mount(self) -> None:
            old = "".join(f"line {n}\n" for n in range(40))
            new = old.replace("line 7\n", "line seven\n").replace("line 30\n", "")
            self.bus.send(
                ApprovalRequest(
                    id="1",
                    tool_call_id="call-1",
                    action="edit file",
                    description="notes.txt",
                    display=[DiffBlock(path="notes.txt", old_text=old, new_text=new)],
                    tool_name="StrReplaceFile",
                    scope_label="all edits in the work dir",
                )
            )

        def on_approval_panel_answered(self, message: ApprovalPanel.Answered) -> None:
            self.notify(f"Answered: {message.response!r}")

    ApprovalDemo().run()
