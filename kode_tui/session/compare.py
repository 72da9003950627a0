"""What changed between two points of a session: the messages, and the files the agent edited.

Two checkpoints of the live context are compared by slicing (the checkpoint index says where each
one is in the history and in the file edits), with the files' contents read from the journal's
blobs. A rotated context is compared with the live one message by message (`timetravel.compare`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kode_tui.message import FileEditRecord, Message
from kode_tui.session.checkpoints import Checkpoint
from kode_tui.session.context import Context
from kode_tui.session.journal import FileJournal
from kode_tui.session.timetravel import ContextSnapshot, compare, span_per_file


@dataclass(frozen=True)
class FileChange:
    """One file as it was before the first edit in the range and after the last.

    A text is None when the file did not exist then (or, with `missing`, when its content is
    not in the blob store).
    """

    path: str
    old_text: str | None
    new_text: str | None
    missing: bool = False
    """A blob the edits name is not in the store: a None text means "unknown", not "absent"."""


@dataclass(frozen=True)
class CheckpointDiff:
    """How the later of two points differs from the earlier one."""

    added: list[Message]
    removed: list[Message]
    files: list[FileChange]


def diff_checkpoints(
    context: Context, a: int, b: int | None, journal: FileJournal
) -> CheckpointDiff:
    """The messages and file edits between checkpoints `a` and `b` (ids) of the live context.

    `b` None means the context as it is now. The two are taken in the order they are in the
    context, whichever is given first. ValueError when a checkpoint does not exist.
    """
    start = _checkpoint(context, a)
    end_message, end_edit = len(context.history), len(context.file_edits)
    if b is not None:
        end = _checkpoint(context, b)
        if end.offset < start.offset:
            start, end = end, start
        end_message, end_edit = end.message_index, end.file_edit_index
    added = list(context.history[start.message_index : end_message])
    edits = [edit.record for edit in context.file_edits[start.file_edit_index : end_edit]]
    return CheckpointDiff(added, [], file_changes(edits, journal))


def diff_snapshot(live_messages: Sequence[Message], snapshot: ContextSnapshot) -> CheckpointDiff:
    """How the live context differs from a rotated one: `added` only live, `removed` only in
    the snapshot. No files: the snapshot does not say which edits came after the branch."""
    comparison = compare(snapshot.messages, live_messages)
    return CheckpointDiff(comparison.only_here, comparison.only_there, [])


def file_changes(edits: Sequence[FileEditRecord], journal: FileJournal) -> list[FileChange]:
    """Per path (in the order first edited), its content before the first edit and after the
    last of `edits` (oldest first)."""
    changes = []
    for path, (first, last) in span_per_file(edits).items():
        old_text, old_missing = _text(first.before, journal)
        new_text, new_missing = _text(last.after, journal)
        changes.append(FileChange(path, old_text, new_text, old_missing or new_missing))
    return changes


def _checkpoint(context: Context, checkpoint_id: int) -> Checkpoint:
    # The first with that id, as `Context.revert_to` takes it should ids repeat.
    for checkpoint in context.checkpoints:
        if checkpoint.id == checkpoint_id:
            return checkpoint
    raise ValueError(f"checkpoint {checkpoint_id!r} does not exist")


def _text(sha256: str | None, journal: FileJournal) -> tuple[str | None, bool]:
    """The text of a blob and whether it is missing from the store."""
    if sha256 is None:
        return None, False
    content = journal.blob(sha256)
    if content is None:
        return None, True
    # Binary or non-UTF-8 files still get a (lossy) diff rather than no view at all.
    return content.decode("utf-8", errors="replace"), False
