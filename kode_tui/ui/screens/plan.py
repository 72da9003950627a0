"""The plan dialog: ExitPlanMode's approval as a document (Kimi 1.52 asks it as a question).

The plan shows as Markdown to read (scroll); `ctrl+e` turns it into an editor, as the
compaction review's summary is edited, and back. `ctrl+s` or Approve approves it, into the mode
picked (the one plan mode was entered from first) and, when the plan offers approaches, the one
picked; Send back returns it with the feedback typed (the model revises it in the same turn);
Reject keeps plan mode, Reject and exit leaves it (both end the turn). An edited plan goes with
the answer: the tool writes it to the plan file, and it is the plan the model receives. Esc in
the editor goes back to reading (the edit kept); else back to the approval panel, where the
request still waits (its `d` opens this again).
"""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Select, Static, TextArea

from kode_tui.safetext import visible
from kode_tui.ui.widgets.blocks import AnswerBlock
from kode_tui.wire.events import PlanAsk, PlanChoice, PlanVerdict

KEYS = "ctrl+s approve · ctrl+e edit/read · Tab next · Esc back to the panel"
_BUTTONS: dict[str, PlanChoice] = {
    "plan-approve": "approve",
    "plan-revise": "revise",
    "plan-reject": "reject",
    "plan-reject_and_exit": "reject_and_exit",
}


class PlanReview(ModalScreen[PlanVerdict | None]):
    """ExitPlanMode's plan `text` to approve, revise or reject; dismissed with the verdict, or
    None (Esc: the request still waits)."""

    # Not the dialogs' `kode-dialog` frame (80% wide, as high as its content): a plan is a
    # document, and gets the whole screen up to a readable width.
    DEFAULT_CSS: ClassVar[str] = """
    PlanReview { align: center middle; }
    PlanReview > Vertical {
        width: 100%;
        max-width: 120;
        height: 100%;
        border: round $primary;
        background: $surface;
        padding: 0 1;
    }
    PlanReview .dialog-title { text-style: bold; }
    PlanReview .dialog-keys { color: $text-muted; }
    PlanReview #plan-file { color: $text-muted; }
    PlanReview #plan-document { height: 1fr; border: tall $panel; padding: 0 1; }
    PlanReview #plan-document:focus { border: tall $primary; }
    PlanReview #plan-editor { height: 1fr; display: none; }
    PlanReview.-editing #plan-editor { display: block; }
    PlanReview.-editing #plan-document { display: none; }
    PlanReview #plan-choices { height: auto; margin-top: 1; }
    PlanReview .plan-label { width: auto; padding: 0 1 0 0; }
    PlanReview #plan-mode { width: 14; margin-right: 2; }
    PlanReview #plan-option { width: 1fr; }
    PlanReview #plan-feedback { margin-top: 1; }
    PlanReview #plan-buttons { height: auto; margin-top: 1; }
    PlanReview #plan-buttons Button { width: auto; min-width: 0; margin-right: 2; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "approve", "Approve", priority=True, id="approve_plan"),
        Binding("ctrl+e", "edit", "Edit / read the plan", priority=True, id="edit_plan"),
        Binding("escape", "back", "Back to the panel", id="plan_back"),
    ]

    def __init__(self, text: str, ask: PlanAsk, draft: str | None = None) -> None:
        super().__init__()
        self.ask = ask
        self._shown = visible(text)
        """The plan as shown (control characters as stand-ins): the editor starts from it, so
        only what the user changed counts as an edit."""
        self.draft = draft
        """The user's edit, from an earlier opening of the dialog for this plan, then the one
        it closed with (Esc: the panel opens the dialog again with it)."""

    def compose(self) -> ComposeResult:
        ask = self.ask
        with Vertical():
            yield Static("Approve the plan?", classes="dialog-title")
            yield Static(Content(visible(ask.file_path, multiline=False)), id="plan-file")
            with VerticalScroll(id="plan-document"):
                yield AnswerBlock(self.draft or self._shown)
            yield TextArea(self.draft or self._shown, id="plan-editor", soft_wrap=True)
            with Horizontal(id="plan-choices"):
                yield Static("Continue in", classes="plan-label")
                modes = ask.modes or [ask.mode]
                yield Select(
                    [(mode, mode) for mode in modes],
                    value=ask.mode if ask.mode in modes else modes[0],
                    allow_blank=False,
                    compact=True,
                    id="plan-mode",
                )
                if ask.options:
                    yield Static("Approach", classes="plan-label")
                    labels = [option.label for option in ask.options]
                    recommended = next((x for x in labels if "recommended" in x.lower()), None)
                    yield Select(
                        [(Content(visible(label, multiline=False)), label) for label in labels],
                        value=recommended or labels[0],
                        allow_blank=False,
                        compact=True,
                        id="plan-option",
                    )
            yield Input(
                placeholder="What to change (Enter sends the plan back with it)",
                compact=True,
                id="plan-feedback",
            )
            with Horizontal(id="plan-buttons"):
                yield Button("Approve", variant="primary", id="plan-approve", compact=True)
                yield Button("Send back", id="plan-revise", compact=True)
                yield Button("Edit", id="plan-edit", compact=True)
                yield Button("Reject", id="plan-reject", compact=True)
                yield Button("Reject and exit", id="plan-reject_and_exit", compact=True)
            yield Static(KEYS, classes="dialog-keys")

    def on_mount(self) -> None:
        self.query_one("#plan-document").focus()

    @property
    def editing(self) -> bool:
        return self.has_class("-editing")

    def action_edit(self) -> None:
        """Between reading the plan (Markdown) and editing its text."""
        editor = self.query_one(TextArea)
        if self.editing:
            document = self.query_one("#plan-document", VerticalScroll)
            document.remove_children()
            document.mount(AnswerBlock(editor.text))
            self.remove_class("-editing")
            document.focus()
        else:
            self.add_class("-editing")
            editor.focus()
        self.query_one("#plan-edit", Button).label = "Read" if self.editing else "Edit"

    @property
    def edited(self) -> str | None:
        """The plan's text as the user edited it; None when unchanged."""
        text = self.query_one(TextArea).text
        return text if text != self._shown and text.strip() else None

    def verdict(self, choice: PlanChoice) -> PlanVerdict:
        """The answer `choice` makes of what the dialog shows now."""
        edited = self.edited
        picked = self.query_one("#plan-mode", Select).value
        mode = next((mode for mode in self.ask.modes if mode == picked), None)
        options = self.query("#plan-option").results(Select)
        option = next((str(select.value) for select in options), "")
        return PlanVerdict(
            choice=choice,
            mode=mode if choice == "approve" else None,
            option=option if choice == "approve" else "",
            feedback=self.query_one(Input).value.strip() if choice == "revise" else "",
            plan=edited if choice in ("approve", "revise") else None,
        )

    def action_approve(self) -> None:
        self.dismiss(self.verdict("approve"))

    def action_back(self) -> None:
        """Esc: from the editor, back to reading (the edit kept); else back to the panel."""
        if self.editing:
            self.action_edit()
            return
        self.draft = self.edited
        self.dismiss(None)

    @on(Input.Submitted, "#plan-feedback")
    def _feedback_sent(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(self.verdict("revise"))

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "plan-edit":
            self.action_edit()
        elif event.button.id in _BUTTONS:
            self.dismiss(self.verdict(_BUTTONS[event.button.id]))
