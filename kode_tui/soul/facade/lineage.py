"""The facade's search and fork (DESIGN.md §9): the messages of sessions holding some words, and
a new session made from this one's context up to a checkpoint, or from one of its rotations
(`AgentSession.lineage`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

import msgspec

from kode_tui.session import Session
from kode_tui.session.session import CONTEXT_FILE_NAME
from kode_tui.session.state import ForkOrigin
from kode_tui.soul.facade.live import Live

if TYPE_CHECKING:
    from kode_tui.session.search import Match
    from kode_tui.soul.facade.travel import TimeTravel

__all__ = ["Lineage", "LineageNote"]

SEARCH_LIMIT = 500
"""A search stops after this many matches: a screen of results, not the whole disk."""


class LineageNote(msgspec.Struct, frozen=True):
    """Where a forked session came from, as the picker and History show it."""

    origin: ForkOrigin

    @property
    def text(self) -> str:
        """`forked from 1a2b3c4d context_2.jsonl before checkpoint 3`."""
        origin = self.origin
        where = "" if origin.file == CONTEXT_FILE_NAME else f" {origin.file}"
        at = f" before checkpoint {origin.checkpoint}" if origin.checkpoint is not None else ""
        return f"forked from {origin.session[:8]}{where}{at}"

    @classmethod
    def of(cls, session: Session) -> LineageNote | None:
        """The fork origin state.json records for `session`, if it is a fork."""
        origin = session.state.forked_from
        return cls(origin) if origin is not None else None


class Lineage:
    """Search and fork; `travel()` (the session's, made when first asked) finds the rotated
    context a fork is made from."""

    def __init__(self, live: Live, travel: Callable[[], TimeTravel]) -> None:
        self._live = live
        self._travel = travel

    async def search(self, text: str, *, everywhere: bool = False) -> list[Match]:
        """The messages holding `text` (any case) in every context file, the rotated ones
        too, of this work dir's sessions (of every work dir's with `everywhere`); this
        session's first, then the others newest first. At most `SEARCH_LIMIT`."""
        # The catalog and the search load at the first search, not with every session.
        from kode_tui.session.catalog import list_sessions
        from kode_tui.session.search import search_sessions

        this = self._live.session
        sessions = await list_sessions(self._live.work_dir, everywhere=everywhere)
        sessions = [s for s in sessions if s.dir != this.dir]
        sessions.sort(key=lambda session: session.updated_at, reverse=True)
        sessions.insert(0, this)

        def find() -> list[Match]:
            found = []
            for match in search_sessions(sessions, text):
                found.append(match)
                if len(found) >= SEARCH_LIMIT:
                    break
            return found

        return await asyncio.to_thread(find)

    async def fork(self, checkpoint: int | None = None, from_file: str | None = None) -> Session:
        """A new session in this work dir whose context is this one's up to `checkpoint` (the
        records before it; all of them when None), from the rotated context `from_file`
        (`3`, `context_3.jsonl`) instead of the live one when given. Its state.json records
        where it came from. ValueError when the checkpoint or the file does not exist."""
        from kode_tui.session.fork import fork_session  # loaded at the first fork

        context, session = self._live.context, self._live.session
        if from_file is None:
            # The live file (a read-only view's copy of it); what was written is durable first.
            path = context.path
            await context.sync()
        else:
            name = self._travel().rotated_file(from_file)
            if name is None:
                raise ValueError(f"there is no rotated context {from_file}")
            path = context.path.with_name(name)
        return await fork_session(session, path, checkpoint, session.title)
