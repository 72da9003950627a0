"""Our store reads the subagent instances Kimi CLI 1.52 writes (`tests/fixtures/kimi-default`)."""

from __future__ import annotations

import shutil
from pathlib import Path

from kode_tui.session import Context
from kode_tui.soul.subagents.store import SubagentStore
from tests.conftest import KIMI_DEFAULT_FIXTURE


async def test_we_list_and_restore_the_subagent_kimi_made(tmp_path: Path) -> None:
    session = tmp_path / "session"
    shutil.copytree(KIMI_DEFAULT_FIXTURE, session)
    # An instance whose meta.json is not a record is skipped, as Kimi skips it.
    (session / "subagents/abad00000").mkdir()
    (session / "subagents/abad00000/meta.json").write_text('{"agent_id": "abad00000"}')
    store = SubagentStore(session)
    [record] = store.list_instances()
    assert (record.agent_id, record.subagent_type, record.status, record.description) == (
        "a5f81639e",
        "explore",
        "idle",
        "Find the image",
    )
    assert record.launch_spec.subagent_type == "explore" and record.last_task_id is None
    assert store.get("abad00000") is None and store.get("anothere") is None
    context = Context(store.context_path(record.agent_id), read_only=True)
    await context.restore()
    assert context.system_prompt is not None and context.system_prompt.startswith("You are Kimi")
    assert [m.role for m in context.history] == ["user", "assistant"]
    assert context.history[-1].text.startswith("Only dot.png is an image")
    await context.close()
