"""The `Agent` tool's other parameters, as Kimi 1.52 takes them: `resume`, `model`, `timeout`,
`run_in_background`; and the hooks a subagent runs (SubagentStart/SubagentStop, tool hooks)."""

from __future__ import annotations

import json
from pathlib import Path

from kode_tui.config import HookConfig
from kode_tui.session import Context
from kode_tui.soul.hooks import Hooks
from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.soul.subagents.definitions import list_agents
from kode_tui.soul.subagents.store import SubagentStore
from kode_tui.soul.subagents.tool import AgentTool
from kode_tui.wire import events as ev
from tests.soul_helpers import call, make_rig

SUMMARY = "Looked at every file and found the greeting in a.txt. " * 5


def tool_results(rig_requests: list[object]) -> list[str]:
    return [m.text for m in rig_requests[-1].history if m.role == "tool"]  # type: ignore[attr-defined]


async def test_resume_continues_an_instance_in_its_own_context(tmp_path: Path) -> None:
    store = SubagentStore(tmp_path / "session")
    tool = AgentTool(store, lambda: list_agents(tmp_path / "work"))
    first = call("Agent", description="Look", prompt="Find the greeting", subagent_type="explore")
    script = [{"tool_calls": [first]}, {"text": SUMMARY}, {"text": "Ok."}]
    rig = await make_rig(tmp_path, script, tools=[tool])
    tool.attach(rig.soul)
    assert (await rig.soul.run("Look.")).stop_reason == "done"
    [record] = store.list_instances()
    agent_id = record.agent_id
    system_prompt = rig.provider.requests[1].system_prompt
    again = call("Agent", description="Look again", prompt="And the farewell?", resume=agent_id)
    rig.provider.script += [{"tool_calls": [again]}, {"text": SUMMARY}, {"text": "Done."}]
    assert (await rig.soul.run("Again.")).stop_reason == "done"

    # Its request: its own system prompt as kept, the first run's messages, then the new prompt.
    resumed = rig.provider.requests[4]
    assert resumed.system_prompt == system_prompt
    assert [m.text for m in resumed.history if m.role == "user"][-2:] == [
        "Find the greeting",
        "And the farewell?",
    ]
    answer = tool_results(rig.provider.requests)[-1]
    # Kimi's lines: resumed, and the type asked for (coder, the default) against the actual one.
    assert answer.startswith(
        f"agent_id: {agent_id}\nresumed: true\nrequested_subagent_type: coder\n"
        "actual_subagent_type: explore\nstatus: completed\n"
    )
    [record] = store.list_instances()
    assert (record.status, record.description) == ("idle", "Look again")
    context = Context(store.context_path(agent_id), read_only=True)
    await context.restore()
    assert [m.role for m in context.history] == ["user", "assistant", "user", "assistant"]


async def test_resume_refuses_a_running_or_unknown_instance_and_bad_options(
    tmp_path: Path,
) -> None:
    store = SubagentStore(tmp_path / "session")
    running = store.create(agent_id="a00000001", subagent_type="coder", description="", model=None)
    store.update(running, status="running_foreground")
    tool = AgentTool(store, lambda: list_agents(tmp_path / "work"))
    calls = [
        call("Agent", description="d", prompt="p", resume="a00000001"),
        call("Agent", description="d", prompt="p", resume="a99999999"),
        call("Agent", description="d", prompt="p", resume="../../etc"),
        call("Agent", description="d", prompt="p", model="nope"),
        call("Agent", description="d", prompt="p", timeout=5),
        call("Agent", description="d", prompt="p", run_in_background=True),
    ]
    rig = await make_rig(tmp_path, [{"tool_calls": calls}, {"text": "Ok."}], tools=[tool])
    tool.attach(rig.soul)
    assert (await rig.soul.run("Try.")).stop_reason == "done"
    results = tool_results(rig.provider.requests)
    assert (
        "Failed to run agent: Agent instance a00000001 is still running_foreground and "
        "cannot be resumed concurrently."
    ) in results[0]
    assert "Failed to run agent: Subagent instance not found: a99999999" in results[1]
    assert "Failed to run agent: Subagent instance not found: ../../etc" in results[2]
    assert "Unknown model alias: nope" in results[3]
    assert "timeout: Input should be greater than or equal to 30" in results[4]
    assert "Background tasks are not available here." in results[5]  # no task registry
    # Nothing was run or made: the running one is untouched, no other instance exists.
    assert [(r.agent_id, r.status) for r in store.list_instances()] == [
        ("a00000001", "running_foreground")
    ]
    assert len(rig.provider.requests) == 2


async def test_a_model_alias_runs_the_subagent_on_that_model(tmp_path: Path) -> None:
    fast = ScriptedProvider([{"text": SUMMARY}])
    store = SubagentStore(tmp_path / "session")
    tool = AgentTool(
        store,
        lambda: list_agents(tmp_path / "work"),
        lambda alias: fast if alias == "fast" else None,
    )
    agent = call("Agent", description="Look", prompt="Look", model="fast")
    rig = await make_rig(tmp_path, [{"tool_calls": [agent]}, {"text": "Done."}], tools=[tool])
    tool.attach(rig.soul)
    assert (await rig.soul.run("Look.")).stop_reason == "done"
    # The subagent asked the alias's model; the parent's had only its own two requests.
    assert [r.history[-1].text for r in fast.requests] == ["Look"]
    assert len(rig.provider.requests) == 2
    [record] = store.list_instances()
    assert record.launch_spec.model_override == "fast"


async def test_subagent_hooks_run_for_its_type_and_its_turns_run_no_turn_hooks(
    tmp_path: Path,
) -> None:
    store = SubagentStore(tmp_path / "session")
    tool = AgentTool(store, lambda: list_agents(tmp_path / "work"))
    script = [
        {"tool_calls": [call("Agent", description="Look", prompt="Look", subagent_type="explore")]},
        {"text": SUMMARY},
        {"text": "Done."},
    ]
    rig = await make_rig(tmp_path, script, tools=[tool])
    tool.attach(rig.soul)
    log = tmp_path / "hooks.jsonl"
    hooks = [
        HookConfig(
            event="SubagentStart", matcher="explore", command=f"cat >> {log}; echo >> {log}"
        ),
        HookConfig(event="SubagentStop", matcher="coder", command=f"echo wrong >> {log}"),
        HookConfig(event="SubagentStop", command=f"cat >> {log}; echo >> {log}"),
        HookConfig(event="UserPromptSubmit", command=f"cat >> {log}; echo >> {log}"),
        HookConfig(event="Stop", command=f"cat >> {log}; echo >> {log}"),
    ]
    rig.soul.hooks = Hooks(hooks, bus=rig.bus, work_dir=rig.work_dir, session_id="s1")
    assert (await rig.soul.run("Delegate.")).stop_reason == "done"
    ran = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    # The parent's turn hooks once each; the subagent's start and stop (its type matched).
    assert [r["hook_event_name"] for r in ran] == [
        "UserPromptSubmit",
        "SubagentStart",
        "SubagentStop",
        "Stop",
    ]
    assert (ran[1]["agent_name"], ran[1]["prompt"]) == ("explore", "Look")
    assert ran[2]["response"] == SUMMARY[:500]
    assert [e.hook_event for e in rig.of(ev.HookRan)] == [
        "UserPromptSubmit",
        "SubagentStart",
        "SubagentStop",
        "Stop",
    ]
