"""A background `Agent` run (Kimi 1.52's `run_in_background`): a task of kind `agent` in the
session's background tasks, answered at once, its steps in its own files and the task's log,
the model told when it ends."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kode_tui.message import Message
from kode_tui.soul.llm import StreamItem, ToolSchema
from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.soul.subagents.definitions import list_agents
from kode_tui.soul.subagents.store import SubagentStore
from kode_tui.soul.subagents.tool import AgentTool
from kode_tui.wire import events as ev
from tests.soul_helpers import call, make_rig

SUMMARY = "Touched a.txt in the background, as asked. " * 6  # over Kimi's 200 characters


async def test_a_background_subagent_answers_at_once_and_the_model_is_told_when_it_ends(
    tmp_path: Path,
) -> None:
    toucher(tmp_path)
    store = SubagentStore(tmp_path / "session")
    child = ScriptedProvider([{"tool_calls": [call("Touch", path="a.txt")]}, {"text": SUMMARY}])

    def models(alias: str) -> ScriptedProvider | None:
        return child if alias == "sub" else None

    tool = AgentTool(store, lambda: list_agents(tmp_path / "work"), models)
    script = [
        {
            "tool_calls": [
                call(
                    "Agent",
                    description="Touch in background",
                    prompt="Touch a.txt",
                    subagent_type="toucher",
                    model="sub",
                    run_in_background=True,
                )
            ]
        },
        {"text": "It runs."},
        {"text": "Noted."},
    ]
    asked: list[ev.ApprovalRequest] = []

    def answer(request: ev.ApprovalRequest) -> ev.ApprovalResponse:
        asked.append(request)
        return "approve"

    rig = await make_rig(tmp_path, script, tools=[tool], tasks=True, answer=answer)
    tool.attach(rig.soul)
    tasks = rig.soul.env.tasks
    assert tasks is not None
    assert (await rig.soul.run("Delegate it.")).stop_reason == "done"
    # The call answered at once with Kimi's lines, before the subagent's work was done.
    result = rig.provider.requests[1].history[-1].text
    assert result.startswith("<system>Background task started.</system>")
    result = result.removeprefix("<system>Background task started.</system>")
    fields = dict(line.split(": ", 1) for line in result.splitlines() if ": " in line)
    assert fields["kind"] == "agent" and fields["status"] == "running"
    assert fields["automatic_notification"] == "true"
    assert fields["resume_hint"].startswith(f'Use Agent(resume="{fields["agent_id"]}"')
    task_id = fields["task_id"]
    assert task_id.startswith("agent-")
    view = await tasks.wait(task_id, 30)
    assert view.status == "completed", view.failure_reason
    assert (rig.work_dir / "a.txt").read_bytes() == b"touched"
    # Its approval came to the panel, marked as a background agent's.
    [request] = asked
    assert (request.source_kind, request.agent_id) == ("background_agent", fields["agent_id"])
    # Its steps stay off the parent's wire; its task log and own files have them.
    assert not rig.of(ev.SubagentEvent)
    log = view.output_path.read_text()
    assert "[tool] Touch" in log and f"[summary]\n{SUMMARY.strip()}" in log
    meta = json.loads(
        (tmp_path / "session/subagents" / fields["agent_id"] / "meta.json").read_text()
    )
    assert meta["status"] == "idle"
    # The next step of the parent is told, with the summary in the output's tail.
    assert (await rig.soul.run("And?")).stop_reason == "done"
    told = [m.text for m in rig.provider.requests[2].history if m.role == "user"]
    assert any(f'source_id="{task_id}"' in text and "in the background" in text for text in told)


@dataclass
class HeldProvider(ScriptedProvider):
    """A model whose answers wait until `release` is set (never, here): the run is busy."""

    asked: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    def stream(
        self, system_prompt: str | None, history: Sequence[Message], tools: Sequence[ToolSchema]
    ) -> AsyncIterator[StreamItem]:
        inner = super().stream(system_prompt, history, tools)

        async def held() -> AsyncIterator[StreamItem]:
            self.asked.set()
            await self.release.wait()
            async for item in inner:
                yield item

        return held()


async def test_stopping_a_background_subagent_kills_its_run(tmp_path: Path) -> None:
    toucher(tmp_path)
    store = SubagentStore(tmp_path / "session")
    child = HeldProvider([{"tool_calls": [call("Touch", path="a.txt")]}, {"text": SUMMARY}])
    tool = AgentTool(store, lambda: list_agents(tmp_path / "work"), lambda _: child)
    agent = call(
        "Agent",
        description="Wait",
        prompt="Touch a.txt",
        subagent_type="toucher",
        model="sub",
        run_in_background=True,
    )
    rig = await make_rig(
        tmp_path, [{"tool_calls": [agent]}, {"text": "It runs."}], tools=[tool], tasks=True
    )
    tool.attach(rig.soul)
    tasks = rig.soul.env.tasks
    assert tasks is not None
    assert (await rig.soul.run("Delegate it.")).stop_reason == "done"
    await child.asked.wait()
    [view] = tasks.list_tasks()
    assert view.kind == "agent" and view.status == "running"
    stopped = await tasks.stop(view.id, "Stopped by TaskStop")
    assert stopped.status == "killed"
    assert not (rig.work_dir / "a.txt").exists()
    [agent_id] = [p.name for p in (tmp_path / "session/subagents").iterdir()]
    meta = json.loads((tmp_path / "session/subagents" / agent_id / "meta.json").read_text())
    assert meta["status"] == "killed"
    assert "[stage] cancelled" in stopped.output_path.read_text()


def toucher(tmp_path: Path) -> None:
    """An agent file in the work dir: a type whose only tool is the rig's Touch."""
    agents = tmp_path / "work/.kode/agents"
    agents.mkdir(parents=True)
    (agents / "toucher.md").write_text(
        "---\nname: toucher\ndescription: Touches files\ntools: Touch\n---\nYou touch files.\n"
    )
