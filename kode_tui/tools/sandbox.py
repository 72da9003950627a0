"""The model's Shell commands in an OS sandbox: bubblewrap on Linux.

Approvals decide whether a command runs; the sandbox decides what it can do once it runs, and
the kernel enforces it, whatever form the command takes. Every model Shell call runs inside, in
every approval mode; the user's own `!cmd` and hooks run outside, as typed. Two profiles:

- `workspace` (modes ask, auto-edit and sandbox): the file system is read-only except the work
  dir and a private /tmp (one folder per session, kept between its commands); the user's
  secrets (`SECRETS`, kode-tui's and Kimi CLI's homes, `[sandbox] hide`) are not there; no
  network unless `[sandbox] network = true`; the API keys kode-tui masks are not in the
  command's environment. `XDG_CACHE_HOME` points into the private /tmp, so tools that need a
  cache (Go) work without writing the user's.
- `open` (yolo): the file system is writable and the network on, as without a sandbox.

In both, every protected path (`kode_tui.tools.protected`) that exists in the work dir is
mounted read-only (in `open`, also the start-up files of the home folder and kode-tui's and
Kimi's homes), so "protected files always ask" holds by construction; one that did not exist
cannot be mounted, so what a command created there is taken away as soon as it ends (moved into
the session folder's `refused/`, never deleted: `kode_tui.tools.protected_tree` finds it by the
folders' ctimes), before anything outside the sandbox can run it. Every process of the command
lives in a PID namespace of its own, so nothing it started (`cmd &`, `setsid`) outlives it and
creates something later; it runs without capabilities (root inside is not root: it cannot
unmount what protects a path).

A command that fails because of the sandbox (a read-only file system, no network, a hidden
file, a protected path taken away) says so in `blocked`: the soul then asks the user whether to
run it outside, with an approval that says exactly that.

Where bubblewrap is missing or cannot start (no user namespaces, macOS), `support()` says why
in one line with how to install it, and Shell runs as before, with approvals alone.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

import msgspec

from kode_tui import masking
from kode_tui.fsutil import make_private_dir
from kode_tui.paths import tilde
from kode_tui.tools.protected import PROTECTED_DIRS, PROTECTED_FILES, protected_parts
from kode_tui.tools.protected_tree import ProtectedTree

Profile = Literal["workspace", "open"]

SECRETS = (
    ".ssh",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".config/gh",
    ".config/hub",
    ".config/op",
    ".config/rclone",
    ".docker",
    ".kube",
    ".gnupg",
    ".password-store",
    ".local/share/keyrings",
    ".netrc",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".my.cnf",
    ".vault-token",
    ".terraform.d",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".gem/credentials",
    ".m2/settings.xml",
)
"""What the `workspace` profile hides in the home folder: keys, tokens and passwords."""

INSTALL_HINT = (
    "install it: sudo apt install bubblewrap on Debian/Ubuntu, sudo dnf install bubblewrap on "
    "Fedora"
)

_SYSTEM_LOCATIONS = ("/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap")

_READ_ONLY = re.compile(r"read-only file system|EROFS", re.IGNORECASE)
_BUSY = re.compile(r"device or resource busy|EBUSY", re.IGNORECASE)
_NO_NETWORK = re.compile(
    r"network is unreachable|could not resolve host|temporary failure in name resolution|"
    r"name or service not known|no address associated with hostname|getaddrinfo|"
    r"ENETUNREACH|EAI_AGAIN|failed to resolve|name resolution|nodename nor servname|"
    # a server on the machine's loopback is not in the sandbox's own network
    r"connection refused|ECONNREFUSED|failed to connect|couldn'?t connect|could not connect",
    re.IGNORECASE,
)


# --- whether it works here -----------------------------------------------------------------------


class Support(msgspec.Struct, frozen=True):
    """Whether Shell commands can run in the sandbox on this machine."""

    program: str | None
    """bubblewrap's path, when a sandbox started."""
    problem: str = ""
    """Why not, in one line with what to do, when it did not."""

    @property
    def available(self) -> bool:
        return self.program is not None


_checking: concurrent.futures.Future[Support] | None = None
"""The check `check_in_background` started, or None."""


def check_in_background() -> None:
    """Start `support`'s check in a thread of its own, once: it mostly waits for bubblewrap
    (~10 ms), which then runs while the caller does something else (the agent's modules load)."""
    global _checking
    if _checking is not None or support.cache_info().currsize:
        return
    checking = _checking = concurrent.futures.Future()

    def run() -> None:
        try:
            checking.set_result(check())
        except BaseException as error:  # told to whoever waits for it: `support()`
            checking.set_exception(error)

    threading.Thread(target=run, name="sandbox-check", daemon=True).start()


@functools.cache
def support() -> Support:
    """Whether bubblewrap is there and can start a sandbox: checked once, by `check_in_background`
    if it was started (its answer is waited for), else now."""
    return _checking.result() if _checking is not None else check()


def check() -> Support:
    """Whether bubblewrap is there and can start a sandbox, checked now (~10 ms)."""
    if not sys.platform.startswith("linux"):
        return Support(
            None, "the Shell sandbox needs Linux (bubblewrap): approvals work without it"
        )
    program = _find_bwrap()
    if program is None:
        return Support(
            None, f"the Shell sandbox is off: bubblewrap is not installed ({INSTALL_HINT})"
        )
    probe = [
        program,
        *_FLAGS,
        "--unshare-net",
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        "--tmpfs", "/tmp",
        "--", "/bin/sh", "-c", ":",
    ]  # fmt: skip
    try:
        ran = subprocess.run(probe, capture_output=True, timeout=20, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as error:
        return Support(None, f"the Shell sandbox is off: bubblewrap did not run ({error})")
    if ran.returncode != 0:
        said = os.fsdecode(ran.stderr).strip().splitlines()
        why = said[-1].removeprefix("bwrap: ") if said else f"exit code {ran.returncode}"
        return Support(
            None,
            f"the Shell sandbox is off: bubblewrap cannot start one here ({why}; it needs "
            "unprivileged user namespaces)",
        )
    return Support(program)


def _find_bwrap() -> str | None:
    """bubblewrap from a system folder first: a PATH folder could be the work dir's own."""
    for candidate in _SYSTEM_LOCATIONS:
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("bwrap")
    return os.path.realpath(found) if found and os.path.isabs(found) else None


_FLAGS = (
    "--die-with-parent",
    "--unshare-pid",
    # The command is the namespace's init: its exit ends every other process of the namespace
    # before bwrap learns of it (with bwrap's own init, bwrap may exit a moment earlier, while
    # they still run).
    "--as-pid-1",
    "--unshare-ipc",
    "--unshare-cgroup-try",
    "--cap-drop",
    "ALL",
)
"""Every sandbox: its own PID namespace (nothing outlives the command), no capabilities, and it
dies with kode-tui."""


# --- one session's sandbox -----------------------------------------------------------------------


class Settings(msgspec.Struct, frozen=True):
    """`[sandbox]` in config.toml."""

    network: bool = False
    """Whether commands in the `workspace` profile reach the network."""
    hide: tuple[str, ...] = ()
    """More paths to hide in the `workspace` profile (`~` is the home folder)."""
    writable: tuple[str, ...] = ()
    """More paths commands may write in the `workspace` profile (`~/.cache/go-build`)."""


class Confinement(msgspec.Struct, frozen=True):
    """One Shell call's place: this sandbox, with this profile."""

    sandbox: Sandbox
    profile: Profile


class Refused(msgspec.Struct, frozen=True):
    """A protected path a command created, and where it was moved."""

    path: str
    """Relative to the work dir; `~/…` for one in the home folder (yolo)."""
    moved_to: Path


class Sandboxed(msgspec.Struct, frozen=True):
    """One command as `Sandbox.prepare()` made it: what to run, and what `finish()` needs."""

    argv: list[str]
    env: dict[str, str]
    home_seen: frozenset[Path] | None = None
    """The home's protected start-up files when it started (`open`): those it created are
    taken away."""


class Outcome(msgspec.Struct):
    """What the sandbox did to one command."""

    refused: list[Refused] = msgspec.field(default_factory=list)


class Sandbox:
    """The sandbox of one session's Shell calls: its private /tmp and its watch on the work
    dir's protected paths. `prepare()` before each command, `finish()` after it.

    Commands may run at once (a background task beside foreground calls): while any runs, a
    protected path created in the work dir is taken away, never taken as the user's, at the
    next `prepare()` or `finish()`, and reported by the next command to finish (all of them ran
    in the same work dir; which one created it cannot be told)."""

    def __init__(
        self,
        program: str,
        work_dir: Path,
        *,
        refused_dir: Path,
        settings: Settings | None = None,
        private_homes: Sequence[Path] = (),
    ) -> None:
        """`refused_dir`: where protected paths a command created go (the session folder's).
        `private_homes`: kode-tui's and Kimi's homes, hidden (`workspace`) or read-only
        (`open`)."""
        self.program = program
        self.work_dir = Path(os.path.realpath(work_dir))
        self.settings = settings or Settings()
        self._refused_dir = refused_dir
        self._homes = [Path(os.path.realpath(home)) for home in private_homes]
        self._tree = ProtectedTree(self.work_dir)
        self._tmp: str | None = None
        self._running = 0
        self._pending: list[Refused] = []  # taken away at a prepare(), not reported yet
        self._lock = asyncio.Lock()
        self._started: asyncio.Task[object] | None = None

    def start(self) -> None:
        """Look through the work dir in the background (the first time takes longest)."""
        if self._started is None:
            self._started = asyncio.ensure_future(asyncio.to_thread(self._tree.refresh))

    async def close(self) -> None:
        """Remove the private /tmp (the session ends)."""
        if self._started is not None and not self._started.done():
            self._started.cancel()
            with contextlib.suppress(BaseException):
                await self._started
        if self._tmp is not None:
            await asyncio.to_thread(shutil.rmtree, self._tmp, True)
            self._tmp = None

    def describe(self, profile: Profile) -> str:
        """What commands may do with `profile`, in a line (`/permissions`)."""
        if profile == "open":
            return (
                "Shell commands run in the sandbox (yolo): everything writable, network on; "
                "protected files read-only"
            )
        network = "network on" if self.settings.network else "no network"
        return (
            "Shell commands run in the sandbox: writable only in the work dir and their /tmp, "
            f"{network}, secrets hidden, protected files read-only"
        )

    async def prepare(
        self, profile: Profile, argv: Sequence[str], cwd: Path, env: dict[str, str]
    ) -> Sandboxed:
        """The command line and environment that run `argv` in the sandbox; `finish()` takes
        it back when the command has ended. What changed in the work dir since the last
        command (the user's doing) is taken as it is, unless commands still run (then it may
        be theirs, and is taken away)."""
        await self._ready()
        async with self._lock:
            if self._running:
                taken = await asyncio.to_thread(self._take_away, None)
                self._pending += taken.refused
            else:
                await asyncio.to_thread(self._tree.refresh)
            # Writable in `open`: what a command creates among the home's start-up files.
            home_seen = (
                frozenset(await asyncio.to_thread(_home_protected)) if profile == "open" else None
            )
            if profile == "workspace" and self._tmp is None:
                self._tmp = await asyncio.to_thread(tempfile.mkdtemp, prefix="kode-tui-sandbox-")
            command = self._command(profile, argv, cwd)
            self._running += 1  # last: `finish()` is owed from here on
        return Sandboxed(command, self._environment(profile, env), home_seen)

    async def finish(self, command: Sandboxed) -> Outcome:
        """Take away every protected path created while `command` ran (it has ended: its PID
        namespace is gone, so nothing of it runs any more)."""
        async with self._lock:
            self._running -= 1
            outcome = await asyncio.to_thread(self._take_away, command.home_seen)
            outcome.refused[:0], self._pending = self._pending, []
            return outcome

    async def _ready(self) -> None:
        if self._started is None:
            self.start()
        assert self._started is not None
        with contextlib.suppress(Exception):
            await asyncio.shield(self._started)

    def _take_away(self, home_seen: frozenset[Path] | None) -> Outcome:
        outcome = Outcome()
        created = [(self.work_dir, relative) for relative in self._tree.refresh().created]
        if home_seen is not None:
            home = Path.home()
            created += [
                (home, str(path.relative_to(home)))
                for path in sorted(_home_protected() - home_seen)
            ]
        if not created:
            return outcome
        batch = self._refused_dir / time.strftime("%Y%m%d-%H%M%S")
        for root, relative in created:
            source = root / relative
            if not os.path.lexists(source):
                continue  # inside a folder moved already
            shown = relative if root == self.work_dir else tilde(source)
            target = _free(batch / ("home" if root != self.work_dir else "") / relative)
            make_private_dir(target.parent)
            try:
                shutil.move(source, target)
            except OSError:
                # Cannot be moved (a mount point, a full disk): deleting is the only way left
                # to keep it from running; it is gone from the work dir either way.
                _remove(source)
                target = Path(os.devnull)
            if root == self.work_dir:
                self._tree.forget(relative)
            outcome.refused.append(Refused(shown, target))
        return outcome

    # --- the command line ------------------------------------------------------------------------

    def _command(self, profile: Profile, argv: Sequence[str], cwd: Path) -> list[str]:
        flags = list(_FLAGS)
        if profile == "workspace" and not self.settings.network:
            flags.append("--unshare-net")
        mounts = self._mounts(profile)
        # Shallow targets first: a deeper mount (the work dir inside a hidden folder, a
        # protected file inside the work dir) must come after the one it lies in.
        mounts.sort(key=lambda mount: mount[0].count("/") if mount[0] != "/" else 0)
        arguments = [argument for _, args in mounts for argument in args]
        return [self.program, *flags, *arguments, "--chdir", str(cwd), "--", *argv]

    def _mounts(self, profile: Profile) -> list[tuple[str, list[str]]]:
        work = str(self.work_dir)
        mounts: list[tuple[str, list[str]]] = []
        if profile == "workspace":
            mounts += [
                ("/", ["--ro-bind", "/", "/"]),
                ("/dev", ["--dev", "/dev"]),
                ("/proc", ["--proc", "/proc"]),
            ]
            assert self._tmp is not None
            mounts += [
                ("/tmp", ["--bind", self._tmp, "/tmp"]),
                ("/var/tmp", ["--bind", self._tmp, "/var/tmp"]),
            ]
            # Sockets of services outside the sandbox (D-Bus, Docker, the user's systemd, an
            # SSH agent) would run things for a command, out of the sandbox's reach.
            mounts += [(run, ["--tmpfs", run]) for run in _run_folders()]
            if self.settings.network:
                mounts += [
                    (str(path), ["--ro-bind", str(path), str(path)])
                    for path in _existing(_DNS_FOLDERS)
                ]
            mounts += [_hide(path) for path in self._hidden()]
            mounts += [
                (str(path), ["--bind", str(path), str(path)])
                for path in _existing(self.settings.writable)
            ]
            mounts.append((work, ["--bind", work, work]))
        else:
            mounts += [
                ("/", ["--bind", "/", "/"]),
                ("/dev", ["--dev-bind", "/dev", "/dev"]),  # a plain bind has no devices
                ("/proc", ["--proc", "/proc"]),
            ]
            # A program put in a PATH folder is what later commands run (`~/.local/bin/git`).
            mounts += [
                (str(path), ["--ro-bind-try", str(path), str(path)])
                for path in [*_home_start_up(), *_existing(self._homes), *self._path_folders()]
            ]
        mounts += [
            (str(path), ["--ro-bind-try", str(path), str(path)]) for path in self._tree.protected
        ]
        return mounts

    def _hidden(self) -> list[Path]:
        """What the `workspace` profile hides (a hidden folder holding the work dir still
        shows the work dir: its own mount comes after, being deeper)."""
        home = Path.home()
        agent = os.environ.get("SSH_AUTH_SOCK", "")
        return _existing(
            [
                *(home / name for name in SECRETS),
                *self._homes,
                *self.settings.hide,
                *([agent] if os.path.isabs(agent) else []),
            ]
        )

    def _path_folders(self) -> list[Path]:
        """The PATH folders outside the work dir (those inside are the tree's)."""
        return [
            path
            for path in _existing(f for f in os.get_exec_path() if os.path.isabs(f))
            if not path.is_relative_to(self.work_dir)
        ]

    def _environment(self, profile: Profile, env: dict[str, str]) -> dict[str, str]:
        if profile == "open":
            return env
        secret = set(masking.names())
        cleaned = {name: value for name, value in env.items() if name not in secret}
        cleaned["TMPDIR"] = "/tmp"
        cleaned["XDG_CACHE_HOME"] = "/tmp/.cache"
        return cleaned

    # --- reading a failure -----------------------------------------------------------------------

    def blocked(self, profile: Profile, output: str, failed: bool, outcome: Outcome) -> str:
        """Why the command may have failed (or was undone) because of the sandbox; empty when
        nothing says so. The soul offers to run it outside for this reason."""
        reasons: list[str] = []
        if outcome.refused:
            names = ", ".join(refused.path for refused in outcome.refused[:3])
            more = len(outcome.refused) - 3
            reasons.append(
                f"it created {names}{f' and {more} more' if more > 0 else ''}, which can make "
                "tools run code"
            )
        if failed:
            reasons += filter(None, [self._failure(profile, output)])
        return "; ".join(reasons)

    def _failure(self, profile: Profile, output: str) -> str:
        """Why a failed command's output says the sandbox stopped it; empty when it does not."""
        if output.startswith("bwrap: "):
            said = output.splitlines()[0].removeprefix("bwrap: ")
            return f"the sandbox could not start ({said})"
        if _READ_ONLY.search(output):
            where = (
                "a protected path"
                if profile == "open"
                else "outside the work dir or a protected path"
            )
            return f"it writes {where} (read-only in the sandbox)"
        if _BUSY.search(output):
            return "it moves or deletes a protected path (held in place in the sandbox)"
        if profile == "workspace" and not self.settings.network and _NO_NETWORK.search(output):
            return "it needs the network (off in the sandbox)"
        if profile == "workspace":
            for path in self._hidden():
                shown = tilde(path)
                if str(path) in output or shown in output:
                    return f"it reads {shown} (hidden in the sandbox)"
        return ""


_DNS_FOLDERS = ("/run/systemd/resolve", "/run/resolvconf", "/run/NetworkManager")
"""Where /etc/resolv.conf may point, brought back into the hidden /run when networked."""


def _run_folders() -> list[str]:
    """`/run`, and `/var/run` where it is a folder of its own rather than a link to /run."""
    return [
        folder
        for folder in ("/run", "/var/run")
        if os.path.isdir(folder) and not os.path.islink(folder)
    ]


def _hide(path: Path) -> tuple[str, list[str]]:
    if path.is_dir() and not path.is_symlink():
        return str(path), ["--tmpfs", str(path)]
    return str(path), ["--ro-bind", os.devnull, str(path)]


def _existing(paths: Iterable[str | Path]) -> list[Path]:
    """The paths (`~` expanded) that exist, symlinks resolved, each once."""
    found: dict[Path, None] = {}
    for path in paths:
        expanded = Path(os.path.expanduser(path))
        if expanded.is_absolute() and os.path.lexists(expanded):
            found[Path(os.path.realpath(expanded))] = None
    return list(found)


def _home_protected() -> set[Path]:
    """The protected names at the top of the home folder and of `~/.config` (`.bashrc`,
    `.config/git`): a shallow look, a few dozen names."""
    home = Path.home()
    found: set[Path] = set()
    for folder in (home, home / ".config"):
        with contextlib.suppress(OSError), os.scandir(folder) as listing:
            for entry in listing:
                parts = (folder.name, entry.name) if folder != home else (entry.name,)
                if protected_parts(parts):
                    found.add(Path(entry.path))
    return found


def _home_start_up() -> list[Path]:
    """The home folder's protected files and folders (`.bashrc`, `.gitconfig`, `.ssh`,
    `.config/git`, …) that exist: read-only in the `open` profile."""
    home = Path.home()
    names = [*PROTECTED_FILES, *PROTECTED_DIRS]
    config = home / ".config"
    candidates = [home / name for name in names] + [
        config / name for name in ("git", "mise", "fish", "direnv", "autostart", "systemd")
    ]
    return [path for path in _existing(candidates) if path != home]


def _free(path: Path) -> Path:
    """`path`, or `path.1`, `path.2`… when taken."""
    candidate, n = path, 0
    while os.path.lexists(candidate):
        n += 1
        candidate = path.with_name(f"{path.name}.{n}")
    return candidate


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
