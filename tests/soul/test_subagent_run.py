"""The `Agent` tool runs a foreground subagent: its own context, kept as Kimi 1.52 keeps it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kode_tui.session import Context
from kode_tui.soul.subagents.definitions import list_agents
from kode_tui.soul.subagents.store import SubagentStore
from kode_tui.soul.subagents.tool import AgentTool
from kode_tui.wire import events as ev
from kode_tui.wire.readings import result_brief
from tests.soul_helpers import call, make_rig

SUMMARY = "Touched a.txt as asked. " * 10  # over Kimi's 200-character minimum


async def test_a_foreground_subagent_runs_its_own_context_and_returns_kimis_result(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    (work / ".kode/agents").mkdir(parents=True)
    (work / ".kode/agents/toucher.md").write_text(
        "---\nname: toucher\ndescription: Touches files\ntools: Touch\n---\nYou touch files.\n"
    )
    store = SubagentStore(tmp_path / "session")
    tool = AgentTool(store, lambda: list_agents(work))
    script = [
        {
            "tool_calls": [
                call(
                    "Agent",
                    description="Touch a file",
                    prompt="Touch a.txt",
                    subagent_type="toucher",
                )
            ]
        },
        {"tool_calls": [call("Touch", path="a.txt")]},
        {"text": SUMMARY},
        {"text": "Done."},
    ]
    rig = await make_rig(tmp_path, script, tools=[tool])
    tool.attach(rig.soul)
    result = await rig.soul.run("Delegate it.")
    assert result.stop_reason == "done"
    assert (work / "a.txt").read_bytes() == b"touched"
    # The subagent's approval came to the parent's panel.
    assert [r.description for r in rig.of(ev.ApprovalRequest)] == ["Touch a.txt"]
    # Its request: its own system prompt and only its type's tools.
    sub_request = rig.provider.requests[1]
    assert sub_request.system_prompt == "You touch files."
    assert [t["function"]["name"] for t in sub_request.tools] == ["Touch"]
    # The parent got Kimi's result text.
    tool_result = rig.provider.requests[3].history[-1]
    [agent_id] = [p.name for p in (tmp_path / "session/subagents").iterdir()]
    assert tool_result.text.startswith(
        f"agent_id: {agent_id}\nresumed: false\nactual_subagent_type: toucher\n"
        "status: completed\n\n[summary]\nTouched a.txt"
    )
    # Kept as Kimi keeps it.
    folder = tmp_path / "session/subagents" / agent_id
    # Ours besides: the context's lock and the wire's sidecar (Kimi reads neither).
    assert {p.name for p in folder.iterdir()} - {"lock", "wire.kode.jsonl"} == {
        "context.jsonl",
        "meta.json",
        "output",
        "prompt.txt",
        "wire.jsonl",
    }
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["status"] == "idle" and meta["subagent_type"] == "toucher"
    assert meta["description"] == "Touch a file"
    assert set(meta) == {
        "agent_id",
        "subagent_type",
        "status",
        "description",
        "created_at",
        "updated_at",
        "last_task_id",
        "launch_spec",
    }
    assert (folder / "prompt.txt").read_text() == "Touch a.txt"
    assert "[summary]\nTouched a.txt" in (folder / "output").read_text()
    sub_context = Context(folder / "context.jsonl", read_only=True)
    await sub_context.restore()
    assert sub_context.system_prompt == "You touch files."
    assert [m.role for m in sub_context.history] == ["user", "assistant", "tool", "assistant"]
    # The parent's context holds only its own turn.
    assert all(
        "You touch files" not in line.get("content", "")
        for line in rig.lines()
        if isinstance(line.get("content"), str)
    )


async def test_a_subagents_calls_add_to_the_parents_turn_and_session_cost(tmp_path: Path) -> None:
    store = SubagentStore(tmp_path / "session")
    tool = AgentTool(store, lambda: list_agents(tmp_path / "work"))
    usage = {"input": 1_000_000, "output": 100_000}
    script = [
        {"tool_calls": [call("Agent", description="Look", prompt="Look around")], "usage": usage},
        {"text": SUMMARY, "usage": usage},
        {"text": "Done.", "usage": usage},
    ]
    rig = await make_rig(tmp_path, script, tools=[tool])
    rig.provider.model_name = "openai/gpt-4o-mini"  # priced: $0.15 / M in, $0.60 / M out
    tool.attach(rig.soul)
    assert (await rig.soul.run("Delegate it.")).stop_reason == "done"
    spend = rig.state.spend
    assert spend is not None
    mini = spend.models["openai/gpt-4o-mini"]
    assert (mini.calls, mini.input, mini.output) == (3, 3_000_000, 300_000)
    # One turn: the subagent's call is in the line of the parent's turn that called it.
    [turn] = spend.turns
    assert (turn.calls, turn.input) == (3, 3_000_000)
    assert turn.usd == pytest.approx(3 * (0.15 + 0.06))
    status = rig.soul.cost.status()
    assert status is not None and status.turn_usd == pytest.approx(status.session_usd)
    # The Agent call's result reports the subagent's own spending, its folded line in the TUI.
    [agent_result] = rig.of(ev.ToolResult)
    assert re.fullmatch(r"1\.1M tokens · [0-9.]+ s · \$0\.210", result_brief(agent_result))


async def test_a_subagents_events_reach_the_parents_wire_marked_and_its_own_wire_jsonl(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    (work / ".kode/agents").mkdir(parents=True)
    (work / ".kode/agents/toucher.md").write_text(
        "---\nname: toucher\ndescription: Touches files\ntools: Touch\n---\nYou touch files.\n"
    )
    store = SubagentStore(tmp_path / "session")
    tool = AgentTool(store, lambda: list_agents(work))
    script = [
        {"tool_calls": [call("Agent", description="Touch", prompt="Go", subagent_type="toucher")]},
        {"text": "On it.", "tool_calls": [call("Touch", path="a.txt")]},
        {"text": SUMMARY},
        {"text": "Done."},
    ]
    rig = await make_rig(tmp_path, script, tools=[tool])
    tool.attach(rig.soul)
    assert (await rig.soul.run("Delegate it.")).stop_reason == "done"
    await rig.settle()
    [agent_call] = [c for c in rig.of(ev.ToolCall) if c.function.name == "Agent"]
    forwarded = rig.of(ev.SubagentEvent)
    [agent_id] = [p.name for p in (tmp_path / "session/subagents").iterdir()]
    assert forwarded and all(
        (e.parent_tool_call_id, e.agent_id, e.subagent_type) == (agent_call.id, agent_id, "toucher")
        for e in forwarded
    )
    inner = [e.event for e in forwarded]
    [touch] = [e for e in inner if isinstance(e, ev.ToolCall)]
    assert touch.function.name == "Touch"
    assert any(isinstance(e, ev.ToolResult) and e.tool_call_id == touch.id for e in inner)
    # The parent's own stream holds only the parent's calls; approvals are not doubled.
    assert [c.function.name for c in rig.of(ev.ToolCall)] == ["Agent"]
    assert not any(isinstance(e, ev.ApprovalRequest) for e in inner)
    assert len(rig.of(ev.ApprovalRequest)) == 1
    # Kimi's envelope in the payload (what stream-json and ACP serialise).
    assert forwarded[0].payload()["event"]["type"] == type(inner[0]).__name__
    # The subagent's own wire.jsonl, as Kimi writes it, and its transcript.
    folder = tmp_path / "session/subagents" / agent_id
    records = [json.loads(line) for line in (folder / "wire.jsonl").read_text().splitlines()]
    assert records[0] == {"type": "metadata", "protocol_version": "1"}
    kinds = [r["message"]["type"] for r in records[1:]]
    assert kinds[0] == "TurnBegin" and "ToolCall" in kinds and "ToolResult" in kinds
    output = (folder / "output").read_text()
    assert "On it.\n[tool] Touch\n[tool_result] success\n" in output
    assert f"\n{SUMMARY.strip()}\n[stage] run_soul_finished" in output  # before its [summary]


async def test_a_subagents_approval_requests_say_whose_they_are(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / ".kode/agents").mkdir(parents=True)
    (work / ".kode/agents/toucher.md").write_text(
        "---\nname: toucher\ndescription: Touches files\ntools: Touch\n---\nYou touch files.\n"
    )
    tool = AgentTool(SubagentStore(tmp_path / "session"), lambda: list_agents(work))
    script = [
        {"tool_calls": [call("Agent", description="Touch", prompt="Go", subagent_type="toucher")]},
        {"tool_calls": [call("Touch", path="a.txt")]},
        {"text": SUMMARY},
        {"tool_calls": [call("Touch", path="b.txt")]},  # the parent's own, after the run
        {"text": "Done."},
    ]
    rig = await make_rig(tmp_path, script, tools=[tool])
    tool.attach(rig.soul)
    assert (await rig.soul.run("Delegate it.")).stop_reason == "done"
    [agent_id] = [p.name for p in (tmp_path / "session/subagents").iterdir()]
    sub, own = rig.of(ev.ApprovalRequest)
    # Kimi 1.52's fields, so its reader and its panel tell them apart too.
    assert (sub.source_kind, sub.agent_id, sub.subagent_type, sub.source_description) == (
        "foreground_turn",
        agent_id,
        "toucher",
        "Touch",
    )
    assert sub.payload()["agent_id"] == agent_id
    assert (own.source_kind, own.agent_id, own.subagent_type) == (None, None, None)
