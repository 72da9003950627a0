"""A compaction in the live session (DESIGN.md §4): the strategy (compaction.py) is given the
history and a provider whose calls are retried like a step's, and its messages go live in one
crash-safe swap, the old context kept in a rotated file.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING

from kode_tui.message import (
    CheckpointRecord,
    Message,
    SystemPromptRecord,
    UsageRecord,
    checkpoint_note,
    paired,
)
from kode_tui.soul.compaction import CompactionContext
from kode_tui.soul.llm import StreamItem, ToolSchema
from kode_tui.soul.stream import masked
from kode_tui.wire import events as ev
from kode_tui.wire.events import TokenUsage

if TYPE_CHECKING:
    from kode_tui.soul.soul import KodeSoul

log = logging.getLogger(__name__)


async def compact(soul: KodeSoul, instruction: str | None, step: int) -> bool:
    """`KodeSoul.compact`: shrink the context with the configured strategy; whether anything
    changed. The strategy's LLM calls are retried like a step's (StepRetry events carry `step`).
    """
    strategy = soul.compaction
    name = type(strategy).__name__ if strategy is not None else ""
    before = soul.context.token_count_with_pending
    soul.bus.send(ev.CompactionBegin(strategy=name))
    if strategy is None:
        log.warning("the context is at %d tokens but no compaction strategy is set", before)
        soul.bus.send(ev.CompactionEnd(tokens_before=before, tokens_after=before))
        return False
    messages = await strategy.compact(
        CompactionContext(
            history=list(soul.context.history),
            token_count=before,
            max_context_size=soul.provider.max_context_size,
            reserved_context_size=soul.reserved_tokens,
            llm=_RetryingProvider(soul, step),
            instruction=instruction,
        )
    )
    if messages is None:
        soul.bus.send(ev.CompactionEnd(tokens_before=before, tokens_after=before))
        return False
    prompt = soul.context.system_prompt
    # Kimi CLI's estimate of the new context (its messages, chars / 4), written as its `_usage`
    # (else a reader takes the size for 0): the next call's reported count replaces it.
    after = sum(m.estimated_tokens() for m in messages)
    rotated = await asyncio.shield(_apply_compaction(soul, name, prompt, messages, after))
    soul.bus.send(ev.CompactionEnd(tokens_before=before, tokens_after=after, rotated_file=rotated))
    soul.bus.send(soul.status())
    return True


async def _apply_compaction(
    soul: KodeSoul,
    strategy: str,
    prompt: str | None,
    messages: Sequence[Message],
    after: int,
) -> str | None:
    # The new context (prompt, checkpoint 0, the summary, its `_usage` as Kimi CLI writes it)
    # goes live in one swap: a kill or a full disk halfway must not leave an emptied context.
    records: list[Message | CheckpointRecord | SystemPromptRecord | UsageRecord] = []
    if prompt:
        records.append(SystemPromptRecord(content=prompt))
    records.append(CheckpointRecord(id=0))
    if soul.checkpoint_messages:
        records.append(Message(role="user", content=checkpoint_note(0)))
    records.extend(messages)
    records.append(UsageRecord(token_count=after))
    # rotations.jsonl's `tokens` is the count reported before: no `tokens_before` estimate.
    rotated = await soul.context.replace_all(
        records, reason="compaction", strategy=strategy, tokens_after=after
    )
    soul.sync_dmail_checkpoints()
    soul.bus.send(ev.CheckpointCreated(id=0))
    return rotated.name if rotated is not None else None


class _RetryingProvider:
    """The soul's provider as a compaction strategy sees it: each call is retried like a step.

    A call's stream is read whole before it is handed on, so a failure halfway is retried too.
    """

    def __init__(self, soul: KodeSoul, step: int) -> None:
        self._soul = soul
        self._step = step

    @property
    def model_name(self) -> str:
        return self._soul.provider.model_name

    @property
    def max_context_size(self) -> int:
        return self._soul.provider.max_context_size

    async def stream(
        self, system_prompt: str | None, history: Sequence[Message], tools: Sequence[ToolSchema]
    ) -> AsyncIterator[StreamItem]:
        provider = self._soul.provider
        system_prompt, history = masked(system_prompt, paired(history))

        async def read_all() -> list[StreamItem]:
            return [item async for item in provider.stream(system_prompt, history, tools)]

        for item in await self._soul.retry(self._step, read_all):
            if isinstance(item, TokenUsage):  # a summary is paid for like any call
                await self._soul.cost.add(provider.model_name, item)
            yield item
