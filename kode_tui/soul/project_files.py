"""How the project context reads the project's own files (README, AGENTS.md, style configs).

A hostile repository chooses these files: each is read only when it is a regular file, only its
head, never blocking, and never through a symlink that leads out of its folder.
"""

from __future__ import annotations

from pathlib import Path

from kode_tui.fsutil import read_regular
from kode_tui.pathnames import is_within

READ_MAX_BYTES = 1 << 20
"""Of a project file (README, AGENTS.md, package.json, ...), only this much is read: a 2 GB
sparse README must not cost gigabytes and seconds at every start."""


def read_text(path: Path) -> str | None:
    """The text of a file in the work dir or in one of its parents (docs), else None.

    A symlink is read only when its target lies in the folder that holds the link: a hostile
    repo's README.md linked to `~/.ssh/id_rsa` must not land in the system prompt.
    """
    if not is_within(path, path.parent):
        return None
    data = read_regular(path, READ_MAX_BYTES)
    return None if data is None else data.decode("utf-8", errors="replace")
