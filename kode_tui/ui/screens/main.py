"""The main screen: the conversation, the context panes beside it, approvals and the prompt,
with the approval mode's badge on the prompt's lower border.

Below 100 columns the side panes move behind a tab bar (`Conversation | Context`), so the
conversation keeps the whole width.

The screen comes up in two moves: its frame and the prompt first (Textual alone, so the first
frame is quick and the user can start typing), then `attach()` gives the panes the session.
A new session's side panes are in the first frame already, drawn as a new session shows them
(no token count, no checkpoints, no rotated contexts): their modules import nothing of the
domain until `attach()` binds them, and binding draws their figures in place, on the same
rows. Any other session's panes are mounted by `attach()`, with what they show.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.css.query import QueryType
from textual.events import Resize, ScreenResume
from textual.geometry import Size
from textual.message import Message
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Header, Static, Tab, Tabs

from kode_tui.ui import preload
from kode_tui.ui.terminal_writes import SteadyUpdates, TerminalWrites
from kode_tui.ui.widgets.gauge import TokenGauge
from kode_tui.ui.widgets.history import HistoryPane
from kode_tui.ui.widgets.keys_footer import KeysFooter
from kode_tui.ui.widgets.prompt import CommandRows, PromptInput
from kode_tui.ui.widgets.queued import QueuedMessages
from kode_tui.ui.widgets.timeline import CheckpointDetails, CheckpointTimeline

if TYPE_CHECKING:
    from kode_tui.soul.facade import AgentSession, Subscription, WireBus
    from kode_tui.wire.events import Event

NARROW_WIDTH = 100

CHROME_ROWS = 6
"""Rows besides the conversation and an approval: header, prompt, footer, a folded banner."""
NARROW_ROWS = 2
"""The tab bar's rows below `NARROW_WIDTH`."""
NARROW_CHAIN = ("#conversation", "#timeline", "#history", "#prompt")
"""Where Tab goes below `NARROW_WIDTH`: every pane, the tab bar following the focus (the panes
behind the hidden tab are not in Textual's own focus chain)."""


class MainScreen(SteadyUpdates, Screen[None]):
    """One session's screen; the App owns the session and answers the intents posted here."""

    AUTO_FOCUS = "#prompt"
    """Textual focuses the first focusable widget otherwise: a new session's Checkpoints, drawn
    before the prompt, until `on_mount`'s focus lands (a frame later)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "ctrl+l",
            "focus_prompt",
            "Focus the prompt, draw the screen again",
            id="focus_prompt",
            show=False,
        ),
        # The conversation's own Alt+↑/↓ move its block cursor; from the prompt they go there.
        Binding("alt+up", "block_cursor('previous')", "Previous block", show=False),
        Binding("alt+down", "block_cursor('next')", "Next block", show=False),
        # Keys typed in the prompt, taken before it does (priority): TextArea binds them itself
        # (a page of its few lines, cut, ↑ to history). `check_action` disables them wherever
        # they do not apply, and the key goes on to the focused widget.
        Binding(
            "pageup",
            "page_conversation(-1)",
            "Page the conversation up",
            id="page_conversation_up",
            priority=True,
            show=False,
        ),
        Binding(
            "pagedown",
            "page_conversation(1)",
            "Page the conversation down",
            id="page_conversation_down",
            priority=True,
            show=False,
        ),
        Binding(
            "up",
            "take_queued(True)",
            "Newest queued message back to edit (empty prompt)",
            id="edit_queued",
            priority=True,
            show=False,
        ),
        Binding(
            "ctrl+x",
            "take_queued(False)",
            "Drop the newest queued message (empty prompt)",
            id="drop_queued",
            priority=True,
            show=False,
        ),
    ]

    @dataclass
    class QueuedTaken(Message):
        """↑ or Ctrl+X on an empty prompt: the newest queued message is not to be sent; back in
        the prompt to edit when `edit`."""

        edit: bool

    def __init__(
        self,
        work_dir: Path,
        commands: CommandRows,
        history: list[str],
        *,
        new_session: bool = False,
    ) -> None:
        """`new_session`: the screen will show a new session, whose side panes are drawn in
        the first frame (see the module's docstring)."""
        super().__init__()
        self.attached = False
        """Whether the panes have the session (see `attach`)."""
        self._new_session = new_session
        self._shown = False
        """Whether the screen has been shown (`_on_screen_resume`)."""
        self._backlogs: tuple[Subscription[Event] | None, Subscription[Event] | None] = (
            None,
            None,
        )
        """What the conversation and the approval panel missed until `attach_later`."""
        self._work_dir = work_dir
        self._commands = commands
        self._history = history

    def compose(self) -> ComposeResult:
        yield Header()
        tabs = Tabs(
            Tab("Conversation", id="tab-conversation"),
            Tab("Context", id="tab-context"),
            id="narrow-tabs",
        )
        tabs.can_focus = False  # Tab walks the panes and the bar follows (`focus_next`)
        yield tabs
        with Horizontal(id="body"):
            with Vertical(id="main-column"):
                yield Static(id="conversation-frame", classes="pane-frame")
            with Vertical(id="side"):
                if self._new_session:
                    yield from _side_panes()
        prompt = PromptInput(
            self._work_dir, commands=self._commands, history=self._history, id="prompt"
        )
        yield prompt
        yield QueuedMessages(id="queued")
        yield KeysFooter()

    def on_mount(self) -> None:
        self._apply_width(self.app.size.width)
        self.query_one(PromptInput).focus()
        self.query_one("#conversation-frame").border_title = "Conversation"

    @property
    def new_session(self) -> bool:
        """Whether the screen was made for a new session (no history, no earlier context)."""
        return self._new_session

    async def attach(
        self, opened: AgentSession, banner: str | None = None, *, later: bool = False
    ) -> None:
        """Mount the panes, subscribed to the session's wire, showing it, under `banner` if
        any. With `later` (a new session's first message goes first), the side panes are
        bound and the conversation and approval panel mounted by `attach_later`, after its
        request: each reads the session as it binds, or takes the events sent meanwhile from
        a subscription made now. A read-only session says so where the prompt is."""
        from kode_tui.ui.widgets.banner import Banner
        from kode_tui.ui.widgets.mode_badge import ModeBadge

        bus = opened.bus
        side = self.query_one("#side")
        prompt = self.query_one(PromptInput)
        if not side.children:  # bound as they mount: their first draw shows the session
            await side.mount_all(_side_panes(opened))
        if banner:
            await self.query_one("#main-column").mount(Banner(banner, bus, id="banner"), before=0)
        await self.mount(ModeBadge(bus, id="mode-badge"), after=prompt)
        if later:
            self._backlogs = (bus.subscribe(), bus.subscribe())  # the conversation's, the panel's
        else:
            await self.attach_later(opened)
        if opened.read_only is not None:
            why = (
                "another kode-tui is writing this session"
                if opened.read_only == "locked"
                else "this session's folder cannot be written"
            )
            prompt.read_only_reason = why
        self.attached = True

    async def attach_later(self, opened: AgentSession) -> None:
        """The panes `attach(later=True)` left: a new session's side panes bound, the approval
        panel and the conversation, each showing first what was sent since `attach`."""
        from kode_tui.ui.widgets.approval import ApprovalPanel

        bus = opened.bus
        backlogs, self._backlogs = self._backlogs, (None, None)
        if self._new_session:  # drawn in the first frame
            self.query_one(TokenGauge).bind(bus, opened.status())
            self.query_one(CheckpointTimeline).bind(bus, opened)
            self.query_one(HistoryPane).bind(bus, opened)
        panel = ApprovalPanel(bus, backlog=backlogs[1], id="approval")
        await self.mount(panel, before=self.query_one(PromptInput).image_chips)
        self._fit_approval(self.size)
        await self._mount_conversation(bus, backlogs[0])

    async def _mount_conversation(
        self, bus: WireBus, backlog: Subscription[Event] | None = None
    ) -> None:
        """Put the conversation in its frame's place, showing first what `backlog` (a
        subscription to `bus`) queued before it."""
        await preload.conversation_loaded()
        from kode_tui.ui.widgets.conversation import Conversation

        await self.query_one("#conversation-frame").remove()
        pane = Conversation(bus, backlog=backlog, id="conversation")
        await self.query_one("#main-column").mount(pane)

    def _on_screen_resume(self, event: ScreenResume) -> None:
        # Textual restyles a whole screen each time it is shown; shown the first time, this
        # one was styled as it mounted, a moment before (~10 ms of the first frame).
        if not self._shown:
            self._shown = True
            event.refresh_styles = False

    async def _on_resize(self, event: Resize) -> None:
        # Textual's Screen lays itself out again on every Resize, of the size it has too: on
        # its first show it did so twice more (its own layout posts it one, the terminal's
        # in-band size report another), each a reflow and a repaint of every pane on the loop
        # the first frame and the first request wait for.
        if event.size == self.outer_size:  # the size it was laid out at
            event.prevent_default()
        self._apply_width(event.size.width)
        self._fit_approval(event.size)

    def _fit_approval(self, size: Size) -> None:
        """Cap the approval panel so the conversation keeps a third of the height: on a short
        terminal the panel's excerpt shrinks (`d` shows it all), not the conversation."""
        # By its type's name: importing the panel imports the facade, and the first frame's
        # resize must not wait for that (it was 0.3 s of a 0.6 s first frame).
        for panel in self.query("ApprovalPanel"):
            chrome = CHROME_ROWS + (NARROW_ROWS if size.width < NARROW_WIDTH else 0)
            room = size.height - chrome - -(-size.height // 3)
            panel.styles.max_height = max(6, min(size.height // 2, room))

    def _apply_width(self, width: int) -> None:
        self.set_class(width < NARROW_WIDTH, "-narrow")

    @on(Tabs.TabActivated, "#narrow-tabs")
    def _switch_tab(self, event: Tabs.TabActivated) -> None:
        self.set_class(event.tab.id == "tab-context", "-show-context")

    def focus_next(self, selector: str | type[QueryType] = "*") -> Widget | None:
        if not self.has_class("-narrow") or selector != "*":
            return super().focus_next(selector)
        return self._focus_narrow(1)

    def focus_previous(self, selector: str | type[QueryType] = "*") -> Widget | None:
        if not self.has_class("-narrow") or selector != "*":
            return super().focus_previous(selector)
        return self._focus_narrow(-1)

    def _focus_narrow(self, step: int) -> Widget | None:
        chain = [pane for selector in NARROW_CHAIN for pane in self.query(selector)]
        if not chain:
            return super().focus_next() if step > 0 else super().focus_previous()
        focused = self.focused
        at = (
            next(
                (i for i, pane in enumerate(chain) if focused is pane or pane in focused.ancestors),
                -1,
            )
            if focused is not None
            else -1
        )
        target = chain[(at + step) % len(chain)]
        self._show_tab_of(target)
        self.set_focus(target)
        return target

    def _show_tab_of(self, widget: Widget) -> None:
        """Below `NARROW_WIDTH`, bring the tab holding `widget` to the front."""
        side = self.query("#side")
        if not self.has_class("-narrow") or not side:
            return
        in_side = side.first() in widget.ancestors
        if in_side or widget.id == "conversation":
            tab = "tab-context" if in_side else "tab-conversation"
            self.query_one("#narrow-tabs", Tabs).active = tab
            self.set_class(in_side, "-show-context")

    def on_checkpoint_timeline_highlighted(self, event: CheckpointTimeline.Highlighted) -> None:
        self.query_one(CheckpointDetails).show(event.details_text)

    def action_block_cursor(self, direction: str) -> None:
        """Alt+↑/↓ typed in the prompt: the conversation takes the focus and its block cursor
        moves, so `x`, `p` and `o` work on that block at once."""
        from kode_tui.ui.widgets.conversation import Conversation

        panes = self.query(Conversation)
        if not panes:
            return
        conversation = panes.first()
        conversation.focus()
        if direction == "previous":
            conversation.action_cursor_previous()
        else:
            conversation.action_cursor_next()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action not in ("page_conversation", "take_queued"):
            return True
        prompt = self.query_one(PromptInput)
        if self.focused is not prompt:
            return False
        if action == "take_queued":
            queued = self.query_one(QueuedMessages).messages
            return bool(queued) and not prompt.text and not prompt.searching
        return True

    def action_page_conversation(self, pages: int) -> None:
        """PgUp/PgDn typed in the prompt: the conversation pages, the prompt keeps the focus."""
        from kode_tui.ui.widgets.conversation import Conversation

        for conversation in self.query(Conversation):
            # From where a scroll under way is going, not where it is: PgUp held, or pressed
            # again before the last page's animation ends, goes a page further each time.
            page = conversation.scrollable_content_region.height
            target = conversation.scroll_target_y + pages * page
            conversation.scroll_to(y=target, animate=True, immediate=True)

    def action_take_queued(self, edit: bool) -> None:
        self.post_message(self.QueuedTaken(edit))

    def show_queue(self, messages: Sequence[str], *, starting: bool = False) -> None:
        """Show the messages waiting for the turn to end (for the agent, while it is
        `starting`) under the prompt, oldest first."""
        queued = self.query_one(QueuedMessages)
        queued.messages, queued.starting = tuple(messages), starting
        # The badge sits on the prompt's lower border, counted from the screen's bottom.
        for badge in self.query("#mode-badge"):
            badge.styles.offset = (2, -1 - queued.rows)

    def action_focus_prompt(self) -> None:
        """Ctrl+L, as in a shell: the prompt, on a screen drawn whole again."""
        self.query_one(PromptInput).focus()
        if isinstance(self.app, TerminalWrites):
            self.app.redraw()


def _side_panes(opened: AgentSession | None = None) -> list[Widget]:
    """The context gauge, the checkpoints with their details, and the history: showing
    `opened`, or unbound (a new session's) without it."""
    bus = opened.bus if opened is not None else None
    return [
        TokenGauge(bus, opened.status() if opened is not None else None, id="gauge"),
        CheckpointTimeline(bus, opened, id="timeline"),
        CheckpointDetails(id="checkpoint-details"),
        HistoryPane(bus, opened, id="history"),
    ]
