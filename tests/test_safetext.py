"""safetext.visible: what text from a model, a tool or a file may show on a terminal."""

from __future__ import annotations

import pytest

from kode_tui.message import Message, TextPart
from kode_tui.safetext import has_hidden, visible, visible_model
from kode_tui.wire import events as ev


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("git status \x1b[8m; touch X #\x1b[0m", "git status ␛[8m; touch X #␛[0m"),
        ("\x1b]0;title\x07", "␛]0;title␇"),
        ("\x9b31m", "\\x9b31m"),  # an 8-bit CSI
        ("safe\rrm -rf ~", "safe␍rm -rf ~"),  # a carriage return would overwrite the line
        ("abc\x08\x08\x08xyz", "abc␈␈␈xyz"),
        ("\x00\x7f\x85", "␀␡\\x85"),
        ("if admin \u202e} \u2066{", "if admin \\u202e} \\u2066{"),  # Trojan Source
        ("zero\u200bwidth\ufeff", "zero\\u200bwidth\\ufeff"),
        ("a\u2028b", "a\\u2028b"),  # Python would split lines there, a terminal does not
        ("tag\U000e0041", "tag\\U000e0041"),
        ("caf\udce9.txt", "caf\\xe9.txt"),  # a byte of a name that is not UTF-8
    ],
)
def test_visible_shows_each_control_character_as_a_printable_stand_in(raw: str, shown: str) -> None:
    assert visible(raw) == shown
    assert visible(raw).isprintable()
    assert has_hidden(raw)


def test_multiline_text_keeps_line_feeds_and_tabs_and_drops_cr_before_lf() -> None:
    assert visible("a\tb\r\nc\n") == "a\tb\nc\n"


def test_a_one_line_label_shows_line_breaks_and_tabs() -> None:
    assert visible("rm x\n\trm y\r\n", multiline=False) == "rm x↵␉rm y␍↵"


def test_clean_text_comes_back_as_it_is() -> None:
    text = "Plain text, emoji 👩‍💻 (a zero-width joiner), Persian می‌خواهم, 日本語.\n"
    assert visible(text) is text
    assert not has_hidden(text)


def test_visible_model_makes_every_nested_string_visible_and_keeps_clean_models() -> None:
    clean = ev.ContentPart(part=TextPart(text="hello"))
    assert visible_model(clean) is clean

    result = ev.ToolResult(
        tool_call_id="t1",
        output="\x1b[8mhidden",
        display=[ev.DiffBlock(path="a\x9b", old_text="", new_text="\u202e")],
    )
    shown = visible_model(result)
    assert shown.output == "␛[8mhidden"
    assert shown.display[0] == ev.DiffBlock(path="a\\x9b", old_text="", new_text="\\u202e")
    assert result.output == "\x1b[8mhidden", "the original is left alone"

    message = visible_model(Message(role="user", content=[TextPart(text="x\x07")]))
    assert message.text == "x␇"


# Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt): characters a terminal
# draws as nothing, so text holding them can look like other text.
_DEFAULT_IGNORABLE = [
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
]
_NEEDED = {0x200C, 0x200D, *range(0xFE00, 0xFE10)}
"""Joiners and the first variation selectors: emoji and several scripts are drawn with them."""


def test_every_character_a_terminal_draws_as_nothing_is_shown_but_joiners() -> None:
    hidden = [
        chr(code)
        for first, last in _DEFAULT_IGNORABLE
        for code in range(first, last + 1)
        if code not in _NEEDED and not has_hidden(chr(code))
    ]
    assert hidden == []
    for code in _NEEDED:
        assert visible(chr(code)) == chr(code)
