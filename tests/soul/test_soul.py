"""The agent loop with a scripted model: what it writes to the context and sends on the wire."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from kode_tui.session import Context
from kode_tui.soul.soul import LoopSettings
from kode_tui.soul.stream import INTERRUPTED_NOTE
from kode_tui.tools.todo import todos_in
from kode_tui.tools.toolset import REJECTED
from kode_tui.wire import events as ev
from kode_tui.wire.events import RejectWithFeedback
from kode_tui.wire.readings import retry_text
from tests.soul_helpers import Sleep, call, make_rig


def roles(lines: list[dict[str, object]]) -> list[str]:
    out = []
    for line in lines:
        role = str(line["role"])
        out.append(f"{role}:{line['id']}" if role == "_checkpoint" else role)
    return out


async def test_a_text_turn_writes_kimis_record_order(tmp_path: Path) -> None:
    rig = await make_rig(tmp_path, [{"text": "Hello there.", "usage": {"input": 50, "output": 5}}])

    result = await rig.soul.run("hi")
    await rig.settle()

    assert result.stop_reason == "done"
    lines = rig.lines()
    assert roles(lines) == [
        "_system_prompt",
        "_checkpoint:0",
        "user",
        "_checkpoint:1",
        "_usage",
        "assistant",
        "_usage",
    ]
    assert [line.get("token_count") for line in lines if line["role"] == "_usage"] == [50, 55]
    assert lines[5] == {"role": "assistant", "content": "Hello there."}
    kinds = [type(e).__name__ for e in rig.events if not isinstance(e, ev.ContentPart)]
    assert kinds[:4] == ["TurnBegin", "CheckpointCreated", "StatusUpdate", "StepBegin"]
    assert kinds[-1] == "TurnEnd"
    streamed = "".join(e.part.text for e in rig.of(ev.ContentPart))
    assert streamed == "Hello there."
    status = rig.of(ev.StatusUpdate)[-1]
    assert status.context_tokens == 55 and status.max_context_tokens == 100_000


async def test_a_tool_step_appends_the_call_and_its_result_then_goes_on(tmp_path: Path) -> None:
    rig = await make_rig(
        tmp_path,
        [
            {
                "think": "Echo it.",
                "text": "Echoing.",
                "tool_calls": [call("Echo", text="ab", times=2)],
            },
            {"text": "Done."},
        ],
    )

    result = await rig.soul.run("echo ab twice")

    assert result.stop_reason == "done" and result.steps == 2
    lines = rig.lines()
    assistant = next(line for line in lines if line["role"] == "assistant")
    assert assistant["content"] == [
        {"type": "think", "think": "Echo it.", "encrypted": None},
        {"type": "text", "text": "Echoing."},
    ]
    call_id = assistant["tool_calls"][0]["id"]  # type: ignore[index]
    tool = next(line for line in lines if line["role"] == "tool")
    assert tool == {
        "role": "tool",
        "content": [
            {"type": "text", "text": "<system>Echoed.</system>"},
            {"type": "text", "text": "abab"},
        ],
        "tool_call_id": call_id,
    }
    # The second request saw the tool result.
    second = rig.provider.requests[1].history
    assert second[-1].role == "tool" and second[-1].tool_call_id == call_id
    assert rig.provider.requests[0].tools[0]["function"]["name"] == "Echo"


async def test_an_approved_edit_is_journaled_and_session_scope_is_remembered(
    tmp_path: Path,
) -> None:
    rig = await make_rig(
        tmp_path,
        [
            {"tool_calls": [call("Touch", path="a.txt")]},
            {"tool_calls": [call("Touch", path="b.txt")]},
            {"text": "Both touched."},
        ],
    )
    rig.answers.append("approve_for_session")

    result = await rig.soul.run("touch two files")
    await rig.settle()

    assert result.stop_reason == "done"
    assert (rig.work_dir / "a.txt").read_text() == "touched"
    assert (rig.work_dir / "b.txt").read_text() == "touched"
    assert len(rig.of(ev.ApprovalRequest)) == 1  # the second edit fell under the session scope
    assert rig.state.session_approvals == ["edit"]
    request = rig.of(ev.ApprovalRequest)[0]
    assert request.tool_name == "Touch" and request.scope_label == "all edits in the work dir"
    edits = [line for line in rig.lines() if line["role"] == "_file_edit"]
    assert [e["path"] for e in edits] == ["a.txt", "b.txt"]
    assert all(e["before"] is None and e["after"] for e in edits)
    assert (rig.context.path.parent / "blobs" / str(edits[0]["after"])).read_bytes() == b"touched"


async def test_a_rejected_call_ends_the_turn_with_kimis_message(tmp_path: Path) -> None:
    rig = await make_rig(
        tmp_path,
        [
            {"tool_calls": [call("Touch", path="a.txt"), call("Echo", text="x")]},
            {"text": "never asked"},
        ],
    )
    rig.answers.append("reject")

    result = await rig.soul.run("touch it")

    assert result.stop_reason == "rejected"
    assert not (rig.work_dir / "a.txt").exists()
    assert rig.provider.remaining == 1
    tools = [line for line in rig.lines() if line["role"] == "tool"]
    assert tools[0]["content"][0]["text"] == f"<system>ERROR: {REJECTED}</system>"  # type: ignore[index]
    assert "rejected" in tools[1]["content"][0]["text"]  # type: ignore[index]
    assert len(tools) == 2  # every call has its result, or the next request is invalid


async def test_feedback_goes_to_the_model_and_the_turn_goes_on(tmp_path: Path) -> None:
    rig = await make_rig(
        tmp_path,
        [{"tool_calls": [call("Touch", path="a.txt")]}, {"text": "OK, I won't."}],
    )
    rig.answers.append(RejectWithFeedback(feedback="use b.txt instead"))

    result = await rig.soul.run("touch it")

    assert result.stop_reason == "done"
    tool = rig.provider.requests[1].history[-1]
    assert "User feedback: use b.txt instead" in tool.text


async def test_outside_the_work_dir_asks_even_in_auto_edit(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.txt"
    rig = await make_rig(
        tmp_path,
        [
            {"tool_calls": [call("Touch", path="in.txt"), call("Touch", path=str(outside))]},
            {"text": "ok"},
        ],
    )
    await rig.soul.approval.set_mode("auto-edit")

    await rig.soul.run("touch")
    await rig.settle()

    requests = rig.of(ev.ApprovalRequest)
    assert [r.outside_work_dir for r in requests] == [True]
    assert requests[0].scope_label == ""  # no approve-for-session outside the work dir
    assert outside.read_text() == "touched"


async def test_bad_tool_arguments_never_crash_the_loop(tmp_path: Path) -> None:
    rig = await make_rig(
        tmp_path,
        [
            {
                "tool_calls": [
                    {"name": "Echo", "arguments": '{"text": "unterminated'},
                    call("Echo", text="x", times="many"),
                    call("Echo"),
                    call("NoSuchTool", a=1),
                    {"name": "Echo", "arguments": "[1, 2]"},
                ]
            },
            {"text": "I'll fix my calls."},
        ],
    )

    result = await rig.soul.run("go")

    assert result.stop_reason == "done"
    results = rig.of(ev.ToolResult)
    assert len(results) == 5 and all(r.is_error for r in results)
    messages = [r.message for r in results]
    assert "Error parsing JSON arguments" in messages[0]
    assert "times" in messages[1] and "text" in messages[2]
    assert "NoSuchTool" in messages[3] and "JSON object" in messages[4]


async def test_transient_errors_are_retried_with_step_retry_events(tmp_path: Path) -> None:
    rig = await make_rig(
        tmp_path,
        [
            {"error": {"status": 429, "message": "slow down"}},
            {"error": {"status": 500, "message": "oops"}},
            {"text": "Third time lucky."},
        ],
    )

    result = await rig.soul.run("hi")
    await rig.settle()

    assert result.stop_reason == "done"
    retries = rig.of(ev.StepRetry)
    assert [(r.n, r.attempt, r.max_attempts) for r in retries] == [(1, 1, 10), (1, 2, 10)]
    assert "slow down" in retries[0].error
    assert [round(wait, 3) for wait in rig.slept] == [r.wait_s for r in retries]
    assert not any(r.server_wait for r in retries)
    assert [line["role"] for line in rig.lines()].count("assistant") == 1


async def test_a_servers_retry_after_is_the_wait_and_the_retry_says_so(tmp_path: Path) -> None:
    rig = await make_rig(
        tmp_path,
        [{"error": {"status": 429, "message": "slow down", "retry_after": 6}}, {"text": "Hi."}],
    )

    assert (await rig.soul.run("hi")).stop_reason == "done"

    [retry] = rig.of(ev.StepRetry)
    assert rig.slept == [6.0] and retry.wait_s == 6.0 and retry.server_wait
    assert retry_text(retry) == "slow down; retrying in 6 s, as the server asked (attempt 2 of 10)"


async def test_waits_double_from_half_a_second_up_to_the_ceiling(tmp_path: Path) -> None:
    rig = await make_rig(
        tmp_path,
        [{"error": {"status": 503, "message": "busy"}}] * 9 + [{"text": "Back."}],
        settings=LoopSettings(reserved_context_size=1_000, max_total_retry_wait=1_000),
    )

    assert (await rig.soul.run("hi")).stop_reason == "done"

    assert len(rig.slept) == 9
    for n, wait in enumerate(rig.slept):
        base = min(0.5 * 2**n, 60)
        assert base <= wait <= min(base * 1.25, 60), (n, wait)


async def test_retries_give_up_after_max_retries_per_step(tmp_path: Path) -> None:
    rig = await make_rig(
        tmp_path,
        [{"error": "connection"}] * 3,
        settings=LoopSettings(reserved_context_size=1_000, max_retries_per_step=3),
    )

    result = await rig.soul.run("hi")
    await rig.settle()

    assert result.stop_reason == "error"
    assert len(rig.of(ev.StepRetry)) == 2 and rig.provider.remaining == 0
    assert (result.error or "").endswith(
        "could not connect to the scripted model "
        "(gave up after 3 attempts, the most loop_control.max_retries_per_step allows)"
    )


async def test_a_server_asking_for_more_than_the_ceiling_ends_the_turn_saying_so(
    tmp_path: Path,
) -> None:
    rig = await make_rig(
        tmp_path,
        [{"error": {"status": 429, "message": "quota", "retry_after": 600}}, {"text": "never"}],
    )

    result = await rig.soul.run("hi")

    assert result.stop_reason == "error" and not rig.slept and rig.provider.remaining == 1
    assert (result.error or "").endswith(
        "quota (the server asks to wait 600 s, longer than loop_control.max_retry_wait = 60 s)"
    )


async def test_the_waits_of_one_call_stay_within_the_total(tmp_path: Path) -> None:
    busy = {"error": {"status": 503, "message": "busy", "retry_after": 3}}
    rig = await make_rig(
        tmp_path,
        [busy, busy, {"text": "never"}],
        settings=LoopSettings(reserved_context_size=1_000, max_total_retry_wait=5),
    )

    result = await rig.soul.run("hi")

    assert result.stop_reason == "error" and rig.slept == [3.0]
    assert "gave up after 2 attempts: waiting 3 s more would pass " in (result.error or "")
    assert "loop_control.max_total_retry_wait = 5 s" in (result.error or "")


async def test_esc_ends_a_retrys_wait_at_once(tmp_path: Path) -> None:
    rig = await make_rig(
        tmp_path, [{"error": {"status": 429, "message": "later", "retry_after": 55}}]
    )
    rig.soul.retry_sleep = asyncio.sleep  # a real wait of 55 s, which the cancel cuts short
    task = asyncio.create_task(rig.soul.run("hi"))
    while not rig.of(ev.StepRetry):
        await asyncio.sleep(0.01)

    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 30)  # well before the 55 s wait ends

    kinds = [type(e).__name__ for e in rig.events]
    assert kinds[-3:] == ["StepRetry", "StepInterrupted", "TurnEnd"]


async def test_a_fatal_error_ends_the_turn_at_once_and_keeps_the_context(
    tmp_path: Path,
) -> None:
    rig = await make_rig(
        tmp_path,
        [{"error": {"status": 401, "message": "bad key"}}, {"text": "never"}],
    )

    result = await rig.soul.run("hi")
    await rig.settle()

    assert result.stop_reason == "error" and "bad key" in (result.error or "")
    assert rig.provider.remaining == 1
    assert rig.of(ev.Error)[0].message.endswith("bad key")
    model = rig.provider.model_name
    assert rig.of(ev.Error)[0].message == f"{model}: bad key"  # which model failed
    assert roles(rig.lines()) == ["_system_prompt", "_checkpoint:0", "user", "_checkpoint:1"]
    # The next turn works on the same context.
    rig.provider.script.append({"text": "hello"})
    rig.provider.script.pop(1)
    assert (await rig.soul.run("again")).stop_reason == "done"


async def test_an_error_that_names_its_model_does_not_name_it_twice(tmp_path: Path) -> None:
    rig = await make_rig(tmp_path, [{"error": {"status": 401, "message": "placeholder"}}])
    model = rig.provider.model_name
    rig.provider.script[0] = {"error": {"status": 401, "message": f"no API key for {model}"}}

    result = await rig.soul.run("hi")

    assert result.error == f"no API key for {model}"
    assert roles(rig.lines()) == ["_system_prompt", "_checkpoint:0", "user", "_checkpoint:1"]


async def test_cancel_while_streaming_keeps_the_text_shown_marked_as_interrupted(
    tmp_path: Path,
) -> None:
    rig = await make_rig(tmp_path, [{"text": "Thinking about it", "hang": True}, {"text": "Hi."}])
    task = asyncio.create_task(rig.soul.run("hi"))
    while not rig.of(ev.ContentPart):
        await asyncio.sleep(0.01)

    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await rig.settle()

    # What the user saw stays, marked, so the model knows what it already said.
    kept = rig.context.history[-1]
    assert (kept.role, kept.text) == ("assistant", f"Thinking about it\n\n{INTERRUPTED_NOTE}")
    assert rig.of(ev.StepInterrupted) and isinstance(rig.events[-1], ev.TurnEnd)
    assert (await rig.soul.run("hi again")).stop_reason == "done"
    assert roles(rig.lines()).count("assistant") == 2
    # A fresh reader sees the same context.
    await rig.context.close()
    reread = Context(rig.context.path)
    await reread.restore()
    assert [m.role for m in reread.history] == ["user", "assistant", "user", "assistant"]
    await reread.close()


async def test_cancel_during_a_tool_call_keeps_only_the_text_and_no_call(tmp_path: Path) -> None:
    sleep = Sleep()
    rig = await make_rig(
        tmp_path,
        [{"text": "Sleeping.", "tool_calls": [call("Sleep", text="z")]}, {"text": "Awake."}],
        tools=[sleep],
    )
    task = asyncio.create_task(rig.soul.run("sleep"))
    await asyncio.wait_for(sleep.started.wait(), 5)

    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    # The call never finished: it is not kept (a call needs its result), its text is.
    assert "tool" not in roles(rig.lines())
    kept = rig.context.history[-1]
    assert (kept.text, kept.tool_calls) == (f"Sleeping.\n\n{INTERRUPTED_NOTE}", None)
    assert (await rig.soul.run("wake up")).stop_reason == "done"


async def test_a_dmail_takes_the_context_back_to_its_checkpoint(tmp_path: Path) -> None:
    rig = await make_rig(
        tmp_path,
        [
            {"text": "Reading a lot.", "tool_calls": [call("Echo", text="noise" * 100)]},
            {
                "tool_calls": [
                    call("SendDMail", checkpoint_id=1, message="The echo was useless; answer 42.")
                ]
            },
            {"text": "The answer is 42."},
        ],
        dmail=True,
    )

    result = await rig.soul.run("what is the answer?")
    await rig.settle()

    assert result.stop_reason == "done"
    reverted = rig.of(ev.ContextReverted)
    assert [(r.checkpoint_id, r.reason) for r in reverted] == [(1, "dmail")]
    rotated = rig.context.path.parent / reverted[0].rotated_file
    assert "noise" in rotated.read_text()
    note = json.loads((rig.context.path.parent / "rotations.jsonl").read_text().splitlines()[-1])
    assert note["reason"] == "dmail"
    # Checkpoint 1 is again followed by the D-Mail, and nothing of the detour is left.
    live = rig.lines()
    assert "noise" not in rig.context.path.read_text()
    at = next(i for i, line in enumerate(live) if line == {"role": "_checkpoint", "id": 1})
    after = [line for line in live[at + 1 :] if line["role"] == "user"]
    assert after[0]["content"] == "<system>CHECKPOINT 1</system>"
    assert "D-Mail content:\n\nThe echo was useless" in after[1]["content"][0]["text"]  # type: ignore[index]
    # The model's next request holds nothing that came after checkpoint 1 before the D-Mail.
    history = rig.provider.requests[2].history
    assert all("noise" not in m.text for m in history)
    assert [m.text for m in history[:3]] == [
        "<system>CHECKPOINT 0</system>",
        "what is the answer?",
        "<system>CHECKPOINT 1</system>",
    ]
    assert "D-Mail" in history[3].text


async def test_a_dmail_to_a_missing_checkpoint_is_an_error_for_the_model(tmp_path: Path) -> None:
    rig = await make_rig(
        tmp_path,
        [{"tool_calls": [call("SendDMail", checkpoint_id=99, message="x")]}, {"text": "ok"}],
        dmail=True,
    )

    assert (await rig.soul.run("go")).stop_reason == "done"
    assert "no checkpoint 99" in rig.of(ev.ToolResult)[0].message
    assert not rig.of(ev.ContextReverted)


async def test_max_steps_ends_the_turn_with_a_clear_message(tmp_path: Path) -> None:
    rig = await make_rig(
        tmp_path,
        [{"tool_calls": [call("Echo", text="again")]}] * 3,
        settings=LoopSettings(max_steps_per_run=2),
    )

    result = await rig.soul.run("loop")

    assert result.stop_reason == "max_steps" and result.steps == 2
    assert "max_steps_per_run" in (result.error or "")
    assert rig.provider.remaining == 1


async def test_todo_write_keeps_the_list_in_session_state(tmp_path: Path) -> None:
    todos = [{"title": "Plan", "status": "done"}, {"title": "Build", "status": "in_progress"}]
    rig = await make_rig(
        tmp_path, [{"tool_calls": [call("TodoWrite", todos=todos)]}, {"text": "ok"}]
    )

    await rig.soul.run("plan")
    await rig.settle()

    assert [(t.title, t.status) for t in rig.state.todos] == [
        ("Plan", "done"),
        ("Build", "in_progress"),
    ]
    blocks = rig.of(ev.ToolResult)[0].display
    assert any(isinstance(b, ev.TodoBlock) and len(b.items) == 2 for b in blocks)


async def test_the_todo_tool_is_offered_as_kimis_set_todo_list_and_answers_to_both_names(
    tmp_path: Path,
) -> None:
    # A Kimi CLI session's history calls SetTodoList, an older kode-tui one's TodoWrite: a model
    # that goes on with either habit keeps its list, and only Kimi's name is offered.
    rig = await make_rig(
        tmp_path,
        [
            {"tool_calls": [call("SetTodoList", todos=[{"title": "Kimi", "status": "done"}])]},
            {"tool_calls": [call("TodoWrite", todos=[{"title": "Kode", "status": "pending"}])]},
            {"tool_calls": [call("SetTodoList")]},
            {"text": "ok"},
        ],
    )

    await rig.soul.run("plan")
    await rig.settle()

    offered = [tool["function"]["name"] for tool in rig.provider.requests[0].tools]
    assert "SetTodoList" in offered and "TodoWrite" not in offered
    results = rig.of(ev.ToolResult)
    assert [r.is_error for r in results] == [False, False, False]
    assert [(t.title, t.status) for t in rig.state.todos] == [("Kode", "pending")]
    assert results[2].output == "Current todo list:\n- [pending] Kode"
    assert todos_in(rig.context.history) == rig.state.todos


async def test_the_trigger_asks_the_strategy_to_compact_before_the_step(tmp_path: Path) -> None:
    class HalveTheHistory:
        async def compact(self, ctx):  # type: ignore[no-untyped-def]
            from kode_tui.message import Message

            return [Message(role="user", content="<system>summary</system>")]

    rig = await make_rig(
        tmp_path,
        [
            {"text": "long answer", "usage": {"input": 900, "output": 50}},
            {"text": "short now", "usage": {"input": 20, "output": 5}},
        ],
        settings=LoopSettings(reserved_context_size=100),
        max_context_size=1000,
    )
    rig.soul.compactor.strategy = HalveTheHistory()
    await rig.soul.run("first")

    await rig.soul.run("second")
    await rig.settle()

    ends = rig.of(ev.CompactionEnd)
    assert len(ends) == 1 and ends[0].tokens_before >= 900 and ends[0].rotated_file
    note = json.loads((rig.context.path.parent / "rotations.jsonl").read_text().splitlines()[-1])
    assert note["reason"] == "compaction" and note["strategy"] == "HalveTheHistory"
    lines = rig.lines()
    assert lines[0]["role"] == "_system_prompt"
    assert roles(lines)[1:3] == ["_checkpoint:0", "user"]
    assert lines[2]["content"] == "<system>summary</system>"
