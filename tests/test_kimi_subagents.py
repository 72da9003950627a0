"""Kimi CLI 1.52's own subagent store and Context read the subagent folder our `Agent` tool
writes (its `SubagentStore.list_instances`, `require_instance` and `Context.restore`, as its
runner reads an instance it resumes: `kimi_cli/subagents/runner.py`).

Needs a Python with kimi-cli installed, as tests/test_kimi_compat.py; skips without one.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from kode_tui.session import Context
from kode_tui.soul.subagents.definitions import list_agents
from kode_tui.soul.subagents.store import SubagentStore
from kode_tui.soul.subagents.tool import AgentTool
from tests.soul_helpers import call, make_rig
from tests.test_kimi_compat import KIMI_PYTHON, kimi_view

pytestmark = pytest.mark.skipif(
    KIMI_PYTHON is None,
    reason="kimi-cli is not installed (run ../shared/bench/setup_kimi.sh, "
    "or set KODE_TUI_KIMI_PYTHON to a Python that has it)",
)

KIMI_READ_SUBAGENTS = textwrap.dedent(
    """
    import asyncio, json, sys
    from dataclasses import asdict
    from pathlib import Path
    from types import SimpleNamespace
    from kimi_cli.soul.context import Context
    from kimi_cli.subagents.store import SubagentStore

    async def main():
        store = SubagentStore(SimpleNamespace(dir=Path(sys.argv[1])))  # it reads `.dir` only
        instances = []
        for record in store.list_instances():
            record = store.require_instance(record.agent_id)
            context = Context(store.context_path(record.agent_id))
            await context.restore()
            instances.append({
                "record": asdict(record),
                "system_prompt": context.system_prompt,
                "history": [
                    m.model_dump(mode="json", exclude_none=True) for m in context.history
                ],
                "prompt": store.prompt_path(record.agent_id).read_text(),
            })
        print(json.dumps(instances))

    asyncio.run(main())
    """
)

SUMMARY = "Touched a.txt as asked. " * 10


async def test_kimi_lists_and_restores_the_subagent_we_ran(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / ".kode/agents").mkdir(parents=True)
    (work / ".kode/agents/toucher.md").write_text(
        "---\nname: toucher\ndescription: Touches files\ntools: Touch\n---\nYou touch files.\n"
    )
    session = tmp_path / "session"
    store = SubagentStore(session)
    tool = AgentTool(store, lambda: list_agents(work))
    script = [
        {
            "tool_calls": [
                call(
                    "Agent",
                    description="Touch a file",
                    prompt="Touch a.txt ✓",
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
    assert (await rig.soul.run("Delegate it.")).stop_reason == "done"
    [ours] = store.list_instances()
    ours_context = Context(store.context_path(ours.agent_id), read_only=True)
    await ours_context.restore()
    done = subprocess.run(
        [KIMI_PYTHON or "", "-c", KIMI_READ_SUBAGENTS, str(session)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    [kimi] = json.loads(done.stdout.strip().splitlines()[-1])
    record = kimi["record"]
    assert record["agent_id"] == ours.agent_id
    assert (record["subagent_type"], record["status"], record["description"]) == (
        "toucher",
        "idle",
        "Touch a file",
    )
    assert record["launch_spec"]["subagent_type"] == "toucher"
    assert kimi["prompt"] == "Touch a.txt ✓"
    assert kimi["system_prompt"] == "You touch files."
    expected = kimi_view({"history": [json.loads(m.to_json()) for m in ours_context.history]})
    assert kimi["history"] == expected["history"]
    assert [m["role"] for m in kimi["history"]] == ["user", "assistant", "tool", "assistant"]
    await ours_context.close()
