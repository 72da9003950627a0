"""A rotated context's preview and the restore's dialog count the messages one way (issue 28,
item 8): as the conversation shows them, the checkpoint notes for the model left out."""

from __future__ import annotations

from pathlib import Path

from kode_tui.config import Config, ModelChoice
from kode_tui.message import is_checkpoint_note
from kode_tui.soul.facade import AgentSession
from kode_tui.soul.llm.scripted import ScriptedProvider

SCRIPTED = ModelChoice(name="scripted", model="scripted", source="flag")


async def test_the_preview_and_the_restore_count_the_messages_that_come_back_alike(
    tmp_path: Path,
) -> None:
    agent = await AgentSession.open(tmp_path)
    provider = ScriptedProvider([{"text": "one."}, {"text": "two."}, {"text": "three."}])
    await agent.start(Config(), SCRIPTED, provider=provider, yolo=True)
    for text in ("first", "second", "third"):
        await agent.run(text)
    timeline = agent.travel.timeline()
    asked = [m.text for m in timeline.history].index("second")
    turn = max((c for c in timeline.checkpoints if c.message_index <= asked), key=lambda c: c.id)
    leaving = (await agent.travel.revert_plan(turn.id)).preview.messages_leaving
    reverted = await agent.travel.revert(turn.id)

    preview = await agent.travel.preview(reverted.rotated_file.name)

    back = preview.comparison.only_there
    notes = [m for m in back if m.role == "user" and is_checkpoint_note(m.text)]
    assert notes  # what the revert took out holds checkpoint notes for the model
    # "second", "two.", "third", "three.": what the user sees come back.
    assert preview.comparison.counts.only_there == len(back) - len(notes) == 4
    assert preview.plan is not None and preview.plan.preview.messages_back == 4
    assert leaving == 4  # the revert's dialog said so of the same messages
    assert preview.plan.preview.messages_leaving == preview.comparison.counts.only_here == 0
    await agent.close()
