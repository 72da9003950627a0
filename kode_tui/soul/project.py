"""The project context of one session: collected once, off the event loop, and again when a
watched file (AGENTS.md, README, style configs, the git branch) changed or the user asks; then
the skills' names and descriptions, read for each request (`kode_tui.soul.skills`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path

from kode_tui.soul.project_context import (
    ProjectContext,
    ProjectContextWatcher,
    block_sizes,
    collect,
    format_system_prompt,
)
from kode_tui.soul.skills import Skills, with_skills

log = logging.getLogger(__name__)


class ProjectContextSource:
    def __init__(
        self, work_dir: Path, *, custom: str = "", watch: bool = True, skills: Skills | None = None
    ) -> None:
        self._work_dir = work_dir
        self._skills = skills
        self._custom = custom
        self._watch = watch
        self._current: ProjectContext | None = None
        self._loading: asyncio.Task[ProjectContext] | None = None
        self._watcher: ProjectContextWatcher | None = None
        self._missed = False
        """A watched file changed while the context was being collected."""

    @property
    def skills(self) -> Skills | None:
        """The skills listed after the project context (None: none are read here)."""
        return self._skills

    @property
    def current(self) -> ProjectContext | None:
        """The context as last collected (None before the first collection finished)."""
        return self._current

    def start(self) -> None:
        """Begin collecting in the background, so the first turn rarely waits for it."""
        if self._loading is None and self._current is None:
            self._loading = asyncio.create_task(self._collect())

    async def get(self) -> ProjectContext:
        """The context for the next request: collected again first when a watched file changed."""
        if self._missed or (self._watcher is not None and self._watcher.stale):
            log.info("a project file changed; collecting the project context again")
            return await self.refresh()
        if self._current is not None:
            return self._current
        self.start()
        assert self._loading is not None
        return await self._loading

    async def describe(self, base: str) -> tuple[str, list[tuple[str, int]]]:
        """The system prompt of the next request (`base` with the project context), and its
        parts with their estimated tokens."""
        context = await self.get()
        prompt, blocks = format_system_prompt(base, context), block_sizes(base, context)
        if self._skills is None:
            return prompt, blocks
        return with_skills(prompt, blocks, await asyncio.to_thread(self._skills.listing))

    async def refresh(self) -> ProjectContext:
        """Collect again now (`/context refresh`)."""
        if self._loading is not None and not self._loading.done():
            await self._loading
        self._loading = asyncio.create_task(self._collect())
        return await self._loading

    async def close(self) -> None:
        if self._loading is not None and not self._loading.done():
            self._loading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loading
        if self._watcher is not None:
            await self._watcher.stop()
            self._watcher = None

    async def _collect(self) -> ProjectContext:
        if self._watcher is not None and self._current is not None:
            self._watcher.reset(self._current)  # from now on, a change means collect again
        self._missed = False
        context = await asyncio.to_thread(collect, self._work_dir, custom=self._custom)
        self._current = context
        if self._watch:
            if self._watcher is None:
                self._watcher = ProjectContextWatcher(context)
                self._watcher.start()
            else:
                self._missed = self._watcher.stale
                self._watcher.reset(context)
        return context
