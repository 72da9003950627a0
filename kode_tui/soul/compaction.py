"""Compaction (DESIGN.md §5, KLIP-13): what a strategy is given and what it returns.

A strategy turns the live history into a shorter one, or returns None when it has nothing to do.
The soul decides when (its trigger) and applies the result: the old context is rotated (reason
`compaction`), a checkpoint is made and the new messages are appended.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from kode_tui.message import Message
from kode_tui.soul.llm import ChatProvider


@dataclass(frozen=True, slots=True)
class CompactionContext:
    history: Sequence[Message]
    token_count: int
    max_context_size: int
    reserved_context_size: int
    llm: ChatProvider
    instruction: str | None = None
    """What the user asked to keep (`/compact <instruction>`)."""


@runtime_checkable
class CompactionStrategy(Protocol):
    async def compact(self, ctx: CompactionContext) -> Sequence[Message] | None:
        """The new history, or None when nothing changes."""
        ...
