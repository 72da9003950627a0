"""File names as text (lossless escaping) and the one confinement rule."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest

from kode_tui.pathnames import InsideChecker, escape_name, is_within, scrub_text, unescape_name

NAMES = [
    b"plain.txt",
    "caf\u00e9.txt".encode(),  # valid UTF-8: shown as it is
    b"caf\xe9.txt",  # Latin-1: not UTF-8
    b"caf\\xe9.txt",  # a real backslash that reads like an escape
    b"caf\\x5cxe9.txt",
    b"back\\slash",
    b"\\",
    b"\\\xe9",
    b"x\\xZZ",
    b"\xff\xfe\\x41",
    b"\xc3",  # the first byte of a two-byte character, alone
    b"line\nfeed",  # control characters: escaped, so a listing keeps one name a line
    b"\x1b[8mhidden\x7f\ttab",
    b"\\x0a",  # a real backslash that reads like an escaped line feed
    b"evil\nrm -rf ~",  # a line feed: one name, not two lines of a listing
    b"tab\tesc\x1b[8mdel\x7f",
    b"caf\\x0a",  # a real backslash before what reads like an escaped line feed
]


@pytest.mark.parametrize("raw", NAMES)
def test_escaping_is_lossless_and_gives_text_that_can_be_sent(raw: bytes) -> None:
    shown = escape_name(raw)
    shown.encode("utf-8")
    assert unescape_name(shown) == os.fsdecode(raw)
    assert escape_name(os.fsdecode(raw)) == shown


def test_different_names_are_never_shown_alike() -> None:
    shown = [escape_name(raw) for raw in NAMES]
    assert len(set(shown)) == len(NAMES)
    assert escape_name(b"caf\xe9.txt") == "caf\\xe9.txt"
    assert escape_name(b"caf\\xe9.txt") == "caf\\x5cxe9.txt"
    assert escape_name(b"back\\slash") == "back\\slash"  # no escape unless it could mislead


def test_a_name_holding_control_characters_is_one_line_of_printable_text() -> None:
    assert escape_name(b"evil\nrm -rf ~") == "evil\\x0arm -rf ~"
    assert escape_name("a\x1b[8m\tb") == "a\\x1b[8m\\x09b"
    assert unescape_name("evil\\x0arm") == "evil\nrm"
    assert unescape_name("nul\\x00") == "nul\\x00"  # no name holds a NUL: left as typed
    assert escape_name(b"caf\\x0a") == "caf\\x5cx0a"


def test_scrub_leaves_text_alone_and_shows_surrogates() -> None:
    text = "plain é 日本"
    assert scrub_text(text) is text
    assert scrub_text("a\udce9b\ud800") == "a\\xe9b\ufffd"


def test_the_checker_for_many_paths_agrees_with_is_within(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "a" / "b").mkdir(parents=True)
    (outside / "o").mkdir(parents=True)
    (root / "a" / "b" / "f").write_text("x")
    (outside / "o" / "g").write_text("x")
    (root / "a" / "out").symlink_to(outside / "o")
    (root / "a" / "in").symlink_to(root / "a" / "b")
    (root / "a" / "link-out").symlink_to(outside / "o" / "g")
    (root / "a" / "link-in").symlink_to("b/f")
    (root / "loop").symlink_to(root / "loop")
    candidates = [
        root / "a" / "b" / "f",
        root / "a" / "out" / "g",
        root / "a" / "in" / "f",
        root / "a" / "link-out",
        root / "a" / "link-in",
        root / "loop",
        root / "loop" / "x",
        outside / "o" / "g",
    ]
    check = InsideChecker(root)
    for path in itertools.chain(candidates, reversed(candidates)):
        assert check(path) == is_within(path, root), path
    assert [check(path) for path in candidates] == [
        True,
        False,
        True,
        False,
        True,
        False,
        False,
        False,
    ]
