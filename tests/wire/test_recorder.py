from __future__ import annotations

import itertools
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from kode_tui import masking
from kode_tui.message import FunctionBody, ImageURL, ImageURLPart, TextPart, ThinkPart
from kode_tui.wire import WireBus, WireRecorder, events, read_wire
from kode_tui.wire import recorder as recorder_module
from kode_tui.wire.events import ContentPart, Event, StepBegin, ToolCallPart, TurnBegin, TurnEnd

HEADER = '{"type": "metadata", "protocol_version": "1"}'


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> itertools.count[float]:
    """time.time() as seen by the recorder: 1.0, 2.0, 3.0, ..."""
    ticks = itertools.count(1.0)

    class FakeTime:
        @staticmethod
        def time() -> float:
            return next(ticks)

    monkeypatch.setattr(recorder_module, "time", FakeTime)
    return ticks


def _text(text: str) -> ContentPart:
    return ContentPart(part=TextPart(text=text))


def _think(text: str) -> ContentPart:
    return ContentPart(part=ThinkPart(think=text))


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _events(path: Path) -> list[Event | None]:
    return [record.event for record in read_wire(path)]


async def _record(path: Path, sent: list[Event]) -> None:
    bus = WireBus()
    async with WireRecorder(bus, path):
        for event in sent:
            bus.send(event)


async def test_a_new_file_starts_with_one_metadata_line(tmp_path: Path) -> None:
    path = tmp_path / "wire.jsonl"

    await _record(path, [TurnBegin(user_input="hi"), TurnEnd()])

    lines = path.read_text().splitlines()
    assert lines[0] == HEADER
    assert HEADER not in lines[1:]
    assert _events(path) == [TurnBegin(user_input="hi"), TurnEnd()]


async def test_a_resumed_file_is_appended_to_without_a_second_header(tmp_path: Path) -> None:
    path = tmp_path / "wire.jsonl"

    await _record(path, [TurnBegin(user_input="first"), TurnEnd()])
    await _record(path, [TurnBegin(user_input="second"), TurnEnd()])

    assert path.read_text().splitlines().count(HEADER) == 1
    assert _events(path) == [
        TurnBegin(user_input="first"),
        TurnEnd(),
        TurnBegin(user_input="second"),
        TurnEnd(),
    ]


async def test_records_after_a_torn_last_line_start_on_a_line_of_their_own(
    tmp_path: Path,
) -> None:
    path = tmp_path / "wire.jsonl"
    path.write_text(HEADER + '\n{"timestamp": 1.0, "message": {"ty')

    await _record(path, [TurnBegin(user_input="after the crash")])

    assert _events(path) == [TurnBegin(user_input="after the crash")]


async def test_a_hundred_text_deltas_become_one_record_stamped_with_the_first(
    tmp_path: Path, clock: itertools.count[float]
) -> None:
    path = tmp_path / "wire.jsonl"
    deltas = [f"word{n} " for n in range(100)]

    await _record(path, [StepBegin(n=1), *map(_text, deltas), TurnEnd()])

    records = _lines(path)[1:]
    assert [record["message"]["type"] for record in records] == [
        "StepBegin",
        "ContentPart",
        "TurnEnd",
    ]
    assert records[1]["message"]["payload"] == {"type": "text", "text": "".join(deltas)}
    assert records[1]["timestamp"] == 2.0
    assert records[2]["timestamp"] == 102.0


async def test_another_event_ends_a_run_of_text(tmp_path: Path) -> None:
    path = tmp_path / "wire.jsonl"
    call = events.ToolCall(id="c1", function=FunctionBody(name="Shell", arguments="{}"))

    await _record(path, [_text("Let me "), _text("look."), call, _text("Done"), _text(".")])

    assert _events(path) == [_text("Let me look."), call, _text("Done.")]


async def test_think_and_text_deltas_are_not_merged_together(tmp_path: Path) -> None:
    path = tmp_path / "wire.jsonl"
    signed = ContentPart(part=ThinkPart(think="it.", encrypted="sig"))

    await _record(path, [_think("Read "), signed, _text("Reading "), _text("it.")])

    assert _events(path) == [
        ContentPart(part=ThinkPart(think="Read it.", encrypted="sig")),
        _text("Reading it."),
    ]


async def test_image_parts_are_recorded_one_by_one(tmp_path: Path) -> None:
    path = tmp_path / "wire.jsonl"
    image = ContentPart(part=ImageURLPart(image_url=ImageURL(url="data:image/png;base64,AA")))

    await _record(path, [image, image])

    assert _events(path) == [image, image]


async def test_argument_deltas_of_one_tool_call_become_one_record(tmp_path: Path) -> None:
    path = tmp_path / "wire.jsonl"

    await _record(
        path,
        [
            ToolCallPart(id="a", arguments_delta='{"path": '),
            ToolCallPart(id="a", arguments_delta='"x.py"}'),
            ToolCallPart(id="b", arguments_delta="{}"),
        ],
    )

    assert _events(path) == [
        ToolCallPart(id="a", arguments_delta='{"path": "x.py"}'),
        ToolCallPart(id="b", arguments_delta="{}"),
    ]


async def test_flush_writes_the_current_run_before_close(tmp_path: Path) -> None:
    path = tmp_path / "wire.jsonl"
    bus = WireBus()
    recorder = WireRecorder(bus, path)
    recorder.start()

    bus.send(StepBegin(n=1))
    bus.send(_text("streaming"))
    await recorder.flush()
    on_disk = _events(path)
    await recorder.close()

    assert on_disk == [StepBegin(n=1), _text("streaming")]


async def test_records_are_synced_at_turn_end_and_on_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[int] = []
    monkeypatch.setattr(os, "fsync", synced.append)
    bus = WireBus()
    recorder = WireRecorder(bus, tmp_path / "wire.jsonl")
    recorder.start()

    bus.send(TurnBegin(user_input="hi"))
    await recorder.flush()
    assert synced == []
    bus.send(TurnEnd())
    await recorder.flush()
    assert len(synced) == 1
    await recorder.close()

    assert len(synced) == 2


async def test_the_file_is_private_and_its_directory_is_created(tmp_path: Path) -> None:
    path = tmp_path / "sessions" / "abc" / "wire.jsonl"

    await _record(path, [TurnEnd()])

    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700


async def test_everything_sent_before_the_bus_closes_is_on_disk_after_close(
    tmp_path: Path,
) -> None:
    path = tmp_path / "wire.jsonl"
    bus = WireBus()
    recorder = WireRecorder(bus, path)
    recorder.start()
    sent: list[Event] = [TurnBegin(user_input="hi"), StepBegin(n=1), _text("a"), TurnEnd()]

    for event in sent:
        bus.send(event)
    await bus.close()
    await recorder.close()

    assert _events(path) == sent


async def test_non_ascii_text_is_written_as_is(tmp_path: Path) -> None:
    path = tmp_path / "wire.jsonl"

    await _record(path, [TurnBegin(user_input="héllo 世界")])

    assert "héllo 世界" in path.read_text()


async def test_a_record_over_the_size_limit_is_kept_shortened_and_the_log_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # A 40 MB prompt pasted over ACP: its turn stays in the replay, with its text cut, and a key
    # that the cut splits leaves no piece of itself.
    key = "sk-live-" + "k" * 40
    monkeypatch.setenv("KODE_TEST_API_KEY", key)
    masking.refresh()
    kept = recorder_module._KEPT_TEXT
    prompt = "p" * (kept - 10) + key + "q" * (40_000_000 - kept)
    path = tmp_path / "wire.jsonl"

    await _record(path, [TurnBegin(user_input=prompt), StepBegin(n=1), TurnEnd()])

    turn, step, end = _events(path)
    assert isinstance(turn, TurnBegin) and isinstance(turn.user_input, str)
    assert turn.user_input.startswith("p" * 1000)
    assert "… [cut: this record was 38 MiB, over the 16 MiB limit of one]" in turn.user_input
    assert key[:6] not in path.read_text()
    assert step == StepBegin(n=1) and end == TurnEnd()
    [warning] = [r.getMessage() for r in caplog.records if r.name == recorder_module.__name__]
    assert "a record of 38 MiB is over the 16 MiB limit of one" in warning
    assert "disk full" not in warning
