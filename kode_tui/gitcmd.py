"""kode-tui's own git commands (file listings, project context), made unable to run code.

A repository's config can name programs git runs by itself: `core.fsmonitor` on every index
refresh, hooks, `filter.<driver>.clean/smudge/process` (which `git status` runs on files whose
stat data changed, as `.gitattributes` says), pagers, external diff and textconv drivers, gpg for
`log.showSignature`, lazy fetches of a partial clone over any transport. A hostile repo (or a
model that edited `.git/config`) would run its code the moment kode-tui lists files. Every git
command kode-tui runs itself goes through `run`, which overrides all of that on the command line
(which wins over every config file), drops the system config, and neutralises every filter driver
the config defines; names it cannot override make the call fail instead of running unprotected.
The model's own Shell commands are not changed: the user approves those.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

SAFE_CONFIG: tuple[str, ...] = (
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "log.showSignature=false",
    "protocol.allow=never",
    "submodule.recurse=false",
    "diff.ignoreSubmodules=all",
    "status.submoduleSummary=false",
    "gc.auto=0",
    "maintenance.auto=false",
    # A bare repository planted inside a work tree is found by discovery with its own config.
    "safe.bareRepository=explicit",
)
"""`-c` overrides for every command: no fsmonitor, hooks, pager, signature checks, transports,
submodule recursion (a submodule has a config of its own) or automatic housekeeping."""

SAFE_ENV: dict[str, str] = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    # An empty allow-list: no transport at all, so no lazy fetch can start ssh or ext:: helpers.
    "GIT_ALLOW_PROTOCOL": "",
    "GIT_NO_LAZY_FETCH": "1",
}

_DROPPED_ENV = ("GIT_EXTERNAL_DIFF",)

# Commands that may show diffs or commit signatures get the switches that keep drivers out.
_DIFF_COMMANDS = frozenset({"diff", "log", "show", "whatchanged", "diff-tree", "diff-index"})
_FILTER_KEYS = ("clean=", "smudge=", "process=", "required=false")


class GitRefused(subprocess.SubprocessError):
    """The repository's config defines a filter driver whose name cannot be overridden."""


def find_program(name: str) -> str | None:
    """`name` on PATH, looked up only in absolute folders.

    An empty or relative PATH entry (`PATH=:/usr/bin`, `.`) would be taken from the working
    folder of the command, i.e. the repository: a `git` or `rg` the repo ships would run.
    """
    for folder in os.get_exec_path():
        if not os.path.isabs(folder):
            continue
        candidate = os.path.join(folder, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def _git() -> str:
    found = find_program("git")
    if found is None:
        raise FileNotFoundError("git is not installed (no `git` in an absolute PATH folder)")
    return found


def environment() -> dict[str, str]:
    """The environment of kode-tui's git commands."""
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED_ENV}
    env.update(SAFE_ENV)
    return env


def _overrides(names: Sequence[str]) -> list[str]:
    argv: list[str] = []
    for setting in SAFE_CONFIG:
        argv += ["-c", setting]
    for name in names:
        for key in _FILTER_KEYS:
            argv += ["-c", f"filter.{name}.{key}"]
    return argv


def _base(args: Sequence[str]) -> list[str]:
    args = list(args)
    if args and args[0] in _DIFF_COMMANDS:
        extra = ["--no-ext-diff", "--no-textconv"]
        if args[0] in {"log", "show", "whatchanged"}:
            extra.append("--no-show-signature")
        args = [args[0], *extra, *args[1:]]
    return [_git(), "--no-pager", "--no-optional-locks", *args]


def filter_drivers(cwd: Path, *, timeout: float) -> list[str]:
    """The filter driver names the config seen from `cwd` defines (reading config runs nothing).

    Raises `GitRefused` for a name `-c` cannot express (`=` ends the key there), and
    `FileNotFoundError` when git is missing.
    """
    listed = subprocess.run(
        [_git(), *_overrides(()), "config", "-z", "--get-regexp", r"^filter\."],
        cwd=cwd,
        env=environment(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    if listed.returncode not in (0, 1):  # 1: no filter at all
        raise GitRefused(listed.stderr.decode("utf-8", "replace").strip() or "git config failed")
    names: dict[str, None] = {}
    for entry in listed.stdout.decode("utf-8", "surrogateescape").split("\0"):
        key = entry.split("\n", 1)[0]
        if not key.startswith("filter.") or key.count(".") < 2:
            continue
        name = key[len("filter.") : key.rindex(".")]
        if "=" in name:
            raise GitRefused(f"cannot neutralise the filter driver {name!r}")
        names[name] = None
    return list(names)


def command(
    args: Sequence[str], cwd: Path, *, timeout: float, config: Sequence[str] = ()
) -> tuple[list[str], dict[str, str]]:
    """The argv and environment that run `git <args>` in `cwd` without config-driven programs.

    `config` holds the caller's own harmless settings (`core.quotepath=false`); ours win.
    """
    names = filter_drivers(cwd, timeout=timeout)
    base = _base(args)
    own = [arg for setting in config for arg in ("-c", setting)]
    return [base[0], *own, *_overrides(names), *base[1:]], environment()


def run(
    args: Sequence[str],
    cwd: Path,
    *,
    timeout: float,
    check: bool = False,
    config: Sequence[str] = (),
) -> subprocess.CompletedProcess[bytes]:
    """Run `git <args>` in `cwd` (see `command`), output captured, stdin empty.

    Raises what `subprocess.run` raises (OSError when git is missing, TimeoutExpired, and
    CalledProcessError with `check`), and `GitRefused`.
    """
    argv, env = command(args, cwd, timeout=timeout, config=config)
    return subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=timeout,
        check=check,
    )
