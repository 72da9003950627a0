"""What the ACP agent sends for wire events and stored conversations (`kode_tui.acp.updates`),
checked without a process: the cases a whole session rarely reaches."""

from __future__ import annotations

from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)

from kode_tui.acp.updates import VOID, CallIds, Messages, TurnUpdates, history_updates
from kode_tui.message import (
    COMPACTION_OUTPUT_PREFIX,
    FunctionBody,
    Message,
    TextPart,
    ToolCall,
    system,
)
from kode_tui.soul.shell_escape import record
from kode_tui.tools.base import ToolOutput
from kode_tui.wire import events as ev

SUMMARY = "We planned and listed."


def call(call_id: str, name: str, arguments: str = "") -> ev.ToolCall:
    return ev.ToolCall(id=call_id, function=FunctionBody(name=name, arguments=arguments))


def test_a_retry_ends_the_calls_of_the_void_attempt_and_is_a_message_of_its_own() -> None:
    turns = TurnUpdates("/work", CallIds(), Messages())
    sent = [
        update
        for event in (
            ev.ContentPart(part=TextPart(text="Let me ")),
            ev.ContentPart(part=TextPart(text="look.")),
            call("c1", "Shell"),
            ev.ToolCallPart(id="c1", arguments_delta='{"command": "ls"'),
            ev.StepRetry(n=1, attempt=1, max_attempts=3, wait_s=0.5, error="HTTP 503"),
            ev.ContentPart(part=TextPart(text="Again.")),
            call("c1", "Shell", '{"command": "ls"}'),
            ev.ToolStarted(tool_call_id="c1"),
        )
        for update in turns.updates(event)
    ]
    texts = [u for u in sent if isinstance(u, AgentMessageChunk)]
    assert texts[0].message_id == texts[1].message_id  # one message, streamed
    notice = texts[2]
    assert notice.content.text == "\n\nHTTP 503; retrying in 0.5 s (attempt 2 of 3)\n\n"
    assert len({texts[0].message_id, notice.message_id, texts[3].message_id}) == 3
    # The void attempt's call ends; the new attempt's call of the same id gets another id.
    void = [u for u in sent if isinstance(u, ToolCallProgress) and u.status == "failed"]
    assert [(u.tool_call_id, u.content[0].content.text) for u in void] == [("c1", VOID)]
    starts = [u for u in sent if isinstance(u, ToolCallStart)]
    assert [(u.tool_call_id, u.title) for u in starts] == [("c1", "Shell"), ("c1#2", "Shell: ls")]
    running = [u for u in sent if isinstance(u, ToolCallProgress) and u.status == "in_progress"]
    assert [(u.tool_call_id, u.raw_input) for u in running] == [("c1#2", {"command": "ls"})]


def test_a_replay_reads_each_message_as_what_it_is_with_fresh_ids_and_the_newest_plan() -> None:
    todo = '{"todos": [{"title": "ship", "status": "done"}]}'
    history = [
        Message(role="user", content="Hello caf\udce9"),  # a name's byte that is not UTF-8
        Message(
            role="assistant",
            content="Planning.",
            tool_calls=[ToolCall(id="t1", function=FunctionBody(name="TodoWrite", arguments=todo))],
        ),
        Message(role="tool", tool_call_id="t1", content="Todo list updated"),
        record("ls", ToolOutput(output="README.md\n", message="Command executed successfully.")),
        Message(
            role="user",
            content=[system(COMPACTION_OUTPUT_PREFIX), TextPart(text="We planned and listed.")],
        ),
        Message(
            role="assistant",
            tool_calls=[ToolCall(id="t2", function=FunctionBody(name="Shell", arguments="{}"))],
        ),
    ]
    ids, messages = CallIds(), Messages()
    first = list(history_updates(history, None, "/work", ids, messages))
    second = list(history_updates(history, None, "/work", ids, messages))

    assert [u.content.text for u in first if isinstance(u, UserMessageChunk)] == [
        "Hello caf\\xe9",
        "!ls",
    ]
    [summary] = [u.content.text for u in first if isinstance(u, AgentThoughtChunk)]
    assert summary == f"compacted: summary\n\n{SUMMARY}"
    starts = [u for u in first if isinstance(u, ToolCallStart)]
    assert [u.title for u in starts] == ["TodoWrite updated todo list", "Shell: ls", "Shell"]
    again = [u.tool_call_id for u in second if isinstance(u, ToolCallStart)]
    assert not {u.tool_call_id for u in starts} & set(again)  # a replay never reuses an id
    # The call with no result (its step was interrupted) ends, and the plan comes once, last.
    ends = [u for u in first if isinstance(u, ToolCallProgress) and u.status]
    assert [u.status for u in ends] == ["completed", "completed", "failed"]
    plans = [u for u in first if isinstance(u, AgentPlanUpdate)]
    assert first[-1] is plans[0] and [(e.content, e.status) for e in plans[0].entries] == [
        ("ship", "completed")
    ]


def test_a_subagents_calls_are_progress_of_the_agent_call_that_runs_it() -> None:
    turns = TurnUpdates("/work", CallIds(), Messages())

    def sub(event: ev.Event) -> ev.SubagentEvent:
        return ev.SubagentEvent(
            parent_tool_call_id="ag", agent_id="a1234abcd", subagent_type="explore", event=event
        )

    sent = [
        update
        for event in (
            call("ag", "Agent", '{"description": "Look", "prompt": "Look"}'),
            ev.ToolStarted(tool_call_id="ag"),
            sub(ev.ContentPart(part=TextPart(text="Reading."))),
            sub(call("s1", "ReadFile")),
            sub(ev.ToolCallPart(id="s1", arguments_delta='{"path": "README.md"}')),
            sub(ev.ToolResult(tool_call_id="s1", output="hi", message="1 line read")),
            sub(call("s2", "Shell", '{"command": "ls"}')),
            sub(ev.ToolResult(tool_call_id="s2", is_error=True, message="exit 2")),
        )
        for update in turns.updates(event)
    ]
    # The subagent's text is not the parent's answer; its calls are no calls of the parent's.
    assert not [u for u in sent if isinstance(u, AgentMessageChunk | ToolCallStart)][1:]
    progress = [u for u in sent if isinstance(u, ToolCallProgress) and u.content]
    assert {u.tool_call_id for u in progress} == {"ag"}
    assert [u.content[-1].content.text for u in progress] == [
        "✔ ReadFile README.md: 1 line read",
        "✔ ReadFile README.md: 1 line read\n✘ Shell: ls: exit 2",
    ]
    # An approval that a running subagent call asks for is shown on the Agent call.
    turns.updates(sub(call("s3", "WriteFile", '{"path": "a.txt"}')))
    shown = turns.calls.get("s3")
    assert shown is not None and shown.acp_id == "ag"
