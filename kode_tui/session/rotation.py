"""Rotated generations of a context file, and the crash-safe swap that makes one.

Rewriting the live `context.jsonl` (revert, clear, compaction, restore) always goes:
(1) write the new content to `context.jsonl.tmp` and fsync it, (2) hard-link the live file to the
next free `context_N.jsonl` (os.link fails when the name is taken, which makes it an atomic
reservation), (3) rename the temp file over `context.jsonl`, (4) fsync the directory, (5) note
why in `rotations.jsonl`. `context.jsonl` exists at every instant and holds the old or the new
content; a crash at any point leaves every record in some file.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from collections.abc import Callable
from os import fsync, link, replace
from pathlib import Path
from typing import Any

import msgspec

from kode_tui.fsutil import FILE_MODE, append_line, fsync_dir, kept_mode, sync_data

log = logging.getLogger(__name__)

ROTATIONS_LOG = "rotations.jsonl"


class Rotation(msgspec.Struct, frozen=True):
    """A rotated generation of the context, with why it was made when we know it."""

    path: Path
    number: int
    size: int
    mtime: float
    reason: str | None = None
    """revert, compaction, clear, restore, dmail, system_prompt; None if unrecorded (Kimi CLI)."""
    time: float | None = None
    checkpoint: int | None = None
    """The checkpoint reverted to, for a revert or a D-Mail."""
    tokens: int | None = None
    """The token count of the context when it was rotated."""
    messages: int | None = None
    info: dict[str, Any] = msgspec.field(default_factory=dict)
    """Anything else recorded (tokens_after and strategy for a compaction, from for a restore)."""
    inferred: bool = False
    """The reason was read from the files (`generations.infer_rotations`), not from a note."""


def rotation_path(live: Path, number: int) -> Path:
    return live.with_name(f"{live.stem}_{number}{live.suffix}")


def rotation_number(name: str | None, live: str = "context.jsonl") -> int | None:
    """N when `name` is a rotation of the live file `live` (`context_N.jsonl`), else None."""
    stem, suffix = os.path.splitext(live)
    if not name or not name.startswith(f"{stem}_") or not name.endswith(suffix):
        return None
    digits = name[len(stem) + 1 : len(name) - len(suffix)]
    return int(digits) if digits.isdecimal() else None


def rotation_numbers(live: Path) -> list[tuple[int, Path]]:
    found = []
    try:
        names = os.listdir(live.parent)
    except FileNotFoundError:
        return []
    for name in names:
        if (number := rotation_number(name, live.name)) is not None:
            found.append((number, live.parent / name))
    return sorted(found)


def link_to_next_rotation(live: Path) -> Path:
    """Hard-link `live` to context_N.jsonl, N = 1 + the highest N in use (gaps are not refilled)."""
    existing = rotation_numbers(live)
    number = existing[-1][0] + 1 if existing else 1
    while True:
        candidate = rotation_path(live, number)
        try:
            link(live, candidate)
        except FileExistsError:
            number += 1  # another writer took it between listing and linking
            continue
        return candidate


def swap(
    live: Path, write_new: Callable[[int], None], live_fd: int | None, *, rotate: bool = True
) -> Path | None:
    """Steps 1-3: the new content goes live and the old one becomes the returned rotation
    (None when there was no old content to keep, or `rotate` is False because the new content
    keeps every old record). The caller then does steps 4-5."""
    tmp = live.with_name(live.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    try:
        try:
            # The new content keeps the live file's mode (Kimi CLI's files are 0644).
            os.fchmod(fd, kept_mode(live))
            write_new(fd)
            sync_data(fd)
        finally:
            os.close(fd)
    except OSError:
        # A half-written new content (a full disk) must not take up room nor pass for one.
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if live_fd is not None:
        fsync(live_fd)  # the rotation must hold every record, durably
    rotated = None
    if rotate and live.exists() and live.stat().st_size > 0:
        rotated = link_to_next_rotation(live)
    replace(tmp, live)
    return rotated


def finish(live: Path, rotated: Path | None, reason: str, **fields: Any) -> None:
    """Steps 4-5: make the rename durable and note why the rotation was made."""
    fsync_dir(live.parent)
    if rotated is not None:
        record = {"file": rotated.name, "reason": reason, "time": time.time(), **fields}
        try:
            append_line(live.parent / ROTATIONS_LOG, json.dumps(record, ensure_ascii=False))
        except OSError as error:
            # The rotation itself is done and durable; only why it was made goes unrecorded
            # (the note is optional for readers), so the operation is not reported as failed.
            log.warning("could not note %s in %s: %s", rotated.name, ROTATIONS_LOG, error)


def list_rotations(live: Path) -> list[Rotation]:
    """Every context_N.jsonl next to `live`, oldest first, with what rotations.jsonl says of it."""
    notes = _read_notes(live.parent / ROTATIONS_LOG)
    rotations = []
    for number, path in rotation_numbers(live):
        try:
            stat = path.stat()
        except FileNotFoundError:
            continue
        note = dict(notes.get(path.name, {}))
        note.pop("file", None)
        rotations.append(
            Rotation(
                path=path,
                number=number,
                size=stat.st_size,
                mtime=stat.st_mtime,
                reason=_pop(note, "reason", str),
                time=_pop(note, "time", float),
                checkpoint=_pop(note, "checkpoint", int),
                tokens=_pop(note, "tokens", int),
                messages=_pop(note, "messages", int),
                info=note,
            )
        )
    return rotations


def _read_notes(path: Path) -> dict[str, dict[str, Any]]:
    notes: dict[str, dict[str, Any]] = {}
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return notes
    for line in text.splitlines():
        try:
            note = json.loads(line)
        except (ValueError, RecursionError):  # RecursionError: nested too deeply
            log.warning("%s: skipped a line that is not JSON", path)
            continue
        if isinstance(note, dict) and isinstance(note.get("file"), str):
            notes[note["file"]] = note
    return notes


def _pop(note: dict[str, Any], key: str, kind: type) -> Any:
    value = note.pop(key, None)
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, kind) and not isinstance(value, bool):
        return value
    return None
