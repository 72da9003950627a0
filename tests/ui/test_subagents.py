"""A subagent in the TUI: its steps inside its `Agent` call's block while it runs, folded to one
line with its spending when done, its approval labelled with whose it is, and its context
listed in History and opened read-only."""

from __future__ import annotations

import re
from pathlib import Path

from textual.content import Content

from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.ui.screens.timetravel import PreviewScreen
from kode_tui.ui.widgets.approval import ApprovalPanel
from kode_tui.ui.widgets.conversation import Conversation
from kode_tui.ui.widgets.history import HistoryPane
from kode_tui.ui.widgets.tool_block import ToolBlock
from kode_tui.wire import WireBus
from kode_tui.wire import events as ev
from tests.soul_helpers import call
from tests.ui.test_conversation import host, settle
from tests.ui.test_tool_output import call as wire_call
from tests.ui.test_tool_output import lines_of
from tests.ui_helpers import Posted, make_app, ready, screen_text, send, turn_running, wait_for

SUMMARY = "Wrote a.txt with the greeting. " * 8  # over Kimi's 200-character minimum


async def test_a_subagent_shows_live_in_its_call_folds_when_done_and_opens_from_history(
    project: Path,
) -> None:
    (project / ".claude/agents").mkdir(parents=True)
    (project / ".claude/agents/writer.md").write_text(
        "---\nname: writer\ndescription: Writes greetings\ntools: Write\n---\nYou write files.\n"
    )
    agent = call("Agent", description="Write a greeting", prompt="Go", subagent_type="writer")
    provider = ScriptedProvider(
        [
            {"tool_calls": [agent]},
            {
                "tool_calls": [call("WriteFile", path="a.txt", content="hello")],
                "usage": {"input": 100, "output": 100},
            },
            {"text": SUMMARY, "usage": {"input": 1200, "output": 300}},
            {"text": "Done."},
        ]
    )
    app = make_app(project, provider)
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        await send(pilot, "Delegate the greeting.")
        panel = app.screen.query_one(ApprovalPanel)
        await wait_for(pilot, lambda: panel.current is not None)
        request = panel.current
        assert request is not None
        # The panel says whose request it is; the Agent call shows the subagent's step live.
        await wait_for(pilot, lambda: "→ WriteFile a.txt" in screen_text(app))
        shown = screen_text(app)
        assert f"subagent writer {request.agent_id}: Write a greeting" in shown
        assert "subagent writer (" in shown
        await pilot.press("y")
        await wait_for(pilot, lambda: not turn_running(app) and "Done." in screen_text(app))
        conversation = app.screen.query_one(Conversation)
        await wait_for(pilot, lambda: conversation.message_queue_size == 0)
        # Done: one line, with the subagent's tokens and time; its steps folded away.
        [block] = [b for b in app.screen.query(ToolBlock) if b.state.name == "Agent"]
        folded = block.render()
        assert isinstance(folded, Content)
        assert re.fullmatch(r"▸ Agent Write a greeting  ✔ 1\.7k tokens · [0-9.]+ s", folded.plain)
        assert "→ WriteFile a.txt" not in screen_text(app)
        # History lists its context; Enter there opens it read-only (no restore).
        history = app.screen.query_one(HistoryPane)
        name = f"subagents/{request.agent_id}"
        await wait_for(pilot, lambda: name in [o.id for o in history.options])
        history.focus()
        history.highlighted = [o.id for o in history.options].index(name)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, PreviewScreen))
        preview = app.screen
        assert isinstance(preview, PreviewScreen)
        assert preview.name_shown == f"subagent {request.agent_id}"
        assert not preview.check_action("restore", ())
        assert not preview.query("#preview-compare"), "no comparison with the live context"
    assert (project / "a.txt").read_text() == "hello"


async def test_a_busy_subagents_block_shows_its_latest_steps_the_one_at_work_last() -> None:
    """Past a few steps the live block folds the earlier ones into a line: the step the
    subagent is at (waiting for an approval, say) stays in sight."""
    bus, posted = WireBus(), Posted()

    def step(event: ev.Event) -> ev.SubagentEvent:
        return ev.SubagentEvent(
            parent_tool_call_id="a1", agent_id="a1b2", subagent_type="explore", event=event
        )

    reads = []
    for n in range(24):
        reads += [
            step(wire_call(f"r{n}", "ReadFile", {"path": f"f{n}.py"})),
            step(ev.ToolResult(tool_call_id=f"r{n}", output="x")),
        ]
    async with host(bus).run_test(size=(100, 40), message_hook=posted) as pilot:
        conversation = await settle(
            pilot,
            posted,
            bus,
            wire_call("a1", "Agent", {"description": "Read", "prompt": "Go"}),
            *reads,
            step(wire_call("s1", "Shell", {"command": "echo now"})),
        )
        [block] = conversation.query(ToolBlock)
        shown = lines_of(block)
        assert shown[-1] == "→ Shell: echo now", shown
        assert any(line.startswith("… 19 earlier steps") for line in shown)
        assert "ReadFile f23.py" in "\n".join(shown) and "ReadFile f0.py" not in "\n".join(shown)
