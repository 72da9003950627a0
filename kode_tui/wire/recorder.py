"""The subscriber that writes a session's wire.jsonl (DESIGN.md §2).

Streamed deltas are stored merged: a run of text deltas becomes one `ContentPart` record holding
the whole text, stamped with the time of its first delta; think deltas likewise, and the argument
deltas of one tool call become one `ToolCallPart`. Any other event, `flush()` and `close()` end
the run. Records are handed to the OS as they are written and fsynced at the end of each turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from kode_tui.fsutil import FILE_MODE, make_private_dir, write_all
from kode_tui.masking import mask_bytes
from kode_tui.message import TextPart, ThinkPart
from kode_tui.wire.bus import Subscription, WireBus
from kode_tui.wire.events import (
    METADATA,
    ContentPart,
    Event,
    ToolCallPart,
    TurnEnd,
    to_record,
)

log = logging.getLogger(__name__)

# What is held back while the disk is full, at most; beyond it new records are dropped (counted
# in the log), so a long outage cannot eat the memory.
_MAX_HELD = 16 << 20


class WireRecorder:
    """Records every event sent on `bus` to `path`, appending when the file already has records."""

    def __init__(self, bus: WireBus, path: Path) -> None:
        self._bus = bus
        self._path = path
        self._fd: int | None = None
        self._subscription: Subscription[Event] | None = None
        self._run: _Run | None = None
        self._size = 0
        self._held: list[bytes] = []
        """Records a failed write (a full disk) could not hand over: written first next time."""
        self._held_size = 0
        self._dropped = 0
        self._failing = False

    def start(self) -> None:
        """Open the file and subscribe; needs a running event loop."""
        if self._fd is not None:
            raise RuntimeError(f"{self._path} is already being recorded")
        make_private_dir(self._path.parent)
        fd = os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_APPEND, FILE_MODE)
        self._size = os.fstat(fd).st_size
        self._fd = fd
        if self._size == 0:
            self._hold(_line(METADATA))
        elif os.pread(fd, 1, self._size - 1) != b"\n":
            # A crash tore the last line; start ours on a line of their own.
            self._hold(b"\n")
        self._write_held()
        try:
            self._subscription = self._bus.subscribe(callback=self._record)
        except BaseException:
            self._fd = None
            os.close(fd)
            raise

    async def flush(self) -> None:
        """Write every event sent so far, ending the current run of deltas."""
        if self._subscription is not None:
            await self._subscription.join()
        self._end_run()

    async def close(self) -> None:
        """Write every event sent so far, fsync and close the file. Idempotent."""
        if self._fd is None:
            return
        await self.flush()
        if self._fd is None:  # a concurrent close() got there first
            return
        if self._subscription is not None:
            self._subscription.close()
        self._write_held()
        if self._held:
            log.warning(
                "%s: %d bytes of records could not be written (disk full?)",
                self._path,
                self._held_size,
            )
        fd, self._fd = self._fd, None
        try:
            await asyncio.to_thread(_sync_and_close, fd)
        except OSError as error:
            log.warning("could not fsync %s: %s", self._path, error)

    async def __aenter__(self) -> WireRecorder:
        self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    async def _record(self, event: Event) -> None:
        if not event.recorded:
            return
        now = time.time()
        delta = _delta(event)
        if delta is not None and self._run is not None and self._run.key == delta.key:
            self._run.add(delta)
            return
        self._end_run()
        if delta is not None:
            self._run = _Run(delta, now)
            return
        self._write(to_record(event, now))
        if isinstance(event, TurnEnd) and self._fd is not None:
            try:
                await asyncio.to_thread(os.fsync, self._fd)
            except OSError as error:
                log.warning("could not fsync %s: %s", self._path, error)

    def _end_run(self) -> None:
        if self._run is not None:
            run, self._run = self._run, None
            self._write(to_record(run.event(), run.timestamp))

    def _write(self, record: dict[str, Any]) -> None:
        if self._fd is None:
            return
        self._hold(_line(record))
        self._write_held()

    def _hold(self, line: bytes) -> None:
        if self._held_size + len(line) > _MAX_HELD:
            self._dropped += 1
            log.warning("%s: dropped a record, %d so far (disk full?)", self._path, self._dropped)
            return
        self._held.append(line)
        self._held_size += len(line)

    def _write_held(self) -> None:
        """Hand the held records over in one write; when it fails (a full disk), cut the file
        back to its last whole line and keep them for the next write: no torn line for the next
        record to be glued onto, and no record lost once there is room again."""
        if not self._held or self._fd is None:
            return
        try:
            if self._failing:
                os.ftruncate(self._fd, self._size)  # what the last failed write left
            data = b"".join(self._held)
            write_all(self._fd, data)
        except OSError as error:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self._size)
            if not self._failing:
                log.warning("could not write %s, holding records back: %s", self._path, error)
            self._failing = True
            return
        self._failing = False
        self._size += len(data)
        self._held.clear()
        self._held_size = 0


@dataclass(frozen=True, slots=True)
class _Delta:
    event: ContentPart | ToolCallPart
    key: tuple[str, ...]
    """Deltas with equal keys are pieces of one part (or of one tool call's arguments)."""
    text: str


def _delta(event: Event) -> _Delta | None:
    if isinstance(event, ToolCallPart):
        return _Delta(event, ("tool_call", event.id), event.arguments_delta)
    if isinstance(event, ContentPart):
        if isinstance(event.part, TextPart):
            return _Delta(event, ("text",), event.part.text)
        if isinstance(event.part, ThinkPart):
            return _Delta(event, ("think",), event.part.think)
    return None


class _Run:
    """Consecutive deltas of one part, kept as chunks so that a long stream costs linear time."""

    def __init__(self, first: _Delta, timestamp: float) -> None:
        self.first = first.event
        self.key = first.key
        self.timestamp = timestamp
        self.chunks: list[str] = []
        self.encrypted: str | None = None
        self.add(first)

    def add(self, delta: _Delta) -> None:
        self.chunks.append(delta.text)
        if isinstance(delta.event, ContentPart) and isinstance(delta.event.part, ThinkPart):
            # Providers send a thought's signature with its last delta.
            self.encrypted = delta.event.part.encrypted or self.encrypted

    def event(self) -> ContentPart | ToolCallPart:
        text = "".join(self.chunks)
        if isinstance(self.first, ToolCallPart):
            return self.first.model_copy(update={"arguments_delta": text})
        part = self.first.part
        if isinstance(part, ThinkPart):
            return ContentPart(
                part=part.model_copy(update={"think": text, "encrypted": self.encrypted})
            )
        return ContentPart(part=part.model_copy(update={"text": text}))


def _line(record: dict[str, Any]) -> bytes:
    return mask_bytes((json.dumps(record, ensure_ascii=False) + "\n").encode())


def _sync_and_close(fd: int) -> None:
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
