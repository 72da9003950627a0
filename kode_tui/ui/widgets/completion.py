"""The prompt's completions: the work dir's paths for `@`, slash commands for `/`, matched here
and offered in a dropdown (`CompletionList`) over the prompt."""

from __future__ import annotations

import heapq
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from textual import on
from textual.content import Content
from textual.fuzzy import Matcher
from textual.geometry import Offset, Region
from textual.widgets import OptionList
from textual.widgets.option_list import Option
from textual.widgets.text_area import Location

from kode_tui.pathnames import escape_name
from kode_tui.safetext import has_hidden, visible
from kode_tui.ui.widgets.prompt_images import names_image

MAX_COMPLETIONS = 20
"""Rows a completion list may hold; more would only be noise."""


class PathIndex:
    """The files and folders of a work dir as relative paths, for `@` completion.

    Folders end with `/`. The list is `workfiles`' (git's in a repository, else a walk that
    honours .gitignore files), at most `limit` entries. `load()` blocks: call it from a thread.
    """

    def __init__(self, root: Path, *, max_age_s: float = 5.0, limit: int = 20_000) -> None:
        self.root = root
        self.max_age_s = max_age_s
        self.limit = limit
        self.paths: list[str] = []
        self._loaded_at: float | None = None

    @property
    def stale(self) -> bool:
        """Whether the list was never loaded or is older than `max_age_s`."""
        return self._loaded_at is None or time.monotonic() - self._loaded_at > self.max_age_s

    def load(self) -> list[str]:
        """List the paths again, keep them in `paths` and return them."""
        # Imported when first listing: with pathspec it is ~9 ms the first frame need not wait for.
        from kode_tui import workfiles

        listed = workfiles.listing(self.root, timeout=5).files(limit=self.limit, folders=True)
        self.paths = [escape_name(path) for path in listed]
        self._loaded_at = time.monotonic()
        return self.paths


FUZZY_BUDGET = 2000
"""Of the paths that hold the query's letters in order, the shallowest this many are scored:
fuzzy scoring costs tens of microseconds a path, and the prompt must keep up with typing."""


def match_paths(paths: Sequence[str], query: str, limit: int = MAX_COMPLETIONS) -> list[str]:
    """The paths best matching `query`, scored by `textual.fuzzy` (the command palette's
    matcher: letters in order, more for word starts and runs); shallow and short paths first
    among equals. The query itself is left out (nothing to complete)."""
    needle = query.lower()
    # One C-speed test per path keeps the scoring to the paths that can match at all.
    letters = re.compile("".join(f"[^{re.escape(c)}]*{re.escape(c)}" for c in needle), re.I)
    candidates = heapq.nsmallest(
        FUZZY_BUDGET,
        (path for path in paths if path.lower() != needle and letters.match(path)),
        key=_shallow_first,
    )
    if not needle:
        return candidates[:limit]
    matcher = Matcher(query)
    scored = [(-matcher.match(path), *_shallow_first(path)) for path in candidates]
    return [entry[-1] for entry in heapq.nsmallest(limit, scored) if entry[0] < 0]


def _shallow_first(path: str) -> tuple[int, int, str]:
    return path.rstrip("/").count("/"), len(path), path


def match_commands(
    commands: Sequence[tuple[str, str]], query: str, limit: int = MAX_COMPLETIONS
) -> list[tuple[str, str]]:
    """The commands whose name starts with `query`, then those that merely contain it."""
    needle = query.lower()
    prefix = [command for command in commands if command[0].lower().startswith(needle)]
    inner = needle.lstrip("/")
    contains = [
        command
        for command in commands
        if command not in prefix and inner and inner in command[0].lower()
    ]
    return [*prefix, *contains][:limit]


VISIBLE_COMPLETIONS = 10
"""Rows shown at once; the rest scroll."""


@dataclass(frozen=True)
class Token:
    """The token under the prompt's cursor that a completion would replace."""

    kind: Literal["command", "path"]
    start: Location
    end: Location
    query: str


@dataclass(frozen=True)
class Candidate:
    """One row of the list."""

    insert: str
    """Replaces the whole token."""
    label: Content
    image: str | None = None
    """The path of an image file (as listed): taken, it is attached, not inserted."""


def find_token(line: str, cursor: Location) -> Token | None:
    """The `/command` or `@path` token the cursor is in on its `line`, if any."""
    row, column = cursor
    before, after = line[:column], line[column:]
    tail = re.match(r"\S*", after)
    token_end = (row, column + (tail.end() if tail else 0))
    if row == 0 and re.fullmatch(r"/\S*", before):
        return Token("command", (0, 0), token_end, before)
    mention = re.search(r"(?:^|\s)@(\S*)$", before)
    if mention:
        return Token("path", (row, mention.start(1) - 1), token_end, mention.group(1))
    return None


def command_candidates(commands: Sequence[tuple[str, str]], query: str) -> list[Candidate]:
    """The rows for `/query`: each command with its help, names aligned."""
    width = max((len(name) for name, _ in commands), default=0)
    return [
        Candidate(
            f"{name} ", Content.assemble((name.ljust(width), "bold"), "  ", (help_, "$text-muted"))
        )
        for name, help_ in match_commands(commands, query)
    ]


def path_candidates(paths: Sequence[str], query: str) -> list[Candidate]:
    """The rows for `@query`: a folder goes on to its files, a file ends the token, an image
    file is attached when taken."""
    return [
        Candidate(
            f"@{path}" if path.endswith("/") else f"@{path} ",
            Content(path),
            path if names_image(path) else None,
        )
        for path in match_paths(paths, query)
    ]


def _visible_label(label: Content) -> Content:
    """A candidate's label with no control character left raw (file names may hold any)."""
    if not has_hidden(label.plain) and "\n" not in label.plain and "\t" not in label.plain:
        return label
    return Content(visible(label.plain, multiline=False))


class CompletionList(OptionList, can_focus=False):
    """The completion dropdown of a `PromptInput`; it floats over the screen above the prompt.

    It never takes focus, so typing goes on in the prompt while it is open.
    """

    DEFAULT_CSS = """
    CompletionList {
        overlay: screen;
        display: none;
        &.-open { display: block; }
    }
    """

    def __init__(self, picked: Callable[[int], None]) -> None:
        """`picked` is called with the index of a row the user clicked."""
        super().__init__()
        self._picked = picked
        self._widest = 0

    def offer(self, candidates: Sequence[Candidate]) -> None:
        """Show `candidates`, the first highlighted."""
        self.set_options(Option(_visible_label(c.label)) for c in candidates)
        self._widest = max(candidate.label.cell_length for candidate in candidates)
        self.highlighted = 0

    def open_over(self, anchor: Region, screen_width: int) -> None:
        """Open just above `anchor` (the prompt), or below it when there is no room above."""
        rows = min(self.option_count, VISIBLE_COMPLETIONS)
        # Border and padding of the list, from prompt.tcss.
        height = rows + 2
        width = max(min(self._widest + 4, screen_width - anchor.x), 10)
        y = anchor.y - height
        if y < 0:
            y = anchor.bottom
        self.styles.height = height
        self.styles.width = width
        self.absolute_offset = Offset(anchor.x, y)
        self.add_class("-open")

    @on(OptionList.OptionSelected)
    def _clicked(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self._picked(event.option_index)
