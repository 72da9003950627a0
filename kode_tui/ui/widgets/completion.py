"""Matching for the prompt's completions: the work dir's paths for `@`, slash commands for `/`."""

from __future__ import annotations

import heapq
import re
import time
from collections.abc import Sequence
from pathlib import Path

from textual.fuzzy import Matcher

from kode_tui import workfiles
from kode_tui.pathnames import escape_name

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
