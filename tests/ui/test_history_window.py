"""The conversation pane's off-screen blocks (`HistoryWindow`), opened at the end or at a
message (a search match)."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from kode_tui.ui.widgets.history_window import HistoryWindow
from tests.session_helpers import user


def texts(factories: list[Any]) -> list[str]:
    return [f.args[0] for f in factories if isinstance(f, partial)]


@pytest.mark.parametrize("at", [None, 0, 37, 40, 99, 100])
def test_a_window_opened_at_a_message_has_everything_before_it_above_and_the_rest_below(
    at: int | None,
) -> None:
    messages = [user(f"m{n}") for n in range(100)]
    window = HistoryWindow()
    window.load(messages, None, at)
    split = 100 if at is None else at
    assert window.pending_above == split and window.pending_below == 100 - split

    below = texts(window.take_below(1000))
    above = texts(window.take_above(1000))

    assert above == [f"m{n}" for n in range(split)]
    assert below == [f"m{n}" for n in range(split, 100)]
