"""Kimi CLI 1.52 reads every line of the wire.jsonl files we write, and we read its records.

Events Kimi has a type for go to wire.jsonl in Kimi's shape; the others go to the sidecar
wire.kode.jsonl, and `read_wire()` merges both. Without kimi-cli the shapes are checked against
tests/fixtures/kimi_wire_fields.json (made by bench/kimi_wire_fields.py with kimi-cli 1.52);
with it (KODE_TUI_KIMI_PYTHON or /tmp/kimi-ref), Kimi's own reader reads the files.
"""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kode_tui.config import Config, resolve_model
from kode_tui.message import FunctionBody
from kode_tui.session import Session
from kode_tui.soul.agent import open_agent
from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.soul.transcript import PastResults
from kode_tui.ui.widgets.activity import Activity
from kode_tui.wire import WireBus, WireRecorder, read_wire
from kode_tui.wire import events as ev
from kode_tui.wire.records import from_record, sidecar_path, to_record
from tests.conftest import KIMI_FIXTURE
from tests.soul_helpers import call, make_rig
from tests.test_kimi_compat import kimi
from tests.test_kimi_compat import pytestmark as pytestmark_of_kimi_compat
from tests.wire.test_events import SAMPLES

KIMI_FIELDS = json.loads((Path(__file__).parent / "fixtures/kimi_wire_fields.json").read_text())
KIMI_TYPES: dict[str, Any] = KIMI_FIELDS["types"]
KIMI_NESTED: dict[str, Any] = KIMI_FIELDS["nested"]
DISPLAY_MODELS = {
    "diff": "DiffDisplayBlock",
    "shell": "ShellDisplayBlock",
    "todo": "TodoDisplayBlock",
    "brief": "BriefDisplayBlock",
}

needs_kimi = pytestmark_of_kimi_compat


def kimi_shape_problems(line: dict[str, Any]) -> list[str]:
    """What keeps Kimi 1.52 from reading a wire.jsonl line, judged by its models' field sets."""
    if line.get("type") == "metadata":
        return []
    kind, payload = line["message"]["type"], line["message"]["payload"]
    if kind not in KIMI_TYPES:
        return [f"{kind}: Kimi has no such type"]
    problems = missing(kind, payload, KIMI_TYPES[kind])
    if kind == "ToolResult":
        value = payload.get("return_value", {})
        problems += missing("return_value", value, KIMI_NESTED["ToolReturnValue"])
        for block in value.get("display", []):
            model = DISPLAY_MODELS.get(block["type"])
            if model is not None:
                problems += missing(model, block, KIMI_NESTED[model])
    if kind == "StatusUpdate" and payload.get("token_usage") is not None:
        problems += missing("token_usage", payload["token_usage"], KIMI_NESTED["TokenUsage"])
    return problems


def missing(name: str, payload: dict[str, Any], fields: dict[str, Any]) -> list[str]:
    return [f"{name} lacks {field}" for field in fields["required"] if field not in payload]


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize(
    "event", [e for e in SAMPLES if e.kimi], ids=lambda event: type(event).__name__
)
def test_each_event_kimi_has_a_type_for_is_recorded_in_kimis_shape(event: ev.Event) -> None:
    record = to_record(event, 1.0)

    assert kimi_shape_problems(record) == []
    kind = record["message"]["type"]
    fields = KIMI_TYPES[kind]
    # Kimi's models ignore the keys they lack, which is what lets ours ride along.
    assert fields["extra"] == "ignore"


def test_a_retry_is_recorded_with_kimis_fields_and_our_message() -> None:
    retry = ev.StepRetry(
        n=2,
        attempt=1,
        max_attempts=3,
        wait_s=0.5,
        error="HTTP 429: slow down",
        error_type="LLMStatusError",
        status_code=429,
    )

    payload = to_record(retry, 1.0)["message"]["payload"]

    kimi_fields = KIMI_TYPES["StepRetry"]
    assert set(payload) == {
        *kimi_fields["required"],
        *kimi_fields["optional"],
        "error",
        "server_wait",
    }
    assert payload["next_attempt"] == 2 and payload["error_type"] == "LLMStatusError"


def test_kimis_retries_are_read_and_shown_as_ours() -> None:
    kimi_retry = {
        "timestamp": 5.0,
        "message": {
            "type": "StepRetry",
            "payload": {
                "n": 2,
                "next_attempt": 2,
                "max_attempts": 3,
                "wait_s": 2.0,
                "error_type": "APIStatusError",
                "status_code": 503,
            },
        },
    }

    retry = from_record(kimi_retry).event

    assert retry == ev.StepRetry(
        n=2,
        attempt=1,
        max_attempts=3,
        wait_s=2.0,
        error="APIStatusError",
        error_type="APIStatusError",
        status_code=503,
    )
    activity = Activity(lambda: 100.0)
    activity.see(ev.TurnBegin(user_input="hi"))
    activity.see(retry)
    assert "retrying in 2 s (attempt 2 of 3)" in activity.text()


def test_kimi_shaped_records_with_values_of_the_wrong_type_are_kept_not_fatal(
    tmp_path: Path,
) -> None:
    payloads = {
        "StepRetry": {"n": 1, "next_attempt": "two", "max_attempts": 3, "wait_s": 1.0},
        "StatusUpdate": {"context_tokens": 10, "token_usage": {"input_other": "x", "output": 2}},
        "ToolCallPart": {"arguments_part": 5},
    }
    wire = tmp_path / "wire.jsonl"
    wire.write_text(
        "".join(
            json.dumps({"timestamp": 1.0, "message": {"type": kind, "payload": payload}}) + "\n"
            for kind, payload in payloads.items()
        )
    )

    records = list(read_wire(wire))

    assert [r.type for r in records] == list(payloads)
    assert records[0].event is None and records[2].event is None
    assert records[1].event == ev.StatusUpdate(
        context_tokens=10, max_context_tokens=0, usage=ev.TokenUsage(input=0, output=2)
    )


async def record_a_session(tmp_path: Path) -> tuple[Path, list[ev.Event]]:
    """A turn with a retry, two approvals (one rejected with feedback), a tool call whose
    arguments stream in pieces, a compaction, a revert and a restore, recorded to a wire.jsonl."""
    rig = await make_rig(
        tmp_path,
        [
            {"error": {"status": 429, "message": "slow down"}},
            {
                "text": "Touching.",
                "tool_calls": [
                    call("Touch", path="a.txt"),
                    call("TodoWrite", todos=[{"title": "touch b", "status": "in_progress"}]),
                ],
            },
            {"text": "Again.", "tool_calls": [call("Touch", path="b.txt")]},
            {"text": "Done."},
            {"text": "Second turn."},
            {"text": "A summary of it all."},
        ],
    )
    rig.answers = ["approve", ev.RejectWithFeedback(feedback="not b")]
    wire = tmp_path / "session" / "wire.jsonl"
    async with WireRecorder(rig.bus, wire):
        assert (await rig.soul.run("touch a and b")).stop_reason == "done"
        first = rig.context.checkpoints[0].id
        assert (await rig.soul.run("go on")).stop_reason == "done"
        await rig.soul.compact()
        reverted = await rig.soul.travel.revert(first)
        await rig.soul.travel.restore(reverted.rotated_file)
        await rig.settle()
    return wire, rig.events


async def test_our_records_stay_out_of_wire_jsonl_and_read_wire_merges_them_back_in_order(
    tmp_path: Path,
) -> None:
    wire, sent = await record_a_session(tmp_path)

    problems = [p for line in lines_of(wire) for p in kimi_shape_problems(line)]
    assert problems == []
    sidecar = {line["message"]["type"] for line in lines_of(sidecar_path(wire))}
    assert {"CheckpointCreated", "ContextReverted", "ContextRestored"} <= sidecar

    def shown(event: ev.Event) -> bool:
        return event.recorded and not isinstance(event, ev.ContentPart | ev.ToolCallPart)

    def seen(event: ev.Event) -> Any:
        # A call is sent before its arguments stream in; its record holds them.
        return type(event).__name__ if isinstance(event, ev.ToolCall) else event.payload()

    expected = [seen(event) for event in sent if shown(event)]
    read = [r.event for r in read_wire(wire) if r.event is not None and shown(r.event)]
    assert [seen(event) for event in read] == expected
    calls = [event.function.arguments for event in read if isinstance(event, ev.ToolCall)]
    todo = '{"todos": [{"title": "touch b", "status": "in_progress"}]}'
    assert calls == ['{"path": "a.txt"}', todo, '{"path": "b.txt"}']
    kinds = [type(event).__name__ for event in sent if shown(event)]
    assert {"StepRetry", "ApprovalResolved", "CompactionEnd", "ContextRestored"} <= set(kinds)


async def test_tool_call_arguments_are_stored_in_the_call_as_kimi_stores_them(
    tmp_path: Path,
) -> None:
    bus = WireBus()
    wire = tmp_path / "wire.jsonl"
    async with WireRecorder(bus, wire) as recorder:
        bus.send(ev.ToolCall(id="c1", function=FunctionBody(name="Shell", arguments="")))
        bus.send(ev.ToolCallPart(id="c1", arguments_delta='{"command": '))
        bus.send(ev.ToolCallPart(id="c1", arguments_delta='"ls"}'))
        bus.send(ev.ToolCallPart(id="stray", arguments_delta="{}"))
        bus.send(ev.TurnEnd())
        await recorder.flush()

    assert [line["message"] for line in lines_of(wire)[1:]] == [
        {
            "type": "ToolCall",
            "payload": {
                "type": "function",
                "id": "c1",
                "function": {"name": "Shell", "arguments": '{"command": "ls"}'},
                "extras": None,
            },
        },
        {"type": "TurnEnd", "payload": {}},
    ]
    (stray,) = lines_of(sidecar_path(wire))
    assert stray["message"]["payload"] == {"id": "stray", "arguments_delta": "{}"}


async def test_the_sidecar_is_only_created_for_a_record_kimi_cannot_read(tmp_path: Path) -> None:
    bus = WireBus()
    wire = tmp_path / "wire.jsonl"
    async with WireRecorder(bus, wire) as recorder:
        bus.send(ev.TurnBegin(user_input="hi"))
        await recorder.flush()
        assert not sidecar_path(wire).exists()
        bus.send(ev.Warning(message="careful"))
        bus.send(ev.TurnEnd())

    assert [r.type for r in read_wire(wire)] == ["TurnBegin", "Warning", "TurnEnd"]
    assert sidecar_path(wire).name == "wire.kode.jsonl"


async def test_a_torn_sidecar_line_is_left_and_the_next_record_starts_a_line_of_its_own(
    tmp_path: Path,
) -> None:
    bus = WireBus()
    wire = tmp_path / "wire.jsonl"
    sidecar_path(wire).write_text('{"timestamp": 1.0, "wire_offset": 0, "message": {"ty')
    async with WireRecorder(bus, wire):
        bus.send(ev.Warning(message="after a crash"))

    assert [r.event for r in read_wire(wire)] == [ev.Warning(message="after a crash")]


def test_kimis_subagent_events_do_not_break_reading(tmp_path: Path) -> None:
    # A subagent's own tool call ids may repeat the parent's: its results must not be taken
    # for the parent's.
    subagent_result = {
        "type": "ToolResult",
        "payload": {
            "tool_call_id": "call_1_0",
            "return_value": {"is_error": False, "output": "inner", "message": "", "display": []},
        },
    }
    lines = [
        {"type": "metadata", "protocol_version": "1.9"},
        {"timestamp": 1.0, "message": {"type": "TurnBegin", "payload": {"user_input": "go"}}},
        {
            "timestamp": 2.0,
            "message": {
                "type": "SubagentEvent",
                "payload": {
                    "parent_tool_call_id": "call_1_0",
                    "agent_id": "a1",
                    "subagent_type": "coder",
                    "event": subagent_result,
                },
            },
        },
        {
            "timestamp": 3.0,
            "message": subagent_result
            | {
                "payload": {
                    "tool_call_id": "call_1_0",
                    "return_value": {
                        "is_error": False,
                        "output": "outer",
                        "message": "",
                        "display": [],
                    },
                }
            },
        },
        {"timestamp": 4.0, "message": {"type": "TurnEnd", "payload": {}}},
    ]  # fmt: skip
    wire = tmp_path / "wire.jsonl"
    wire.write_text("".join(json.dumps(line) + "\n" for line in lines))

    records = list(read_wire(wire))

    assert [r.type for r in records] == ["TurnBegin", "SubagentEvent", "ToolResult", "TurnEnd"]
    assert records[1].event is None and records[1].raw == lines[2]
    result = PastResults.read(wire).find("call_1_0", "")
    assert result is not None and result.output == "outer"


KIMI_MEDIA_RESULT: dict[str, Any] = {
    "tool_call_id": "call_1_0",
    "return_value": {
        "is_error": False,
        "output": [
            {"type": "text", "text": '<image path="/tmp/cat.png">'},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO", "id": None}},
            {"type": "text", "text": "</image>"},
            {"type": "audio_url", "audio_url": {"url": "data:audio/mp3;base64,SUQz", "id": None}},
        ],
        "message": "Loaded.",
        "display": [],
        "extras": None,
    },
}
"""Made by kimi-cli 1.52: `WireMessageEnvelope.from_wire_message(ToolResult(...,
return_value=ToolOk(output=[TextPart, ImageURLPart, TextPart, AudioURLPart])))`."""


def test_a_kimi_result_whose_output_is_a_list_of_parts_is_read_with_its_media(
    tmp_path: Path,
) -> None:
    record = {"timestamp": 1.0, "message": {"type": "ToolResult", "payload": KIMI_MEDIA_RESULT}}
    wire = tmp_path / "wire.jsonl"
    wire.write_text(json.dumps(record) + "\n")

    result = PastResults.read(wire).find("call_1_0", "")

    assert result is not None
    assert result.output == '<image path="/tmp/cat.png"></image>'
    assert [part.type for part in result.parts] == ["image_url", "audio_url"]
    assert (
        to_record(result, 1.0)["message"]["payload"]["return_value"]["output"][1:]
        == (KIMI_MEDIA_RESULT["return_value"]["output"][1::2])
    )


# --- with kimi-cli -------------------------------------------------------------------------------

KIMI_READ_EVERY_LINE = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from kimi_cli.cli.export import _last_user_message_timestamp
    from kimi_cli.wire.file import WireFileMetadata, parse_wire_file_line

    wire = Path(sys.argv[1])
    read, unread = [], []
    for number, line in enumerate(wire.read_text(encoding="utf-8").splitlines(), start=1):
        try:
            record = parse_wire_file_line(line)
            if not isinstance(record, WireFileMetadata):
                record.to_wire_message()
            read.append(json.loads(line).get("message", {}).get("type", "metadata"))
        except Exception as error:
            unread.append(f"{number}: {error}")
    # What `kimi export` runs on a session (it failed on our records).
    last_turn = _last_user_message_timestamp(wire.parent)
    print(json.dumps({"read": sorted(set(read)), "unread": unread, "last_turn": last_turn}))
    """
)


@needs_kimi
async def test_kimi_reads_every_line_we_recorded_through_a_retry_a_compaction_and_time_travel(
    tmp_path: Path,
) -> None:
    wire, _ = await record_a_session(tmp_path)

    seen = kimi(KIMI_READ_EVERY_LINE, wire)

    assert seen["unread"] == []
    assert {"StepRetry", "ApprovalRequest", "ApprovalResponse", "CompactionEnd"} <= set(
        seen["read"]
    )
    assert seen["last_turn"] is not None


@needs_kimi
async def test_kimi_reads_every_line_of_its_session_after_we_went_on_reverted_and_restored(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "kimi-session"
    shutil.copytree(KIMI_FIXTURE, folder)
    kimis_lines = (folder / "wire.jsonl").read_bytes()
    session = await Session.from_dir(folder)
    provider = ScriptedProvider(
        [
            {"text": "Writing.", "tool_calls": [call("WriteFile", path="a.txt", content="a")]},
            {"text": "Done."},
        ]
    )
    work_dir = tmp_path / "project"
    work_dir.mkdir()
    agent = await open_agent(
        session,
        Config(),
        resolve_model(Config()),
        provider=provider,
        approval_override="yolo",
        work_dir=work_dir,
    )
    first = len(agent.soul.context.checkpoints)
    assert (await agent.soul.run("write a.txt")).stop_reason == "done"
    reverted = await agent.soul.travel.revert(agent.soul.context.checkpoints[first].id, files=True)
    await agent.soul.travel.restore(reverted.rotated_file, files=True)
    await agent.close()
    assert (work_dir / "a.txt").read_text() == "a"

    seen = kimi(KIMI_READ_EVERY_LINE, folder / "wire.jsonl")

    assert seen["unread"] == []
    assert (folder / "wire.jsonl").read_bytes().startswith(kimis_lines)
    assert {"CompactionEnd", "StatusUpdate", "ToolCall", "ToolResult"} <= set(seen["read"])
    types = [r.type for r in read_wire(folder / "wire.jsonl")]
    assert types.count("ContextReverted") == 1 and types.count("ContextRestored") == 1
    assert types.index("ContextReverted") > len(kimis_lines.splitlines()) - 1


KIMI_EXPORT = textwrap.dedent(
    """
    import asyncio, json, os, shutil, sys, zipfile
    from pathlib import Path
    import typer
    from kaos.path import KaosPath
    from kimi_cli.__main__ import run_original_cli
    from kimi_cli.metadata import load_metadata, save_metadata
    from kimi_cli.session import Session

    ours = Path(sys.argv[1])
    project = ours.parent / "kimi-project"
    project.mkdir()
    work_dir = KaosPath.unsafe_from_local_path(project)
    session = asyncio.run(Session.create(work_dir))
    for path in ours.iterdir():
        if path.is_file() and path.name != "lock":
            shutil.copy2(path, session.dir / path.name)
    metadata = load_metadata()
    metadata.get_work_dir_meta(work_dir.canonical()).last_session_id = session.id
    save_metadata(metadata)
    typer.confirm = lambda *args, **kwargs: True  # the user answers "y"
    os.chdir(project)
    out = ours.parent / "export.zip"
    # The installed `kimi` command only prints a deprecation notice; this is what it ran.
    code = run_original_cli(["export", "-o", str(out)])
    print(json.dumps({"code": code, "files": sorted(zipfile.ZipFile(out).namelist())}))
    """
)


@needs_kimi
async def test_kimi_export_takes_a_session_we_recorded_our_records_included(
    tmp_path: Path,
) -> None:
    wire, _ = await record_a_session(tmp_path)

    exported = kimi(KIMI_EXPORT, wire.parent)

    assert exported["code"] in (0, None)
    assert {"wire.jsonl", "wire.kode.jsonl", "context.jsonl"} <= set(exported["files"])
