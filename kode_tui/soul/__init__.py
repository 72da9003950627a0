"""The agent loop, LLM providers, compaction, D-Mail and approvals (DESIGN.md §4-7)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kode_tui.soul.facade import AgentSession
    from kode_tui.soul.soul import BackToTheFuture, KodeSoul, LoopSettings, TurnResult

__all__ = ["AgentSession", "BackToTheFuture", "KodeSoul", "LoopSettings", "TurnResult"]


def __getattr__(name: str) -> Any:
    # Loaded on first use, so a light module of the package (compaction's constants for the
    # UI, say) does not bring in the whole loop.
    if name == "AgentSession":
        from kode_tui.soul import facade

        return facade.AgentSession
    if name in __all__:
        from kode_tui.soul import soul

        return getattr(soul, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
