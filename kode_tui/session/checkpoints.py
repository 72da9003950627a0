"""The checkpoint index of a context: where each `_checkpoint` line is, and the state before it.

A revert to checkpoint k keeps the bytes before its line and slices everything in memory back to
what the index says; nothing is parsed. The index is stored as columns of machine integers: a
session with 20,000 checkpoints costs about 1 MB, and dropping the tail after a revert moves
memory instead of freeing ten thousand objects one by one.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from typing import NamedTuple, overload


class Checkpoint(NamedTuple):
    """A `_checkpoint` line and the state of the context just before it."""

    id: int
    offset: int
    """Byte offset of the `_checkpoint` line: reverting keeps the bytes before it."""
    message_index: int
    """How many messages precede it (the message that follows it has this index)."""
    token_count: int
    usage_index: int
    """How many messages preceded the last `_usage` record before it."""
    next_id: int
    """The next checkpoint id before this one was made."""
    system_prompt: str | None
    file_edit_index: int
    """How many file edits precede it."""


class CheckpointIndex(Sequence[Checkpoint]):
    """The checkpoints of one context file, oldest first."""

    __slots__ = (
        "file_edit_index",
        "ids",
        "message_index",
        "next_id",
        "offset",
        "system_prompt",
        "token_count",
        "usage_index",
    )

    def __init__(self) -> None:
        # One column per Checkpoint field; the scan appends to them directly (it is the hot loop).
        self.ids = array("q")
        self.offset = array("q")
        self.message_index = array("q")
        self.token_count = array("q")
        self.usage_index = array("q")
        self.next_id = array("q")
        self.system_prompt: list[str | None] = []
        self.file_edit_index = array("q")

    def add(self, checkpoint: Checkpoint) -> None:
        self.ids.append(checkpoint.id)
        self.offset.append(checkpoint.offset)
        self.message_index.append(checkpoint.message_index)
        self.token_count.append(checkpoint.token_count)
        self.usage_index.append(checkpoint.usage_index)
        self.next_id.append(checkpoint.next_id)
        self.system_prompt.append(checkpoint.system_prompt)
        self.file_edit_index.append(checkpoint.file_edit_index)

    def truncate(self, length: int) -> None:
        """Keep the first `length` checkpoints."""
        for column in (
            self.ids,
            self.offset,
            self.message_index,
            self.token_count,
            self.usage_index,
            self.next_id,
            self.system_prompt,
            self.file_edit_index,
        ):
            del column[length:]

    def position(self, checkpoint_id: int) -> int | None:
        """Where checkpoint `checkpoint_id` is (the first, should an id repeat), or None."""
        ids = self.ids
        # Ids count 0, 1, 2... in any file Kimi or we wrote: the id is the position.
        if 0 <= checkpoint_id < len(ids) and ids[checkpoint_id] == checkpoint_id:
            return checkpoint_id
        try:
            return ids.index(checkpoint_id)
        except (ValueError, OverflowError):
            return None

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, index: int) -> Checkpoint: ...

    @overload
    def __getitem__(self, index: slice) -> list[Checkpoint]: ...

    def __getitem__(self, index: int | slice) -> Checkpoint | list[Checkpoint]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self.ids)))]
        return Checkpoint(
            self.ids[index],
            self.offset[index],
            self.message_index[index],
            self.token_count[index],
            self.usage_index[index],
            self.next_id[index],
            self.system_prompt[index],
            self.file_edit_index[index],
        )

    def __iter__(self) -> Iterator[Checkpoint]:
        return (self[i] for i in range(len(self.ids)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]
