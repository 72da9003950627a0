"""The Textual user interface (DESIGN.md §10)."""
