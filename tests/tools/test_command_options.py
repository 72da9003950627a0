"""Options read as getopt_long reads them (issue 26): what a session scope's grammar sees."""

from __future__ import annotations

import pytest

from kode_tui.tools.command_options import Arg, grammar, parse

SORT = grammar("uo:k:", "unique output= key=")


def test_the_getopt_notation_says_which_option_takes_a_value() -> None:
    rules = grammar("ao:O::j#", "all output= color=? jobs=#")
    assert rules.short == {"a": Arg.NONE, "o": Arg.REQUIRED, "O": Arg.OPTIONAL, "j": Arg.NUMBER}
    assert rules.long == {
        "all": Arg.NONE,
        "output": Arg.REQUIRED,
        "color": Arg.OPTIONAL,
        "jobs": Arg.NUMBER,
    }


@pytest.mark.parametrize(
    "words",
    [
        ["-uo.npmrc", "notes.txt"],  # bundled, the rest of the word is the value
        ["-u", "-o.npmrc", "notes.txt"],
        ["-u", "-o", ".npmrc", "notes.txt"],
        ["-uo", ".npmrc", "notes.txt"],  # the value is the next word
        ["--unique", "--output=.npmrc", "notes.txt"],
        ["notes.txt", "--unique", "--output", ".npmrc"],  # GNU permutes options and operands
    ],
)
def test_a_bundle_is_read_letter_by_letter_up_to_the_option_that_takes_a_value(
    words: list[str],
) -> None:
    parsed = parse(SORT, words)
    assert parsed is not None
    assert [value for _, value in parsed.options] == [None, ".npmrc"]
    assert parsed.operands == ("notes.txt",)


def test_an_optional_value_is_only_ever_attached() -> None:
    rules = grammar("O::", "color=?")
    parsed = parse(rules, ["-O", "target", "--color", "always", "-Oline", "--color=never"])
    assert parsed is not None
    assert parsed.options == (
        ("-O", None),
        ("--color", None),
        ("-O", "line"),
        ("--color", "never"),
    )
    assert parsed.operands == ("target", "always")


def test_a_number_value_may_be_the_next_word_as_make_reads_j() -> None:
    rules = grammar("j#k", "jobs=#")
    parsed = parse(rules, ["-j", "4", "test", "-j", "lint", "-kj8", "--jobs", "2"])
    assert parsed is not None
    assert [value for _, value in parsed.options] == ["4", None, None, "8", "2"]
    assert parsed.operands == ("test", "lint")


def test_double_dash_ends_the_options() -> None:
    parsed = parse(SORT, ["-u", "--", "-o", "x"])
    assert parsed is not None
    assert parsed.options == (("-u", None),)
    assert parsed.after_dashdash == ("-o", "x")
    assert parse(grammar("u", end_of_options=False), ["-u", "--", "x"]) is None


def test_a_grammar_may_stop_at_the_first_operand_as_git_reads_its_global_options() -> None:
    rules = grammar("P", "no-pager", stop_at_operand=True)
    parsed = parse(rules, ["--no-pager", "-P", "log", "-p", "--stat"])
    assert parsed is not None
    assert parsed.operands == ("log", "-p", "--stat")


@pytest.mark.parametrize(
    "words",
    [
        ["--compress-program=sh"],  # not in the table
        ["-ux"],  # a letter the table does not know, in a bundle
        ["--out=x"],  # getopt_long would take the abbreviation: never widened
        ["--uniq"],
        ["--unique=yes"],  # a value the option does not take
        ["-o"],  # a value that is missing
        ["-o", "-u"],  # a value that looks like an option
        ["--output", "--unique"],
    ],
)
def test_what_the_table_does_not_place_is_not_read(words: list[str]) -> None:
    assert parse(SORT, words) is None


def test_a_lone_dash_is_an_operand_or_a_value() -> None:
    parsed = parse(SORT, ["-o", "-", "-"])
    assert parsed is not None
    assert parsed.options == (("-o", "-"),)
    assert parsed.operands == ("-",)
