"""Custom slash commands: prompts kept as Markdown files, `/review src/` sends `review.md`.

Three folders hold them; on a name found in more than one, the first wins:

1. `.kode/commands/` in the work dir (the project's, kode-tui's own place);
2. `.claude/commands/` in the work dir (Claude Code's, so a team's commands work unchanged);
3. `$KODE_TUI_HOME/commands/` (the user's, for every work dir).

A file in a subfolder is namespaced as Claude Code does: `frontend/test.md` is `/frontend:test`.
A name is letters, digits, `-` and `_` (lower-cased: the prompt's `/Review` is `/review`).

The body is the prompt: `$ARGUMENTS` becomes what followed the name, `$1`, `$2`... its
shell-like words (a missing one is empty). Arguments given to a body that has no placeholder are
added after it (`ARGUMENTS: ...`), so nothing typed is lost. Optional YAML front matter
(`description:`, `argument-hint:`, `model:`) is never sent; the other keys Claude Code reads
(`allowed-tools:`...) are ignored. Claude's unquoted hints (`argument-hint: [pr] [priority]`)
are not YAML: front matter made only of `key: value` lines is read line by line then.

The files come with cloned repositories, so nothing in them is trusted: a file whose real path
(symlinks resolved) lies outside the work dir, or outside `$KODE_TUI_HOME/commands` for the
user's, is not read (`/review` must not send `~/.ssh/id_rsa`); nor is one that is not a regular
file, over `MAX_BYTES`, not UTF-8, or whose front matter cannot be read as data (bad YAML,
nesting, aliases: `project_files.parse_yaml`). Each gives one `CommandProblem` naming the file,
and the other commands are listed as usual. What a listing shows (description, hint) is `visible()`.

A listing stats the files each time and parses only those that changed, so an edited command
is used without a restart.
"""

from __future__ import annotations

import os
import re
import shlex
import stat
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from kode_tui.pathnames import is_within
from kode_tui.paths import home as kode_home
from kode_tui.paths import tilde
from kode_tui.soul.markdown_files import SourceFolder, one_line
from kode_tui.soul.project_files import DataError, parse_yaml, scalar_text

__all__ = [
    "CommandListing",
    "CommandProblem",
    "CustomCommand",
    "CustomCommands",
    "expand",
    "split_arguments",
]

Source = Literal["project", "claude", "user", "skill"]
_Folder = SourceFolder[Source]
"""Which folder a command comes from; `skill`: a skill's `/skill:NAME` (`kode_tui.soul.skills`)."""

MAX_BYTES = 256 * 1024
"""A prompt, not a data file: a larger one is refused."""
MAX_FILES = 200
"""Per folder: every listing stats each file, and a cloned repo decides how many there are."""
MAX_DEPTH = 2
"""Subfolders read below a commands folder (`a/b/c.md` is `/a:b:c`)."""
LABEL_CHARS = 120
"""A description or hint is one line of a menu."""
MAX_FRONT_MATTER = 16 * 1024
"""Front matter is a few `key: value` lines: more is not parsed."""

_SEGMENT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*")
_PLACEHOLDER = re.compile(r"\$(ARGUMENTS|[1-9][0-9]*)")
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*(?:\r?\n|\Z)", re.DOTALL | re.MULTILINE)
_KEY_VALUE = re.compile(r"([A-Za-z][A-Za-z0-9_-]*)[ \t]*:[ \t]*(.*)")


@dataclass(frozen=True, slots=True)
class CustomCommand:
    """One command file, read."""

    name: str
    """With its slash, lower-cased: `/review`, `/frontend:test`."""
    body: str
    """The prompt before its placeholders are replaced (empty for a skill's `/skill:NAME`,
    whose `SKILL.md` is read when it runs)."""
    description: str
    """One line, safe to show: the front matter's, else the body's first line."""
    argument_hint: str
    """E.g. `[file]`; empty when the file gives none. Safe to show."""
    model: str | None
    """The model its prompt asks for (`model:`), as written."""
    path: Path
    """Where it was found (not resolved)."""
    shown_path: str
    """`path` for people: `.kode/commands/review.md`, `~/.kode-tui/commands/review.md`."""
    source: Source


@dataclass(frozen=True, slots=True)
class CommandProblem:
    """A command file that was not read, and why (one sentence naming the file)."""

    name: str | None
    """The command it would have been, when its file name makes one."""
    message: str


@dataclass(frozen=True, slots=True)
class CommandListing:
    """The custom commands of a work dir at one moment."""

    commands: tuple[CustomCommand, ...]
    """By name."""
    shadowed: tuple[CustomCommand, ...] = ()
    """Files whose name an earlier folder's file has (`.kode` over `.claude` over the user's)."""
    problems: tuple[CommandProblem, ...] = ()

    def get(self, name: str) -> CustomCommand | None:
        """The command `name` (with its slash) names, if any."""
        return next((c for c in self.commands if c.name == name.lower()), None)

    def usable(self, built_in: Collection[str]) -> tuple[CustomCommand, ...]:
        """The commands a front end whose own commands are `built_in` (names with their slash)
        offers: a built-in wins on a name, so a repo's `clear.md` never stands for `/clear`."""
        return tuple(c for c in self.commands if c.name not in built_in)

    def problem(self, name: str) -> CommandProblem | None:
        """Why the file of the command `name` was not read, if it was not."""
        return next((p for p in self.problems if p.name == name.lower()), None)


# --- arguments ------------------------------------------------------------------------------------


def split_arguments(arguments: str) -> list[str]:
    """The words of `arguments` as a shell splits them (`"a b" c` is two); split at whitespace
    when its quotes do not pair up (`don't`)."""
    try:
        return shlex.split(arguments)
    except ValueError:
        return arguments.split()


def expand(command: CustomCommand, arguments: str) -> str:
    """The prompt `command` sends for `arguments` (what followed its name)."""
    arguments = arguments.strip()
    if _PLACEHOLDER.search(command.body) is None:
        body = command.body.rstrip()
        return f"{body}\n\nARGUMENTS: {arguments}" if arguments else body
    words = split_arguments(arguments)

    def replace(match: re.Match[str]) -> str:
        key = match.group(1)
        if key == "ARGUMENTS":
            return arguments
        index = int(key) - 1
        return words[index] if index < len(words) else ""

    return _PLACEHOLDER.sub(replace, command.body).strip()


# --- reading the folders --------------------------------------------------------------------------


class CustomCommands:
    """The custom commands of one work dir, read again whenever a file changes."""

    def __init__(self, work_dir: Path, home: Path | None = None) -> None:
        """`home` is kode-tui's (`$KODE_TUI_HOME`, by default)."""
        user = (home if home is not None else kode_home()) / "commands"
        self._work_dir = work_dir
        self._folders = (
            _Folder(work_dir / ".kode" / "commands", "project", work_dir, "the work dir"),
            _Folder(work_dir / ".claude" / "commands", "claude", work_dir, "the work dir"),
            _Folder(user, "user", user, tilde(user)),
        )
        self._read: dict[Path, tuple[tuple[int, int], CustomCommand | CommandProblem]] = {}
        self._key: tuple[object, ...] | None = None
        self._listing = CommandListing(())

    def listing(self) -> CommandListing:
        """The commands now: files are stat'ed, and read again only when they changed."""
        found: list[tuple[_Folder, str, Path, tuple[int, int]]] = []
        problems: list[CommandProblem] = []
        for folder in self._folders:
            for entry in self._scan(folder, problems):
                found.append((folder, *entry))
        key = (tuple((path, version) for _, _, path, version in found), tuple(problems))
        if key == self._key:
            return self._listing
        read: dict[Path, tuple[tuple[int, int], CustomCommand | CommandProblem]] = {}
        commands: dict[str, CustomCommand] = {}
        shadowed: list[CustomCommand] = []
        for folder, name, path, version in found:
            cached = self._read.get(path)
            if cached is None or cached[0] != version:
                cached = (version, self._load(folder, name, path))
            read[path] = cached
            item = cached[1]
            if isinstance(item, CommandProblem):
                problems.append(item)
            elif item.name in commands:
                shadowed.append(item)
            else:
                commands[item.name] = item
        self._read, self._key = read, key
        self._listing = CommandListing(
            tuple(sorted(commands.values(), key=lambda c: c.name)), tuple(shadowed), tuple(problems)
        )
        return self._listing

    def _scan(
        self, folder: _Folder, problems: list[CommandProblem]
    ) -> Iterator[tuple[str, Path, tuple[int, int]]]:
        """(name, path, (mtime, size)) of each `.md` file of `folder`, names checked."""
        if not folder.path.is_dir():
            return
        count = 0
        for directory, subdirs, files in os.walk(folder.path):
            relative = Path(directory).relative_to(folder.path)
            subdirs[:] = sorted(
                d for d in subdirs if not d.startswith(".") and len(relative.parts) < MAX_DEPTH
            )
            for file in sorted(files):
                if file.startswith(".") or not file.lower().endswith(".md"):
                    continue
                path = Path(directory) / file
                count += 1
                if count > MAX_FILES:
                    problems.append(
                        CommandProblem(
                            None,
                            f"{folder.shown(folder.path, self._work_dir)} holds more than "
                            f"{MAX_FILES} command files: the rest are not read.",
                        )
                    )
                    return
                parts = [*relative.parts, file[:-3]]
                if not all(_SEGMENT.fullmatch(part) for part in parts):
                    problems.append(
                        CommandProblem(
                            None,
                            f"{folder.shown(path, self._work_dir)} is not read: a command "
                            "name is letters, digits, - and _.",
                        )
                    )
                    continue
                try:
                    info = path.stat()
                    version = (info.st_mtime_ns, info.st_size)
                except OSError:
                    version = (-1, -1)  # a dangling symlink: _load says why
                yield "/" + ":".join(parts).lower(), path, version

    def _load(self, folder: _Folder, name: str, path: Path) -> CustomCommand | CommandProblem:
        shown = folder.shown(path, self._work_dir)

        def problem(why: str) -> CommandProblem:
            return CommandProblem(name, f"{name}: {shown} {why}")

        if not is_within(path, folder.confine):
            return problem(f"leads outside {folder.confine_shown}: not read.")
        try:
            data = _read_regular(path)
        except _NotRead as error:
            return problem(str(error))
        except OSError as error:
            return problem(f"could not be read: {error.strerror or error}.")
        try:
            text = data.decode("utf-8-sig")  # an editor's byte order mark hides no front matter
        except UnicodeDecodeError:
            return problem("is not UTF-8 text: not read.")
        try:
            fields, body = _front_matter(text)
        except ValueError as error:
            return problem(f"{error}: not read.")
        first_line = next((line.strip() for line in body.splitlines() if line.strip()), "")
        description = fields.get("description") or first_line.lstrip("# ")
        return CustomCommand(
            name=name,
            body=body,
            description=one_line(description, LABEL_CHARS),
            argument_hint=one_line(fields.get("argument-hint", ""), LABEL_CHARS),
            model=fields.get("model") or None,
            path=path,
            shown_path=shown,
            source=folder.source,
        )


class _NotRead(Exception):
    """Why a file is refused, as the end of a sentence naming it."""


def _read_regular(path: Path) -> bytes:
    # Non-blocking: a FIFO put where a command file is expected must not hang the listing.
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(descriptor, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise _NotRead("is not a regular file: not read.")
        if info.st_size > MAX_BYTES:
            raise _NotRead(f"is over {MAX_BYTES // 1024} KiB: not read.")
        data = file.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise _NotRead(f"is over {MAX_BYTES // 1024} KiB: not read.")
    return data


def _front_matter(text: str) -> tuple[dict[str, str], str]:
    """The front matter's fields (text only) and the body after it; ValueError saying what is
    wrong with the front matter."""
    match = _FRONT_MATTER.match(text)
    if match is None:
        return {}, text
    raw = match.group(1)
    if len(raw) > MAX_FRONT_MATTER:
        raise ValueError(f"has front matter over {MAX_FRONT_MATTER // 1024} KiB")
    try:
        loaded: Any = parse_yaml(raw, first_line=2)
    except DataError as error:
        # Claude's unquoted hints are not YAML, but nesting or aliases are no hint.
        loaded = _key_values(raw) if error.syntax else None
        if loaded is None:
            raise ValueError(f"has front matter that {error}") from None
    if loaded is None:
        loaded = {}
    if not isinstance(loaded, dict):
        raise ValueError("has front matter that is not `key: value` lines")
    fields: dict[str, str] = {}
    for key in ("description", "argument-hint", "model"):
        value = loaded.get(key)
        if value is None:
            continue
        shown: str | None
        if key == "argument-hint" and isinstance(value, list):
            # `argument-hint: [file]` is YAML for a list: the user meant the brackets.
            words = (scalar_text(item) for item in value)
            shown = " ".join(f"[{word}]" for word in words if word is not None)
        else:
            shown = scalar_text(value)  # not str(): YAML makes small files into big structures
        if shown is None:
            raise ValueError(f"has a `{key}:` that is not text")
        fields[key] = shown
    return fields, text[match.end() :]


def _key_values(raw: str) -> dict[str, str] | None:
    """`key: value` lines read as they are (Claude Code's unquoted `[hint]`s); None when a line
    is something else."""
    fields: dict[str, str] = {}
    for line in raw.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _KEY_VALUE.fullmatch(line.rstrip())
        if match is None:
            return None
        fields[match.group(1)] = match.group(2).strip()
    return fields
