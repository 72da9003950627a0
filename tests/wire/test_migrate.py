"""A wire.jsonl an older kode-tui wrote (our records in it, old shapes) is migrated once when a
writer opens it: Kimi CLI 1.52 reads every line afterwards, and `read_wire()` reads the same."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from kode_tui import fsutil
from kode_tui.soul.transcript import PastResults
from kode_tui.wire import WireBus, WireRecorder, migrate, read_wire
from kode_tui.wire import events as ev
from kode_tui.wire.migrate import migrate_wire
from kode_tui.wire.records import sidecar_path
from tests.conftest import KIMI_FIXTURES
from tests.test_kimi_compat import kimi
from tests.test_kimi_wire import KIMI_READ_EVERY_LINE, kimi_shape_problems, lines_of, needs_kimi


def record(t: float, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": t, "message": {"type": kind, "payload": payload}}


OLD_LINES: list[dict[str, Any]] = [
    {"type": "metadata", "protocol_version": "1"},
    record(0.5, "TurnBegin", {"user_input": "list files"}),
    record(1.0, "CheckpointCreated", {"id": 0}),
    record(2.0, "ToolCall", {"id": "c1", "function": {"name": "Shell", "arguments": ""}}),
    record(2.1, "ToolCallPart", {"id": "c1", "arguments_delta": '{"command": "ls"}'}),
    record(3.0, "StepRetry", {"n": 1, "attempt": 1, "max_attempts": 3, "wait_s": 1, "error": "x"}),
    record(
        3.5,
        "ApprovalRequest",
        {"id": "r1", "tool_call_id": "c1", "action": "run command", "description": "ls"},
    ),
    record(3.6, "ApprovalResolved", {"id": "r1", "response": {"feedback": "not now"}}),
    record(4.0, "ContextReverted", {"checkpoint_id": 0, "rotated_file": "context_1.jsonl"}),
    record(
        5.0,
        "ToolResult",
        {"tool_call_id": "c1", "is_error": False, "output": "a.txt", "message": "", "display": []},
    ),
    record(6.0, "Warning", {"message": "careful"}),
    record(7.0, "TurnEnd", {}),
]
"""Lines as kode-tui wrote them before the sidecar."""


def write_old_session(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    wire = folder / "wire.jsonl"
    wire.write_text("".join(json.dumps(line) + "\n" for line in OLD_LINES))
    return wire


def seen(wire: Path) -> list[tuple[str, Any]]:
    return [
        (r.type.replace("ApprovalResponse", "ApprovalResolved"), r.event) for r in read_wire(wire)
    ]


async def append_a_clear(wire: Path) -> None:
    bus = WireBus()
    async with WireRecorder(bus, wire):
        bus.send(ev.ContextCleared(rotated_file="context_2.jsonl"))


async def test_opening_an_old_session_moves_what_kimi_cannot_read_and_reads_the_same(
    tmp_path: Path,
) -> None:
    wire = write_old_session(tmp_path / "session")
    os.chmod(wire, 0o644)
    before = seen(wire)

    await append_a_clear(wire)

    assert [p for line in lines_of(wire) for p in kimi_shape_problems(line)] == []
    assert seen(wire) == [
        *before,
        ("ContextCleared", ev.ContextCleared(rotated_file="context_2.jsonl")),
    ]
    assert all(event is not None for _, event in seen(wire))
    assert os.stat(wire).st_mode & 0o777 == 0o644
    moved = [line["message"]["type"] for line in lines_of(sidecar_path(wire))[1:]]
    assert moved == [
        "CheckpointCreated",
        "ToolCallPart",
        "ContextReverted",
        "Warning",
        "ContextCleared",
    ]
    result = PastResults.read(wire).find("c1", '{"command": "ls"}')
    assert result is not None and result.output == "a.txt"


async def test_sidecar_records_a_newer_kode_tui_added_keep_their_place(tmp_path: Path) -> None:
    wire = write_old_session(tmp_path / "session")
    size = wire.stat().st_size
    extra = record(8.0, "Warning", {"message": "from the sidecar"}) | {"wire_offset": size}
    sidecar_path(wire).write_text(json.dumps(extra) + "\n")
    with wire.open("a") as file:
        file.write(json.dumps(record(9.0, "TurnBegin", {"user_input": "again"})) + "\n")
    before = seen(wire)

    assert migrate_wire(wire)

    assert seen(wire) == before
    assert [r.type for r in read_wire(wire)][-2:] == ["Warning", "TurnBegin"]


async def test_a_crash_between_the_two_files_loses_nothing_and_doubles_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wire = write_old_session(tmp_path / "session")
    before = seen(wire)
    real = fsutil.atomic_write_bytes

    def crash_on_wire(path: Path, data: bytes) -> None:
        if path == wire:
            raise OSError("power cut")
        real(path, data)

    monkeypatch.setattr(migrate, "atomic_write_bytes", crash_on_wire)
    with pytest.raises(OSError):
        migrate_wire(wire)
    monkeypatch.undo()

    assert seen(wire) == before  # a view reading now sees each record once
    assert migrate_wire(wire)
    assert seen(wire) == before
    assert not migrate_wire(wire)


@pytest.mark.parametrize("folder", KIMI_FIXTURES, ids=lambda path: path.name)
def test_kimis_own_wire_files_are_left_byte_for_byte(folder: Path, tmp_path: Path) -> None:
    wire = tmp_path / "wire.jsonl"
    wire.write_bytes((folder / "wire.jsonl").read_bytes())

    assert not migrate_wire(wire)
    assert wire.read_bytes() == (folder / "wire.jsonl").read_bytes()
    assert not sidecar_path(wire).exists()


@needs_kimi
async def test_kimi_reads_every_line_of_an_old_session_we_appended_to(tmp_path: Path) -> None:
    wire = write_old_session(tmp_path / "session")

    await append_a_clear(wire)

    found = kimi(KIMI_READ_EVERY_LINE, wire)
    assert found["unread"] == []
    assert {"StepRetry", "ApprovalRequest", "ApprovalResponse", "ToolResult"} <= set(found["read"])
