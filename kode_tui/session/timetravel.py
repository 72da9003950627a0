"""Time travel over a session's files: what a revert would undo, reading a rotated context
without taking the session's lock, and comparing two contexts.

Reverting "conversation and files" to checkpoint k undoes the `_file_edit`s after k, newest
first (DESIGN.md §2). Per file that comes down to: if the file still has the content of the
agent's newest edit, put back what it held before the agent's oldest edit after k; if it does
not, someone changed it since, and it is a conflict that is reported and left alone, unless
the user says "restore anyway" (`keep_hand_versions`: what the file holds now is kept first,
in the blobs and in the context that was live). Restoring a rotated context with its files is
planned alike (`plan_file_restore`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal, NamedTuple

import msgspec.structs

from kode_tui.fsutil import FileChanged, append_line, write_atomically
from kode_tui.message import (
    CheckpointRecord,
    FileEditRecord,
    Message,
    SystemPromptRecord,
    TextPart,
    UsageRecord,
    parse_record,
    shown_messages,
)
from kode_tui.session.journal import FileJournal
from kode_tui.session.rotation import Rotation, rotation_number

log = logging.getLogger(__name__)

FileAction = Literal["restore", "delete", "conflict", "missing", "refused"]


class FilePlan(msgspec.Struct, frozen=True):
    """What reverting (or restoring) does to one file the agent edited after the checkpoint
    (or that the two conversations left differently)."""

    path: str
    """As the edit recorded it (relative to the work dir when inside it)."""
    target: Path
    action: FileAction
    """`restore` its earlier content, `delete` a file the agent created, `conflict` (changed
    since the agent's edit: left alone), `missing` (the earlier content is not in the blobs),
    `refused` (a file a revert may not write: left alone)."""
    expected: str | None
    """The sha256 the file must have now (the agent's newest edit; for a restore, what the
    live conversation left), None: absent."""
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
    plans = []
    for path, (first, last) in span_per_file(edits).items():
        target = Path(path) if os.path.isabs(path) else work_dir / path
        now = _hash_of(target)
        plans.append(_plan(path, target, now, last.after, first.before, journal, may_write))
    return plans


def plan_file_restore(
    live: Sequence[FileEditRecord],
    restored: Sequence[FileEditRecord],
    work_dir: Path,
    journal: FileJournal,
    may_write: Callable[[Path], bool] | None = None,
) -> list[FilePlan]:
    """The plan for making the files agree with a rotated context that is made live again:
    one per file the two conversations leave with different content. `live` and `restored`
    are the two contexts' `_file_edit` records, oldest first.

    Their common past is the longest common prefix of the two lists (records equal field by
    field): a context file keeps its edits in the order they were made, and each branch (a
    revert, a restore) starts from a copy or a prefix of the file it branched from, so what
    they share is exactly that prefix; an edit after it belongs to one branch only. (A context
    that began with a compaction no longer holds the edits before it: `edit_history` puts them
    back in front, so pass its result for each side.)

    After the branch point each conversation leaves a file at its newest edit's `after`; one it
    did not edit stays as the common past left it, which is the `before` of the other branch's
    first edit of it. The plan puts back what the restored conversation left (`restore_to`) where
    the file still holds what the live one left (`expected`), else it is a `conflict`; a file
    that already holds the restored content needs nothing and gets no plan. `may_write`
    refuses as `plan_file_revert` does.
    """
    common = 0
    for here, there in zip(live, restored, strict=False):
        if here != there:
            break
        common += 1
    ours, theirs = span_per_file(live[common:]), span_per_file(restored[common:])
    plans = []
    for path in dict.fromkeys([*theirs, *ours]):
        # (first, newest) edit of the file in each branch after the common past.
        expected = ours[path][1].after if path in ours else theirs[path][0].before
        restore_to = theirs[path][1].after if path in theirs else ours[path][0].before
        if expected == restore_to:
            continue
        target = Path(path) if os.path.isabs(path) else work_dir / path
        now = _hash_of(target)
        if now == restore_to:
            continue
        plans.append(_plan(path, target, now, expected, restore_to, journal, may_write))
    return plans


def _plan(
    path: str,
    target: Path,
    now: str | None,
    expected: str | None,
    restore_to: str | None,
    journal: FileJournal,
    may_write: Callable[[Path], bool] | None,
) -> FilePlan:
    """What to do to a file that holds `now` (a sha256, None: absent) to take it from
    `expected` back to `restore_to`; the same rules for a revert and a restore."""
    if may_write is not None and not may_write(target):
        action: FileAction = "refused"
    elif now != expected:
        action = "conflict"
    elif restore_to is None:
        action = "delete"
    elif journal.blob(restore_to) is None:
        action = "missing"
    else:
        action = "restore"
    return FilePlan(path, target, action, expected, restore_to)


STARTS_AFRESH = frozenset(("compaction", "clear"))
"""Rotations after which the live context starts without the old records (a summary, or
nothing), while the files stay as the old conversation left them."""


def edit_history(
    edits: Sequence[FileEditRecord], number: int | None, rotations: Sequence[Rotation]
) -> list[FileEditRecord]:
    """Every edit that led to a context's files: its own `edits`, preceded by those of the
    contexts it was compacted (or cleared) from, which its file no longer holds.

    `number` is the context's rotation number (None: the live context); `rotations` are the
    session's (`list_rotations`). Each context began when the rotation before it was made:
    after a compaction or a clear its past is that rotation's whole history; after a revert,
    a D-Mail or a new system prompt it continues a prefix of that rotation, so its past is
    the part of that history its own records do not hold; after a restore it continues the
    restored file. A rotation whose reason is unknown (Kimi CLI's) ends the walk.
    """
    by_number = {rotation.number: rotation for rotation in rotations}
    numbers = sorted(by_number)
    inherited: list[FileEditRecord] = []
    current = number
    while True:
        earlier = [n for n in numbers if current is None or n < current]
        if not earlier:
            break
        made = by_number[earlier[-1]]
        if made.reason in STARTS_AFRESH:
            try:
                inherited[:0] = read_file_edits(made.path)
            except OSError:
                break  # a rotation removed by hand: what it held is gone
            current = made.number
        elif made.reason == "restore":
            current = rotation_number(made.info.get("source"))
            # The restored file was made before the restore: anything else is a damaged note.
            if current is None or current not in by_number or current >= made.number:
                break
        elif made.reason in ("revert", "dmail", "system_prompt"):
            current = made.number
        else:
            break
    return [*inherited, *edits]


def read_file_edits(path: Path) -> list[FileEditRecord]:
    """The `_file_edit` records of a context file, oldest first (other lines are not parsed)."""
    edits: list[FileEditRecord] = []
    with path.open("rb") as file:
        for line in file:
            if b'"_file_edit"' not in line:
                continue
            try:
                record = parse_record(json.loads(line))
            except (ValueError, RecursionError):
                continue
            if isinstance(record, FileEditRecord):
                edits.append(record)
    return edits


def span_per_file(
    edits: Sequence[FileEditRecord],
) -> dict[str, tuple[FileEditRecord, FileEditRecord]]:
    """Each file's (first, newest) edit in `edits`, in the order the files were first edited."""
    spans: dict[str, tuple[FileEditRecord, FileEditRecord]] = {}
    for edit in edits:
        first = spans.get(edit.path, (edit, edit))[0]
        spans[edit.path] = (first, edit)
    return spans


KEPT_NOTE = "changed by hand, kept before a revert or restore overwrote it: {path}"
"""The text of the `_file_edit` record `keep_hand_versions` writes (Kimi CLI reads it as a
message it skips)."""


def keep_hand_versions(
    plans: Sequence[FilePlan], journal: FileJournal, rotated: Path
) -> tuple[list[FilePlan], list[str]]:
    """Ready a plan to be carried out anyway: each conflict (a file changed since the edit the
    plan expects) is to be overwritten too, once what it holds now is kept. The blob store
    takes that content and `rotated`, the context that was live (kept as a rotated file),
    gets a `_file_edit` record from the expected content to it, written durably: restoring
    `rotated` with its files brings each hand-made version back.

    Returns the plans, each conflict made the restore (or delete) it would have been and
    expecting the kept content, and the paths kept. A conflict whose earlier content is not
    in the blobs, or which is no file now (a directory), stays a conflict; when the kept
    versions cannot be written (a full disk) every conflict does. Blocking.
    """
    ready: list[FilePlan] = []
    kept: list[str] = []
    records: list[FileEditRecord] = []
    try:
        for plan in plans:
            if plan.action != "conflict" or not _can_overwrite(plan, journal):
                ready.append(plan)
                continue
            content = _content_of(plan.target)
            now = _sha256(content)
            if content is not None and now is not None:
                journal.store_blob(now, content)
            records.append(
                FileEditRecord(
                    content=KEPT_NOTE.format(path=plan.path),
                    path=plan.path,
                    before=plan.expected,
                    after=now,
                )
            )
            action: FileAction = "delete" if plan.restore_to is None else "restore"
            ready.append(msgspec.structs.replace(plan, action=action, expected=now))
            kept.append(plan.path)
        if records:  # one write: the records of one revert reach the file together
            append_line(rotated, "\n".join(record.to_json() for record in records), durable=True)
    except OSError as error:
        log.warning("could not keep the hand-made versions in %s: %s", rotated.name, error)
        return list(plans), []
    return ready, kept


def _can_overwrite(plan: FilePlan, journal: FileJournal) -> bool:
    if plan.target.is_dir():
        return False
    return plan.restore_to is None or journal.blob(plan.restore_to) is not None


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


class ContextSnapshot(msgspec.Struct, frozen=True):
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


class Comparison(msgspec.Struct, frozen=True):
    """How two contexts differ, message by message: those both hold (wherever they are: a
    compaction keeps some at another place), and those only one of them holds."""

    in_both: list[Message]
    """In the order the first context (`there`) holds them."""
    only_there: list[Message]
    only_here: list[Message]

    @property
    def common(self) -> int:
        """How many messages the two hold both."""
        return len(self.in_both)

    @property
    def counts(self) -> MessageCounts:
        """Its lists counted as a user counts messages (`shown_messages`): what a preview and
        a restore's dialog say alike."""
        return MessageCounts(
            len(shown_messages(self.in_both)),
            len(shown_messages(self.only_there)),
            len(shown_messages(self.only_here)),
        )


class MessageCounts(NamedTuple):
    """How many messages of the conversation two contexts hold both or alone (checkpoint notes
    for the model left out); restoring `there` brings `only_there` back and takes `only_here`
    out of the live context."""

    in_both: int
    only_there: int
    only_here: int


def compare(there: Sequence[Message], here: Sequence[Message]) -> Comparison:
    """Which messages of `there` `here` holds too, and which each holds alone, by identity
    (`message_identity`) and not by place. A message held twice on one side and once on the
    other is once in both and once alone."""
    here_ids = [message_identity(message) for message in here]
    left = Counter(here_ids)
    in_both: list[Message] = []
    only_there: list[Message] = []
    matched: Counter[bytes] = Counter()
    for message in there:
        identity = message_identity(message)
        if left[identity] > 0:
            left[identity] -= 1
            matched[identity] += 1
            in_both.append(message)
        else:
            only_there.append(message)
    only_here = []
    for message, identity in zip(here, here_ids, strict=True):
        if matched[identity] > 0:
            matched[identity] -= 1
        else:
            only_here.append(message)
    return Comparison(in_both, only_there, only_here)


def message_identity(message: Message) -> bytes:
    """A content hash of what makes a message that message: its role, content, tool calls and
    the call it answers. Text given as a string or as one text part is the same text."""
    content = message.content
    if isinstance(content, list) and len(content) == 1 and isinstance(content[0], TextPart):
        message = message.model_copy(update={"content": content[0].text})
    key = message.model_dump_json(include=_IDENTITY)
    return hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16).digest()


_IDENTITY = {"role", "content", "tool_calls", "tool_call_id"}


# --- branches -----------------------------------------------------------------------------------


class Lineage(msgspec.Struct, frozen=True):
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
        restored = rotation_number(source) if reason == "restore" else None
        current = restored if restored is not None else number
    path: set[int] = set()
    while current is not None and current not in path:
        path.add(current)
        current = parent.get(current)
    return Lineage(parent, frozenset(path))
