"""What a session's files say about past tool calls (soul/transcript.py), read without a UI."""

from __future__ import annotations

import json
from pathlib import Path

from kode_tui.message import FunctionBody, Message, TextPart
from kode_tui.soul.transcript import PastResults, stored_result
from kode_tui.wire import events as ev
from kode_tui.wire import records


def write_wire(path: Path, *events: ev.Event) -> Path:
    lines = [json.dumps(records.METADATA), *(json.dumps(records.to_record(e, 1.0)) for e in events)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def shell_call(call_id: str, arguments: str = "") -> ev.ToolCall:
    return ev.ToolCall(id=call_id, function=FunctionBody(name="Shell", arguments=arguments))


def result(call_id: str, brief: str) -> ev.ToolResult:
    return ev.ToolResult(tool_call_id=call_id, output="", display=[ev.BriefBlock(text=brief)])


def test_a_result_is_found_by_its_call_id_and_the_arguments_streamed_in_parts(
    tmp_path: Path,
) -> None:
    wire = write_wire(
        tmp_path / "wire.jsonl",
        shell_call("c1"),
        ev.ToolCallPart(id="c1", arguments_delta='{"command": '),
        ev.ToolCallPart(id="c1", arguments_delta='"make test"}'),
        result("c1", "exit 0"),
    )

    past = PastResults.read(wire)

    found = past.find("c1", '{"command":"make test"}')  # the same JSON, spaced differently
    assert found is not None and found.display == [ev.BriefBlock(text="exit 0")]
    assert past.find("c1", '{"command": "rm -rf /"}') is None
    assert past.find("c2", '{"command": "make test"}') is None


def test_a_call_id_used_again_in_a_later_step_finds_the_result_of_its_own_arguments(
    tmp_path: Path,
) -> None:
    # Kimi CLI numbers calls per step, so `call_1_0` recurs in one wire.
    wire = write_wire(
        tmp_path / "wire.jsonl",
        shell_call("call_1_0", '{"command": "ls"}'),
        result("call_1_0", "first"),
        shell_call("call_1_0", '{"command": "pwd"}'),
        result("call_1_0", "second"),
    )

    past = PastResults.read(wire)

    assert past.find("call_1_0", '{"command": "ls"}') == result("call_1_0", "first")
    assert past.find("call_1_0", '{"command": "pwd"}') == result("call_1_0", "second")


def test_kimis_argument_pieces_extend_the_call_before_them(tmp_path: Path) -> None:
    # Kimi CLI's ToolCallPart has no call id: `{"arguments_part": "..."}`.
    wire = write_wire(tmp_path / "wire.jsonl", shell_call("call_1_0"), result("call_1_0", "ok"))
    lines = wire.read_text().splitlines()
    piece = {"timestamp": 1.0, "message": {"type": "ToolCallPart", "payload": {}}}
    pieces = [
        json.dumps(piece | {"message": {"type": "ToolCallPart", "payload": {"arguments_part": a}}})
        for a in ('{"command": ', '"ls"}')
    ]
    wire.write_text("\n".join([*lines[:2], *pieces, lines[2]]) + "\n")

    found = PastResults.read(wire).find("call_1_0", '{"command": "ls"}')

    assert found == result("call_1_0", "ok")
    assert PastResults.read(wire).find("call_1_0", '{"command": "pwd"}') is None


def test_a_missing_wire_file_has_no_results(tmp_path: Path) -> None:
    assert PastResults.read(tmp_path / "wire.jsonl").find("c1", "{}") is None


def test_a_stored_tool_message_reads_back_as_a_result_with_its_status() -> None:
    failed = Message(
        role="tool",
        tool_call_id="c1",
        content=[
            TextPart(text="<system>ERROR: Command failed with exit code 1.</system>"),
            TextPart(text="boom"),
        ],
    )
    done = Message(role="tool", tool_call_id="c2", content="<system>Done.</system>\nok")
    plain = Message(role="tool", tool_call_id="c3", content="just output")

    assert stored_result(failed) == ev.ToolResult(
        tool_call_id="c1", is_error=True, output="boom", message="Command failed with exit code 1."
    )
    assert stored_result(done) == ev.ToolResult(tool_call_id="c2", output="ok", message="Done.")
    assert stored_result(plain) == ev.ToolResult(tool_call_id="c3", output="just output")
