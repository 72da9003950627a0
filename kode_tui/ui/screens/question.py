"""AskUserQuestion's dialog: the model's questions, one at a time, answered by choosing an
option or typing an answer of one's own (Kimi CLI 1.52's question panel, as a modal screen)."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from kode_tui.safetext import visible
from kode_tui.wire.events import QuestionItem, QuestionRequest

OTHER = "other"
"""The row that opens the input for an answer of one's own."""
DONE = "done"
"""The row that ends a question of several choices."""
TYPING_KEYS = "Enter sends your answer · Esc back to the options"


def keys_line(question: QuestionItem) -> str:
    """The dialog's keys for `question` (digits for its first four options)."""
    count = min(len(question.options), 4)
    digits = "1" if count == 1 else f"1-{count}"
    if question.multi_select:
        return f"{digits} or ↑↓ Enter tick · Done sends them · Esc dismiss"
    return f"{digits} or ↑↓ Enter choose · Esc dismiss"


class _Resized(Message):
    """The question or the keys line changed height: the options' room is measured again."""


class _Head(VerticalScroll):
    """The question (scrolled when long): says when its height changed."""

    def on_resize(self) -> None:
        self.post_message(_Resized())


class _Keys(Static):
    """The keys line: says when its height changed."""

    def on_resize(self) -> None:
        self.post_message(_Resized())


class QuestionScreen(ModalScreen[None]):
    """Asks a `QuestionRequest`'s questions in turn and resolves it with the answers, keyed by
    each question's text (several choices joined by `, `); Esc dismisses them all (`{}`)."""

    DEFAULT_CLASSES = "kode-dialog"
    DEFAULT_CSS: ClassVar[str] = """
    QuestionScreen #question-head { height: auto; max-height: 40vh; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss_questions", "Dismiss", id="question.dismiss"),
        # 1-4 choose an option at once, as in Kimi's panel (the answer input takes digits).
        *(Binding(str(n), f"pick({n})", show=False) for n in range(1, 5)),
    ]

    def __init__(self, request: QuestionRequest) -> None:
        super().__init__()
        self.request = request
        self._answers: dict[str, str] = {}
        self._index = 0
        self._chosen: list[str] = []
        """The labels chosen so far in a question of several choices."""

    @property
    def question(self) -> QuestionItem:
        """The question on show."""
        return self.request.questions[self._index]

    def compose(self) -> ComposeResult:
        with Vertical():
            # A long question scrolls (up to 40% of the screen) rather than push the rest out.
            with _Head(id="question-head", can_focus=False):
                yield Static(id="question-title", classes="dialog-title")
            yield OptionList(id="question-options")
            yield Input(placeholder="Your answer (Enter sends)", id="question-other")
            yield _Keys(id="question-keys", classes="dialog-keys")

    def on_mount(self) -> None:
        self._show()

    def on_resize(self) -> None:
        self.call_after_refresh(self._fit)

    @on(_Resized)
    def _part_resized(self, event: _Resized) -> None:
        # A new question's height is known only after the layout that follows its update:
        # measured before, the options kept a stale room and pushed the rest out.
        event.stop()
        self.call_after_refresh(self._fit)

    def _fit(self) -> None:
        """Cap the options' height so that the frame holds them, the question, the answer's
        input (when shown) and the keys at any terminal height: the options scroll."""
        frame = self.query_one(Vertical)
        head = self.query_one("#question-head")
        other = self.query_one("#question-other", Input)
        keys = self.query_one("#question-keys", Static)
        answer_rows = 0
        if other.display:  # its CSS height: just shown, it has no size yet
            answer_rows = (other.styles.height.cells if other.styles.height else None) or 3
        room = (
            int(self.size.height * 0.9)  # the dialogs' max-height (app.tcss)
            - frame.styles.gutter.height
            - head.outer_size.height
            - answer_rows
            - keys.outer_size.height
            - keys.styles.margin.height
        )
        options = self.query_one(OptionList)
        options.styles.max_height = max(room, 3)
        self.call_after_refresh(options.scroll_to_highlight)

    def _show(self) -> None:
        question = self.question
        # Content, not markup: the model wrote every word of it.
        tag = f"[{visible(question.header, multiline=False)}] " if question.header else ""
        count = f" ({self._index + 1}/{len(self.request.questions)})"
        self.query_one("#question-title", Static).update(
            Content(tag + visible(question.question) + count)
        )
        options = self.query_one("#question-options", OptionList)
        options.clear_options()
        for number, option in enumerate(question.options, 1):
            mark = ""
            if question.multi_select:
                mark = "[x] " if option.label in self._chosen else "[ ] "
            text = f"{number}. {mark}{visible(option.label, multiline=False)}"
            if option.description:
                text += f" - {visible(option.description, multiline=False)}"
            options.add_option(Option(Content(text), id=str(number - 1)))
        options.add_option(Option(Content("Other: type an answer"), id=OTHER))
        if question.multi_select:
            options.add_option(Option(Content("Done"), id=DONE))
        other = self.query_one("#question-other", Input)
        other.display = False
        other.value = ""
        self.query_one("#question-keys", Static).update(keys_line(question))
        options.highlighted = 0
        options.focus()
        self.call_after_refresh(self._fit)

    @on(OptionList.OptionSelected, "#question-options")
    def _chose(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        question, chosen = self.question, event.option.id
        if chosen == OTHER:
            other = self.query_one("#question-other", Input)
            other.display = True
            other.focus()
            self.query_one("#question-keys", Static).update(TYPING_KEYS)
            self.call_after_refresh(self._fit)
        elif chosen == DONE:
            if self._chosen:  # none ticked is no answer (Kimi's panel does not send it either)
                self._answer(", ".join(self._chosen))
            else:
                self.app.bell()
        elif chosen is not None:
            label = question.options[int(chosen)].label
            if not question.multi_select:
                self._answer(label)
                return
            if label in self._chosen:
                self._chosen.remove(label)
            else:
                self._chosen.append(label)
            highlighted = event.option_index
            self._show()
            self.query_one("#question-options", OptionList).highlighted = highlighted

    @on(Input.Submitted, "#question-other")
    def _typed(self, event: Input.Submitted) -> None:
        event.stop()
        if text := event.value.strip():
            self._answer(", ".join([*self._chosen, text]))

    def _answer(self, answer: str) -> None:
        self._answers[self.question.question] = answer
        self._chosen = []
        self._index += 1
        if self._index < len(self.request.questions):
            self._show()
            return
        self.request.resolve(self._answers)
        self.dismiss()

    def action_pick(self, number: int) -> None:
        """Choose option `number` (as Enter on its row does)."""
        typing = self.query_one("#question-other", Input).has_focus
        if typing or number > len(self.question.options):
            return
        options = self.query_one("#question-options", OptionList)
        options.highlighted = number - 1
        options.action_select()

    def action_dismiss_questions(self) -> None:
        """Esc: the user would rather not answer; the model is told they dismissed it. While
        an answer is typed, Esc goes back to the options instead (the answers so far stay)."""
        other = self.query_one("#question-other", Input)
        if other.display:
            other.display = False
            self.query_one(OptionList).focus()
            self.query_one("#question-keys", Static).update(keys_line(self.question))
            self.call_after_refresh(self._fit)
            return
        self.request.resolve({})
        self.dismiss()
