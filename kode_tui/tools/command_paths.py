"""Which paths a Shell command names: outside the work dir, or files that make tools run code.

Every word of every command is checked, whatever the program, and read generously: the word
itself, every `=value`, the parts of `a:PATH`, `x,PATH`, `user@PATH`, what a `file://` URL
names, and each word brace expansion makes of it (`.{npmrc,x}` is `.npmrc .x`). An option's
value is found by the program's grammar where the program is on the allow-list
(`kode_tui.tools.command_programs`: `sort -uo.npmrc` is `-u -o .npmrc`); for any other program
every suffix of a word starting with one dash or a plus counts (`-uo.npmrc` holds `uo.npmrc`,
`o.npmrc` and `.npmrc`, whichever letters take a value). Paths are resolved as bash does:
`link/..` goes through the link, `$HOME` (`${NAME}`) is replaced by its value (an unset one by
nothing, and as written), `${NAME:-word}` by both, `$'\x2e'` by what it quotes, a glob by what
it matches.

What a command computes when it runs (`$(…)`, `` `…` ``, `${NAME#…}`, `$((…))`, a variable it
sets itself) cannot be known here: the sandbox is what holds there.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import bracex

from kode_tui.tools.command_line import is_operator, simple_commands
from kode_tui.tools.command_options import parse
from kode_tui.tools.command_programs import CP, MV, widen_command
from kode_tui.tools.protected import holds_protected, is_protected

PROTECTED_ARGUMENT = "it names a file whose content can make tools run code"
"""Why a command naming `.git/…`, `.envrc` and the like asks every time, in every mode."""
COPIES_PROTECTED = "it copies a folder holding a file whose content can make tools run code"
UNKNOWN_HOME = "it names a home folder kode-tui cannot resolve (`~user`, `~+`, `~-`)"
DOT_GLOB = "a glob in it can match `..`, so kode-tui cannot tell what it names"
GLOB_LIMIT = 200
TOO_MANY_MATCHES = f"a glob in it matches more than {GLOB_LIMIT} files, too many to check"
TOO_LONG = "a word in it is too long to check for the paths it holds"
TOO_MANY_WORDS = "a brace expansion in it makes too many words to check"

_URL = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")
_DOT_GLOB = re.compile(r"(^|/)\.+[*?\[]")
_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
_DEFAULT = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*):?[-=?+]([^{}]*)\}")
_SAFE_DEVICES = frozenset(
    {"/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/zero", "/dev/urandom"}
    | {"/dev/random"}
)
_LONGEST_BUNDLE = 512
"""Longer option words than this are not cut into suffixes (each one is a path to check)."""
_MOST_BRACE_WORDS = 500

_COPY_GRAMMARS = {"cp": CP, "gcp": CP, "mv": MV, "gmv": MV}
_COPIERS = frozenset({*_COPY_GRAMMARS, "rsync", "ditto", "install", "rclone"})
"""Programs that write a directory's whole tree somewhere else."""


class _Unresolvable(Exception):
    """A word whose paths cannot be known; its message says why."""


@dataclass(frozen=True, slots=True)
class PathFindings:
    """What the paths of a command reach."""

    outside: bool
    """Some path lies outside the work dir (or might)."""
    reasons: tuple[str, ...]
    """Why the command asks every time, in every mode: a protected file, or a path that cannot
    be known. Empty when nothing does."""


def check_paths(words: list[str], work_dir: Path) -> PathFindings:
    """The paths `words` (a command line split by `command_line.split_words`, or by spaces when
    it could not be) name, run from `work_dir`."""
    root = Path(os.path.realpath(work_dir))
    outside = False
    reasons: list[str] = []
    for word, cut in dict.fromkeys(_path_words(words)):  # each word once: `-la -la -la …`
        try:
            paths = [
                path
                for braced in _brace_words(word)
                for reading in _readings(braced, work_dir)
                for candidate in _candidates(reading, cut)
                for path in _expand(candidate, work_dir)
            ]
        except _Unresolvable as why:
            outside = True
            reasons.append(str(why))
            continue
        outside = outside or any(not _inside(path, root) for path in paths)
        if any(is_protected(Path(path), work_dir) for path in paths):
            reasons.append(PROTECTED_ARGUMENT)
    if _copies_protected(words, work_dir):
        reasons.append(COPIES_PROTECTED)
    return PathFindings(outside, tuple(dict.fromkeys(reasons)))


def _path_words(words: list[str]) -> Iterator[tuple[str, bool]]:
    """Each word that may name a path, and whether to cut it into suffixes too: yes, unless
    the command's program is on the allow-list, whose grammar says which option takes a value
    (those values come as words of their own, after the command's). A brace in a word may make
    more words of it, and options of them, so then the grammar is not used."""
    command: list[str] = []
    redirected = False
    for word in [*words, ";"]:
        if not is_operator(word):
            command.append(word)
            continue
        if command:
            braces = any("{" in argument for argument in command)
            known = None if braces else widen_command(command)
            # A program looked up on PATH is no path argument; after `>`, `<`, `&>`... comes
            # the file redirected to or from, not a program.
            named = command if redirected or "/" in command[0] else command[1:]
            yield from ((argument, known is None) for argument in named)
            yield from ((value, False) for value in (known.values if known else ()))
        command = []
        redirected = any(ch in "<>" for ch in word)


def _brace_words(word: str) -> list[str]:
    """The words bash's brace expansion makes of `word` (`a{b,c}` is `ab ac`), and `word` as it
    is (quotes, gone by now, may have kept the braces)."""
    if "{" not in word:
        return [word]
    try:
        return [word, *bracex.expand(word, limit=_MOST_BRACE_WORDS)]
    except bracex.ExpansionLimitException as error:
        raise _Unresolvable(TOO_MANY_WORDS) from error


def _readings(word: str, work_dir: Path) -> set[str]:
    """What `word` can be once bash has expanded it: `$NAME` and `${NAME}` replaced by their
    values (`$HOME/.ssh` names a path outside), an unset one by nothing and, since the quotes
    that may have kept it are gone by now, as it is; `${NAME:-word}` (`:+`, `:=`, `:?`) by the
    value and by the word; `$'\\x2enpmrc'` and `$"…"` by what they quote."""

    def value(match: re.Match[str], unset: str | None) -> str:
        name = match.group(1) or match.group(2)
        if name == "PWD":
            return str(work_dir)  # the command runs there, whatever kode-tui's own PWD says
        return os.environ.get(name, match.group(0) if unset is None else unset)

    readings = {_VARIABLE.sub(lambda match: value(match, None), word)}
    if "$" in word:
        by_word = _DEFAULT.sub(lambda match: match.group(2), word)
        by_value = _DEFAULT.sub(lambda match: os.environ.get(match.group(1), ""), word)
        for chosen in (by_word, by_value):
            expanded = _VARIABLE.sub(lambda match: value(match, ""), chosen).replace("$", "")
            readings.add(expanded)
            readings.update(_escapes_read(expanded))
    return readings


def _escapes_read(text: str) -> set[str]:
    """`text` with its backslash escapes read as bash reads `$'…'` (`\\x72`, `\\162`, `\\u0072`),
    when it has any."""
    if "\\" not in text:
        return set()
    try:
        return {text.encode("latin-1", "backslashreplace").decode("unicode_escape")}
    except UnicodeDecodeError:
        return set()  # no escapes bash would read either


def _candidates(word: str, cut: bool) -> set[str]:
    """The parts of `word` that could be a path: itself, `--opt=PATH`, `a:PATH`, …, and when
    `cut`, every suffix of `-oPATH` (`-uo.npmrc`: whichever letter takes the value)."""
    found: set[str] = set()
    items = [word]
    if cut and (word[:1] == "+" or (word[:1] == "-" and word[:2] != "--")):
        if len(word) > _LONGEST_BUNDLE:
            raise _Unresolvable(TOO_LONG)
        items.extend(word[start:] for start in range(1, len(word)))
    for item in items:
        for piece in item.split("="):
            url = _URL.match(piece)
            if url:
                if url.group(1).lower() == "file":
                    found.add(piece[url.end() :] or "/")
                continue
            found.update(part for part in re.split(r"[:,{}@]", piece) if part)
    return found


def _expand(candidate: str, work_dir: Path) -> list[str]:
    """The absolute paths `candidate` can name (a glob's matches)."""
    if candidate in _SAFE_DEVICES or candidate.startswith("/dev/fd/"):
        return []
    if candidate.startswith("~"):
        expanded = os.path.expanduser(candidate)
        if expanded.startswith("~"):
            raise _Unresolvable(UNKNOWN_HOME)
        candidate = expanded
    # Not normalised: bash resolves `link/..` through the link, and so does `_inside`'s
    # realpath, whereas normpath would drop both words (`d/../secret` with `d -> /outside/x`).
    path = candidate if os.path.isabs(candidate) else os.path.join(work_dir, candidate)
    if not glob.has_magic(candidate):
        return [path]
    if _DOT_GLOB.search(candidate):
        raise _Unresolvable(DOT_GLOB)  # bash's `.*` can match `..` (and `.git`)
    matches: list[str] = []
    for match in glob.iglob(path):
        matches.append(match)
        if len(matches) > GLOB_LIMIT:
            raise _Unresolvable(TOO_MANY_MATCHES)
    return matches or [path]


def _inside(path: str, root: Path) -> bool:
    try:
        Path(os.path.realpath(path)).relative_to(root)
    except (ValueError, OSError):
        return False
    return True


def _copies_protected(words: list[str], work_dir: Path) -> bool:
    """Whether a copy or move takes a folder holding a protected file along: `cp -rT template .`
    writes `template/.envrc` as `.envrc` without naming it."""
    for command in simple_commands(words):
        name = os.path.basename(command[0]).lower()
        if name not in _COPIERS:
            continue
        try:  # as bash passes them, braces expanded
            args = [braced for arg in command[1:] for braced in _brace_words(arg)[1:] or [arg]]
        except _Unresolvable:
            args = command[1:]  # that word asks anyway
        for source in _sources(name, args):
            folder = os.path.join(work_dir, os.path.expanduser(source))
            if os.path.isdir(folder) and holds_protected(Path(folder)):
                return True
    return False


def _sources(name: str, args: list[str]) -> Iterator[str]:
    """What a copier copies: its operands but the destination, read with the program's options
    (`cp -vt. template`: `.` is where to). When they cannot be read, every word that is not an
    option counts, the destination too."""
    rules = _COPY_GRAMMARS.get(name)
    parsed = parse(rules, args) if rules is not None else None
    if parsed is None:
        if rules is not None:
            yield from (arg for arg in args if not arg.startswith("-"))
            return
        # rsync, ditto, rclone, install: options not read; the last word, or `-t DIR`, is
        # where to.
        operands = [
            arg
            for index, arg in enumerate(args)
            if not arg.startswith("-") and (index == 0 or args[index - 1] != "-t")
        ]
        targeted = any(arg.startswith(("-t", "--target")) for arg in args)
        yield from operands if targeted else operands[:-1]
        return
    operands = [*parsed.operands, *(parsed.after_dashdash or ())]
    targeted = any(option in ("-t", "--target-directory") for option, _ in parsed.options)
    yield from operands if targeted else operands[:-1]
