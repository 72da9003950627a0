"""What "approve for session" covers for a Shell command, and whether it always asks.

A session approval covers exactly what its label says, and a command is widened beyond itself
only when kode-tui can show the wider scope runs nothing the command did not. So the scope is
"exactly this command" unless the command is one simple command of plain words (no operators,
redirections, substitutions, `$`, globs, braces, assignments, keywords or line continuations)
whose program is on the allow-list of `kode_tui.tools.command_programs`, and every argument
parses by that program's grammar (`kode_tui.tools.command_options`): then the scope is the
program and what selects its behaviour (`git log`, `npm run build`, `make test`,
`python3 -m pytest`), with any other arguments the grammar takes. An option it does not list,
an abbreviated one, an unknown program, a runner or an interpreter with inline code: exact.

Separately, for every command, widened or not (`kode_tui.tools.command_paths`): a path outside
the work dir makes the call ask every time, whatever was approved, and a file that can make
tools run code (`.git/hooks/…`, `.envrc`) asks every time in every mode, as a WriteFile of it
would; so does a path kode-tui cannot know (a glob of too many files, `~user`), a copy of a
folder holding such a file, and a command that writes git's config or hooks without naming the
file (`git config KEY VALUE`, `pre-commit install`, `husky`, `git lfs install`).

The scope key is computed by `scope_of` both when an approval is remembered and when a later
command is checked, so a key stored by an older version (e.g. the broad `shell:python3`) only
covers commands this function gives that very key.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from kode_tui.tools.command_line import is_operator, simple_commands, split_words
from kode_tui.tools.command_paths import check_paths
from kode_tui.tools.command_programs import Widening, widen_command

EXACT_PREFIX = "shell-exact:"
WIDE_PREFIX = "shell:"
EXACT_LABEL = "exactly this command"
INSTALLS_CODE = "it writes git's config or hooks, which can make tools run code"

_EXPANSION = re.compile(r"[$`*?\[\]{}]")


@dataclass(frozen=True, slots=True)
class CommandScope:
    """What approving a command for the session would cover."""

    key: str
    """Remembered in state.json, e.g. `shell:git log` or `shell-exact:rm -rf build`."""
    label: str
    """The key in words, e.g. "`git log` with arguments that run nothing else, inside the work
    dir"."""
    exact: bool
    outside: bool
    """Some argument names a path outside the work dir: the call asks every time."""
    reason: str = ""
    """Why the call asks every time, in every mode (a file that can make tools run code, a
    path kode-tui cannot check); empty when it need not."""

    @property
    def protected(self) -> bool:
        """Whether the call asks every time, in every mode."""
        return bool(self.reason)


def scope_of(command: str, work_dir: Path) -> CommandScope:
    """The scope of `command` (see the module docstring), run from `work_dir`."""
    stripped = command.strip()
    words = split_words(stripped)
    # bash drops a backslash-newline (a line continuation) before it splits words; shlex keeps
    # it in a word. Such a command is never widened, and both readings are checked for paths.
    continued = "\\\n" in stripped
    widening = _widening(words) if words and not continued else None
    readings = [words if words is not None else stripped.split()]
    if continued:
        joined = split_words(stripped.replace("\\\n", ""))
        readings.append(joined if joined is not None else stripped.split())
    outside = False
    reasons: list[str] = []
    for reading in readings:
        found = check_paths(reading, work_dir)
        outside = outside or found.outside
        reasons.extend(found.reasons)
        if _installs_code(reading):
            reasons.append(INSTALLS_CODE)
    reason = "; ".join(dict.fromkeys(reasons))
    if widening is None:
        return CommandScope(EXACT_PREFIX + stripped, EXACT_LABEL, True, outside, reason)
    shown = shlex.join(widening.words)
    label = (
        f"`{shown}` with no arguments"
        if widening.bare
        else f"`{shown}` with arguments that run nothing else, inside the work dir"
    )
    return CommandScope(WIDE_PREFIX + shown, label, False, outside, reason)


def _widening(words: list[str]) -> Widening | None:
    """The scope of a simple command of plain words, or None for an exact scope. (A keyword or
    an assignment, `FOO=1 cmd`, is no program of the allow-list.)"""
    if any(is_operator(w) or _EXPANSION.search(w) for w in words):
        return None
    return widen_command(words)


# --- commands that write what makes tools run code, without naming the file ---------------------

_GIT_VALUE_GLOBALS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace"})
_CONFIG_READS = frozenset(
    {"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--get-color", "--get-colorbool"}
    | {"-l", "--list", "get", "list"}
)
_CONFIG_WRITES = frozenset(
    {"--add", "--replace-all", "--unset", "--unset-all", "--rename-section", "--remove-section"}
    | {"-e", "--edit", "set", "unset", "rename-section", "remove-section", "edit"}
)
_HARMLESS_CONFIG = frozenset(
    {"user.name", "user.email", "init.defaultbranch", "pull.rebase", "pull.ff", "push.default"}
    | {"core.autocrlf", "core.eol", "core.filemode", "core.ignorecase", "core.quotepath"}
    | {"color.ui", "merge.ff", "fetch.prune", "rebase.autostash", "commit.verbose"}
)
"""Keys whose values name no program: writing them is an ordinary command."""
_CONFIG_VALUE_OPTIONS = frozenset({"-f", "--file", "--blob", "--type", "--default", "--comment"})
_HOOK_INSTALLERS = {
    "pre-commit": frozenset({"install", "install-hooks", "init-templatedir"}),
    "lefthook": frozenset({"install", "add"}),
    "husky": frozenset({"", "install", "init"}),
    "overcommit": frozenset({"--install"}),
}
"""Programs (and their subcommands) that write `.git/hooks/…` or `core.hooksPath`."""


def _installs_code(tokens: list[str]) -> bool:
    """Whether a simple command of `tokens` writes git's config or hooks without naming the
    file: `git config core.fsmonitor …`, `pre-commit install`, `husky`."""
    return any(_writes_git_config_or_hooks(command) for command in simple_commands(tokens))


def _writes_git_config_or_hooks(words: list[str]) -> bool:
    # Also behind a runner: `npx husky`, `pipx run pre-commit install`.
    for index, word in enumerate(words):
        installer = _HOOK_INSTALLERS.get(os.path.basename(word).lower())
        following = words[index + 1] if index + 1 < len(words) else ""
        if installer is not None and following in installer:
            return True
    name = os.path.basename(words[0]).lower()
    args = words[1:]
    if name != "git":
        return False
    index = 0
    while index < len(args) and args[index].startswith("-"):
        index += 2 if args[index] in _GIT_VALUE_GLOBALS else 1
    if index >= len(args):
        return False
    if args[index] == "lfs":
        return index + 1 < len(args) and args[index + 1] in ("install", "update")
    return args[index] == "config" and not _reads_config(args[index + 1 :])


def _reads_config(args: list[str]) -> bool:
    """Whether `git config ARGS` only reads (`--get k`, `--list`, `k`) or writes a key that
    names no program (`user.email`)."""
    positional: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in _CONFIG_VALUE_OPTIONS:
            skip = True
        elif not arg.startswith("-"):
            positional.append(arg)
    verbs = _CONFIG_READS | _CONFIG_WRITES
    keys = positional[1:] if positional and positional[0] in verbs else positional
    if keys and (keys[0].lower() in _HARMLESS_CONFIG or keys[0].lower().startswith("advice.")):
        return True
    if any(arg.split("=", 1)[0] in _CONFIG_WRITES for arg in args):
        return False
    reads = any(arg.split("=", 1)[0] in _CONFIG_READS for arg in args)
    return reads or len(positional) <= 1
