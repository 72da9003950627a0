"""Dropping chosen messages from the live context (`/drop`): planned, then applied in one
crash-safe rotation with reason `edit`, so History can restore the context as it was.

A tool call and its results go together: choosing either drops the assistant message that made
the calls and every result answering it, so no call is left without a result and no result
without its call (`kode_tui.message.paired`'s rule). The `<system>CHECKPOINT n</system>` notes
are never dropped, and every `_` record (checkpoints, file edits, the system prompt) is kept:
the checkpoints keep their ids and their place, a revert or a diff works as before.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kode_tui.message import (
    MESSAGE_ROLES,
    CheckpointRecord,
    FileEditRecord,
    Message,
    SystemPromptRecord,
    UsageRecord,
    is_checkpoint_note,
)
from kode_tui.session.context import Context

__all__ = ["DROP_REASON", "DropPlan", "apply_drop", "checkpoint_span", "plan_drop"]

DROP_REASON = "edit"
"""The rotation's reason in rotations.jsonl and the History pane."""

_RECORDS: dict[str, Any] = {
    "_checkpoint": CheckpointRecord,
    "_usage": UsageRecord,
    "_system_prompt": SystemPromptRecord,
    "_file_edit": FileEditRecord,
}


@dataclass(frozen=True, slots=True)
class DropPlan:
    """What dropping would take out, for the confirm dialog, and what `apply_drop` needs."""

    indexes: tuple[int, ...]
    """Message indexes in the live history, each tool call's group made whole."""
    history_length: int
    """How many messages the history had: a plan for another history is refused."""
    tokens: int
    """The estimated saving (characters / 4 of the dropped messages)."""
    tool_results: int
    """How many of the dropped messages are tool results."""
    token_count: int
    """The gauge's count of the messages when planned (reported plus pending)."""

    @property
    def messages(self) -> int:
        return len(self.indexes)

    @property
    def tokens_after(self) -> int:
        return max(0, self.token_count - self.tokens)


def plan_drop(history: Sequence[Message], chosen: Iterable[int], token_count: int) -> DropPlan:
    """The plan for dropping the messages `chosen` (indexes into `history`), tool groups made
    whole and checkpoint notes left out. ValueError when an index is not in the history."""
    group_of = _groups(history)
    picked: set[int] = set()
    for index in chosen:
        if not 0 <= index < len(history):
            raise ValueError(f"There is no message {index} in the context")
        picked.update(group_of.get(index, (index,)))
    indexes = tuple(sorted(i for i in picked if not _is_note(history[i])))
    return DropPlan(
        indexes=indexes,
        history_length=len(history),
        tokens=sum(history[i].estimated_tokens() for i in indexes),
        tool_results=sum(1 for i in indexes if history[i].role == "tool"),
        token_count=token_count,
    )


def checkpoint_span(context: Context, first: int, last: int) -> range:
    """The message indexes from checkpoint `first` up to checkpoint `last + 1` (the end of the
    history when `last` is the newest). ValueError when either is not a checkpoint."""
    starts = {checkpoint.id: checkpoint.message_index for checkpoint in context.checkpoints}
    for checkpoint_id in (first, last):
        if checkpoint_id not in starts:
            raise ValueError(f"There is no checkpoint {checkpoint_id}")
    if first > last:
        raise ValueError(f"Checkpoint {first} comes after {last}: write /drop {last}..{first}")
    later = [start for cid, start in starts.items() if cid > last]
    return range(starts[first], min(later) if later else len(context.history))


async def apply_drop(context: Context, plan: DropPlan) -> Path | None:
    """Drop the plan's messages in one crash-safe swap; the rotated file keeping the context
    as it was. ValueError (nothing changed) when the context is no longer the planned one."""
    if plan.history_length != len(context.history):
        raise ValueError("The conversation changed since the drop was planned; nothing dropped")
    dropped = set(plan.indexes)
    records: list[Message | CheckpointRecord | SystemPromptRecord | UsageRecord] = []
    index = 0
    for line in context.path.read_bytes().splitlines():
        record = _parse(line)
        if record is None:
            continue  # a damaged line: the rotated file keeps it
        role = record.get("role")
        if role in MESSAGE_ROLES:
            if index not in dropped:
                records.append(context.history[index])
            index += 1
        elif role in _RECORDS:
            try:
                records.append(_RECORDS[role].model_validate(record))
            except ValueError:
                continue  # the scan skipped it too
    if index != plan.history_length:
        raise ValueError("The context file does not match its history; nothing dropped")
    # The count left: the messages' estimate until the next request reports one.
    records.append(UsageRecord(token_count=plan.tokens_after))
    return await context.replace_all(
        records,
        reason=DROP_REASON,
        dropped=plan.messages,
        tokens_after=plan.tokens_after,
    )


def _groups(history: Sequence[Message]) -> dict[int, tuple[int, ...]]:
    """Each index of an assistant message with tool calls, and of the results right after it,
    mapped to that whole group."""
    groups: dict[int, tuple[int, ...]] = {}
    index = 0
    while index < len(history):
        message = history[index]
        end = index + 1
        if message.role == "assistant" and message.tool_calls:
            while end < len(history) and history[end].role == "tool":
                end += 1
            group = tuple(range(index, end))
            groups.update(dict.fromkeys(group, group))
        index = end
    return groups


def _is_note(message: Message) -> bool:
    return message.role == "user" and is_checkpoint_note(message.text)


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        record = json.loads(line.decode("utf-8", "replace"), strict=False)
    except (ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) else None
