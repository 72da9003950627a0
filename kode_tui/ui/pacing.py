"""How often a streamed answer is drawn: as often as a frame allows, within a CPU budget."""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["FramePacer"]


class FramePacer:
    """The time between two draws of a streamed answer.

    A draw lays out and repaints the conversation pane, and what that costs depends on the
    machine, the terminal's size and what is on screen. The pacer reads the process's CPU time
    at each draw and stretches the interval until streaming uses at most `budget` of a core,
    never drawing more often than `fastest` nor less often than `slowest`: a fast machine
    draws 30 frames a second, a slow one fewer, and keys find the loop free between draws.
    """

    def __init__(
        self,
        *,
        fastest: float,
        slowest: float,
        budget: float,
        clock: Callable[[], float] = time.monotonic,
        cpu: Callable[[], float] = time.process_time,
    ) -> None:
        self.fastest, self.slowest, self.budget = fastest, slowest, budget
        self.interval = fastest
        """Seconds from one draw to the next, as the last draws taught it."""
        self._clock, self._cpu = clock, cpu
        self._last: tuple[float, float] | None = None

    def due_in(self) -> float:
        """Seconds until the next draw is due (zero or less: now)."""
        if self._last is None:
            return 0.0
        return self._last[0] + self.interval - self._clock()

    def drawn(self) -> None:
        """Note a draw. The CPU time since the previous one, over the budget, is the interval
        that would have kept to it; the interval moves halfway there."""
        now, cpu = self._clock(), self._cpu()
        if self._last is not None:
            wall, used = now - self._last[0], cpu - self._last[1]
            # After a pause (between answers, a tool running) the CPU time says nothing of
            # what drawing costs.
            if wall <= 2 * max(self.slowest, self.interval):
                wanted = max(self.fastest, min(used / self.budget, self.slowest))
                self.interval += (wanted - self.interval) / 2
        self._last = (now, cpu)
