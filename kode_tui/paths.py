"""Where kode-tui keeps things on disk.

Home is `$KODE_TUI_HOME` when set, else `~/.kode-tui`. Nothing here creates files;
callers create what they write (directories 0700, files 0600).
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from dataclasses import dataclass
from hashlib import md5
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent


def home() -> Path:
    override = os.environ.get("KODE_TUI_HOME")
    return Path(override).expanduser() if override else Path.home() / ".kode-tui"


def canonical(path: str | os.PathLike[str]) -> Path:
    """Absolute and normalised, without resolving symlinks (as Kimi CLI does); `~` is the
    user's home."""
    return Path(os.path.normpath(os.path.abspath(os.path.expanduser(path))))


def too_wide(work_dir: str | os.PathLike[str]) -> str | None:
    """Why `work_dir` cannot be a work dir, as a clause naming it; None when it can.

    Reads in the work dir ask nothing, so the root folder, the user's home folder or a folder
    holding it (symlinks resolved) would make `~/.ssh/id_rsa` free to read. The home folder is
    both `$HOME` and the one the system records for the user: either may be unset or differ.
    """
    real = Path(os.path.realpath(work_dir))
    shown = str(work_dir)
    if real == Path(real.anchor):
        return f"{shown} is the root folder, so every file would be in the work dir"
    for user_home in _user_homes():
        if real == user_home:
            return f"{shown} is your home folder, so all your files would be in the work dir"
        if user_home.is_relative_to(real):
            return f"{shown} holds your home folder, so all your files would be in the work dir"
    return None


def _user_homes() -> set[Path]:
    homes = {os.environ.get("HOME", "")}
    try:
        import pwd

        homes.add(pwd.getpwuid(os.getuid()).pw_dir)
    except (ImportError, KeyError):  # no pwd (Windows), or no entry for this user
        pass
    return {Path(os.path.realpath(home)) for home in homes if home}


def tilde(path: str | os.PathLike[str]) -> str:
    """`path` for people to read: under the user's home it starts with `~`."""
    text = str(path)
    user_home = str(Path.home())
    if user_home != os.sep and (text == user_home or text.startswith(user_home + os.sep)):
        return "~" + text[len(user_home) :]
    return text


def program() -> str:
    """The command that runs this kode-tui, for a hint the user copies into a shell.

    `kode-tui` when that name on PATH is the program running (or, run as `python -m kode_tui`,
    the script beside its python); else the path of that script, as a venv holds it; else
    `python -m kode_tui` with this python. Quoted for the shell.
    """
    argv0 = sys.argv[0] if sys.argv else ""
    if Path(argv0).name == "kode-tui":
        running = shutil.which(argv0) or argv0  # a bare name was found on PATH
    else:
        beside = Path(sys.executable).parent / "kode-tui"
        running = str(beside) if beside.is_file() else ""
    if not running:
        return f"{shlex.quote(sys.executable)} -m kode_tui"
    on_path = shutil.which("kode-tui")
    if on_path is not None and _same_file(on_path, running):
        return "kode-tui"
    return shlex.quote(os.path.abspath(running))


def _same_file(first: str, second: str) -> bool:
    try:
        return os.path.samefile(first, second)
    except OSError:
        return False


def work_dir_hash(work_dir: str | os.PathLike[str]) -> str:
    # The path's bytes: the UTF-8 of its text (as Kimi CLI hashes it) for a name that is valid
    # UTF-8, and the raw bytes for one that is not (str.encode failed: kode-tui could not start).
    return md5(os.fsencode(canonical(work_dir))).hexdigest()


def data_dir(name: str) -> Path:
    """A shipped data folder (`themes`, `prompts`): inside the wheel, or at the repo root."""
    packaged = PACKAGE_DIR / name
    return packaged if packaged.is_dir() else PACKAGE_DIR.parent / name


@dataclass(frozen=True, slots=True)
class Paths:
    home: Path

    @classmethod
    def current(cls) -> Paths:
        return cls(home())

    @property
    def config_file(self) -> Path:
        return self.home / "config.toml"

    @property
    def metadata_file(self) -> Path:
        return self.home / "kode.json"

    @property
    def sessions_dir(self) -> Path:
        return self.home / "sessions"

    @property
    def log_file(self) -> Path:
        return self.home / "logs" / "kode-tui.log"

    def work_dir_sessions(self, work_dir: str | os.PathLike[str]) -> Path:
        return self.sessions_dir / work_dir_hash(work_dir)

    def snapshot_pool(self, work_dir: str | os.PathLike[str]) -> Path:
        """The work dir's snapshot pool, shared by its sessions (`session.snapshot_pool`)."""
        return self.home / "snapshots" / work_dir_hash(work_dir)

    @property
    def prompt_history_dir(self) -> Path:
        return self.home / "user-history"

    def prompt_history(self, work_dir: str | os.PathLike[str]) -> Path:
        """What was sent from the prompt in `work_dir`, one JSON line an entry."""
        return self.prompt_history_dir / f"{work_dir_hash(work_dir)}.jsonl"

    @property
    def screenshots_dir(self) -> Path:
        return self.home / "screenshots"

    def describe(self) -> list[tuple[str, Path]]:
        return [
            ("home", self.home),
            ("config", self.config_file),
            ("metadata", self.metadata_file),
            ("sessions", self.sessions_dir),
            ("history", self.prompt_history_dir),
            ("snapshots", self.home / "snapshots"),
            ("screenshots", self.screenshots_dir),
            ("log", self.log_file),
            ("themes", data_dir("themes")),
            ("prompts", data_dir("prompts")),
        ]
