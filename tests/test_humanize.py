"""One rule for token counts, ages and sizes, wherever they are shown."""

from __future__ import annotations

import time

import pytest

from kode_tui.humanize import agrees, format_age, format_size, format_tokens, plural


@pytest.mark.parametrize(
    ("count", "shown"),
    [
        (None, "-"),
        (0, "0"),
        (999, "999"),
        (1_000, "1k"),
        (1_240, "1.2k"),
        (3_000, "3k"),
        (12_873, "12.9k"),
        (12_900, "12.9k"),
        (99_949, "99.9k"),
        (99_960, "100k"),
        (124_400, "124k"),
        (129_000, "129k"),
        (999_499, "999k"),
        (999_600, "1M"),
        (1_250_000, "1.2M"),
        (12_340_000, "12.3M"),
        (250_000_000, "250M"),
    ],
)
def test_a_token_count_has_one_short_form(count: int | None, shown: str) -> None:
    assert format_tokens(count) == shown


def test_ages_read_in_the_largest_whole_unit_then_as_a_date() -> None:
    now = 1_800_000_000.0
    assert [format_age(now - s, now) for s in (-3, 5, 125, 7300, 2 * 86_400 + 5)] == [
        "just now",
        "just now",
        "2m ago",
        "2h ago",
        "2d ago",
    ]
    month = now - 30 * 86_400
    assert format_age(month, now) == time.strftime("%Y-%m-%d", time.localtime(month))


def test_a_count_takes_the_plural_unless_it_is_one() -> None:
    assert [plural(n, "file") for n in (0, 1, 2)] == ["0 files", "1 file", "2 files"]
    assert [plural(n, "match", "matches") for n in (1, 3)] == ["1 match", "3 matches"]
    # and the verb agrees: the restore dialog's "1 message comes back"
    assert [f"{plural(n, 'message')} {agrees(n, 'come')}" for n in (1, 2)] == [
        "1 message comes",
        "2 messages come",
    ]


def test_sizes_read_in_binary_units() -> None:
    sizes = (850, 4300, 10_200, 12 * 1024, 1_048_000, 3 << 20, 3 << 30)
    assert [format_size(n) for n in sizes] == [
        "850 B",
        "4.2 KiB",
        "10 KiB",
        "12 KiB",
        "1023 KiB",
        "3.0 MiB",
        "3.0 GiB",
    ]
