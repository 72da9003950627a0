from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from kode_tui.message import FunctionBody, ImageURL, ImageURLPart, TextPart, ThinkPart
from kode_tui.wire import events, read_wire
from kode_tui.wire.events import (
    ApprovalRequest,
    ApprovalResolved,
    BriefBlock,
    DiffBlock,
    RejectWithFeedback,
    ShellBlock,
    TodoBlock,
    TodoItem,
    TokenUsage,
    UnknownBlock,
)
from kode_tui.wire.records import EVENT_TYPES, METADATA, from_record, to_record
from tests.conftest import KIMI_FIXTURE


def _kimi_wire() -> Path:
    return KIMI_FIXTURE / "wire.jsonl"


def _kimi_lines() -> list[dict[str, Any]]:
    return [json.loads(line) for line in _kimi_wire().read_text().splitlines()]


def _kimi_message(kind: str, predicate: Any = lambda payload: True) -> dict[str, Any]:
    for line in _kimi_lines():
        message = line.get("message")
        if message and message["type"] == kind and predicate(message["payload"]):
            return message  # type: ignore[no-any-return]
    raise AssertionError(f"no {kind} in the fixture")


DISPLAY: list[events.DisplayBlock] = [
    DiffBlock(path="a.py", old_text="x = 1\n", new_text="x = 2\n"),
    ShellBlock(command="git status"),
    TodoBlock(items=[TodoItem(title="write tests", status="in_progress")]),
    BriefBlock(text="3 files changed"),
]

SAMPLES: list[events.Event] = [
    events.TurnBegin(user_input="Create hello.py"),
    events.TurnBegin(
        user_input=[TextPart(text="look at "), ImageURLPart(image_url=ImageURL(url="data:x"))]
    ),
    events.TurnEnd(),
    events.StepBegin(n=3),
    events.StepInterrupted(reason="cancelled by the user"),
    events.StepRetry(n=2, attempt=1, max_attempts=3, wait_s=0.6, error="429 Too Many Requests"),
    events.ContentPart(part=TextPart(text="Héllo")),
    events.ContentPart(part=ThinkPart(think="hmm", encrypted="sig")),
    events.ContentPart(part=ImageURLPart(image_url=ImageURL(url="data:image/png;base64,AA"))),
    events.ToolCall(
        id="call_1", function=FunctionBody(name="Shell", arguments='{"command": "ls"}')
    ),
    events.ToolCallPart(id="call_1", arguments_delta='{"comm'),
    events.ToolResult(
        tool_call_id="call_1", is_error=False, output="a.py\n", message="1 file", display=DISPLAY
    ),
    events.ToolResult(
        tool_call_id="call_2",
        output='<image path="cat.png"></image>',
        parts=[ImageURLPart(image_url=ImageURL(url="data:image/png;base64,AA"))],
    ),
    events.ApprovalRequest(
        id="ap_1", tool_call_id="call_1", action="run command", description="ls", display=DISPLAY
    ),
    events.ApprovalResolved(id="ap_1", response="approve_for_session"),
    events.ApprovalResolved(id="ap_2", response=RejectWithFeedback(feedback="use git ls-files")),
    # Issue 29: ExitPlanMode's request and its answers, in Kimi's shape with ours riding along.
    events.ApprovalRequest(
        id="ap_3",
        tool_call_id="call_3",
        action="approve the plan",
        description="# Plan",
        tool_name="ExitPlanMode",
        plan=events.PlanAsk(
            file_path="/h/plans/plan-1.md",
            options=[events.PlanApproach(label="Fast"), events.PlanApproach(label="Safe")],
            modes=["ask", "auto-edit", "yolo"],
            mode="auto-edit",
        ),
    ),
    events.ApprovalResolved(
        id="ap_3",
        response=events.PlanVerdict(choice="approve", mode="yolo", option="Safe", plan="# Mine"),
    ),
    events.ApprovalResolved(
        id="ap_4", response=events.PlanVerdict(choice="revise", feedback="smaller steps")
    ),
    events.CheckpointCreated(id=4),
    events.StatusUpdate(
        context_tokens=12_000,
        max_context_tokens=200_000,
        reserved_tokens=50_000,
        trigger_tokens=150_000,
        usage=TokenUsage(input=11_000, output=1_000, cache_read=9_000),
    ),
    events.StatusUpdate(
        context_tokens=1, max_context_tokens=2, reserved_tokens=0, trigger_tokens=1
    ),
    events.CompactionBegin(strategy="LLMSummaryCompaction"),
    events.CompactionEnd(tokens_before=48_000, tokens_after=3_000, rotated_file="context_1.jsonl"),
    events.ContextReverted(
        checkpoint_id=2,
        rotated_file="context_2.jsonl",
        reason="dmail",
        files_restored=["a.py"],
        conflicts=["b.py"],
    ),
    events.ContextRestored(from_file="context_1.jsonl", rotated_file="context_3.jsonl"),
    events.ContextCleared(rotated_file="context_4.jsonl"),
    events.ContextReloaded(),
    events.PermissionsChanged(mode="yolo", session_approvals=2),
    events.SystemReminders(
        reminders=[events.ReminderItem(kind="todo", text="Your todo list has changed.")]
    ),
    events.HookRan(
        hook_event="PreToolUse",
        command="python3 check.py",
        exit_code=2,
        duration_s=0.12,
        outcome="blocked",
        note="blocked: no rm",
        stderr="no rm\n",
        tool_call_id="call_1",
    ),
    events.CommandSent(command="/review", arguments="src/", file=".kode/commands/review.md"),
    events.ToolStarted(tool_call_id="call_1"),
    events.PlanDisplay(content="# Plan\n1. Add a test", file_path="/h/plans/plan-1a2b3c4d.md"),
    events.Warning(message="skipped a torn line"),
    events.Error(message="no API key"),
    events.QuestionRequest(
        id="q_1",
        tool_call_id="call_3",
        questions=[
            events.QuestionItem(
                question="Which database?",
                header="Storage",
                options=[
                    events.QuestionOption(label="Postgres", description="the one in prod"),
                    events.QuestionOption(label="SQLite"),
                ],
                multi_select=True,
            )
        ],
    ),
    events.BackgroundTaskUpdate(
        task_id="bash-a1b2c3d4", kind="bash", status="completed", description="tests", exit_code=0
    ),
]


def test_every_event_of_the_design_has_a_model_and_a_sample() -> None:
    designed = {
        "TurnBegin", "TurnEnd", "StepBegin", "StepInterrupted", "StepRetry", "ContentPart",
        "ToolCall", "ToolCallPart", "ToolResult", "ApprovalRequest", "ApprovalResolved",
        "CheckpointCreated", "StatusUpdate", "CompactionBegin", "CompactionEnd", "ContextReverted",
        "ContextRestored", "ContextCleared", "Warning", "Error",
        "SystemReminders",  # issue 4: reminders are shown, never stored in the context
        "ContextReloaded",  # issue 13: a read-only view read its writer's files again
        "PermissionsChanged",  # issue 15: the mode badge follows the mode and the approvals
        "HookRan",  # issue 18: a hook of the user's config ran
        "CommandSent",  # issue 18: a custom command's prompt is shown under its name
        "ToolStarted",  # issue 27: ACP shows a call in progress from its start
        "QuestionRequest",  # issue 29: AskUserQuestion asks the user
        "PlanDisplay",  # issue 29: the plan ExitPlanMode asks to approve (Kimi's own type)
        "BackgroundTaskUpdate",  # issue 29: a background task started or ended
    }  # fmt: skip
    assert set(EVENT_TYPES) == designed
    assert {type(sample).__name__ for sample in SAMPLES} == designed
    assert all(issubclass(cls, events.Event) for cls in EVENT_TYPES.values())


@pytest.mark.parametrize("event", SAMPLES, ids=lambda event: type(event).__name__)
def test_every_event_survives_a_round_trip_through_its_record(event: events.Event) -> None:
    line = json.dumps(to_record(event, 1795293186.75), ensure_ascii=False)

    record = from_record(json.loads(line))

    assert record.timestamp == 1795293186.75
    name = type(event).__name__
    assert record.type == {"ApprovalResolved": "ApprovalResponse"}.get(name, name)
    assert record.event == event


def test_content_part_records_look_like_kimis() -> None:
    kimi_text = _kimi_message("ContentPart", lambda payload: payload["type"] == "text")
    kimi_think = _kimi_message("ContentPart", lambda payload: payload["type"] == "think")

    text = events.ContentPart(part=TextPart(text=kimi_text["payload"]["text"]))
    think = events.ContentPart(part=ThinkPart(think=kimi_think["payload"]["think"]))

    assert to_record(text, 1.0)["message"] == kimi_text
    assert to_record(think, 1.0)["message"] == kimi_think


def test_tool_call_records_look_like_kimis() -> None:
    kimi = _kimi_message("ToolCall")
    function = kimi["payload"]["function"]

    call = events.ToolCall(
        id=kimi["payload"]["id"],
        function=FunctionBody(name=function["name"], arguments=function["arguments"]),
    )

    assert to_record(call, 1.0)["message"] == kimi


def test_kimi_fixture_gives_every_turns_user_input_in_order() -> None:
    records = list(read_wire(_kimi_wire()))

    turns = [record.event for record in records if isinstance(record.event, events.TurnBegin)]

    assert [turn.user_input for turn in turns] == [
        "Create hello.py",
        "Read big.txt and summarise it",
        "Now add a greeting function",
        "/compact keep the file names",
        "What did we do so far?",
    ]
    assert len(records) == len(_kimi_lines()) - 1  # all but the metadata line


def test_kimi_status_updates_and_compaction_ends_are_read() -> None:
    records = list(read_wire(_kimi_wire()))
    statuses = [record.event for record in records if record.type == "StatusUpdate"]
    ends = [record.event for record in records if record.type == "CompactionEnd"]

    assert statuses and ends
    assert statuses[0] == events.StatusUpdate(
        context_tokens=3822, max_context_tokens=12000, usage=TokenUsage(input=3822, output=16)
    )
    assert all(isinstance(status, events.StatusUpdate) for status in statuses)
    assert ends == [events.CompactionEnd()] * len(ends)


def test_kimi_tool_results_are_read_from_their_return_value() -> None:
    results = [record.event for record in read_wire(_kimi_wire()) if record.type == "ToolResult"]

    written = next(r for r in results if isinstance(r, events.ToolResult) and r.display)

    assert isinstance(written, events.ToolResult)
    assert written.message == "File successfully overwritten. Current size: 15 bytes."
    assert written.display == [
        DiffBlock(path="/home/dev/demo-repo/hello.py", old_text="", new_text="print('hello')")
    ]


def test_unknown_event_types_and_display_blocks_are_kept_not_dropped() -> None:
    unknown = {"timestamp": 2.0, "message": {"type": "SubagentEvent", "payload": {"x": 1}}}
    result = {
        "timestamp": 3.0,
        "message": {
            "type": "ToolResult",
            "payload": {"tool_call_id": "t", "display": [{"type": "chart", "points": [1, 2]}]},
        },
    }

    assert from_record(unknown).event is None
    assert from_record(unknown).raw == unknown
    event = from_record(result).event
    assert isinstance(event, events.ToolResult)
    assert event.display == [UnknownBlock.model_validate({"type": "chart", "points": [1, 2]})]


def test_a_line_without_timestamp_or_message_is_not_a_record() -> None:
    with pytest.raises(ValueError):
        from_record({"message": {"type": "TurnEnd", "payload": {}}})
    with pytest.raises(ValueError):
        from_record({"timestamp": 1.0})


def test_read_wire_skips_bad_lines_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "wire.jsonl"
    good = json.dumps(to_record(events.TurnBegin(user_input="hi"), 1.0))
    path.write_text(
        json.dumps(METADATA) + "\n" + good + "\n" + "[1, 2]\n\n" + good + "\n" + '{"times'
    )

    with caplog.at_level(logging.WARNING, logger="kode_tui.wire.events"):
        records = list(read_wire(path))

    assert [record.event for record in records] == [events.TurnBegin(user_input="hi")] * 2
    assert len(caplog.records) == 2


def test_read_wire_of_a_missing_file_yields_nothing(tmp_path: Path) -> None:
    assert list(read_wire(tmp_path / "absent.jsonl")) == []


def _request() -> ApprovalRequest:
    return ApprovalRequest(id="ap", tool_call_id="t", action="edit file", description="a.py")


async def test_approval_wait_returns_what_the_ui_resolves() -> None:
    request = _request()

    waiter = asyncio.create_task(request.wait())
    await asyncio.sleep(0)
    request.resolve(RejectWithFeedback(feedback="not that file"))

    assert await waiter == RejectWithFeedback(feedback="not that file")


async def test_approval_resolved_before_the_wait_keeps_the_first_answer() -> None:
    request = _request()

    request.resolve("approve")
    request.resolve("reject")

    assert await request.wait() == "approve"


async def test_resolving_an_approval_whose_wait_was_cancelled_is_harmless() -> None:
    request = _request()
    waiter = asyncio.create_task(request.wait())
    await asyncio.sleep(0)

    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    request.resolve("approve")


async def test_approval_future_is_never_serialised() -> None:
    request = _request()
    request.resolve("approve")

    record = to_record(request, 1.0)

    assert record["message"]["payload"] == {
        "id": "ap",
        "tool_call_id": "t",
        "action": "edit file",
        "description": "a.py",
        "display": [],
        "tool_name": "",
        "scope_label": "",
        "outside_work_dir": False,
        "always_ask": "",
        "sender": "kode-tui",  # Kimi CLI needs it
    }
    replayed = from_record(json.loads(json.dumps(record))).event
    assert isinstance(replayed, ApprovalRequest)
    replayed.resolve("reject")  # a replayed request has a future of its own
    assert await replayed.wait() == "reject"


def test_approval_responses_are_stored_as_kimis_approval_response() -> None:
    approve = to_record(ApprovalResolved(id="a", response="approve"), 1.0)
    feedback = to_record(ApprovalResolved(id="a", response=RejectWithFeedback(feedback="no")), 1.0)

    assert approve["message"] == {
        "type": "ApprovalResponse",
        "payload": {"request_id": "a", "response": "approve", "feedback": ""},
    }
    assert feedback["message"]["payload"] == {
        "request_id": "a",
        "response": "reject",
        "feedback": "no",
    }


def test_approval_responses_in_our_former_shape_are_still_read() -> None:
    old = {
        "timestamp": 1.0,
        "message": {
            "type": "ApprovalResolved",
            "payload": {"id": "a", "response": {"feedback": "no"}},
        },
    }

    assert from_record(old).event == ApprovalResolved(
        id="a", response=RejectWithFeedback(feedback="no")
    )


def test_events_cannot_be_changed_by_a_subscriber() -> None:
    event = events.StepBegin(n=1)

    with pytest.raises(ValueError):
        event.n = 2
