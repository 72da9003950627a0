"""What the user sent from the prompt, kept per work dir across sessions (Up, Ctrl+R).

One JSON line per entry, `{"content": "..."}` (as Kimi CLI's user-history files), in
`$KODE_TUI_HOME/user-history/<md5(work dir)>.jsonl`: 0600 in a 0700 folder, appended one line
at a time (a torn line from a crash costs that entry only), API keys masked as in the session
files. A file over `MAX_ENTRIES` is cut to its newest entries, crash-safe, when it is loaded.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from kode_tui.fsutil import append_line, atomic_write_bytes, make_private_dir, read_regular
from kode_tui.paths import Paths

log = logging.getLogger(__name__)

MAX_ENTRIES = 1000
"""Entries kept; older ones are dropped when the file is loaded."""
MAX_BYTES = 16 << 20
"""Only the last this many bytes of a history file are read: a runaway file must not fill
the memory."""
MAX_ENTRY_CHARS = 64_000
"""Longer entries (a pasted log) are not kept across sessions: a few would make the file huge."""


def history_file(work_dir: str | os.PathLike[str], paths: Paths | None = None) -> Path:
    """Where the prompt history of `work_dir` lives."""
    return (paths or Paths.current()).prompt_history(work_dir)


def load(path: Path) -> list[str]:
    """The entries of `path`, oldest first, at most `MAX_ENTRIES`; a missing file is an empty
    history, and so is an unreadable one (said once in the log). Lines that are not entries
    (torn by a crash, edited by hand) are skipped."""
    if not path.exists():
        return []
    data = read_regular(path, MAX_BYTES, tail=True)
    if data is None:
        log.warning("The prompt history %s cannot be read: starting with an empty one.", path)
        return []
    cut = len(data) == MAX_BYTES and path.stat().st_size > MAX_BYTES
    if cut:
        data = data[data.find(b"\n") + 1 :]  # the first line read is a tail of one
    entries: list[str] = []
    lines = data.splitlines()
    skipped = 0
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        content = record.get("content") if isinstance(record, dict) else None
        if isinstance(content, str):
            entries.append(content)
        elif line.strip():
            skipped += 1
    if skipped:
        log.warning("%d lines of the prompt history %s are not entries: skipped.", skipped, path)
    if len(lines) > MAX_ENTRIES or cut:
        entries = entries[-MAX_ENTRIES:]
        try:
            atomic_write_bytes(path, b"".join(_line(entry) for entry in entries))
        except OSError as error:
            log.warning("The prompt history %s could not be trimmed: %s", path, error)
    return entries


def append(path: Path, text: str) -> None:
    """Add `text` to the history in `path` (its folder is created 0700); a failure to write is
    logged, never raised: the message itself has gone already. An entry over `MAX_ENTRY_CHARS`
    is left out."""
    if len(text) > MAX_ENTRY_CHARS:
        return
    try:
        make_private_dir(path.parent)
        append_line(path, _line(text).decode().rstrip("\n"))
    except OSError as error:
        log.warning("The prompt history %s could not be written: %s", path, error)


def _line(text: str) -> bytes:
    return (json.dumps({"content": text}, ensure_ascii=False) + "\n").encode()
