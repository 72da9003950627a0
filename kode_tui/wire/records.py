"""wire.jsonl records of the events (`events.py`): which class each record type names, and a
record's line in wire.jsonl or in its sidecar `wire.kode.jsonl` (see `events.py` for the split).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec
from pydantic import ValidationError

from kode_tui.wire.events import (
    KIMI_NAMES,
    ApprovalRequest,
    ApprovalResolved,
    BackgroundTaskUpdate,
    CheckpointCreated,
    CommandSent,
    CompactionBegin,
    CompactionEnd,
    ContentPart,
    ContextCleared,
    ContextReloaded,
    ContextRestored,
    ContextReverted,
    Error,
    Event,
    HookRan,
    PermissionsChanged,
    PlanDisplay,
    QuestionRequest,
    StatusUpdate,
    StepBegin,
    StepInterrupted,
    StepRetry,
    SystemReminders,
    ToolCall,
    ToolCallPart,
    ToolResult,
    ToolStarted,
    TurnBegin,
    TurnEnd,
    Warning,
)

logger = logging.getLogger(__name__)

EVENT_TYPES: Mapping[str, type[Event]] = {
    cls.__name__: cls
    for cls in (
        TurnBegin,
        TurnEnd,
        StepBegin,
        StepInterrupted,
        StepRetry,
        ContentPart,
        ToolCall,
        ToolCallPart,
        ToolStarted,
        ToolResult,
        ApprovalRequest,
        ApprovalResolved,
        PermissionsChanged,
        CheckpointCreated,
        StatusUpdate,
        CompactionBegin,
        CompactionEnd,
        ContextReverted,
        ContextRestored,
        ContextCleared,
        ContextReloaded,
        SystemReminders,
        HookRan,
        CommandSent,
        PlanDisplay,
        Warning,
        Error,
        QuestionRequest,
        BackgroundTaskUpdate,
    )
}
"""Every event class by its name on disk."""

_READ_NAMES: Mapping[str, type[Event]] = {
    **EVENT_TYPES,
    "ApprovalResponse": ApprovalResolved,
    "ApprovalRequestResolved": ApprovalResolved,  # Kimi's wire protocol v1
}

SIDECAR_SUFFIX = ".kode.jsonl"
"""`wire.jsonl`'s sidecar is `wire.kode.jsonl`: the records Kimi CLI has no type for."""


def sidecar_path(wire_path: Path) -> Path:
    """Where the records of `wire_path` that Kimi CLI cannot read are kept."""
    return wire_path.with_name(wire_path.name.removesuffix(".jsonl") + SIDECAR_SUFFIX)


class WireRecord(msgspec.Struct, frozen=True):
    """A wire.jsonl line; `event` is None when its type is unknown or its payload does not fit."""

    timestamp: float
    type: str
    event: Event | None
    raw: dict[str, Any]
    """The decoded line as it was, unknown keys included."""


METADATA: dict[str, str] = {"type": "metadata", "protocol_version": "1"}
"""The first line of a wire.jsonl file."""


def to_record(event: Event, timestamp: float, wire_offset: int | None = None) -> dict[str, Any]:
    """The JSON object of the line for `event`: in wire.jsonl for an event Kimi has a type for,
    else in the sidecar, where `wire_offset` is the size wire.jsonl had when it was written."""
    name = type(event).__name__
    message = {"type": KIMI_NAMES.get(name, name), "payload": event.payload()}
    if wire_offset is None:
        return {"timestamp": timestamp, "message": message}
    return {"timestamp": timestamp, "wire_offset": wire_offset, "message": message}


def from_record(raw: dict[str, Any]) -> WireRecord:
    """A decoded wire.jsonl line as a record; ValueError when it is not shaped like one."""
    timestamp = raw.get("timestamp")
    message = raw.get("message")
    if isinstance(timestamp, bool) or not isinstance(timestamp, int | float):
        raise ValueError("a wire record needs a numeric timestamp")
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise ValueError("a wire record needs a message with a type")
    kind: str = message["type"]
    payload = message.get("payload", {})
    event_type = _READ_NAMES.get(kind)
    event: Event | None = None
    if event_type is not None and isinstance(payload, dict):
        try:
            event = event_type.from_payload(payload)
        except ValidationError as error:
            # Expected for Kimi's richer events, so not worth a warning per line.
            logger.debug("%s payload does not fit our model: %s", kind, error)
    return WireRecord(timestamp=float(timestamp), type=kind, event=event, raw=raw)
