"""The compaction review (`/compact`, and automatic compaction with `[compaction] review`):
what a compaction would do, before anything changes, with its summary in an editor.

It shows the tokens before → after, the strategy (switching it works the plan out again), what
is kept verbatim and how much is hidden; `ctrl+s` or Accept dismisses it with the plan to apply
(its summary as edited), Esc with None: nothing changes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.events import Resize
from textual.screen import ModalScreen
from textual.widgets import Button, Select, Static, TextArea

from kode_tui.humanize import format_tokens, plural
from kode_tui.message import shown_messages
from kode_tui.ui.widgets.message_lines import message_line

if TYPE_CHECKING:
    from kode_tui.soul.facade import CompactionPlan, Message

Replan = Callable[[str], Awaitable["CompactionPlan | None"]]
"""Works the compaction out again with the strategy it is given the name of."""

KEYS = "ctrl+s accept · Esc cancel, nothing changes · Tab next"
NO_SUMMARY = "This strategy writes no summary: the hidden tool results are replaced by a note."
SHOWN_KEPT = 6
"""Kept messages listed; the rest are counted."""


def strategy_label(name: str) -> str:
    """`LLMSummaryCompaction` → `LLMSummary`: the class names all end so."""
    return name.removesuffix("Compaction") or name


def kept_lines(kept: Sequence[Message], limit: int = SHOWN_KEPT) -> Content:
    """The kept messages (checkpoint notes left out), newest last, one short line each."""
    shown = shown_messages(kept)
    lines = [message_line(m) for m in shown[-limit:]]
    if len(shown) > limit:
        lines.insert(0, Content(f"… {len(shown) - limit} earlier"))
    return Content("\n").join(lines) if lines else Content("nothing")


SHORT_ROWS = 36
"""Below this many rows the kept list shows two lines."""
FIXED_ROWS = 23
"""The screen's rows besides the summary editor on a short terminal (borders, title, tokens,
strategy, kept, headings, buttons, keys) plus the margins around the dialog."""


class CompactionReview(ModalScreen["CompactionPlan | None"]):
    """A compaction plan to accept (with the summary as edited) or cancel."""

    DEFAULT_CLASSES = "kode-dialog"
    DEFAULT_CSS: ClassVar[str] = """
    CompactionReview > Vertical {
        max-width: 110;
    }
    CompactionReview #review-strategy-row {
        height: auto;
    }
    CompactionReview .review-label {
        width: auto;
        padding: 1 1 0 0;
    }
    CompactionReview #review-strategy {
        width: 36;
    }
    CompactionReview .review-heading {
        text-style: bold;
        margin-top: 1;
    }
    CompactionReview #review-kept {
        color: $text-muted;
        max-height: 7;
    }
    CompactionReview #review-summary {
        height: 12;
    }
    CompactionReview #review-buttons {
        height: auto;
        margin-top: 1;
    }
    CompactionReview #review-buttons Button {
        margin-right: 2;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "accept", "Accept", priority=True, id="accept_compaction"),
        Binding("escape", "cancel", "Cancel", id="cancel_compaction"),
    ]

    def __init__(self, plan: CompactionPlan, replan: Replan, *, pins: int = 0) -> None:
        super().__init__()
        self.plan = plan
        self._replan = replan
        self._pins = pins
        """How many pins the session has: sent with every request, whatever is compacted."""

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("Review the compaction", classes="dialog-title")
            yield Static(id="review-tokens")
            with Horizontal(id="review-strategy-row"):
                yield Static("Strategy", classes="review-label")
                yield Select(
                    [(strategy_label(name), name) for name in self.plan.strategies],
                    value=self.plan.strategy,
                    allow_blank=False,
                    id="review-strategy",
                )
            yield Static("Kept verbatim", classes="review-heading", id="review-kept-title")
            yield Static(id="review-kept")
            yield Static(
                "Summary (edit it: this is what the model reads)", classes="review-heading"
            )
            yield TextArea(id="review-summary", soft_wrap=True)
            with Horizontal(id="review-buttons"):
                yield Button("Accept", variant="primary", id="review-accept", compact=True)
                yield Button("Cancel", id="review-cancel", compact=True)
            yield Static(KEYS, classes="dialog-keys")

    def on_mount(self) -> None:
        self._show(self.plan)
        self.query_one(TextArea).focus()
        self._fit(self.app.size.height)

    def on_resize(self, event: Resize) -> None:
        self._fit(event.size.height)

    def _fit(self, height: int) -> None:
        """On a short terminal the summary editor and the kept list shrink, so the buttons and
        the keys stay on screen (at 24 rows they were cut off below the editor)."""
        short = height < SHORT_ROWS
        self.query_one("#review-kept").styles.max_height = 2 if short else 7
        self.query_one(TextArea).styles.height = max(3, min(12, height - FIXED_ROWS))

    def _show(self, plan: CompactionPlan) -> None:
        self.plan = plan
        summary = self.query_one(TextArea)
        summary.text = plan.summary if plan.summary is not None else NO_SUMMARY
        summary.read_only = plan.summary is None
        summary.move_cursor((0, 0))
        # Counted as the conversation shows them: checkpoint notes for the model left out.
        kept = len(shown_messages(plan.kept))
        hidden = len(shown_messages(plan.source)) - kept if plan.source else plan.hidden
        pins = f" + {plural(self._pins, 'pin')}" if self._pins else ""
        self.query_one("#review-kept-title", Static).update(
            f"Kept verbatim: {plural(kept, 'message')}{pins} · hidden: {hidden} "
            f"({'summarised' if plan.summary is not None else 'tool results replaced'})"
        )
        self.query_one("#review-kept", Static).update(kept_lines(plan.kept))
        self._show_tokens()

    def _show_tokens(self) -> None:
        plan = self._edited()
        self.query_one("#review-tokens", Static).update(
            f"Tokens: {format_tokens(plan.tokens_before)} → {format_tokens(plan.tokens_after)} "
            "(estimated)" + (" · summary edited" if plan.edited else "")
        )

    def _edited(self) -> CompactionPlan:
        if self.plan.summary is None:
            return self.plan
        return self.plan.with_summary(self.query_one(TextArea).text)

    @on(TextArea.Changed)
    def _summary_changed(self) -> None:
        self._show_tokens()

    @on(Select.Changed, "#review-strategy")
    def _strategy_changed(self, event: Select.Changed) -> None:
        if isinstance(event.value, str) and event.value != self.plan.strategy:
            self._rerun(event.value)

    @work(exclusive=True, group="compaction-review", exit_on_error=False)
    async def _rerun(self, strategy: str) -> None:
        box = self.query_one(Vertical)
        box.loading = True
        try:
            plan = await self._replan(strategy)
        except Exception as error:  # the model's or the disk's: said here, the review goes on
            self.notify(f"{strategy_label(strategy)} failed: {error}", severity="error")
            plan = None
        else:
            if plan is None:
                self.notify(f"{strategy_label(strategy)} finds nothing to compact.", timeout=4)
        finally:
            box.loading = False
        if plan is not None:
            self._show(plan)
        else:  # back to the strategy still shown
            with self.prevent(Select.Changed):
                self.query_one(Select).value = self.plan.strategy

    @on(Button.Pressed, "#review-accept")
    def _accept_pressed(self) -> None:
        self.action_accept()

    @on(Button.Pressed, "#review-cancel")
    def _cancel_pressed(self) -> None:
        self.action_cancel()

    def action_accept(self) -> None:
        if self.query_one(Vertical).loading:
            return
        plan = self._edited()
        if plan.summary is not None and not plan.summary.strip():
            self.notify("The summary is empty: write one, or Esc to cancel.", severity="error")
            return
        self.dismiss(plan)

    def action_cancel(self) -> None:
        self.dismiss(None)
