"""The tools the agent calls (DESIGN.md §6)."""
