"""The messages of a context, parsed only when read.

A restored context holds its message lines as byte spans of the file it was read from (kept open,
so a later rename of that file changes nothing); a message becomes a `Message` the first time it
is read and stays one. New messages are held as models from
the start. Reverting slices the list: nothing is parsed again.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import weakref
from array import array
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, overload

from pydantic import TypeAdapter, ValidationError

from kode_tui.message import (
    MESSAGE_ROLES,
    ContentPart,
    Message,
    TextPart,
    ToolCall,
    UnknownPart,
    is_shown,
)
from kode_tui.session.scan import paused_gc

log = logging.getLogger(__name__)


class SpanReader:
    """An open file the message spans point into; closed when the history that needs it goes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDONLY)
        self._finalizer = weakref.finalize(self, os.close, self.fd)

    def read(self, start: int, end: int) -> bytes:
        return os.pread(self.fd, end - start, start)

    def close(self) -> None:
        self._finalizer()


class History(Sequence[Message]):
    """The messages of a context: a sequence of `Message`, parsed when first read."""

    __slots__ = ("_ends", "_flags", "_items", "_reader", "_starts")

    def __init__(
        self,
        reader: SpanReader | None = None,
        starts: array[int] | None = None,
        ends: array[int] | None = None,
        flags: dict[int, int] | None = None,
    ) -> None:
        self._reader = reader
        # The first len(_starts) messages come from the file: None there until first read.
        self._starts = starts if starts is not None else array("q")
        self._ends = ends if ends is not None else array("q")
        self._flags = flags or {}
        self._items: list[Message | None] = [None] * len(self._starts)

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...

    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self._items))
            if step == 1:
                self._parse_range(start, stop)
            return [self._get(i) for i in range(start, stop, step)]
        if index < 0:
            index += len(self._items)
        if not 0 <= index < len(self._items):
            raise IndexError("history index out of range")
        return self._get(index)

    def __iter__(self) -> Iterator[Message]:
        # Whoever walks the whole history (to send it to the model) needs every message.
        self._parse_range(0, len(self._items))
        return iter(self._items)  # type: ignore[arg-type]  # no None is left

    def __repr__(self) -> str:
        return f"<History of {len(self._items)} messages, {self._items.count(None)} not parsed yet>"

    def count_shown(self, stop: int) -> int:
        """`len(shown_messages(self[:stop]))`, parsing only the lines that may hold a
        checkpoint note and keeping none of them parsed: the checkpoint details of a long
        session would otherwise hold every message before the last checkpoint in memory."""
        stop = min(stop, len(self._items))
        items, starts, ends, reader = self._items, self._starts, self._ends, self._reader
        shown = 0
        index = 0
        while index < stop:
            if items[index] is not None or reader is None or index >= len(starts):
                shown += is_shown(self._get(index))
                index += 1
                continue
            # A run of unparsed lines, read in blocks of up to 1 MB.
            first, last = index, index
            while last + 1 < stop and items[last + 1] is None and last + 1 < len(starts):
                if ends[last + 1] - starts[first] > _MAX_READ:
                    break
                last += 1
            block = reader.read(starts[first], ends[last])
            for i in range(first, last + 1):
                raw = block[starts[i] - starts[first] : ends[i] - starts[first]]
                if _NOTE_MARK not in raw:
                    shown += 1  # no checkpoint note can be in it
                else:
                    shown += is_shown(_parse(raw, self._flags.get(i, 0), reader))
            index = last + 1
        return shown

    def append(self, message: Message) -> None:
        self._items.append(message)

    def extend(self, messages: Iterable[Message]) -> None:
        self._items.extend(messages)

    def truncate(self, length: int) -> None:
        """Keep the first `length` messages."""
        del self._items[length:]
        del self._starts[length:]
        del self._ends[length:]

    def _parse_range(self, start: int, stop: int) -> None:
        """Parse the messages in [start, stop) not parsed yet, reading up to 1 MB at once."""
        items, starts, ends, reader = self._items, self._starts, self._ends, self._reader
        lazy = [i for i in range(start, min(stop, len(starts))) if items[i] is None]
        if not lazy or reader is None:
            return
        flags = self._flags
        with paused_gc():
            while lazy:
                first = starts[lazy[0]]
                count = 1
                while count < len(lazy) and ends[lazy[count]] - first <= _MAX_READ:
                    count += 1
                block = reader.read(first, ends[lazy[count - 1]])
                for i in lazy[:count]:
                    raw = block[starts[i] - first : ends[i] - first]
                    items[i] = _parse(raw, flags.get(i, 0), reader)
                del lazy[:count]

    def _get(self, index: int) -> Message:
        message = self._items[index]
        if message is None:
            assert self._reader is not None
            raw = self._reader.read(self._starts[index], self._ends[index])
            message = _parse(raw, self._flags.get(index, 0), self._reader)
            self._items[index] = message
        return message


_MAX_READ = 1 << 20
_NOTE_MARK = b"CHECKPOINT"
"""In the line of every checkpoint note (`kode_tui.message.checkpoint_note`)."""


def _parse(raw: bytes, flags: int, reader: SpanReader) -> Message:
    if not flags:
        try:
            return Message.model_validate_json(raw)
        except (ValidationError, RecursionError):
            pass
    try:
        obj = json.loads(raw.decode("utf-8", "replace"), strict=False)
    except (ValueError, RecursionError):
        # The scan saw a JSON object here: someone rewrote the file under us.
        log.warning("%s: a message can no longer be read", reader.path)
        return Message.model_construct(role="user", content=[UnknownPart(type="unreadable")])
    try:
        return Message.model_validate(obj)
    except ValidationError as error:
        log.warning("a context message does not match the schema; keeping what fits: %s", error)
    except RecursionError:
        # Nested deeper than the validators go: what fits is salvaged, the rest kept opaque.
        log.warning("%s: a message is nested too deeply to read whole", reader.path)
    try:
        return _salvage(obj)
    except RecursionError:
        return Message.model_construct(role="user", content=[UnknownPart(type="unreadable")])


def _salvage(obj: dict[str, Any]) -> Message:
    """The parts of a malformed message that fit, and the rest as opaque parts (the line stays
    untouched in the file)."""
    content = obj.get("content")
    if isinstance(content, list):
        parts = [_salvage_part(part) for part in content]
    elif content is None or isinstance(content, str):
        parts = [TextPart(text=content)] if content else []
    else:
        parts = [_salvage_part(content)]
    fields: dict[str, Any] = {
        "role": obj["role"] if obj.get("role") in MESSAGE_ROLES else "user",
        "content": parts,
    }
    for key in ("name", "tool_call_id"):
        if isinstance(obj.get(key), str):
            fields[key] = obj[key]
    with contextlib.suppress(KeyError, ValidationError):
        fields["tool_calls"] = _tool_calls().validate_python(obj["tool_calls"])
    return Message.model_construct(**fields)


def _salvage_part(part: Any) -> Any:
    try:
        return _part().validate_python(part)
    except ValidationError:
        if isinstance(part, dict):
            return UnknownPart.model_construct(**{**part, "type": str(part.get("type"))})
        return UnknownPart.model_construct(type="unreadable", value=part)


@functools.cache
def _part() -> TypeAdapter[Any]:
    """Built at the first salvage (a few ms of schema): a history that reads cleanly has none."""
    return TypeAdapter(ContentPart)


@functools.cache
def _tool_calls() -> TypeAdapter[list[ToolCall]]:
    return TypeAdapter(list[ToolCall])
