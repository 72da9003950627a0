"""Options of a command, read the way getopt_long reads them, against a table of known options.

A `Grammar` lists the options kode-tui lets a session approval cover for one program (see
`kode_tui.tools.command_programs`), in getopt's own notation: `"uo:"` is `-u` and `-o VALUE`.
`parse` reads arguments as the program does:

- short options bundle: `-uo.npmrc` is `-u -o .npmrc`; a value may be attached (`-n5`) or the
  next word (`-n 5`), and an optional value only attached (`-O2`);
- long options take `--name=value` or, when the value is required, `--name value`;
- `--` ends the options; unless the grammar stops at the first operand, options and operands
  mix (GNU's permutation: `sort notes.txt -o out`).

Whatever the table does not list makes `parse` give up (None), and the caller then offers only
"exactly this command". Two cases give up on purpose, though the program would take them:

- an abbreviated long option (`--compress-prog`). getopt_long takes any unique prefix, but which
  option a prefix names depends on every option the installed version knows, and a newer one
  may add an option the prefix names exactly; a table of what is allowed cannot tell.
- a separate value that looks like an option (`-o -x`). Programs disagree on whether `-x` is the
  value or the next option; either way, nothing is left unread.

Python's `getopt` module reads the same notation but has no optional values before 3.13 and no
way to say which word held which value, so the few lines here do it.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


class Arg(enum.Enum):
    """Whether an option takes a value."""

    NONE = enum.auto()
    REQUIRED = enum.auto()
    """`-oVALUE`, `-o VALUE`, `--out=VALUE`, `--out VALUE`."""
    OPTIONAL = enum.auto()
    """Only attached: `-O2`, `--color=always`; a bare `--color` has none."""
    NUMBER = enum.auto()
    """Optional, attached or the next word when that is a number: GNU make's `-j 4`."""


_MARKS = {":": Arg.REQUIRED, "::": Arg.OPTIONAL, "#": Arg.NUMBER}
_LONG_MARKS = {"=": Arg.REQUIRED, "=?": Arg.OPTIONAL, "=#": Arg.NUMBER}


@dataclass(frozen=True, slots=True)
class Grammar:
    """The options one program (or subcommand) may be given under a widened scope."""

    short: Mapping[str, Arg] = field(default_factory=dict)
    long: Mapping[str, Arg] = field(default_factory=dict)
    stop_at_operand: bool = False
    """The first operand ends the options (git's global options, before its subcommand)."""
    end_of_options: bool = True
    """`--` ends the options; otherwise `--` is an unknown option."""


def grammar(
    short: str = "", long: str = "", *, stop_at_operand: bool = False, end_of_options: bool = True
) -> Grammar:
    """A grammar from getopt's notation: `short` as an optstring (`"uo:O::j#"`: `:` a required
    value, `::` an optional one, `#` a number), `long` as names apart (`"unique output= color=?
    jobs=#"`)."""
    shorts: dict[str, Arg] = {}
    index = 0
    while index < len(short):
        letter = short[index]
        index += 1
        mark = next((m for m in ("::", ":", "#") if short.startswith(m, index)), "")
        shorts[letter] = _MARKS.get(mark, Arg.NONE)
        index += len(mark)
    longs: dict[str, Arg] = {}
    for word in long.split():
        name, equals, rest = word.partition("=")
        longs[name] = _LONG_MARKS[equals + rest] if equals else Arg.NONE
    return Grammar(shorts, longs, stop_at_operand, end_of_options)


@dataclass(frozen=True, slots=True)
class Parsed:
    """What `parse` read: each option with its value, the operands, and what followed `--`."""

    options: tuple[tuple[str, str | None], ...]
    """`("-o", ".npmrc")`, `("--unique", None)`: names as written, in full."""
    operands: tuple[str, ...]
    after_dashdash: tuple[str, ...] | None
    """The words after `--`; None when there was no `--`."""


def parse(rules: Grammar, words: Sequence[str]) -> Parsed | None:
    """`words` (a command's arguments) read by `rules`; None when an option is not in the table,
    is abbreviated, or its value cannot be placed."""
    options: list[tuple[str, str | None]] = []
    operands: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if word == "--" and rules.end_of_options:
            return Parsed(tuple(options), tuple(operands), tuple(words[index:]))
        if word.startswith("--"):
            name, equals, attached = word[2:].partition("=")
            read = _value(rules.long.get(name), attached if equals else None, words, index)
            if read is None:
                return None
            value, index = read
            options.append((f"--{name}", value))
        elif word.startswith("-") and word != "-":
            position = 1
            while position < len(word):
                letter = word[position]
                position += 1
                arg = rules.short.get(letter)
                rest = word[position:] if arg is not Arg.NONE else None
                read = _value(arg, rest or None, words, index)
                if read is None:
                    return None
                value, index = read
                options.append((f"-{letter}", value))
                if rest:
                    break  # the rest of the word was this option's value
        else:
            operands.append(word)
            if rules.stop_at_operand:
                operands.extend(words[index:])
                break
    return Parsed(tuple(options), tuple(operands), None)


def _value(
    arg: Arg | None, attached: str | None, words: Sequence[str], index: int
) -> tuple[str | None, int] | None:
    """The value of an option taking `arg` (`attached` to it, or the word at `index`) and the
    index of the word after it; None when the option is unknown or its value is misplaced."""
    if arg is None:
        return None
    if attached is not None:
        return (attached, index) if arg is not Arg.NONE else None
    following = words[index] if index < len(words) else None
    if arg is Arg.REQUIRED:
        if following is None or (following.startswith("-") and following != "-"):
            return None
        return following, index + 1
    if arg is Arg.NUMBER and following is not None and following.isascii() and following.isdigit():
        return following, index + 1
    return None, index
