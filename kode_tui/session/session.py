"""Sessions: one folder per conversation, under `sessions/<md5 of the work dir>/<id>/` (DESIGN §2).

The folder layout is Kimi CLI's, so a Kimi session folder opens here as it is.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import json
import logging
import os
import re
import shlex
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from kode_tui.fsutil import FILE_MODE, make_private_dir
from kode_tui.pathnames import is_within
from kode_tui.paths import Paths, canonical, program, work_dir_hash
from kode_tui.session import state as session_state
from kode_tui.session.lock import SessionLock, SessionLocked
from kode_tui.session.metadata import (
    kimi_share_dir,
    load_metadata,
    record_last_session,
    recorded_work_dir,
)
from kode_tui.session.state import SessionState

logger = logging.getLogger(__name__)

CONTEXT_FILE_NAME = "context.jsonl"
WIRE_FILE_NAME = "wire.jsonl"
WIRE_SIDECAR_NAME = "wire.kode.jsonl"
"""The records of ours Kimi CLI cannot read (`kode_tui.wire.records.sidecar_path`; the session
layer may not import the wire's)."""
UNTITLED = "Untitled"
TITLE_WIDTH = 200
"""A title taken from the first message keeps this many characters at most; each view cuts it
to the room it has (the picker's column, the terminal's width)."""
LOCK_FILE_NAME = "lock"
_DERIVED_FILES = frozenset(
    {
        CONTEXT_FILE_NAME,
        WIRE_FILE_NAME,
        WIRE_SIDECAR_NAME,
        session_state.STATE_FILE_NAME,
        session_state.SIDECAR_NAME,
        "snapshot.json",
        LOCK_FILE_NAME,
    }
)
"""What a session nobody talked in holds: an empty session folder holding anything else (a
rotated context, blobs, what the sandbox refused) is never removed."""
_NOTHING_DONE = frozenset({"StatusUpdate", "HookRan", "Warning", "Error"})
"""Wire records a session gets without anyone saying or doing anything in it: the gauge's
numbers at the start, a SessionStart hook, a warning (an MCP server that did not start)."""


class Session(msgspec.Struct, kw_only=True):
    """One session folder of a work dir, with what a session list shows about it."""

    id: str
    """The folder name: a uuid4 for sessions created here."""
    dir: Path
    work_dir: Path | None
    """The canonical work dir; None for a folder opened by path whose work dir nobody recorded
    (`from_dir`)."""
    state: SessionState
    title: str
    """The custom title, else the first user input (one line, `TITLE_WIDTH` chars at most),
    else "Untitled"."""
    updated_at: float
    """Time (epoch seconds) of the last write to context.jsonl, wire.jsonl or its sidecar."""
    ignored_grants: tuple[str, ...] = ()
    """What its state.json granted and was not taken, in words (`approval mode yolo`): set for
    a folder outside the user's session stores (`in_session_store`)."""

    @property
    def work_dir_recorded(self) -> bool:
        """Whether `work_dir` is the one this folder was made for: kode-tui and Kimi CLI name a
        session's parent folder by its work dir's hash. False for a folder opened by path whose
        work dir nobody recorded, which works wherever it was opened."""
        return self.work_dir is not None and work_dir_hash(self.work_dir) == self.dir.parent.name

    @property
    def context_file(self) -> Path:
        return self.dir / CONTEXT_FILE_NAME

    @property
    def wire_file(self) -> Path:
        return self.dir / WIRE_FILE_NAME

    @property
    def wire_sidecar(self) -> Path:
        return self.dir / WIRE_SIDECAR_NAME

    @property
    def state_file(self) -> Path:
        return self.dir / session_state.STATE_FILE_NAME

    def resume_command(self, cwd: str | os.PathLike[str] | None = None) -> str:
        """The command that opens this session again, typed in `cwd` (default: here).

        `-S id` finds a session only under its work dir's folder in KODE_TUI_HOME; one opened
        elsewhere (a Kimi CLI session, a copied folder) is reopened by its path. The command is
        `paths.program()`: `kode-tui`, or the path of the one running when that is not on PATH.
        """
        work_dir = self.work_dir
        kode_tui = program()
        if work_dir is None or self.dir != Paths.current().work_dir_sessions(work_dir) / self.id:
            return f"{kode_tui} --session-dir {shlex.quote(str(self.dir))}"
        if canonical(cwd if cwd is not None else Path.cwd()) == work_dir:
            return f"{kode_tui} -S {shlex.quote(self.id)}"
        return f"{kode_tui} -S {shlex.quote(self.id)} {shlex.quote(str(work_dir))}"

    @classmethod
    async def create(
        cls, work_dir: str | os.PathLike[str], session_id: str | None = None
    ) -> Session:
        """Start a session in `work_dir` and make it the one `continue_` opens.

        Raises ValueError when `session_id` is not a plain folder name, or names a session
        that already has a context: an existing conversation is never truncated.
        """
        work_dir = canonical(work_dir)
        if session_id is None:
            session_id = str(uuid.uuid4())
        elif not _is_plain_name(session_id):
            raise ValueError(f"{session_id!r} is not a valid session id.")
        session_dir = Paths.current().work_dir_sessions(work_dir) / session_id
        make_private_dir(session_dir)
        _create_empty_context(session_dir / CONTEXT_FILE_NAME)
        session = cls._open(session_dir, work_dir)
        session.mark_last()
        await session.refresh()
        return session

    @classmethod
    async def find(cls, work_dir: str | os.PathLike[str], session_id: str) -> Session | None:
        """The session `session_id` of `work_dir`, or None when it has no such session."""
        work_dir = canonical(work_dir)
        if not _is_plain_name(session_id):
            return None
        session_dir = Paths.current().work_dir_sessions(work_dir) / session_id
        if not (session_dir / CONTEXT_FILE_NAME).is_file():
            logger.debug("No session %s in %s", session_id, session_dir.parent)
            return None
        session = cls._open(session_dir, work_dir)
        await session.refresh()
        return session

    @classmethod
    async def find_kimi(cls, work_dir: str | os.PathLike[str], session_id: str) -> Session | None:
        """The session `session_id` Kimi CLI keeps for `work_dir` in its own store (its share
        dir, one of the user's stores: its approvals count), or None when it has none."""
        work_dir = canonical(work_dir)
        if not _is_plain_name(session_id):
            return None
        try:
            store = kimi_share_dir() / "sessions"
        except RuntimeError:  # no home folder to find it in
            return None
        session_dir = store / work_dir_hash(work_dir) / session_id
        if not (session_dir / CONTEXT_FILE_NAME).is_file():
            return None
        return await cls.from_dir(session_dir, work_dir)

    @classmethod
    async def list(cls, work_dir: str | os.PathLike[str]) -> builtins.list[Session]:
        """The sessions of `work_dir`, newest first; sessions nobody has talked in are left out."""
        return await asyncio.to_thread(cls._list_now, canonical(work_dir))

    @classmethod
    async def continue_(cls, work_dir: str | os.PathLike[str]) -> Session | None:
        """The session last opened in `work_dir`; if nothing was said in it (kode-tui started
        and quit, a `-p /context` run), the newest session something was said in."""
        entry = load_metadata().get(work_dir)
        last = None
        if entry is not None and entry.last_session_id is not None:
            last = await cls.find(work_dir, entry.last_session_id)
            if last is not None and not await asyncio.to_thread(last.is_empty):
                return last
        talked = await cls.list(work_dir)
        return talked[0] if talked else last

    @classmethod
    async def from_dir(
        cls, path: str | os.PathLike[str], work_dir: str | os.PathLike[str] | None = None
    ) -> Session:
        """Open any folder holding a context.jsonl, such as a Kimi CLI session; id = folder name.

        Its work dir is `work_dir` when given, else the one kode-tui or Kimi CLI recorded for
        it (`recorded_work_dir`), else None. Raises FileNotFoundError when `path` does not
        exist and ValueError when it is not a session folder.
        """
        session_dir = canonical(path)
        if not session_dir.exists():
            raise FileNotFoundError(f"There is no session folder at {session_dir}.")
        if not (session_dir / CONTEXT_FILE_NAME).is_file():
            raise ValueError(f"{session_dir} is not a session folder: it has no context.jsonl.")
        odd = await asyncio.to_thread(_odd_entry, session_dir)
        if odd is not None:
            raise ValueError(
                f"{session_dir} is not opened: {odd}, and a session folder holds only files "
                "and folders of its own."
            )
        if work_dir is not None:
            found: Path | None = canonical(work_dir)
        elif in_session_store(session_dir):
            found = await asyncio.to_thread(recorded_work_dir, session_dir)
        else:
            # A folder elsewhere whose parent is named like a store's (by a work dir's hash)
            # must not choose which of the user's projects the tools work in.
            found = None
        session = cls._open(session_dir, found)
        await session.refresh()
        return session

    def mark_last(self) -> None:
        """Record this session in kode.json as the one `continue_` opens for its work dir.

        A folder that `find` cannot reach from its work dir (opened by path from elsewhere, or
        without a work dir) is not recorded.
        """
        if self.work_dir is None:
            return
        expected = canonical(Paths.current().work_dir_sessions(self.work_dir) / self.id)
        if canonical(self.dir) != expected:
            logger.debug("Not recording %s as last session: outside %s", self.dir, expected.parent)
            return
        try:
            record_last_session(self.work_dir, self.id)
        except OSError as error:
            # Only `-C` reads it back: a full disk must not keep the session from opening.
            logger.warning("Could not record %s as the last session: %s", self.id, error)

    async def refresh(self) -> None:
        """Re-read the title and `updated_at` from disk."""
        await asyncio.to_thread(self._refresh_now)

    def save_state(self, state: SessionState | None = None) -> None:
        """Write `state` (default: `self.state`) to state.json atomically, keeping unknown keys.

        It becomes this session's state, and a custom title in it becomes the title at once.
        """
        if state is not None:
            self.state = state
        session_state.save_state(self.state, self.state_file)
        self.title = self._current_title()

    @classmethod
    def _open(cls, session_dir: Path, work_dir: Path | None) -> Session:
        state = session_state.load_state(session_dir / session_state.STATE_FILE_NAME)
        ignored = () if in_session_store(session_dir) else session_state.drop_grants(state)
        return cls(
            id=session_dir.name,
            dir=session_dir,
            work_dir=work_dir,
            state=state,
            title=UNTITLED,
            updated_at=0.0,
            ignored_grants=tuple(ignored),
        )

    @classmethod
    def _list_now(cls, work_dir: Path) -> builtins.list[Session]:
        root = Paths.current().work_dir_sessions(work_dir)
        try:
            session_dirs = list(root.iterdir())
        except (FileNotFoundError, NotADirectoryError):
            return []
        sessions: list[Session] = []
        for session_dir in session_dirs:
            if not (session_dir / CONTEXT_FILE_NAME).is_file():
                continue
            session = cls._open(session_dir, work_dir)
            if session.is_empty():
                continue
            session._refresh_now()
            sessions.append(session)
        sessions.sort(key=lambda session: session.updated_at, reverse=True)
        return sessions

    def _refresh_now(self) -> None:
        self.updated_at = max(
            _mtime(self.context_file), _mtime(self.wire_file), _mtime(self.wire_sidecar)
        )
        self.title = self._current_title()

    def _current_title(self) -> str:
        return self.state.custom_title or _wire_title(self.wire_file) or UNTITLED

    def is_empty(self) -> bool:
        """Whether nothing was said or done in it: no title, no pin, no message, no wire
        record but those a session gets unasked (`_NOTHING_DONE`; ours in the sidecar count: a
        /clear leaves only that). Blocking; reads up to the first record that counts."""
        if self.state.custom_title or self.state.pins:
            return False
        return not (
            _any_record(self.wire_file, _is_wire_event)
            or _any_record(self.wire_sidecar, _is_wire_event)
            or _any_record(self.context_file, _is_message)
        )

    def remove_if_empty(self) -> bool:
        """Remove the folder of this session when nobody talked in it (`is_empty`), as Kimi CLI
        does when it quits: a session opened and left, a print run that sent nothing. Only a
        folder of kode-tui's own store holding nothing but `_DERIVED_FILES`, and only when no
        one else has it open (its lock). Whether it was removed. Blocking."""
        store = canonical(Paths.current().sessions_dir)
        if self.dir.is_symlink() or canonical(self.dir).parent.parent != store:
            return False
        lock = SessionLock(self.dir / LOCK_FILE_NAME)
        try:
            lock.acquire()
        except (SessionLocked, OSError):
            return False
        try:
            if not self.is_empty() or not set(os.listdir(self.dir)) <= _DERIVED_FILES:
                return False
            # Without its context.jsonl the folder is no session to any lister (Kimi CLI's
            # too), so a crash halfway leaves nothing that shows.
            self.context_file.unlink()
            shutil.rmtree(self.dir, ignore_errors=True)
            return True
        except OSError as error:
            logger.warning("Could not remove the empty session %s: %s", self.dir, error)
            return False
        finally:
            lock.release()


def in_session_store(session_dir: Path) -> bool:
    """Whether `session_dir`, symlinks resolved, lies in one of the user's own session stores:
    kode-tui's (`$KODE_TUI_HOME/sessions`) or Kimi CLI's (`sessions` of its share dir).

    Only there is a session's approval mode or session approval the user's own: a folder
    elsewhere, or a link in a store to one, may have come with a cloned repo.
    """
    return any(is_within(session_dir, store) for store in _session_stores())


def _session_stores() -> Iterator[Path]:
    with contextlib.suppress(RuntimeError):  # no home folder to find it in
        yield Paths.current().sessions_dir
    with contextlib.suppress(RuntimeError):
        yield kimi_share_dir() / "sessions"


def _odd_entry(session_dir: Path) -> str | None:
    """What makes `session_dir` unfit to write in (`wire.jsonl is a symlink`), or None.

    kode-tui appends to a session's files and cuts a torn one back: in a folder that came with
    a repo, a `wire.jsonl` linked to `~/.bashrc` would get lines bash runs, and a `context.jsonl`
    linked to any file of the user's could be cut. A pipe would hang the reader.
    """
    try:
        entries = list(os.scandir(session_dir))
    except OSError:
        return None  # unreadable: opening it says so
    for entry in sorted(entries, key=lambda e: e.name):
        if entry.is_symlink():
            return f"{entry.name} is a symlink"
        if not (entry.is_file(follow_symlinks=False) or entry.is_dir(follow_symlinks=False)):
            return f"{entry.name} is not a regular file"
    return None


def _is_plain_name(session_id: str) -> bool:
    # A session id becomes a folder name; it must not climb out of the sessions dir.
    return session_id not in ("", ".", "..") and Path(session_id).name == session_id


def _create_empty_context(path: Path) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        if path.is_file() and path.stat().st_size == 0:
            return
        raise ValueError(
            f"Session {path.parent.name} already exists; open it instead of creating it."
        ) from None
    os.close(fd)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _is_wire_event(record: Any) -> bool:
    """Whether `record` says something was said or done (an unknown one does)."""
    if not isinstance(record, dict):
        return True
    if record.get("type") == "metadata":
        return False
    message = record.get("message")
    return not (isinstance(message, dict) and message.get("type") in _NOTHING_DONE)


def _is_message(record: Any) -> bool:
    role = record.get("role") if isinstance(record, dict) else None
    return isinstance(role, str) and not role.startswith("_")


def _any_record(path: Path, matches: Callable[[Any], bool]) -> bool:
    """Whether a line of `path` matches, reading only up to the first one that does.

    A line that is not JSON counts as a match: something was written there, and a session
    is better listed needlessly than hidden.
    """
    try:
        with path.open("rb") as file:
            for line in file:
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except (ValueError, RecursionError):  # RecursionError: nested too deeply
                    return True
                if matches(record):
                    return True
    except FileNotFoundError:
        return False
    except OSError as exc:
        logger.warning("Cannot read %s: %s", path, exc)
        return True
    return False


def _wire_title(path: Path) -> str:
    """The first TurnBegin's text, shortened; "" when there is none. A shell command the user
    ran (`!cmd`) names the session only when nothing else was asked."""
    shell = ""
    try:
        with path.open("rb") as file:
            for line in file:
                # Only a TurnBegin line is worth parsing; a substring test skips the rest cheaply.
                if b'"TurnBegin"' not in line:
                    continue
                user_input = _turn_begin_input(line)
                if user_input is None:
                    continue
                text = _input_text(user_input)
                if not text.startswith("!"):
                    return _shorten(text, TITLE_WIDTH)
                shell = shell or _shorten(text, TITLE_WIDTH)
    except FileNotFoundError:
        pass
    except OSError as exc:
        logger.warning("Cannot read %s: %s", path, exc)
    return shell


def _turn_begin_input(line: bytes) -> str | list[Any] | None:
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):  # RecursionError: nested too deeply
        return None
    message = record.get("message") if isinstance(record, dict) else None
    if not isinstance(message, dict) or message.get("type") != "TurnBegin":
        return None
    payload = message.get("payload")
    user_input = payload.get("user_input") if isinstance(payload, dict) else None
    return user_input if isinstance(user_input, str | list) else None


_MEDIA_WRAPPER = re.compile(r"</?(?:image|audio|video)\b[^>]*>")
"""A text part Kimi CLI wraps an attached image (audio, video) in: not part of a title."""


def _input_text(user_input: str | list[Any]) -> str:
    if isinstance(user_input, str):
        return user_input
    parts = (part for part in user_input if isinstance(part, dict) and part.get("type") == "text")
    texts = (part["text"] for part in parts if isinstance(part.get("text"), str))
    return " ".join(text for text in texts if not _MEDIA_WRAPPER.fullmatch(text))


def _shorten(text: str, width: int) -> str:
    """Collapse whitespace; cut longer text to `width` chars ending in "…", at a space if any."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    space = text.rfind(" ", 0, width)
    # Without a space (CJK, one long word) a hard cut keeps the title informative.
    head = text[:space] if space > 0 else text[: width - 1]
    return head.rstrip() + "…"
