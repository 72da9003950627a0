"""Subagents against the loopback server, through the real provider: what only a server that
answers several requests at once can show."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from kode_tui.config import Config
from kode_tui.session import Session
from kode_tui.soul.agent import open_agent
from kode_tui.wire import events as ev
from tests.llm_server import KEY_ENV, LLMServer, loopback_choice
from tests.soul_helpers import record_events

SUMMARY = "Looked through the project and found the greeter. " * 5  # over Kimi's 200 characters


def agent_call(
    call_id: str, description: str, subagent_type: str = "explore"
) -> tuple[str, str, str]:
    arguments = {"description": description, "prompt": description, "subagent_type": subagent_type}
    return (call_id, "Agent", json.dumps(arguments))


async def test_two_agent_calls_of_one_step_run_at_once(project: Path, server: LLMServer) -> None:
    server.reply_tool_calls([agent_call("call_a", "Look left"), agent_call("call_b", "Look right")])
    # Each subagent's first request is held mid-answer: both are held at the same time only
    # when the second subagent asked before the first one had its answer.
    holds = [server.reply_hang(SUMMARY), server.reply_hang(SUMMARY)]
    server.reply_text("Both looked.")
    session = await Session.create(project)
    agent = await open_agent(session, Config(), loopback_choice(server, KEY_ENV))
    events = record_events(agent.bus)
    turn = asyncio.create_task(agent.soul.run("Look both ways."))
    try:
        for hold in holds:
            await hold.wait_started(timeout=20)
        for hold in holds:
            hold.release()
        result = await turn
    finally:
        for hold in holds:
            hold.release()
        await agent.close()
    assert result.stop_reason == "done", result.error
    prompts = {r["messages"][-1]["content"] for r in server.requests[1:3]}
    assert prompts == {"Look left", "Look right"}
    # Each call got its own subagent's result, in the model's order.
    results = [e for e in events if isinstance(e, ev.ToolResult)]
    assert {r.tool_call_id for r in results} == {"call_a", "call_b"}
    last = [m for m in server.requests[3]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in last] == ["call_a", "call_b"]
    ids = {m["content"].split("agent_id: ", 1)[1][:9] for m in last}
    assert len(ids) == 2


async def test_reverting_before_an_agent_call_undoes_its_subagents_edits(
    project: Path, server: LLMServer
) -> None:
    (project / "notes.txt").write_text("before\n")
    server.reply_text("Nothing to do yet.")  # a first turn: checkpoint 1 comes before the call
    server.reply_tool_calls([agent_call("call_a", "Edit things", subagent_type="coder")])
    new_file = json.dumps({"path": "new.txt", "content": "made by the subagent\n"})
    command = json.dumps({"command": "echo after > notes.txt"})
    server.reply_tool_calls([("w1", "WriteFile", new_file), ("s1", "Shell", command)])
    server.reply_text(SUMMARY)
    server.reply_text("Edited.")
    session = await Session.create(project)
    agent = await open_agent(
        session, Config(), loopback_choice(server, KEY_ENV), approval_override="yolo"
    )
    try:
        assert (await agent.soul.run("Hello.")).stop_reason == "done"
        before_call = agent.soul.context.checkpoints[-1].id
        assert (await agent.soul.run("Edit things.")).stop_reason == "done"
        assert (project / "new.txt").is_file()
        assert (project / "notes.txt").read_text() == "after\n"
        # The subagent's edits are in the parent's records, under its own calls' ids.
        edits = {(e.record.tool_call_id, e.record.path) for e in agent.soul.context.file_edits}
        assert {("w1", "new.txt"), ("s1", "notes.txt")} <= edits
        # Revert to the checkpoint of the turn that made the Agent call: its subagent's edits,
        # a WriteFile and a Shell command's, are undone with the parent's own.
        outcome = await agent.soul.travel.revert(before_call, files=True)
        assert sorted(outcome.files_restored) == ["new.txt", "notes.txt"]
        assert not outcome.conflicts
        assert not (project / "new.txt").exists()
        assert (project / "notes.txt").read_text() == "before\n"
    finally:
        await agent.close()
