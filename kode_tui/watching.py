"""Watching files from asyncio: watchfiles' Rust watcher, without anyio.

watchfiles' `awatch` blocks in its Rust watcher on a worker thread that anyio runs, and anyio's
asyncio backend (~15 ms of imports) loaded at the first watch: the project context's, the
config's and the History pane's all start before a session's first request. `changes()` runs
watchfiles' own `watch()` (the same watcher, the same arguments) on a thread of its own and hands
each batch of changes to the event loop. Iteration ends when `stop_event` is set; ending it
otherwise (a cancel, a `break`) stops the thread within `step` milliseconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import watchfiles

__all__ = ["changes"]

FileChanges = set[tuple[watchfiles.Change, str]]


class _Stop:
    """What the watcher polls between its steps: set by the caller's event or by us."""

    def __init__(self, outer: asyncio.Event | None) -> None:
        self._outer = outer
        self._ended = threading.Event()

    def end(self) -> None:
        self._ended.set()

    def is_set(self) -> bool:
        return self._ended.is_set() or (self._outer is not None and self._outer.is_set())


async def changes(
    *paths: Path | str,
    watch_filter: Callable[[watchfiles.Change, str], bool] | None = None,
    debounce: int = 1_600,
    step: int = 50,
    stop_event: asyncio.Event | None = None,
    recursive: bool = True,
    force_polling: bool | None = None,
    poll_delay_ms: int = 300,
) -> AsyncIterator[FileChanges]:
    """Each batch of changes under `paths`, as `watchfiles.awatch` yields them (the arguments
    are its own; `watch_filter` None: watchfiles' `DefaultFilter`), until `stop_event` is set.
    What the watcher raises (a path that is gone, no inotify watch left) is raised here."""
    loop = asyncio.get_running_loop()
    batches: asyncio.Queue[FileChanges | Exception | None] = asyncio.Queue()
    stop = _Stop(stop_event)

    def hand(item: FileChanges | Exception | None) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting
            loop.call_soon_threadsafe(batches.put_nowait, item)

    def run() -> None:
        try:
            for batch in watchfiles.watch(
                *paths,
                watch_filter=watchfiles.DefaultFilter() if watch_filter is None else watch_filter,
                debounce=debounce,
                step=step,
                stop_event=stop,
                raise_interrupt=False,
                recursive=recursive,
                force_polling=force_polling,
                poll_delay_ms=poll_delay_ms,
            ):
                hand(batch)
        except Exception as error:  # the caller's to handle, on its loop
            hand(error)
        else:
            hand(None)

    threading.Thread(target=run, name="watchfiles", daemon=True).start()
    try:
        while (item := await batches.get()) is not None:
            if isinstance(item, Exception):
                raise item
            yield item
    finally:
        stop.end()
