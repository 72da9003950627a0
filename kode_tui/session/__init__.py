"""The session engine: context.jsonl, rotations, sessions (DESIGN.md §2, §9)."""
