"""The prompt: a multi-line input with history and `/` command and `@` path completion."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from textual import events, on, work
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import TextArea
from textual.widgets.text_area import Edit, EditResult

from kode_tui.pathnames import unescape_name
from kode_tui.safetext import has_hidden, visible
from kode_tui.ui.widgets.completion import (
    Candidate,
    CompletionList,
    PathIndex,
    Token,
    command_candidates,
    find_token,
    path_candidates,
)
from kode_tui.ui.widgets.prompt_habits import (
    PASTE_COLLAPSE_LINES,
    SHELL_TITLE,
    HistorySearch,
    PastedChips,
    edit_in_editor,
    shell_command,
)
from kode_tui.ui.widgets.prompt_images import (
    ImageChips,
    Images,
    may_mention_images,
    may_name_images,
)

log = logging.getLogger(__name__)

CommandRows = Sequence[tuple[str, str]] | Callable[[], Sequence[tuple[str, str]]]
"""`(name, one-line help)` of each slash command, or what makes them when asked."""

PLACEHOLDER = "Ask anything · / commands · @ files · Enter send · Ctrl+J newline"
BUSY_HINT = "(queued after this turn)"

_PROMPT_GROUP = Binding.Group("Prompt")
NEWLINE_KEYS = ("ctrl+j", "shift+enter", "alt+enter")
IN_ORDER_KEYS = {
    **dict.fromkeys(NEWLINE_KEYS, "newline"),
    "ctrl+r": "search_history",
    "ctrl+g": "edit_in_editor",
    "ctrl+o": "expand_pastes",
}
"""Keys the prompt acts on as they reach it (see `_on_key`); their bindings name them."""


class PromptInput(TextArea):
    """Where the user writes: Enter sends, Ctrl+J adds a line, Up/Down walk the input history.

    `/` at the start completes slash commands, `@` completes paths in the work dir. While a turn
    runs (`busy`) the prompt stays usable and Enter still sends: the App queues the message.
    """

    HELP: ClassVar[str] = f"""\
### Prompt
- **Enter** send (queued while a turn runs) · new line: **Ctrl+J**, **Alt+Enter**, `\\` **Enter**
- **↑ / ↓** walk this work dir's history · **Ctrl+R** search it · **Ctrl+G** edit in `$EDITOR`
- Messages queued during a turn show below: on an empty prompt **↑** takes the newest back to
  edit, **Ctrl+X** drops it · **PgUp / PgDn** scroll the conversation
- **!** first runs a shell command, its output added to the context
- **/** completes commands · **@** files · a paste over {PASTE_COLLAPSE_LINES} lines is a chip
  (**Ctrl+O** expands)
- Images: **Ctrl+V** pastes the clipboard's, a pasted (dropped) image path or an `@` image
  attaches it; chips show above, **Backspace** at the start removes the last (or click its ✕)
- While the list is open: **↑ / ↓** choose, **Tab** or **Enter** take it, **Esc** closes it
- **Esc Esc** on the empty prompt between turns: rewind (take back one of your messages)
"""

    BINDINGS: ClassVar[list[BindingType]] = [
        # Enter itself is handled in `_on_key` (see there); these two name it in the footer.
        Binding(
            "enter",
            "complete_or_submit",
            "Complete",
            id="prompt.complete_enter",
            group=_PROMPT_GROUP,
            show=False,
        ),
        Binding("enter", "submit", "Send", id="prompt.submit", group=_PROMPT_GROUP),
        Binding(
            ",".join(NEWLINE_KEYS),
            "newline",
            "Newline",
            id="prompt.newline",
            group=_PROMPT_GROUP,
        ),
        # Not in the footer (it is full at 80 columns): F1 lists them.
        Binding(
            "ctrl+r",
            "search_history",
            "Search history",
            id="prompt.search",
            group=_PROMPT_GROUP,
            show=False,
        ),
        Binding(
            "ctrl+g",
            "edit_in_editor",
            "Edit in $EDITOR",
            id="prompt.editor",
            group=_PROMPT_GROUP,
            show=False,
        ),
        Binding(
            "ctrl+o",
            "expand_pastes",
            "Expand pastes",
            id="prompt.expand_pastes",
            group=_PROMPT_GROUP,
            show=False,
        ),
        Binding(
            "ctrl+v",
            "paste_image",
            "Paste an image",
            id="prompt.paste_image",
            group=_PROMPT_GROUP,
            show=False,
        ),
        # Before TextArea's Backspace, declared again below: a key declared here replaces its.
        Binding(
            "backspace",
            "remove_image",
            "Remove the last image",
            id="prompt.remove_image",
            group=_PROMPT_GROUP,
            show=False,
        ),
        Binding("backspace", "delete_left", show=False),
        Binding("tab", "accept_completion", "Complete", id="prompt.complete", group=_PROMPT_GROUP),
        Binding("shift+tab", "app.cycle_mode", "Mode", id="prompt.mode", show=False),  # as Ctrl+T
        Binding(
            "escape",
            "close_completions",
            "Close list",
            id="prompt.close_completions",
            group=_PROMPT_GROUP,
        ),
        # After the list's Esc, which goes first; the App counts the presses (two: rewind).
        Binding("escape", "escape", "Rewind", id="prompt.rewind", group=_PROMPT_GROUP, show=False),
        Binding(
            "up", "previous", "History back", id="prompt.previous", group=_PROMPT_GROUP, show=False
        ),
        Binding(
            "down", "next", "History forward", id="prompt.next", group=_PROMPT_GROUP, show=False
        ),
    ]

    busy: reactive[bool] = reactive(False, toggle_class="-busy")
    """A turn is running; what is sent now is queued after it."""

    shell_mode: reactive[bool] = reactive(False, toggle_class="-shell")
    """The text starts with `!`: Enter runs it as a shell command."""

    read_only_reason: reactive[str] = reactive("")
    """Why nothing typed here can be sent (a read-only session); empty when it can."""

    @dataclass
    class Submitted(Message):
        """The user sent `text` (stripped) and `images`; never both empty."""

        prompt: PromptInput
        text: str
        images: Images = ()

        @property
        def control(self) -> PromptInput:
            return self.prompt

    @dataclass
    class Escaped(Message):
        """Esc on the empty prompt between turns (twice in a row: the user wants to rewind)."""

        prompt: PromptInput

    def __init__(
        self,
        work_dir: Path,
        *,
        commands: CommandRows = (),
        history: Sequence[str] = (),
        id: str | None = None,
    ) -> None:
        """`commands` are `(name, one-line help)` pairs such as `("/compact", "Summarise ...")`,
        or what makes them each time `/` is completed (custom commands come and go);
        `history` holds earlier inputs, oldest first."""
        super().__init__(
            id=id,
            soft_wrap=True,
            tab_behavior="focus",
            show_line_numbers=False,
            highlight_cursor_line=False,
            placeholder=PLACEHOLDER,
        )
        self.work_dir = work_dir
        self._commands = commands
        self._history: list[str] = []
        self._history_index: int | None = None
        """Where the history walk is; None while editing the draft."""
        self._draft = ""
        for text in history:
            self.add_history(text)
        self._paths = PathIndex(work_dir)
        self._loading_paths = False
        self._completions = CompletionList(self._picked)
        self._completion: Token | None = None
        self._candidates: list[Candidate] = []
        self._dismissed: Token | None = None
        """The token Esc closed the list for; it stays closed until the token changes."""
        self._search: HistorySearch | None = None
        """The Ctrl+R search under way, if any."""
        self._chips = PastedChips()
        self.image_chips = ImageChips()  # the images attached, shown above the prompt

    # Text comes in pasted, completed, restored from a revert or copied from a preview, and may
    # hold control characters: they go in as `visible()` shows them, never drawn raw. (The
    # document is what is sent and what the cursor walks, so it is changed, not the drawing.)

    def edit(self, edit: Edit) -> EditResult:
        if has_hidden(edit.text):
            edit.text = visible(edit.text)
        return super().edit(edit)

    def load_text(self, text: str) -> None:
        super().load_text(visible(text))

    # --- public API ------------------------------------------------------------------------------

    @property
    def commands(self) -> list[tuple[str, str]]:
        """What `/` completes: `(name, one-line help)` pairs."""
        return list(self._commands() if callable(self._commands) else self._commands)

    @property
    def input_history(self) -> list[str]:
        """Earlier inputs, oldest first."""
        return list(self._history)

    def add_history(self, text: str) -> None:
        """Remember `text` for the Up/Down walk (a repeat of the newest entry is not added)."""
        text = text.strip()
        if text and (not self._history or self._history[-1] != text):
            self._history.append(text)
        self._history_index = None

    @property
    def completions_open(self) -> bool:
        """Whether the completion list is showing."""
        return bool(self._candidates) and self._completions.has_class("-open")

    @property
    def completion_labels(self) -> list[str]:
        """What the open completion list offers, as plain text (empty when closed)."""
        if not self.completions_open:
            return []
        return [candidate.label.plain for candidate in self._candidates]

    def accept_completion(self, index: int | None = None) -> None:
        """Put the highlighted completion (or the one at `index`) in place of the token."""
        completion = self._completion
        if completion is None or not self._candidates:
            return
        if index is None:
            index = self._completions.highlighted or 0
        candidate = self._candidates[index]
        insert = "" if candidate.image else candidate.insert  # an image is attached, not named
        result = self.replace(
            insert, completion.start, completion.end, maintain_selection_offset=False
        )
        self.move_cursor(result.end_location)
        self._close_completions()
        if candidate.image:
            self.image_chips.attach_later([self.work_dir / unescape_name(candidate.image)])

    def _picked(self, index: int) -> None:
        self.accept_completion(index)
        self.focus()

    # --- lifecycle -------------------------------------------------------------------------------

    def on_mount(self) -> None:
        # On the screen, not inside the TextArea: the list floats over the conversation above,
        # the chips take the rows just above the prompt (a child of the screen).
        self.screen.mount(self._completions)
        self.screen.mount(self.image_chips, before=self)

    def on_unmount(self) -> None:
        for owned in (self._completions, self.image_chips):
            if owned.is_attached:
                owned.remove()

    def watch_busy(self, busy: bool) -> None:
        self.border_subtitle = BUSY_HINT if busy else ""

    def watch_shell_mode(self, shell: bool) -> None:
        if self._search is None:
            self.watch_read_only_reason(self.read_only_reason)  # the border title

    def watch_read_only_reason(self, reason: str) -> None:
        # Slash commands still work (/new, /sessions, /quit); a message stays in the prompt.
        self.set_class(bool(reason), "-read-only")
        self.border_title = "read-only" if reason else SHELL_TITLE if self.shell_mode else None
        self.placeholder = (
            f"Read-only: {reason}. /new starts a session you can write" if reason else PLACEHOLDER
        )

    # --- keys ------------------------------------------------------------------------------------

    async def _on_key(self, event: events.Key) -> None:
        # Enter is handled here, in the order the keys reach the prompt, not by a priority
        # binding: those run as the app receives a key, before the characters that came just
        # ahead of it are in the text. A burst such as "fix the test\r" (a terminal without
        # bracketed paste, tmux send-keys, expect) would send an empty or cut-off message.
        # (TextArea's own handler, which would insert a newline, is skipped.)
        if self._search is not None:
            self._search_key(event)
            return
        action = IN_ORDER_KEYS.get(event.key)
        if action is not None:
            # In order too: "one" Alt+Enter "two" in a burst must not become "\none two", nor
            # "draft" Ctrl+R "two" search for "".
            event.stop()
            event.prevent_default()
            await self.run_action(action)
        elif event.key == "enter":
            event.stop()
            event.prevent_default()
            # The list may still show the text before the last keys (their Changed messages
            # queue behind this key): decide on the text as it is now.
            self._refresh_completions(reload=False)
            if self.completions_open:
                self.action_complete_or_submit()
            elif self._continues_line():
                # `\` + Enter, as in a shell: the backslash becomes the line break.
                row, column = self.cursor_location
                result = self.replace("\n", (row, column - 1), (row, column))
                self.move_cursor(result.end_location)
            else:
                self.action_submit()
        elif await self._run_binding_in_order(event.key):
            event.stop()
            event.prevent_default()

    async def _run_binding_in_order(self, key: str) -> bool:
        """Run the prompt's (or TextArea's) enabled binding of `key` now. Textual runs it once
        the key has bubbled up to the App, while characters insert as they reach the prompt: in
        a burst ("ab", two Backspaces, "xy") the "xy" would land first. Here keys act in order."""
        for binding in self._bindings.key_to_bindings.get(key, ()):
            if not binding.priority and await self.app.run_action(binding.action, self):
                return True
        return False

    def _continues_line(self) -> bool:
        """Whether the cursor, with nothing selected, follows a `\\` that ends its line."""
        start, end = self.selection
        row, column = end
        line = self.document[row]
        return start == end and column > 0 and line[:column].endswith("\\") and not line[column:]

    # --- actions ---------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("accept_completion", "complete_or_submit", "close_completions"):
            return self.completions_open
        if action == "escape":
            return not (self.text or self.busy or self.read_only_reason or self.completions_open)
        if action == "remove_image":
            return bool(self.image_chips.images) and self.selection == ((0, 0), (0, 0))
        return super().check_action(action, parameters)

    def action_escape(self) -> None:
        self.post_message(self.Escaped(self))

    def action_submit(self) -> None:
        """Send the text and the images (those being read or `@` named are waited for)."""
        text, chips = self.full_text.strip(), self.image_chips
        if not text and not chips.images and not chips.attaching:
            return
        images = chips.take()
        if may_mention_images(text) or chips.attaching:  # a drop just before Enter goes too
            self._submit_with_mentions(text, images)
        else:
            self.post_message(self.Submitted(self, text, images))
        self.add_history(text)
        self._draft = ""
        self.clear()
        self._chips.clear()
        self._close_completions()

    @work(group="prompt-images", exit_on_error=False)
    async def _submit_with_mentions(self, text: str, images: Images) -> None:
        refused = await self.image_chips.attach_mentions(text, self.work_dir, images)
        if refused is None:
            if text or self.image_chips.images:  # a paste that was no image went in as text
                self.post_message(self.Submitted(self, text, self.image_chips.take()))
            return
        self.notify(refused, severity="warning")
        if not self.text:
            self._show_history_text(text)  # nothing typed is lost

    def action_paste_image(self) -> None:
        """Ctrl+V: the clipboard's image as a chip; without one, the app's own clipboard
        text (what Ctrl+V pastes in any text area), else one line says why."""
        self._paste_image()

    @work(group="prompt-images", exit_on_error=False)
    async def _paste_image(self) -> None:
        failure = await self.image_chips.paste_clipboard()
        if failure is not None and self.app.clipboard:
            self.action_paste()
        elif failure is not None:
            self.notify(failure, severity="warning")

    def action_remove_image(self) -> None:
        """Backspace at the start of the prompt: take the last image off."""
        self.image_chips.remove_image(len(self.image_chips.images) - 1)

    def action_newline(self) -> None:
        """Insert a line break at the cursor."""
        start, end = self.selection
        result = self.replace("\n", start, end, maintain_selection_offset=False)
        self.move_cursor(result.end_location)

    def action_accept_completion(self) -> None:
        self.accept_completion()

    def action_complete_or_submit(self) -> None:
        """Enter while the list is open: take the highlighted completion, or, when it is what
        is already typed (`/compact` in full), send the text as Enter does anywhere else."""
        completion = self._completion
        if completion is not None and self._candidates:
            candidate = self._candidates[self._completions.highlighted or 0]
            typed = self.get_text_range(completion.start, completion.end)
            if candidate.insert.strip().lower() == typed.strip().lower():
                self._close_completions()
                self.action_submit()
                return
        self.accept_completion()

    def action_close_completions(self) -> None:
        self._dismissed = self._completion
        self._close_completions()

    def action_previous(self) -> None:
        """Up: move in the completion list, else the cursor, else back in history."""
        if self.completions_open:
            self._completions.action_cursor_up()
        elif self._history and self.navigator.is_first_wrapped_line(self.cursor_location):
            if self._history_index is None:
                self._draft = self.text
                self._history_index = len(self._history) - 1
            elif self._history_index > 0:
                self._history_index -= 1
            else:
                return
            self._show_history_text(self._history[self._history_index])
        else:
            self.action_cursor_up()

    def action_next(self) -> None:
        """Down: move in the completion list, else the cursor, else forward in history."""
        if self.completions_open:
            self._completions.action_cursor_down()
        elif self._history_index is not None and self.navigator.is_last_wrapped_line(
            self.cursor_location
        ):
            self._history_index += 1
            if self._history_index >= len(self._history):
                self._history_index = None
                self._show_history_text(self._draft)
            else:
                self._show_history_text(self._history[self._history_index])
        else:
            self.action_cursor_down()

    def _show_history_text(self, text: str) -> None:
        # replace(), unlike load_text(), keeps the undo stack: Ctrl+Z brings the draft back.
        result = self.replace(text, (0, 0), self.document.end, maintain_selection_offset=False)
        self.move_cursor(result.end_location)
        # A recalled "/compact" must not pop the command list up and take over Up/Down.
        self._dismissed = self._find_completion()
        self._close_completions()

    # --- history search (Ctrl+R) -----------------------------------------------------------------

    @property
    def searching(self) -> bool:
        """Whether a Ctrl+R history search is under way."""
        return self._search is not None

    def action_search_history(self) -> None:
        """Ctrl+R: start a search through the history, or go to the next older match."""
        if self._search is None:
            self._close_completions()
            self._search = HistorySearch(self.text, self.cursor_location)
            self._show_search()
        else:
            self._find_match(older=True)

    def _search_key(self, event: events.Key) -> None:
        """A key while searching: it edits the query, moves, takes or cancels the match."""
        search = self._search
        assert search is not None
        key = event.key
        handled = True
        if key == "ctrl+r":
            self._find_match(older=True)
        elif key in ("enter", "tab"):
            self._end_search(search)
        elif key == "escape":
            self._end_search(None)
            self._show_history_text(search.draft)
            self.move_cursor(search.cursor)
        elif key == "backspace":
            search.query = search.query[:-1]
            self._find_match(older=False)
        elif event.is_printable and event.character:
            search.query += event.character
            self._find_match(older=False)
        else:
            # Any other key (arrows, Ctrl+A...) takes the match and does what it does, as in a
            # shell.
            self._end_search(search)
            handled = False
        if handled:
            event.stop()
            event.prevent_default()

    def _on_blur(self, event: events.Blur) -> None:
        # Clicking away takes the match, as another key would; the search must not linger.
        if self._search is not None:
            self._end_search(self._search)

    def _find_match(self, *, older: bool) -> None:
        search = self._search
        assert search is not None
        found = search.find(self._history, older=older)
        if found is not None:
            self._show_history_text(found)
        self._show_search()

    def _show_search(self) -> None:
        assert self._search is not None
        self.border_title = self._search.title
        self.add_class("-searching")

    def _end_search(self, taken: HistorySearch | None) -> None:
        """Leave the search; with the `taken` search, Up and Down walk on from its match."""
        self._search = None
        self._history_index = taken.index if taken is not None else None
        if taken is not None and taken.index is not None:
            self._draft = taken.draft
        self.remove_class("-searching")
        self.watch_read_only_reason(self.read_only_reason)  # puts the border title back

    # --- large pastes ---------------------------------------------------------------------------

    @property
    def full_text(self) -> str:
        """The text as it is sent: each `[pasted N lines]` chip put back as what was pasted."""
        return self._chips.expand(self.text) if self._chips else self.text

    async def _on_paste(self, event: events.Paste) -> None:
        if self.read_only:
            return
        event.stop()
        event.prevent_default()
        if may_name_images(event.text):  # a dropped file comes as its path
            self._paste_paths(event.text)
        else:
            self._insert_paste(event.text)
        self.focus()

    @work(group="prompt-images", exit_on_error=False)
    async def _paste_paths(self, text: str) -> None:
        if not await self.image_chips.attach_pasted(text, self.work_dir):
            self._insert_paste(text)

    def _insert_paste(self, text: str) -> None:
        result = self.replace(
            self._chips.chip_for(text) or text, *self.selection, maintain_selection_offset=False
        )
        self.move_cursor(result.end_location)

    def action_expand_pastes(self) -> None:
        """Ctrl+O: show the pasted text in place of its chips."""
        if not self._chips:
            return
        text = self.full_text
        self._chips.clear()
        self._show_history_text(text)

    # --- the prompt in an editor (Ctrl+G) --------------------------------------------------------

    def action_edit_in_editor(self) -> None:
        """Ctrl+G: hand the prompt's text to $VISUAL or $EDITOR and take back what it saved."""
        text, failure = edit_in_editor(self.app, self.full_text)
        if text is None:
            self.notify(failure or "The editor failed.", severity="warning")
            return
        self._chips.clear()
        result = self.replace(text, (0, 0), self.document.end, maintain_selection_offset=False)
        self.move_cursor(result.end_location)
        self.focus()

    # --- completion ------------------------------------------------------------------------------

    @on(TextArea.Changed)
    @on(TextArea.SelectionChanged)
    def _text_or_cursor_moved(self) -> None:
        self.shell_mode = shell_command(self.text) is not None
        self._refresh_completions()

    def _find_completion(self) -> Token | None:
        """The `/command` or `@path` token the cursor is in, if any."""
        start, end = self.selection
        if start != end:
            return None
        return find_token(self.document[end[0]], end)

    def _refresh_completions(self, *, reload: bool = True) -> None:
        completion = self._find_completion()
        if completion is None or completion == self._dismissed:
            self._completion = None
            self._close_completions()
            return
        self._dismissed = None
        self._completion = completion
        if completion.kind == "command":
            self._show_completions(command_candidates(self.commands, completion.query))
            return
        if reload and self._paths.stale and not self._loading_paths:
            self._loading_paths = True
            self._load_paths()
        self._show_completions(path_candidates(self._paths.paths, completion.query))

    @work(exclusive=True, group="prompt-paths", exit_on_error=False)
    async def _load_paths(self) -> None:
        try:
            await asyncio.to_thread(self._paths.load)
        finally:
            self._loading_paths = False
        if self._completion is not None and self._completion.kind == "path":
            self._refresh_completions(reload=False)

    def _show_completions(self, candidates: list[Candidate]) -> None:
        if not candidates:
            self._close_completions()
            return
        if [c.insert for c in candidates] != [c.insert for c in self._candidates]:
            self._candidates = candidates
            self._completions.offer(candidates)
        self._completions.open_over(self.region, self.screen.size.width)

    def _close_completions(self) -> None:
        self._candidates = []
        self._completions.remove_class("-open")


if __name__ == "__main__":
    from textual.app import App, ComposeResult
    from textual.widgets import Footer, Static

    class PromptDemo(App[None]):
        CSS_PATH = "prompt.tcss"
        CSS = "#log { height: 1fr; }"

        def compose(self) -> ComposeResult:
            yield Static("Type, try / and @, Ctrl+B toggles busy.", id="log")
            yield PromptInput(Path.cwd(), commands=[("/compact", "Summarise"), ("/help", "Keys")])
            yield Footer()

        def on_mount(self) -> None:
            self.bind("ctrl+b", "toggle_busy", description="Busy")

        def action_toggle_busy(self) -> None:
            prompt = self.query_one(PromptInput)
            prompt.busy = not prompt.busy

        def on_prompt_input_submitted(self, message: PromptInput.Submitted) -> None:
            self.query_one("#log", Static).update(f"Sent: {message.text}")

    PromptDemo().run()
