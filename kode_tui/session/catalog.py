"""The sessions a picker lists: of one work dir or of every one, with what a row shows.

Each row's numbers (messages, tokens) come from the context file's index (`scan`), never from a
restore (restoring takes the session's lock and builds the whole history). They are read again
only when the file's size or time changed.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from pathlib import Path

from kode_tui.paths import Paths, canonical, work_dir_hash
from kode_tui.session.metadata import known_work_dirs
from kode_tui.session.scan import scan
from kode_tui.session.session import CONTEXT_FILE_NAME, UNTITLED, Session

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ContextStats:
    """What a picker shows of a context file without restoring it."""

    messages: int
    """Lines whose role is a message role (user, assistant, tool, system)."""
    tokens: int | None
    """The last `_usage` token count; None when the model never reported one."""


@dataclass(frozen=True, slots=True)
class SessionRow:
    session: Session
    stats: ContextStats


@dataclass
class SessionCatalog:
    """Lists sessions; keeps the numbers of files that did not change since the last list."""

    _cache: dict[Path, tuple[tuple[int, int], ContextStats]] = field(default_factory=dict)

    async def rows(self, work_dir: Path, *, everywhere: bool = False) -> list[SessionRow]:
        """The sessions of `work_dir` (of every work dir with `everywhere`), newest first;
        sessions nobody talked in are left out. OSError when the folders cannot be read."""
        if everywhere:
            sessions = await _sessions_of_every_work_dir(work_dir)
        else:
            sessions = await Session.list(work_dir)
        stats = await asyncio.to_thread(self._stats_for, [s.context_file for s in sessions])
        rows = [
            SessionRow(session, stat)
            for session, stat in zip(sessions, stats, strict=True)
            # Session.list leaves out sessions nobody talked in; from_dir does not. One with
            # only our records (a /clear's) has its earlier conversation to show.
            if stat.messages
            or session.title != UNTITLED
            or not await asyncio.to_thread(session.is_empty)
        ]
        rows.sort(key=lambda row: row.session.updated_at, reverse=True)
        return rows

    def _stats_for(self, paths: list[Path]) -> list[ContextStats]:
        result = []
        for path in paths:
            try:
                info = path.stat()
            except OSError:
                result.append(ContextStats(0, None))
                continue
            stamp = (info.st_mtime_ns, info.st_size)
            cached = self._cache.get(path)
            if cached is None or cached[0] != stamp:
                cached = (stamp, read_context_stats(path))
                self._cache[path] = cached
            result.append(cached[1])
        return result


def read_context_stats(path: Path) -> ContextStats:
    """Count the messages of a context file and find its last token count (blocking).

    Bad lines are skipped: a picker lists damaged sessions too, and opening one is where the
    damage is reported.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        log.warning("Cannot read %s: %s", path, exc)
        return ContextStats(0, None)
    found = scan(data, path.name)
    # 0: the model reported no count since the context began or was compacted; then the
    # compaction's estimate, as the gauge shows it.
    tokens = found.token_count or found.estimated_token_count or None
    return ContextStats(len(found.message_starts), tokens)


async def list_sessions(work_dir: Path, *, everywhere: bool = False) -> list[Session]:
    """The sessions of `work_dir`, or of every work dir with `everywhere` (unordered then)."""
    if everywhere:
        return await _sessions_of_every_work_dir(work_dir)
    return await Session.list(work_dir)


async def _sessions_of_every_work_dir(current_work_dir: Path) -> list[Session]:
    """Every session folder under the sessions dir; the work dir comes from kode.json (or
    Kimi CLI's kimi.json)."""
    work_dirs = await asyncio.to_thread(known_work_dirs)
    work_dirs[work_dir_hash(current_work_dir)] = canonical(current_work_dir)
    folders = await asyncio.to_thread(_hash_folders, Paths.current().sessions_dir)
    sessions: list[Session] = []
    for folder in folders:
        work_dir = work_dirs.get(folder.name)
        if work_dir is not None:
            sessions += await Session.list(work_dir)
            continue
        for session_dir in await asyncio.to_thread(_session_folders, folder):
            try:
                sessions.append(await Session.from_dir(session_dir))
            except (OSError, ValueError) as exc:  # removed or emptied meanwhile
                log.debug("Skipping %s: %s", session_dir, exc)
    return sessions


def _hash_folders(sessions_dir: Path) -> list[Path]:
    try:
        return sorted(path for path in sessions_dir.iterdir() if path.is_dir())
    except OSError:
        return []


def _session_folders(folder: Path) -> list[Path]:
    try:
        return sorted(path for path in folder.iterdir() if (path / CONTEXT_FILE_NAME).is_file())
    except OSError:
        return []
