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


def agent_call(call_id: str, description: str) -> tuple[str, str, str]:
    arguments = {"description": description, "prompt": description, "subagent_type": "explore"}
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
