"""The subscriber that writes a session's wire.jsonl (DESIGN.md §2).

Streamed deltas are stored merged: a run of text deltas becomes one `ContentPart` record holding
the whole text, stamped with the time of its first delta; think deltas likewise, and the argument
deltas of one tool call become one `ToolCallPart`. Any other event, `flush()` and `close()` end
the run. Records are handed to the OS as they are written and fsynced at the end of each turn.
"""

from __future__ import annotations

import asyncio
import json
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


class WireRecorder:
    """Records every event sent on `bus` to `path`, appending when the file already has records."""

    def __init__(self, bus: WireBus, path: Path) -> None:
        self._bus = bus
        self._path = path
        self._fd: int | None = None
        self._subscription: Subscription[Event] | None = None
        self._run: _Run | None = None

    def start(self) -> None:
        """Open the file and subscribe; needs a running event loop."""
        if self._fd is not None:
            raise RuntimeError(f"{self._path} is already being recorded")
        make_private_dir(self._path.parent)
        fd = os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_APPEND, FILE_MODE)
        size = os.fstat(fd).st_size
        if size == 0:
            write_all(fd, _line(METADATA))
        elif os.pread(fd, 1, size - 1) != b"\n":
            # A crash tore the last line; start ours on a line of their own.
            write_all(fd, b"\n")
        try:
            self._subscription = self._bus.subscribe(callback=self._record)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

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
        fd, self._fd = self._fd, None
        await asyncio.to_thread(_sync_and_close, fd)

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
            await asyncio.to_thread(os.fsync, self._fd)

    def _end_run(self) -> None:
        if self._run is not None:
            run, self._run = self._run, None
            self._write(to_record(run.event(), run.timestamp))

    def _write(self, record: dict[str, Any]) -> None:
        if self._fd is not None:
            write_all(self._fd, _line(record))


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
