"""What the search tools, Glob and Grep, share: where a search may look."""

from __future__ import annotations

from pathlib import Path

from kode_tui.tools.base import ToolEnv


def search_root(env: ToolEnv, base: Path) -> Path:
    """What the files searched must lie in: the work dir, or the approved folder outside it."""
    if env.is_inside(base):
        return env.work_dir
    real = base.resolve()
    return real if real.is_dir() else real.parent
