"""kode_tui.watching: watchfiles' watcher on a thread of its own, its changes on the loop."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
import watchfiles

from kode_tui import watching


def watch_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == "watchfiles"]


async def until(condition: object) -> None:
    """Wait (a safety net of 30 s) until `condition()` holds."""
    assert callable(condition)
    async with asyncio.timeout(30):
        while not condition():
            await asyncio.sleep(0.01)


async def test_each_batch_of_changes_comes_to_the_loop_until_the_stop_event(
    tmp_path: Path,
) -> None:
    stop = asyncio.Event()
    seen: list[set[tuple[watchfiles.Change, str]]] = []

    async def follow() -> None:
        async for batch in watching.changes(
            tmp_path,
            watch_filter=lambda _change, path: path.endswith(".md"),
            debounce=50,
            step=10,
            stop_event=stop,
        ):
            seen.append(batch)

    following = asyncio.create_task(follow())
    note = tmp_path / "note.md"
    async with asyncio.timeout(30):  # a write made before the watcher is up is made again
        while not seen:
            (tmp_path / "skipped.txt").write_text("x")
            note.write_text("x")
            await asyncio.sleep(0.1)
    assert {path for batch in seen for _change, path in batch} == {str(note)}
    stop.set()
    await asyncio.wait_for(following, 30)  # the iteration ends: the watcher saw the event
    await until(lambda: not watch_threads())


async def test_what_the_watcher_raises_is_raised_to_the_caller(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        async for _batch in watching.changes(tmp_path / "gone", step=10):
            pass
    await until(lambda: not watch_threads())


async def test_a_cancelled_watch_lets_its_thread_go(tmp_path: Path) -> None:
    async def follow() -> None:
        async for _batch in watching.changes(tmp_path, step=10):
            pass

    following = asyncio.create_task(follow())
    await until(lambda: bool(watch_threads()))
    following.cancel()
    with pytest.raises(asyncio.CancelledError):
        await following
    await until(lambda: not watch_threads())
