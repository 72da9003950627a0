"""Python's garbage collector around the app's start and its turns (ui/collector.py)."""

from __future__ import annotations

import gc

import pytest

from kode_tui.ui import collector


@pytest.fixture
def thresholds(request: pytest.FixtureRequest) -> tuple[int, int, int]:
    found = gc.get_threshold()
    request.addfinalizer(lambda: (gc.set_threshold(*found), gc.enable()))
    return found


def test_full_collections_wait_for_the_end_of_a_turn(thresholds: tuple[int, int, int]) -> None:
    young, middle, _ = thresholds

    collector.during_turn()
    collector.during_turn()  # a turn's events may say it began twice (a retried start)
    held = gc.get_threshold()
    collector.after_turn()
    assert gc.get_threshold() == held, "the turn runs yet"
    collector.turn_ended()
    collector.after_turn()

    assert held[:2] == (young, middle), "young collections go on"
    assert held[2] > 10_000
    assert gc.get_threshold() == thresholds


def test_a_turn_during_start_up_leaves_the_thresholds_to_start_up(
    thresholds: tuple[int, int, int],
) -> None:
    collector.hold()
    collector.during_turn()
    collector.release()  # the session is on screen while the first turn runs
    collector.turn_ended()
    collector.after_turn()

    assert gc.get_threshold() == thresholds
