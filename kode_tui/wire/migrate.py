"""Old sessions' wire.jsonl made readable by Kimi CLI 1.52, once, when a writer opens it.

kode-tui versions before the sidecar wrote all their records to wire.jsonl, in shapes of their
own: checkpoints, reverts, restores, clears, reminders, warnings, errors and argument pieces
Kimi has no type for, and `StepRetry`, `ApprovalResolved`, `ApprovalRequest` and `ToolResult` in
forms Kimi's models reject. One such line stops `kimi export` and Kimi's history replay. When the
recorder opens a session for appending, `migrate_wire()` moves the first kind to the sidecar and
rewrites the second in Kimi's shape (as `to_record` writes it today); Kimi's own lines are kept
byte for byte, and `read_wire()` gives the same records in the same order before and after.

Crash safety: the new sidecar (all its records, offsets counted in the new wire.jsonl, headed by
a note naming the size and SHA-256 of the wire.jsonl it was made from) is put in place first,
then the new wire.jsonl, each by temp file, fsync and rename, keeping its mode. A crash between
the two leaves the new sidecar beside the old wire.jsonl: the next open finds the note matching
that file and only rewrites wire.jsonl, so nothing is lost and nothing doubled. Nothing is
parsed unless the file holds one of the byte patterns old records have.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import re
from pathlib import Path
from typing import Any

import msgspec

from kode_tui.fsutil import atomic_write_bytes
from kode_tui.wire import records

log = logging.getLogger(__name__)

_SIDECAR_TYPES = tuple(name for name, cls in records.EVENT_TYPES.items() if not cls.kimi)
# Kimi has a `ToolCallPart` of its own (`arguments_part`); ours is told by `arguments_delta`.
_SIDECAR_NAMES = tuple(name for name in _SIDECAR_TYPES if name != "ToolCallPart")

# Byte patterns only old records have. Quotes inside JSON strings are escaped, so a pattern
# with bare quotes cannot come from a message's text.
_OLD_PATTERN = re.compile(
    rb'"type": "(?:'
    + b"|".join(re.escape(name.encode()) for name in (*_SIDECAR_NAMES, "ApprovalResolved"))
    + rb')"'
    + rb'|"attempt": |"arguments_delta": '
    + rb'|"type": "ToolResult", "payload": \{"tool_call_id": "(?:[^"\\]|\\.)*", "is_error"'
)

_KIMI_REQUIRED: dict[str, frozenset[str]] = {
    "StepRetry": frozenset({"error_type", "max_attempts", "n", "next_attempt", "wait_s"}),
    "ApprovalRequest": frozenset({"action", "description", "id", "sender", "tool_call_id"}),
    "ToolResult": frozenset({"return_value", "tool_call_id"}),
}
"""What Kimi 1.52's models require of the types our old records had in another shape
(tests/fixtures/kimi_wire_fields.json has them all)."""
_REQUEST = b'"type": "ApprovalRequest"'
_SENDER = b'"sender": '
_KIMI_RETURN_VALUE = frozenset({"display", "is_error", "message", "output"})

MIGRATION_NOTE = "migrated_from"
"""The key of the sidecar's first line after a migration: `{"type": "metadata",
"migrated_from": {"size": ..., "sha256": ...}}` of the wire.jsonl it was made from."""


class _Line(msgspec.Struct, frozen=True):
    data: bytes
    moved: dict[str, Any] | None = None
    """The record, when the line goes to the sidecar."""


def migrate_wire(path: Path) -> bool:
    """Make the wire.jsonl at `path` one Kimi CLI reads, moving what it cannot to the sidecar;
    True when something was migrated. Blocking; OSError when a file cannot be written."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return False
    if _OLD_PATTERN.search(data) is None and data.count(_REQUEST) <= data.count(_SENDER):
        return False
    originals = _split(data)
    lines = [_migrated(line) for line in originals]
    if all(line.data is original for line, original in zip(lines, originals, strict=True)):
        return False
    sidecar = records.sidecar_path(path)
    note = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    new_wire = b"".join(line.data for line in lines)
    if _note_of(sidecar) != note:  # else a crash came after the sidecar was put in place
        atomic_write_bytes(sidecar, _new_sidecar(sidecar, data, lines, note))
    atomic_write_bytes(path, new_wire)
    log.info("%s: records Kimi CLI cannot read moved to %s", path, sidecar.name)
    return True


def half_migrated(path: Path) -> bytes | None:
    """What the wire.jsonl at `path` becomes when a migration's crash left its new sidecar in
    place but not the new wire.jsonl (for `read_wire()`, which then reads this); else None.
    Costs a line of the sidecar and a stat when there is nothing to do."""
    note = _note_of(records.sidecar_path(path))
    if not isinstance(note, dict):
        return None
    try:
        if path.stat().st_size != note.get("size"):
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if hashlib.sha256(data).hexdigest() != note.get("sha256"):
        return None
    return b"".join(_migrated(line).data for line in _split(data))


def _split(data: bytes) -> list[bytes]:
    """The lines of `data` as `read_wire()` reads them: ended by "\n" only."""
    return io.BytesIO(data).readlines()


def _migrated(line: bytes) -> _Line:
    """What becomes of one wire.jsonl line: kept (the same bytes object), rewritten, or moved."""
    if _OLD_PATTERN.search(line) is None and not (_REQUEST in line and _SENDER not in line):
        return _Line(line)
    try:
        raw = json.loads(line)
        record = records.from_record(raw)
    except (ValueError, RecursionError):
        return _Line(line)  # not a record: read_wire skips it, as before
    payload = raw["message"].get("payload")
    kind = record.type
    if kind in _SIDECAR_NAMES or (
        kind == "ToolCallPart" and isinstance(payload, dict) and "arguments_delta" in payload
    ):
        return _Line(b"", moved=raw)
    if kind not in (*_KIMI_REQUIRED, "ApprovalResolved") or _kimi_reads(kind, payload):
        return _Line(line)
    if record.event is None:
        return _Line(b"", moved=raw)  # neither side has a shape for it: kept where Kimi won't look
    # The writer's shape today; it holds every field of ours the old record had.
    new = records.to_record(record.event, record.timestamp)
    return _Line((json.dumps(new, ensure_ascii=False) + "\n").encode())


def _kimi_reads(kind: str, payload: Any) -> bool:
    if not isinstance(payload, dict) or not _KIMI_REQUIRED.get(kind, frozenset()) <= set(payload):
        return False
    if kind == "ToolResult":
        value = payload["return_value"]
        return isinstance(value, dict) and set(value) >= _KIMI_RETURN_VALUE
    return kind != "ApprovalResolved"


def _new_sidecar(sidecar: Path, data: bytes, lines: list[_Line], note: dict[str, Any]) -> bytes:
    """The sidecar's records and the moved ones, each at the offset of the new wire.jsonl that
    keeps `read_wire()`'s order."""
    kept: list[tuple[int, dict[str, Any]]] = []
    out = [_dump({"type": "metadata", MIGRATION_NOTE: note})]
    try:
        old_sidecar = sidecar.read_bytes()
    except FileNotFoundError:
        old_sidecar = b""
    for line in _split(old_sidecar):
        try:
            raw = json.loads(line)
        except (ValueError, RecursionError):
            continue  # a torn line: read_wire skips it anyway
        if not isinstance(raw, dict) or "message" not in raw:
            continue  # metadata, an older migration's note
        offset = raw.get("wire_offset")
        kept.append(
            (offset if isinstance(offset, int) and not isinstance(offset, bool) else 0, raw)
        )
    kept.sort(key=lambda item: item[0])
    waiting = iter(kept)
    pending = next(waiting, None)
    old_offset = new_offset = 0
    for original, entry in zip(_split(data), lines, strict=True):
        while pending is not None and pending[0] <= old_offset:
            out.append(_dump({**pending[1], "wire_offset": new_offset}))
            pending = next(waiting, None)
        if entry.moved is not None:
            out.append(_dump({**entry.moved, "wire_offset": new_offset}))
        old_offset += len(original)
        new_offset += len(entry.data)
    while pending is not None:
        out.append(_dump({**pending[1], "wire_offset": new_offset}))
        pending = next(waiting, None)
    return b"".join(out)


def _note_of(sidecar: Path) -> Any:
    try:
        with open(sidecar, "rb") as file:
            first = file.readline()
        if MIGRATION_NOTE.encode() not in first:
            return None  # the usual case: no migration, or a record, not worth parsing
        return json.loads(first).get(MIGRATION_NOTE)
    except (OSError, ValueError, AttributeError, RecursionError):
        return None


def _dump(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, ensure_ascii=False) + "\n").encode()
