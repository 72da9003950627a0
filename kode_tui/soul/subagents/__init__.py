"""Subagents: the `Agent` tool's types (built-in and user-defined) and their runs.

`definitions` says which types there are (Kimi 1.52's coder / explore / plan, then Markdown files
in Claude Code's format); the runner and the store live beside it.
"""
