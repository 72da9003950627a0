"""A full disk loses no record: torn writes are cut back (wire.jsonl, rotations.jsonl), the log
stays quiet, and starts while the disk is full neither print tracebacks nor pile up copies."""

from __future__ import annotations

import errno
import json
import logging
import os
from pathlib import Path
from typing import Any

import pytest

from kode_tui import cli
from kode_tui.fsutil import append_line
from kode_tui.session import Context
from kode_tui.session import context as context_module
from kode_tui.wire import WireBus, WireRecorder, read_wire
from kode_tui.wire.events import StepBegin, TurnBegin, TurnEnd
from tests.session.test_context_steps import FullDisk, lines_of

TORN = b'{"role":"user","content":"one"}\n{"role":"user","content":"tw'


async def test_wire_records_written_while_the_disk_is_full_arrive_whole_when_room_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "wire.jsonl"
    bus = WireBus()
    recorder = WireRecorder(bus, path)
    recorder.start()
    bus.send(TurnBegin(user_input="before"))
    await recorder.flush()

    disk = FullDisk(monkeypatch, "wire.jsonl", room=9)
    for n in range(1, 4):
        bus.send(StepBegin(n=n))
    await recorder.flush()
    assert disk.failures >= 1
    lines_of(path)  # no torn line left behind

    disk.free()
    bus.send(TurnEnd())
    await recorder.close()

    events = [record.event for record in read_wire(path)]
    assert [type(e).__name__ for e in events] == [
        "TurnBegin",
        "StepBegin",
        "StepBegin",
        "StepBegin",
        "TurnEnd",
    ]
    assert [e.n for e in events if isinstance(e, StepBegin)] == [1, 2, 3]
    assert len(lines_of(path)) == 6  # metadata + 5


def test_a_rotations_note_that_hits_a_full_disk_leaves_no_torn_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "rotations.jsonl"
    append_line(path, json.dumps({"file": "context_1.jsonl"}))
    disk = FullDisk(monkeypatch, "rotations.jsonl", room=6)
    with pytest.raises(OSError):
        append_line(path, json.dumps({"file": "context_2.jsonl"}))
    disk.free()
    append_line(path, json.dumps({"file": "context_3.jsonl"}))
    assert [line["file"] for line in lines_of(path)] == ["context_1.jsonl", "context_3.jsonl"]


def test_a_rotations_note_after_a_torn_line_starts_a_line_of_its_own(tmp_path: Path) -> None:
    # A kill mid-append (or a cut back that failed as well) left a torn last line: the next
    # note was glued onto it and lost with it.
    path = tmp_path / "rotations.jsonl"
    path.write_bytes(b'{"file": "context_1.jsonl"}\n{"file": "context_2.js')
    append_line(path, json.dumps({"file": "context_3.jsonl"}))
    lines = path.read_bytes().splitlines()
    assert lines[-1] == b'{"file": "context_3.jsonl"}' and len(lines) == 3


def test_a_log_line_that_cannot_be_written_prints_no_traceback(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    logger = logging.getLogger("kode_tui")
    before = list(logger.handlers)
    cli._start_logging()
    try:
        (handler,) = [h for h in logger.handlers if h not in before]
        assert isinstance(handler, logging.FileHandler)

        def full(*args: Any) -> int:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        monkeypatch.setattr(handler.stream, "write", full)
        monkeypatch.setattr(logging, "raiseExceptions", True)
        logger.warning("this line finds no room")
    finally:
        for handler in logger.handlers[:]:
            if handler not in before:
                logger.removeHandler(handler)
                handler.close()
    assert capsys.readouterr().err == ""


async def test_starts_on_a_full_disk_keep_the_torn_line_and_make_no_copies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "context.jsonl"
    path.write_bytes(TORN)

    def no_room(*args: Any) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(context_module, "copy_range", no_room)
    for _ in range(3):
        context = Context(path)
        await context.restore()
        assert [m.text for m in context.history] == ["one"]
        assert any("torn" in warning for warning in context.warnings)
        await context.close()

    assert list(tmp_path.glob("context.jsonl.damaged-*")) == []
    assert path.read_bytes() == TORN  # nothing cut without a copy aside


async def test_a_copy_already_made_is_not_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "context.jsonl"
    path.write_bytes(TORN)
    real_ftruncate = os.ftruncate

    def cannot_cut(fd: int, size: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}").endswith("context.jsonl"):
            raise OSError(errno.EIO, "cannot cut now")
        real_ftruncate(fd, size)

    monkeypatch.setattr(os, "ftruncate", cannot_cut)
    first = Context(path)
    await first.restore()
    await first.close()
    assert len(list(tmp_path.glob("context.jsonl.damaged-*"))) == 1

    monkeypatch.setattr(os, "ftruncate", real_ftruncate)
    second = Context(path)
    await second.restore()
    await second.close()
    (aside,) = tmp_path.glob("context.jsonl.damaged-*")
    assert aside.read_bytes() == TORN
    assert path.read_bytes() == b'{"role":"user","content":"one"}\n'


async def test_continuing_a_session_on_a_full_disk_opens_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.session_helpers import session_with_turns

    project, _ = await session_with_turns(tmp_path, 1)
    FullDisk(monkeypatch, ".tmp", room=0)  # kode.json (the last session) cannot be rewritten

    opened = await cli._open(cli.build_parser().parse_args(["-C", str(project)]), project)

    assert opened.session is not None and len(opened.session.travel.timeline().history) == 3
    await opened.session.close()
