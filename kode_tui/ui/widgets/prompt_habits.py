"""What the prompt borrows from shells and other agents: Alt+Enter read as such, the Ctrl+R
history search, and editing the prompt in $VISUAL / $EDITOR (Ctrl+G)."""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from textual._ansi_sequences import ANSI_SEQUENCES_KEYS
from textual.app import App, SuspendNotSupported
from textual.widgets.text_area import Location

NO_EDITOR = "Set $VISUAL or $EDITOR to edit the prompt in an editor (e.g. export EDITOR=vim)."


class _AltEnter:
    """Stands in for a `Keys` member: the parser makes a key named after its `value`."""

    value = "alt+enter"


# Alt+Enter reaches a program as ESC CR in most terminals (and in tmux); Textual reads it as a
# plain Enter, which would send the message. Read it as the key it is, as Textual reads ESC DEL
# as Alt+Backspace. (Terminals with the kitty keyboard protocol name the key themselves.)
cast(dict[str, Any], ANSI_SEQUENCES_KEYS).setdefault("\x1b\r", (_AltEnter,))


class _AltT:
    value = "alt+t"


# Alt+T (the thinking effort) comes as ESC t, which Textual reads as an Alt+T carrying the
# character `t`: the focused prompt typed it, and the key never reached its binding.
cast(dict[str, Any], ANSI_SEQUENCES_KEYS).setdefault("\x1bt", (_AltT,))


@dataclass
class HistorySearch:
    """A Ctrl+R search: what the prompt held before it, the query, the match shown."""

    draft: str
    cursor: Location
    query: str = ""
    index: int | None = None
    """The history entry shown; None before the first match."""
    failed: bool = False
    """The last search found nothing (the previous match stays shown)."""

    def find(self, history: list[str], *, older: bool) -> str | None:
        """The newest entry holding the query (case-insensitively, as shells search); with
        `older`, the next one before the current match. None when there is none."""
        needle = self.query.lower()
        start = len(history) - 1
        if self.index is not None:
            start = self.index - 1 if older else self.index
        for index in range(start, -1, -1):
            if needle in history[index].lower():
                self.index = index
                self.failed = False
                return history[index]
        self.failed = True
        return None

    @property
    def title(self) -> str:
        status = "no match: " if self.failed else ""
        return f"history search (Ctrl+R older · Enter take · Esc cancel) {status}{self.query!r}"


def edit_in_editor(app: App[Any], text: str) -> tuple[str | None, str | None]:
    """Hand `text` to $VISUAL or $EDITOR in a private temp file, the terminal handed over
    meanwhile; `(new text, None)`, or `(None, why not)` in one sentence."""
    command = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if not command or not command.strip():
        return None, NO_EDITOR
    fd, name = tempfile.mkstemp(prefix="kode-prompt-", suffix=".md")  # 0600
    path = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            # A last line break, as editors write files; taken off again below.
            file.write(text + "\n" if text and not text.endswith("\n") else text)
        failure = _run_editor(app, command, path)
        if failure is not None:
            return None, f"{failure}: the prompt keeps its text."
        edited = path.read_text(encoding="utf-8", errors="replace")
    finally:
        path.unlink(missing_ok=True)
    # Editors end the file with a line break; the prompt does not want it.
    return (edited[:-1] if edited.endswith("\n") else edited), None


def _run_editor(app: App[Any], command: str, path: Path) -> str | None:
    """Run the editor on `path`; why it failed, or None."""
    try:
        argv = [*shlex.split(command), str(path)]
    except ValueError:
        return f"The editor command {command!r} cannot be read"
    suspended: AbstractContextManager[None] | None
    try:
        suspended = app.suspend()
        suspended.__enter__()
    except SuspendNotSupported:
        if not app.is_headless:
            return "This terminal cannot be handed over to an editor"
        suspended = None  # no screen to hand over (tests, a headless run)
    try:
        code = subprocess.run(argv, check=False).returncode
    except OSError as error:
        return f"The editor {argv[0]!r} could not start ({error.strerror or error})"
    finally:
        if suspended is not None:
            suspended.__exit__(None, None, None)
    if code != 0:
        return f"The editor {argv[0]!r} failed (exit status {code})"
    return None


PASTE_COLLAPSE_LINES = 20
"""A paste of more lines than this shows as a chip in the prompt."""


class PastedChips:
    """Large pastes shown as `[pasted N lines]` in the prompt; the chip stands for the text.

    What is sent (and what an editor gets) is the prompt with every chip put back as its text.
    """

    def __init__(self) -> None:
        self._texts: dict[str, str] = {}

    def __bool__(self) -> bool:
        return bool(self._texts)

    def chip_for(self, text: str) -> str | None:
        """The chip to show for pasted `text`, or None when it is small enough to show."""
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        lines = text.rstrip("\n").count("\n") + 1
        if lines <= PASTE_COLLAPSE_LINES:
            return None
        label = f"[pasted {lines} lines]"
        n = 1
        while label in self._texts:
            n += 1
            label = f"[pasted {lines} lines #{n}]"
        self._texts[label] = text
        return label

    def expand(self, text: str) -> str:
        """`text` with each chip it holds put back as the pasted text."""
        for label, pasted in self._texts.items():
            text = text.replace(label, pasted)
        return text

    def clear(self) -> None:
        """Forget the chips (the prompt was sent or emptied)."""
        self._texts.clear()


SHELL_PREFIX = "!"
"""A prompt starting with it is a shell command (Claude Code's bash mode): Enter runs it."""

SHELL_TITLE = "! shell · Enter runs it in the work dir"


def shell_command(text: str) -> str | None:
    """The shell command a prompt line holds (`!git status` → `git status`), else None."""
    return text[len(SHELL_PREFIX) :] if text.startswith(SHELL_PREFIX) else None
