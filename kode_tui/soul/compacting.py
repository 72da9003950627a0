"""A compaction in the live session (DESIGN.md §4): the strategy (compaction.py) is given the
history and a provider whose calls are retried like a step's, and its messages go live in one
crash-safe swap, the old context kept in a rotated file.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

import msgspec.structs

from kode_tui.message import (
    COMPACTION_OUTPUT_PREFIX,
    CheckpointRecord,
    Message,
    SystemPromptRecord,
    TextPart,
    UsageRecord,
    checkpoint_note,
    estimate_tokens,
    paired,
    system,
    system_text,
)
from kode_tui.soul.compaction import (
    CompactionContext,
    CompactionStrategy,
    HidingThenSummaryCompaction,
    LLMSummaryCompaction,
    ToolResultHidingCompaction,
)
from kode_tui.soul.hooks import CompactionBlocked
from kode_tui.soul.llm import ChatProvider, StreamItem, ToolSchema
from kode_tui.soul.stream import masked
from kode_tui.wire import events as ev
from kode_tui.wire.events import TokenUsage

if TYPE_CHECKING:
    from kode_tui.session import Context
    from kode_tui.soul.context_report import PromptParts
    from kode_tui.soul.cost import CostLedger
    from kode_tui.soul.hooks import Hooks
    from kode_tui.wire.bus import WireBus

log = logging.getLogger(__name__)


BUILT_IN_STRATEGIES: dict[str, Callable[[], CompactionStrategy]] = {
    "LLMSummaryCompaction": LLMSummaryCompaction,
    "ToolResultHidingCompaction": ToolResultHidingCompaction,
    "HidingThenSummaryCompaction": HidingThenSummaryCompaction,
}
"""The strategies a review can switch to, besides the configured one (built with defaults)."""


class CompactionPlan(msgspec.Struct, frozen=True):
    """A compaction worked out but not applied (a review shows it): plain data for front ends.

    `apply` makes it live only while the context is still the one it was planned from.
    """

    strategy: str
    """The class name of the strategy that made it."""
    strategies: tuple[str, ...]
    """What a review may switch to: the configured strategy first, then the built-in ones."""
    instruction: str | None
    tokens_before: int
    """The gauge's number when it was planned: what the next request would have carried."""
    tokens_after: int
    """What the next request will carry once it applies, estimated (chars / 4): the
    `prompt_tokens` and the new context's messages, as the summary stands in the plan. The
    gauge shows it after the swap, until the model reports a count."""
    kept: tuple[Message, ...]
    """The messages carried over verbatim, in order."""
    hidden: int
    """How many messages of the old context are not carried over verbatim (summarised, or their
    tool results replaced)."""
    summary: str | None
    """The summary's text, without Kimi's `<system>` prefix; None when the strategy writes none."""
    messages: tuple[Message, ...]
    """The new context's messages."""
    source: tuple[Message, ...]
    """The history it was planned from."""
    edited: bool = False
    """Whether the summary is not the strategy's own (rotations.jsonl notes `edited`)."""
    trigger: str = "manual"
    """`auto` when a turn's step compacted, `manual` for `/compact` (the hooks are told)."""
    prompt_tokens: int = 0
    """What every request carries besides the messages, estimated: the system prompt with the
    project context and the pins, the tool definitions (and the new context's checkpoint
    note)."""

    def with_summary(self, text: str) -> CompactionPlan:
        """The plan with `text` as its summary (and the token estimate that goes with it)."""
        if self.summary is None or text == self.summary:
            return self
        messages = tuple(
            _summary_message(text) if _summary_of(m) is not None else m for m in self.messages
        )
        after = self.prompt_tokens + estimate_tokens(messages)
        return msgspec.structs.replace(
            self, summary=text, messages=messages, tokens_after=after, edited=True
        )


Reviewer = Callable[[CompactionPlan], Awaitable[CompactionPlan | None]]
"""Shows a plan to the user: the plan to apply (its summary maybe edited), or None to cancel."""

Retry = Callable[[Callable[[], Awaitable[list[StreamItem]]]], Awaitable[list[StreamItem]]]
"""Calls a model call again on transient errors, as a step does (`KodeSoul.retry`)."""


class Compactor:
    """Shrinks the live context: plans with a strategy, shows the plan to the reviewer when
    there is one, and swaps the context for the plan's messages (`KodeSoul.compact`).

    It holds what compaction alone needs: the strategy, the reviewer, and the turn whose review
    was declined (its later steps go on uncompacted, unasked). What it needs of the soul comes
    as collaborators: `llm(step)` is the model as a strategy sees it (its calls retried like a
    step's and counted in `/cost`), `reserved()` the room kept for the next answer,
    `checkpoint_notes` whether every checkpoint is followed by its D-Mail note, `swapped()`
    what must follow a swap (SendDMail learns the new checkpoint count), `status()` the gauge's
    numbers (a compaction's "before" is its count; it is sent afterwards), `measure_prompt()`
    the part of every request that is not a message (system prompt, project context, pins,
    tools), measured: a compaction's "after" counts it, as the gauge does.
    """

    def __init__(
        self,
        context: Context,
        bus: WireBus,
        hooks: Hooks,
        strategy: CompactionStrategy | None,
        *,
        llm: Callable[[int], ChatProvider],
        reserved: Callable[[], int],
        checkpoint_notes: bool,
        swapped: Callable[[], None],
        status: Callable[[], ev.StatusUpdate],
        measure_prompt: Callable[[], Awaitable[PromptParts]],
    ) -> None:
        self.strategy = strategy
        """The configured strategy (None: the context is never compacted)."""
        self.reviewer: Reviewer | None = None
        """Shows an automatic compaction to the user before it applies (`[compaction] review`)."""
        self.declined_in: asyncio.Task[object] | None = None
        """The turn whose review the user cancelled: it goes on uncompacted, unasked."""
        self._context = context
        self._bus = bus
        self._hooks = hooks
        self._llm = llm
        self._reserved = reserved
        self._checkpoint_notes = checkpoint_notes
        self._swapped = swapped
        self._status = status
        self._measure_prompt = measure_prompt

    async def compact(self, instruction: str | None, step: int) -> bool:
        """Shrink the context with the configured strategy; whether anything changed. The
        strategy's LLM calls are retried like a step's (StepRetry events carry `step`).

        With a `reviewer` (the TUI's, `[compaction] review = true`) the plan is shown first; a
        cancelled review changes nothing and the turn goes on uncompacted, as does a turn's
        compaction a PreCompact hook blocked (`/compact`'s raises CompactionBlocked).
        """
        strategy = self.strategy
        name = type(strategy).__name__ if strategy is not None else ""
        before = self._status().context_tokens
        turn = asyncio.current_task()
        reviewer = self.reviewer
        if turn is not None and self.declined_in is turn:
            return False  # the user (or a hook) said no in this turn: its later steps do not ask
        self._bus.send(ev.CompactionBegin(strategy=name))
        if strategy is None:
            log.warning("the context is at %d tokens but no compaction strategy is set", before)
            self._bus.send(ev.CompactionEnd(tokens_before=before, tokens_after=before))
            return False
        try:
            try:
                planned = await self.plan(instruction, step=step)
            except CompactionBlocked:
                if not step:
                    raise
                self.declined_in = turn
                planned = None
            if planned is not None and reviewer is not None:
                planned = await reviewer(planned)
                if planned is None:
                    self.declined_in = turn
            if planned is not None:
                await self._apply_plan(planned)
        except BaseException:
            self._bus.send(ev.CompactionEnd(tokens_before=before, tokens_after=before))
            raise
        if planned is None:
            self._bus.send(ev.CompactionEnd(tokens_before=before, tokens_after=before))
            return False
        return True

    async def plan(
        self, instruction: str | None, strategy: str | None = None, *, step: int = 0
    ) -> CompactionPlan | None:
        """Run a strategy (the configured one, or the one `strategy` names) on the live history
        without changing anything; None when it has nothing to do. ValueError for an unknown
        name.

        The PreCompact hooks run first, unless `strategy` is named (a review trying another
        one): CompactionBlocked when one blocks."""
        configured = self.strategy
        names = tuple(BUILT_IN_STRATEGIES)
        if configured is not None and type(configured).__name__ not in names:
            names = (type(configured).__name__, *names)
        elif configured is not None:
            own = type(configured).__name__
            names = (own, *(n for n in names if n != own))
        name = strategy or (type(configured).__name__ if configured is not None else names[0])
        if configured is not None and name == type(configured).__name__:
            chosen = configured
        elif name in BUILT_IN_STRATEGIES:
            chosen = BUILT_IN_STRATEGIES[name]()
        else:
            raise ValueError(f"There is no compaction strategy named {name}.")
        context = self._context
        history = tuple(context.history)
        # Measured first: the gauge's number counts the prompt as last measured.
        prompt = (await self._measure_prompt()).tokens
        before = self._status().context_tokens
        trigger = "auto" if step else "manual"
        if strategy is None:
            fields = {"trigger": trigger, "strategy": name, "tokens_before": before}
            hooked = await self._hooks.run(
                "PreCompact", {**fields, "custom_instructions": instruction}
            )
            if hooked.blocked:
                raise CompactionBlocked(
                    f"A PreCompact hook blocked the compaction: {hooked.reason}"
                )
        llm = self._llm(step)
        messages = await chosen.compact(
            CompactionContext(
                history=list(history),
                token_count=before,
                max_context_size=llm.max_context_size,
                reserved_context_size=self._reserved(),
                llm=llm,
                instruction=instruction,
            )
        )
        if messages is None:
            return None
        # A strategy hands on the messages it keeps as they are (the same objects).
        old = set(map(id, history))
        kept = tuple(m for m in messages if id(m) in old)
        summary = next((s for s in map(_summary_of, messages) if s is not None), None)
        if self._checkpoint_notes:
            prompt += Message(role="user", content=checkpoint_note(0)).estimated_tokens()
        return CompactionPlan(
            strategy=name,
            strategies=names,
            instruction=instruction,
            tokens_before=before,
            tokens_after=prompt + estimate_tokens(messages),
            kept=kept,
            hidden=len(history) - len(kept),
            summary=summary,
            messages=tuple(messages),
            source=history,
            trigger=trigger,
            prompt_tokens=prompt,
        )

    async def apply(self, planned: CompactionPlan) -> None:
        """Make a reviewed plan live (one crash-safe swap, as `compact` does). ValueError,
        nothing changed, when the context is no longer the one it was planned from or the
        summary is empty."""
        self._bus.send(ev.CompactionBegin(strategy=planned.strategy))
        try:
            await self._apply_plan(planned)
        except BaseException:
            before = self._status().context_tokens
            self._bus.send(ev.CompactionEnd(tokens_before=before, tokens_after=before))
            raise

    async def _apply_plan(self, planned: CompactionPlan) -> None:
        context = self._context
        if tuple(context.history) != planned.source:
            raise ValueError("The context changed since this compaction was worked out.")
        if planned.summary is not None and not planned.summary.strip():
            raise ValueError("The summary is empty, so the context was not compacted.")
        # Noted only when true: rotations.jsonl stays as it was for an unreviewed compaction.
        note = {"edited": True} if planned.edited else {}
        rotated = await asyncio.shield(self._swap(planned, **note))
        self._bus.send(
            ev.CompactionEnd(
                tokens_before=planned.tokens_before,
                tokens_after=planned.tokens_after,
                rotated_file=rotated,
            )
        )
        self._bus.send(self._status())
        record = {
            "trigger": planned.trigger,
            "strategy": planned.strategy,
            "tokens_before": planned.tokens_before,
            "tokens_after": planned.tokens_after,
            "rotated_file": str(context.path.with_name(rotated)) if rotated else None,
            "edited": planned.edited,
        }
        await self._hooks.run("PostCompact", record)

    async def _swap(self, planned: CompactionPlan, **note: bool) -> str | None:
        # The new context (prompt, checkpoint 0, the summary, a `_usage` as Kimi CLI writes
        # one) goes live in one swap: a kill or a full disk halfway must not leave an emptied
        # context.
        context = self._context
        records: list[Message | CheckpointRecord | SystemPromptRecord | UsageRecord] = []
        if context.system_prompt:
            records.append(SystemPromptRecord(content=context.system_prompt))
        records.append(CheckpointRecord(id=0))
        if self._checkpoint_notes:
            records.append(Message(role="user", content=checkpoint_note(0)))
        records.extend(planned.messages)
        # Kimi CLI's gauge reads it as the context's size until the next request reports one
        # (its own counts the messages alone); ours takes it for an estimate
        # (`Scan.token_count`) and counts the same figure afresh.
        records.append(UsageRecord(token_count=planned.tokens_after))
        # The sizes the review showed, before and after: History and the export repeat them.
        rotated = await context.replace_all(
            records,
            reason="compaction",
            strategy=planned.strategy,
            tokens=planned.tokens_before,
            tokens_after=planned.tokens_after,
            **note,
        )
        self._swapped()
        self._bus.send(ev.CheckpointCreated(id=0))
        return rotated.name if rotated is not None else None


def _summary_of(message: Message) -> str | None:
    # The summary message as LLMSummaryCompaction writes it (Kimi's shape): the prefix in
    # `<system>` tags, then the summary's text.
    content = message.content
    if message.role != "user" or not isinstance(content, list) or len(content) != 2:
        return None
    head, body = content
    if not isinstance(head, TextPart) or head.text != system_text(COMPACTION_OUTPUT_PREFIX):
        return None
    return body.text if isinstance(body, TextPart) else None


def _summary_message(text: str) -> Message:
    return Message(role="user", content=[system(COMPACTION_OUTPUT_PREFIX), TextPart(text=text)])


class RetryingProvider:
    """The session's model as a compaction strategy sees it: each call is retried like a
    step's (`retry`, StepRetry events and all) and paid for like any call (`cost`).

    A call's stream is read whole before it is handed on, so a failure halfway is retried too.
    """

    def __init__(self, provider: ChatProvider, retry: Retry, cost: CostLedger) -> None:
        self._provider = provider
        self._retry = retry
        self._cost = cost

    @property
    def model_name(self) -> str:
        return self._provider.model_name

    @property
    def max_context_size(self) -> int:
        return self._provider.max_context_size

    async def stream(
        self, system_prompt: str | None, history: Sequence[Message], tools: Sequence[ToolSchema]
    ) -> AsyncIterator[StreamItem]:
        provider = self._provider
        system_prompt, history = masked(system_prompt, paired(history))

        async def read_all() -> list[StreamItem]:
            return [item async for item in provider.stream(system_prompt, history, tools)]

        for item in await self._retry(read_all):
            if isinstance(item, TokenUsage):  # a summary is paid for like any call
                await self._cost.add(provider.model_name, item)
            yield item
