"""The agent loop, LLM providers, compaction, D-Mail and approvals (DESIGN.md §4-7)."""
