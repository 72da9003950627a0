"""Python's garbage collector while the app starts.

Start-up's imports make ~100k objects that live as long as the app. Each full collection walks
them all (~30 ms apiece on the bench machine), and start-up would run several. So: no
collection at all before the first frame (`hold`); then the first frame's objects frozen and
young collections only, which free start-up's garbage as it is made (`young_only`); and, once
the session is on screen, start-up's objects frozen (never walked again, also not while answers
stream) and Python's own thresholds back (`release`).
"""

from __future__ import annotations

import gc

_thresholds: tuple[int, int, int] | None = None
"""Python's thresholds, as `hold` found them; None when not held."""


def hold() -> None:
    """No collection until `young_only` (cli._run_app, before Textual loads)."""
    global _thresholds
    if _thresholds is None:
        _thresholds = gc.get_threshold()
    young, middle, _ = _thresholds
    gc.set_threshold(young, middle, 1_000_000)  # no full collection while the app starts
    gc.disable()


def young_only() -> None:
    """Collect again, short of full collections (after the first frame): the first frame's
    objects frozen first, or the first young collections walked them all (with no collection
    since `hold`, all ~60k of them were young: ~35 ms before the first request). The cycles
    among them that were garbage already (~5k objects, well under 1 MiB) stay."""
    gc.freeze()
    gc.enable()


def release() -> None:
    """Freeze what start-up made and give full collections back (the session is on screen)."""
    global _thresholds
    gc.enable()
    gc.freeze()
    if _thresholds is not None:
        gc.set_threshold(*_thresholds)
        _thresholds = None
