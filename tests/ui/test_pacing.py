"""FramePacer: a streamed answer is drawn as often as a frame allows, within a CPU budget."""

from __future__ import annotations

import pytest

from kode_tui.ui.pacing import FramePacer


class Clocks:
    """A wall clock and a CPU clock the test moves."""

    def __init__(self) -> None:
        self.wall = 100.0
        self.cpu = 5.0

    def pacer(self) -> FramePacer:
        return FramePacer(
            fastest=1 / 30, slowest=1 / 8, budget=0.2, clock=lambda: self.wall, cpu=lambda: self.cpu
        )

    def frames(self, pacer: FramePacer, count: int, *, cpu_per_frame: float) -> None:
        """`count` draws, each when it is due, each costing `cpu_per_frame` of CPU time."""
        for _ in range(count):
            self.wall += max(pacer.due_in(), 0.0)
            self.cpu += cpu_per_frame
            pacer.drawn()


def test_the_first_draw_is_due_at_once_and_then_a_frame_later() -> None:
    clocks = Clocks()
    pacer = clocks.pacer()

    assert pacer.due_in() == 0
    pacer.drawn()
    assert pacer.due_in() == pytest.approx(1 / 30)


def test_cheap_draws_keep_thirty_frames_a_second() -> None:
    clocks = Clocks()
    pacer = clocks.pacer()

    clocks.frames(pacer, 20, cpu_per_frame=0.003)  # 9% of a core at 30 fps

    assert pacer.interval == 1 / 30


def test_costly_draws_are_spaced_until_they_use_the_budget() -> None:
    clocks = Clocks()
    pacer = clocks.pacer()

    clocks.frames(pacer, 30, cpu_per_frame=0.015)  # 45% of a core at 30 fps

    assert pacer.interval == pytest.approx(0.015 / 0.2)  # 13 frames a second: 20% of a core


def test_the_interval_never_passes_the_slowest_frame_rate() -> None:
    clocks = Clocks()
    pacer = clocks.pacer()

    clocks.frames(pacer, 30, cpu_per_frame=0.2)

    assert pacer.interval == pytest.approx(1 / 8) and pacer.interval <= 1 / 8


def test_cpu_used_during_a_pause_between_answers_does_not_slow_the_next_one() -> None:
    clocks = Clocks()
    pacer = clocks.pacer()
    pacer.drawn()

    clocks.wall += 30  # a tool ran for half a minute
    clocks.cpu += 20
    pacer.drawn()

    assert pacer.interval == 1 / 30
