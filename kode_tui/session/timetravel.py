"""Time travel over a session's files: what a revert would undo, reading a rotated context
without taking the session's lock, and comparing two contexts.

Reverting "conversation and files" to checkpoint k undoes the `_file_edit`s after k, newest
first (DESIGN.md §2). Per file that comes down to: if the file still has the content of the
agent's newest edit, put back what it held before the agent's oldest edit after k; if it does
not, someone changed it since, and it is a conflict that is reported and left alone.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from kode_tui.fsutil import FileChanged, write_atomically
from kode_tui.message import (
    CheckpointRecord,
    FileEditRecord,
    Message,
    SystemPromptRecord,
    UsageRecord,
    parse_record,
)
from kode_tui.session.journal import FileJournal

FileAction = Literal["restore", "delete", "conflict", "missing", "refused"]


@dataclass(frozen=True, slots=True)
class FilePlan:
    """What reverting does to one file the agent edited after the checkpoint."""

    path: str
    """As the edit recorded it (relative to the work dir when inside it)."""
    target: Path
    action: FileAction
    """`restore` its earlier content, `delete` a file the agent created, `conflict` (changed
    since the agent's edit: left alone), `missing` (the earlier content is not in the blobs),
    `refused` (a file a revert may not write: left alone)."""
    expected: str | None
    """The sha256 the file must have now (the agent's newest edit), None: absent."""
    restore_to: str | None
    """The sha256 of the content put back, None: the file did not exist."""


LEFT_ALONE: frozenset[FileAction] = frozenset(("conflict", "missing", "refused"))
"""What a revert with files does not write."""


def plan_file_revert(
    edits: Sequence[FileEditRecord],
    work_dir: Path,
    journal: FileJournal,
    may_write: Callable[[Path], bool] | None = None,
) -> list[FilePlan]:
    """The plan for undoing `edits` (oldest first, as the context holds them), one per file.

    A file `may_write` refuses is `refused`: a session's records name paths, and a session
    folder from elsewhere must not make a revert write outside the work dir or into `.git/`.
    """
    newest: dict[str, FileEditRecord] = {}
    oldest: dict[str, FileEditRecord] = {}
    for edit in edits:
        oldest.setdefault(edit.path, edit)
        newest[edit.path] = edit
    plans = []
    for path, last in newest.items():
        first = oldest[path]
        target = Path(path) if os.path.isabs(path) else work_dir / path
        now = _hash_of(target)
        if may_write is not None and not may_write(target):
            action: FileAction = "refused"
        elif now != last.after:
            action = "conflict"
        elif first.before is None:
            action = "delete"
        elif journal.blob(first.before) is None:
            action = "missing"
        else:
            action = "restore"
        plans.append(FilePlan(path, target, action, last.after, first.before))
    return plans


def apply_file_revert(
    plans: Sequence[FilePlan], journal: FileJournal
) -> tuple[list[str], list[str]]:
    """Carry out a plan; (files restored or deleted, files left alone). Each file is checked
    again just before it is written, so a change made meanwhile is a conflict too.

    What the agent wrote through a symlink is put back through it: the file the link points to
    gets its earlier content (keeping its mode) and the link stays, as the tools wrote it.
    """
    restored: list[str] = []
    skipped: list[str] = []
    for plan in plans:
        now = _content_of(plan.target)
        if plan.action in LEFT_ALONE or _sha256(now) != plan.expected:
            skipped.append(plan.path)
            continue
        if plan.action == "delete":
            Path(os.path.realpath(plan.target)).unlink(missing_ok=True)
            restored.append(plan.path)
            continue
        assert plan.restore_to is not None
        content = journal.blob(plan.restore_to)
        if content is None:
            skipped.append(plan.path)
            continue
        try:
            write_atomically(plan.target, content, expected=now)
        except FileChanged:
            skipped.append(plan.path)
            continue
        restored.append(plan.path)
    return restored, skipped


def _content_of(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def _sha256(content: bytes | None) -> str | None:
    return None if content is None else hashlib.sha256(content).hexdigest()


def _hash_of(path: Path) -> str | None:
    return _sha256(_content_of(path))


# --- reading a context without opening it -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ContextSnapshot:
    """A context file as it is on disk, read without the session's lock (for previews)."""

    path: Path
    messages: list[Message]
    n_checkpoints: int
    token_count: int
    system_prompt: str | None
    file_edits: list[FileEditRecord]
    skipped_lines: int


def read_snapshot(path: Path) -> ContextSnapshot:
    """Read a context file; lines that are not records are counted and skipped."""
    messages: list[Message] = []
    edits: list[FileEditRecord] = []
    checkpoints = tokens = skipped = 0
    system_prompt: str | None = None
    with path.open("rb") as file:
        for line in file:
            if not line.strip():
                continue
            try:
                record = parse_record(json.loads(line))
            except (ValueError, RecursionError):  # nested too deeply: damaged like the rest
                skipped += 1
                continue
            if isinstance(record, Message):
                messages.append(record)
            elif isinstance(record, CheckpointRecord):
                checkpoints += 1
            elif isinstance(record, UsageRecord):
                tokens = record.token_count
            elif isinstance(record, SystemPromptRecord):
                system_prompt = record.content
            elif isinstance(record, FileEditRecord):
                edits.append(record)
    return ContextSnapshot(path, messages, checkpoints, tokens, system_prompt, edits, skipped)


@dataclass(frozen=True, slots=True)
class Comparison:
    """How two contexts differ: the messages they share at the start, and the rest of each."""

    common: int
    only_there: list[Message]
    only_here: list[Message]


def compare(there: Sequence[Message], here: Sequence[Message]) -> Comparison:
    """Messages are equal when their JSON is; contexts share a prefix, then branch."""
    common = 0
    for a, b in zip(there, here, strict=False):
        if a.to_json() != b.to_json():
            break
        common += 1
    return Comparison(common, list(there[common:]), list(here[common:]))


# --- branches -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Lineage:
    """Where each rotated context came from, and which ones the live context descends from.

    A rotation is the live context as it was just before a revert, compaction, clear, restore
    or D-Mail. The live context after it continues that file (a prefix of it, or its summary),
    except after a restore, when it continues the restored file's line instead: the file that
    was live then is left as a side branch.
    """

    parent: dict[int, int | None]
    """Rotation number -> the rotation its content continued (None: the session's start)."""
    live_path: frozenset[int]
    """The rotations the live context descends from."""


def lineage(rotations: Sequence[tuple[int, str | None, str | None]]) -> Lineage:
    """The lineage of rotations given as (number, reason, restore source file name), oldest
    first."""
    parent: dict[int, int | None] = {}
    current: int | None = None
    for number, reason, source in rotations:
        parent[number] = current
        restored = _rotation_number(source) if reason == "restore" else None
        current = restored if restored is not None else number
    path: set[int] = set()
    while current is not None and current not in path:
        path.add(current)
        current = parent.get(current)
    return Lineage(parent, frozenset(path))


def _rotation_number(name: str | None) -> int | None:
    if not name or not name.startswith("context_") or not name.endswith(".jsonl"):
        return None
    digits = name[len("context_") : -len(".jsonl")]
    return int(digits) if digits.isdigit() else None
