"""The session's cost ledger: each model call's usage priced and added to state.json as it ends,
and what `/cost` shows (plain data for every front end).

The running total lives in state.json (not only in wire.jsonl), so a picker shows each session's
cost without reading its wire file, and a resumed session goes on from its total. A revert or
`/clear` takes nothing off: the calls were paid for. The demo costs nothing and is not counted.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

import msgspec

from kode_tui.config import DEMO_MODEL
from kode_tui.humanize import format_age, format_tokens, format_usd, plural
from kode_tui.session.state import ModelSpend, SessionSpend, SessionState, TurnSpend
from kode_tui.soul.llm.pricing import price_of, usage_cost
from kode_tui.wire.events import CostStatus, TokenUsage

log = logging.getLogger(__name__)

MAX_TURNS = 50
"""How many of the latest turns state.json keeps for `/cost`."""


class ModelCost(msgspec.Struct, frozen=True):
    """One model's line of `/cost`."""

    model: str
    calls: int
    input: int
    """Prompt tokens, cached ones included."""
    output: int
    cache_read: int
    cache_creation: int
    usd: float | None
    """None when litellm's map has no price for the model."""


class TurnCost(msgspec.Struct, frozen=True):
    """One turn's line of `/cost`."""

    started_at: float
    calls: int
    input: int
    output: int
    cache_read: int
    usd: float
    unpriced: bool


class CostReport(msgspec.Struct, frozen=True):
    """What `/cost` shows: per model, the latest turns, the session's total."""

    models: list[ModelCost]
    turns: list[TurnCost]
    """Oldest first."""
    usd: float
    """Of the calls whose price is known."""
    exact: bool
    """False when some call is left out (unknown price, or from before the count began)."""
    counted: bool
    """False for a session whose calls were never counted (from before kode-tui did)."""

    def lines(self, now: float | None = None) -> list[str]:
        """The report as plain lines (`cost_lines`)."""
        return cost_lines(self, now)


class CostLedger:
    """Adds each call's usage to `state.spend` and saves it (atomically) at once."""

    def __init__(
        self,
        state: SessionState,
        save: Callable[[], Awaitable[None]] | None = None,
        *,
        had_calls: bool = False,
    ) -> None:
        """`had_calls`: the session's context shows calls made before; if it has no count yet,
        one begun now says it is not complete."""
        self._state = state
        self._save = save
        self._had_calls = had_calls
        self._turn: TurnSpend | None = None

    def begin_turn(self) -> None:
        """The next call starts a new turn's line."""
        self._turn = None

    async def add(self, model: str, usage: TokenUsage) -> None:
        """Count one call of `model`; saved before this returns (a crash loses no paid call;
        a state.json that cannot be written is logged, and the count kept for the next save)."""
        if model == DEMO_MODEL:
            return
        price = price_of(model)
        usd = usage_cost(usage, price) if price is not None else None
        spend = self._state.spend
        if spend is None:
            spend = SessionSpend(complete=not self._had_calls)
        per_model = spend.models.setdefault(model, ModelSpend(usd=0.0 if price else None))
        per_model.calls += 1
        per_model.input += usage.input
        per_model.output += usage.output
        per_model.cache_read += usage.cache_read
        per_model.cache_creation += usage.cache_creation
        if usd is None:
            per_model.usd = None
        elif per_model.usd is not None:
            per_model.usd += usd
        turn = self._turn
        if turn is None:
            turn = self._turn = TurnSpend(started_at=time.time())
            spend.turns.append(turn)
            del spend.turns[:-MAX_TURNS]
        turn.calls += 1
        turn.input += usage.input
        turn.output += usage.output
        turn.cache_read += usage.cache_read
        if usd is None:
            turn.unpriced = True
        else:
            turn.usd += usd
        self._state.spend = spend  # validated assignment: a copy, so keep using the state's
        self._turn = self._state.spend.turns[-1] if self._state.spend.turns else None
        if self._save is not None:
            try:
                await self._save()
            except OSError as error:  # a full disk: the next call's save tries again
                log.warning("could not save the session's cost: %s", error)

    def status(self) -> CostStatus | None:
        """The gauge's numbers; None while nothing was counted."""
        spend = self._state.spend
        if spend is None or not spend.models:
            return None
        turn = spend.turns[-1] if spend.turns else None
        return CostStatus(
            session_usd=spend.usd,
            turn_usd=turn.usd if turn is not None else None,
            exact=spend.exact,
            priced=any(m.usd is not None for m in spend.models.values()),
        )

    def report(self) -> CostReport:
        """Everything `/cost` shows."""
        spend = self._state.spend
        if spend is None:
            return CostReport(models=[], turns=[], usd=0.0, exact=False, counted=False)
        return CostReport(
            models=[
                ModelCost(
                    model=name,
                    calls=m.calls,
                    input=m.input,
                    output=m.output,
                    cache_read=m.cache_read,
                    cache_creation=m.cache_creation,
                    usd=m.usd,
                )
                for name, m in spend.models.items()
            ],
            turns=[
                TurnCost(
                    started_at=t.started_at,
                    calls=t.calls,
                    input=t.input,
                    output=t.output,
                    cache_read=t.cache_read,
                    usd=t.usd,
                    unpriced=t.unpriced,
                )
                for t in spend.turns
            ],
            usd=spend.usd,
            exact=spend.exact,
            counted=True,
        )


UNKNOWN_PRICE = "$0 / price unknown"

SHOWN_TURNS = 10
"""How many of the latest turns `/cost` lists."""


def cost_lines(report: CostReport, now: float | None = None) -> list[str]:
    """`/cost` as plain lines (the TUI's dialog and print mode show the same). A model's
    `input` counts its whole prompts; `cached` of them were read from the provider's cache,
    `written` to it."""
    if not report.counted:
        return [
            "No cost recorded: this session's calls predate kode-tui's cost count, "
            "or the demo answered."
        ]
    lines = [f"Session total: {format_usd(report.usd)}"]
    if not report.exact:
        lines[0] += " + calls left out"
        lines.append("  (their price is unknown, or they were made before the count began)")
    # A model on a line of its own, its tokens below: it fits 80 columns whatever its name.
    for m in report.models:
        lines += [
            "",
            f"{m.model}  {UNKNOWN_PRICE if m.usd is None else format_usd(m.usd)}",
            f"  {plural(m.calls, 'call')} · {format_tokens(m.input)} in "
            f"({format_tokens(m.cache_read)} cached, {format_tokens(m.cache_creation)} written)"
            f" · {format_tokens(m.output)} out",
        ]
    turns = report.turns[-SHOWN_TURNS:]
    if turns:
        lines += ["", f"Latest turns ({len(turns)} of {len(report.turns)} kept)"]
        for turn in turns:
            usd = format_usd(turn.usd) + (" + unknown price" if turn.unpriced else "")
            cached = f" ({format_tokens(turn.cache_read)} cached)" if turn.cache_read else ""
            lines.append(
                f"  {format_age(turn.started_at, now):<8}  {plural(turn.calls, 'call'):>8}  "
                f"{format_tokens(turn.input)} in{cached} · {format_tokens(turn.output)} out  {usd}"
            )
    return lines
