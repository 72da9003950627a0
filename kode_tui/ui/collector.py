"""Python's garbage collector while the app starts.

Start-up's imports make ~100k objects that live as long as the app. Each full collection walks
them all (~30 ms apiece on the bench machine), and start-up would run several. So: no
collection at all before the first frame (`hold`); then the first frame's objects frozen and
young collections only, which free start-up's garbage as it is made (`young_only`); and, once
the session is on screen, start-up's objects frozen (never walked again, also not while answers
stream) and Python's own thresholds back (`release`). While a turn runs, full collections wait
for its end (`during_turn`, `after_turn`): a streamed answer makes many objects that live a
frame or two, and each full collection it set off walked every object of the session (20-40 ms,
a stall in the middle of the stream); young collections go on and free what a frame leaves
behind.
"""

from __future__ import annotations

import gc

_thresholds: tuple[int, int, int] | None = None
"""Python's thresholds, as `hold` found them; None when not held."""
_full: int | None = None
"""Python's threshold of full collections, while a turn holds them (`during_turn`)."""
_turn = False
"""A turn runs (between `during_turn` and `turn_ended`)."""
_NEVER = 1_000_000


def hold() -> None:
    """No collection until `young_only` (cli._run_app, before Textual loads)."""
    global _thresholds
    if _thresholds is None:
        _thresholds = gc.get_threshold()
    young, middle, _ = _thresholds
    gc.set_threshold(young, middle, _NEVER)  # no full collection while the app starts
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


def during_turn() -> None:
    """No full collection until `after_turn` (unless start-up holds them already: `release`
    gives them back then)."""
    global _full, _turn
    _turn = True
    if _full is None and _thresholds is None:
        young, middle, _full = gc.get_threshold()
        gc.set_threshold(young, middle, _NEVER)


def turn_ended() -> None:
    """The turn is over: `after_turn` gives full collections back (called a little later, once
    the screen shows the turn's end)."""
    global _turn
    _turn = False


def after_turn() -> None:
    """Full collections back, as `during_turn` found them, unless a turn runs again."""
    global _full
    if _full is not None and not _turn:
        young, middle, _ = gc.get_threshold()
        gc.set_threshold(young, middle, _full)
        _full = None
