"""A session's wire.jsonl and its sidecar: the subscriber that writes them, and `read_wire()`,
which reads them back as one stream (DESIGN.md §2).

Events Kimi CLI has a type for go to wire.jsonl in Kimi's shape; the others go to the sidecar
`wire.kode.jsonl`, each stamped with the size wire.jsonl had then, so that `read_wire()` puts them
back in place (the records' shapes: `kode_tui.wire.events`). The sidecar is created with its
first record.

Streamed deltas are stored merged: a run of text deltas becomes one `ContentPart` record holding
the whole text, stamped with the time of its first delta; think deltas likewise, and the argument
deltas of a tool call are merged into its `ToolCall` record, as Kimi CLI stores them (deltas with
no call before them become one `ToolCallPart`, in the sidecar). Any other event, `flush()` and
`close()` end the run. Both files are only appended to (a wire.jsonl an older kode-tui wrote is
first migrated once, see `kode_tui.wire.migrate`); records are handed to the OS as they are
written and fsynced at the end of each turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

import msgspec

from kode_tui.fsutil import FILE_MODE, make_private_dir, write_all
from kode_tui.humanize import format_size
from kode_tui.masking import mask_bytes, mask_head
from kode_tui.message import TextPart, ThinkPart
from kode_tui.wire.bus import Subscription, WireBus
from kode_tui.wire.events import ContentPart, Event, ToolCall, ToolCallPart, TurnEnd
from kode_tui.wire.migrate import half_migrated, migrate_wire
from kode_tui.wire.records import METADATA, WireRecord, from_record, sidecar_path, to_record

log = logging.getLogger(__name__)

MAX_RECORD = 16 << 20
"""A record larger than this (a 40 MB prompt pasted over ACP) is written with its long texts cut,
each to its first characters and a note saying so: the turn still shows in a replay, the file
stays readable line by line, and the whole text is kept where it belongs (context.jsonl)."""
_KEPT_TEXT = 64 << 10
"""A text of a shortened record keeps this many characters at first (fewer if that is not
enough)."""
# What is held back while the disk is full, at most; beyond it new records are dropped (counted
# in the log), so a long outage cannot eat the memory.
_MAX_HELD = 2 * MAX_RECORD


class WireRecorder:
    """Records every event sent on `bus` to `path` (and its sidecar), appending when the files
    already have records."""

    def __init__(self, bus: WireBus, path: Path) -> None:
        self._bus = bus
        self._path = path
        self._wire = _AppendFile(path)
        self._sidecar = _AppendFile(sidecar_path(path))
        self._subscription: Subscription[Event] | None = None
        self._run: _Run | None = None

    def start(self) -> None:
        """Open the file and subscribe; needs a running event loop."""
        if self._wire.is_open:
            raise RuntimeError(f"{self._path} is already being recorded")
        make_private_dir(self._path.parent)
        try:
            # An older kode-tui's records would stop Kimi's reader once we append (see migrate.py).
            migrate_wire(self._path)
        except OSError as error:
            log.warning("could not move %s's old records to the sidecar: %s", self._path, error)
        self._wire.open(first_line=_line(METADATA))
        try:
            self._subscription = self._bus.subscribe(callback=self._record)
        except BaseException:
            self._wire.close_now()
            raise

    async def flush(self) -> None:
        """Write every event sent so far, ending the current run of deltas."""
        if self._subscription is not None:
            await self._subscription.join()
        self._end_run()

    async def close(self) -> None:
        """Write every event sent so far, fsync and close the files. Idempotent."""
        if not self._wire.is_open:
            return
        await self.flush()
        if not self._wire.is_open:  # a concurrent close() got there first
            return
        if self._subscription is not None:
            self._subscription.close()
        for file in (self._wire, self._sidecar):
            await file.close()

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
        if (
            delta is not None
            and self._run is not None
            and self._run.key == delta.key
            and not isinstance(event, ToolCall)
        ):
            self._run.add(delta)
            return
        self._end_run()
        if delta is not None:
            self._run = _Run(delta, now)
            return
        self._write(event, now)
        if isinstance(event, TurnEnd):
            for file in (self._wire, self._sidecar):
                await file.sync()

    def _end_run(self) -> None:
        if self._run is not None:
            run, self._run = self._run, None
            self._write(run.event(), run.timestamp)

    def _write(self, event: Event, timestamp: float) -> None:
        if not self._wire.is_open:
            return
        if event.kimi:
            line = _record_line(to_record(event, timestamp), self._wire.path)
            if line is not None:
                self._wire.write(line)
            return
        if not self._sidecar.is_open:
            try:
                self._sidecar.open()
            except OSError as error:
                log.warning("could not open %s, a record is lost: %s", self._sidecar.path, error)
                return
        record = to_record(event, timestamp, wire_offset=self._wire.final_size)
        line = _record_line(record, self._sidecar.path)
        if line is not None:
            self._sidecar.write(line)


class _AppendFile:
    """A JSON-lines file only ever appended to: a torn last line is ended before ours, and
    records a failed write (a full disk) could not hand over are held and written first next
    time."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self._size = 0
        self._held: list[bytes] = []
        self._held_size = 0
        self._dropped = 0
        self._failing = False

    @property
    def is_open(self) -> bool:
        return self._fd is not None

    @property
    def final_size(self) -> int:
        """The file's size once the held records are written."""
        return self._size + self._held_size

    def open(self, first_line: bytes | None = None) -> None:
        """Open for appending; `first_line` starts a file that is empty."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, FILE_MODE)
        self._size = os.fstat(fd).st_size
        self._fd = fd
        if self._size == 0:
            if first_line is not None:
                self._hold(first_line)
        elif os.pread(fd, 1, self._size - 1) != b"\n":
            # A crash tore the last line; start ours on a line of their own.
            self._hold(b"\n")
        self._write_held()

    def write(self, line: bytes) -> None:
        if self._fd is None:
            return
        self._hold(line)
        self._write_held()

    async def sync(self) -> None:
        if self._fd is None:
            return
        try:
            await asyncio.to_thread(os.fsync, self._fd)
        except OSError as error:
            log.warning("could not fsync %s: %s", self.path, error)

    async def close(self) -> None:
        """Write what is held, fsync and close; idempotent."""
        if self._fd is None:
            return
        self._write_held()
        if self._held:
            log.warning(
                "%s: %d bytes of records could not be written (disk full?)",
                self.path,
                self._held_size,
            )
        fd, self._fd = self._fd, None
        try:
            await asyncio.to_thread(_sync_and_close, fd)
        except OSError as error:
            log.warning("could not fsync %s: %s", self.path, error)

    def close_now(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def _hold(self, line: bytes) -> None:
        if self._held_size + len(line) > _MAX_HELD:
            # Only while writes fail: otherwise nothing is held and a record fits (MAX_RECORD).
            self._dropped += 1
            log.warning(
                "%s: dropped a record of %s, %d so far: writes fail (disk full?) and %s of "
                "records are held back already",
                self.path,
                format_size(len(line)),
                self._dropped,
                format_size(self._held_size),
            )
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
                log.warning("could not write %s, holding records back: %s", self.path, error)
            self._failing = True
            return
        self._failing = False
        self._size += len(data)
        self._held.clear()
        self._held_size = 0


class _Delta(msgspec.Struct, frozen=True):
    event: ContentPart | ToolCall | ToolCallPart
    key: tuple[str, ...]
    """Deltas with equal keys are pieces of one part (or of one tool call's arguments)."""
    text: str


def _delta(event: Event) -> _Delta | None:
    if isinstance(event, ToolCall):
        # The start of a call: its argument deltas follow.
        return _Delta(event, ("tool_call", event.id), event.function.arguments or "")
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

    def event(self) -> ContentPart | ToolCall | ToolCallPart:
        text = "".join(self.chunks)
        if isinstance(self.first, ToolCall):
            function = self.first.function.model_copy(update={"arguments": text})
            return self.first.model_copy(update={"function": function})
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


def _record_line(record: dict[str, Any], path: Path) -> bytes | None:
    """`record` as a line, its long texts cut when it is over MAX_RECORD (None, said in the
    log, when even that is not enough: a record made of a million short texts)."""
    line = _line(record)
    if len(line) <= MAX_RECORD:
        return line
    size = format_size(len(line))
    note = f"… [cut: this record was {size}, over the {format_size(MAX_RECORD)} limit of one]"
    kept = _KEPT_TEXT
    while kept >= 256:
        short = _line(_cut_texts(record, kept, note))
        if len(short) <= MAX_RECORD:
            log.warning(
                "%s: a record of %s is over the %s limit of one: written with each text cut "
                "to %d characters",
                path,
                size,
                format_size(MAX_RECORD),
                kept,
            )
            return short
        kept //= 4
    log.warning(
        "%s: a record of %s is over the %s limit of one even with its texts cut: not written",
        path,
        size,
        format_size(MAX_RECORD),
    )
    return None


def _cut_texts(value: Any, kept: int, note: str) -> Any:
    """`value` (what `json.loads` gives) with each string over `kept` characters cut to them
    (a key cut in two is masked whole or not at all) and `note`."""
    if isinstance(value, str):
        return value if len(value) <= kept else mask_head(value[:kept]) + note
    if isinstance(value, list):
        return [_cut_texts(item, kept, note) for item in value]
    if isinstance(value, dict):
        return {key: _cut_texts(item, kept, note) for key, item in value.items()}
    return value


def _sync_and_close(fd: int) -> None:
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# --- reading back ---------------------------------------------------------------------------------


def read_wire(path: Path | str) -> Iterator[WireRecord]:
    """The records of a wire.jsonl file and of its sidecar, in the order they were written;
    a missing file has none.

    Metadata lines are skipped, and so, with a warning, is any line that is not a record
    (a torn last line after a crash, for one). A sidecar record comes after the wire lines that
    were on disk when it was written (its `wire_offset`); one whose offset lies past the end of
    wire.jsonl comes at the end.
    """
    path = Path(path)
    pending = iter(_sidecar_records(sidecar_path(path)))
    waiting = next(pending, None)
    # A crash between a migration's two renames: read wire.jsonl as it is becoming.
    for offset, record in _records(path, half_migrated(path)):
        while waiting is not None and waiting[0] <= offset:
            yield waiting[1]
            waiting = next(pending, None)
        yield record
    while waiting is not None:
        yield waiting[1]
        waiting = next(pending, None)


def read_kimi_records(path: Path | str, kind: str) -> Iterator[WireRecord]:
    """The records of one type Kimi CLI has (`TurnBegin`) in a wire.jsonl file, in order; the
    other lines, a long session's hundreds of thousands, are not parsed."""
    path = Path(path)
    marker = json.dumps(kind).encode()
    for _, record in _records(path, half_migrated(path), having=marker):
        if record.type == kind:
            yield record


def _sidecar_records(path: Path) -> list[tuple[int, WireRecord]]:
    records: list[tuple[int, WireRecord]] = []
    for _, record in _records(path):
        offset = record.raw.get("wire_offset")
        if isinstance(offset, bool) or not isinstance(offset, int):
            offset = 0
        records.append((offset, record))
    # Appends keep them in order; a stable sort only guards against a hand-edited file.
    records.sort(key=lambda item: item[0])
    return records


def _records(
    path: Path, data: bytes | None = None, *, having: bytes = b""
) -> Iterator[tuple[int, WireRecord]]:
    """Each record of `path` (of `data`, its content, when given) with the byte offset its
    line starts at; with `having`, only of the lines holding it."""
    try:
        # The generator holds it open while streaming.
        file = open(path, "rb") if data is None else io.BytesIO(data)  # noqa: SIM115
    except FileNotFoundError:
        return
    offset = 0
    with file:
        for number, line in enumerate(file, start=1):
            start, offset = offset, offset + len(line)
            if having not in line:
                continue
            try:
                record = _parse_line(line)
            except (ValueError, RecursionError) as error:  # RecursionError: nested too deeply
                log.warning(
                    "%s:%d: skipped a line that is not a wire record: %s", path, number, error
                )
                continue
            if record is not None:
                yield start, record


def _parse_line(line: bytes) -> WireRecord | None:
    if not line.strip():
        return None
    raw = json.loads(line)
    if not isinstance(raw, dict):
        raise ValueError("not a JSON object")
    if raw.get("type") == "metadata" and "message" not in raw:
        return None
    return from_record(raw)
