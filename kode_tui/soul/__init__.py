"""The agent loop, LLM providers, compaction, D-Mail and approvals (DESIGN.md §4-7)."""

from kode_tui.soul.soul import BackToTheFuture, KodeSoul, LoopSettings, TurnResult

__all__ = ["BackToTheFuture", "KodeSoul", "LoopSettings", "TurnResult"]
