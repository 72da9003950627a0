"""Dropping messages from the live context: tool calls go with their results, one rotation with
reason `edit`, checkpoints kept, and History's restore brings everything back."""

from __future__ import annotations

from pathlib import Path

import pytest

from kode_tui.config import Config, ModelChoice
from kode_tui.message import paired
from kode_tui.session.rotation import list_rotations
from kode_tui.soul.facade import AgentSession
from kode_tui.soul.llm.scripted import ScriptedProvider

SCRIPTED = ModelChoice(name="scripted", model="scripted", source="flag")
SCRIPT: list[dict[str, object]] = [
    {"tool_calls": [{"name": "ReadFile", "arguments": {"path": "README.md"}}]},
    {"text": "It is a tiny project."},
    {"text": "Two."},
]


async def two_turns(project: Path) -> AgentSession:
    opened = await AgentSession.open(project)
    await opened.start(Config(), SCRIPTED, provider=ScriptedProvider(SCRIPT), yolo=True)
    await opened.run("read the readme")
    await opened.run("second")
    return opened


def texts(opened: AgentSession) -> list[str]:
    return [f"{m.role}:{m.text}" for m in opened.travel.timeline().history]


async def test_choosing_a_tool_result_drops_its_call_too_in_one_edit_rotation(
    project: Path,
) -> None:
    opened = await two_turns(project)
    try:
        history = list(opened.travel.timeline().history)
        before = texts(opened)
        checkpoints = [c.id for c in opened.travel.timeline().checkpoints]
        result = next(i for i, m in enumerate(history) if m.role == "tool")

        plan = opened.drops.plan([result])

        assert plan.indexes == (result - 1, result)  # the call's message and its result
        assert plan.tool_results == 1 and plan.tokens > 0
        assert plan.tokens_after == opened.compaction.token_count() - plan.tokens
        rotated = await opened.drops.apply(plan)

        after = opened.travel.timeline().history
        assert not any(m.role == "tool" or m.tool_calls for m in after)
        assert list(paired(after)) == list(after)  # nothing left to pair or to leave out
        assert texts(opened) == [t for i, t in enumerate(before) if i not in plan.indexes]
        assert [c.id for c in opened.travel.timeline().checkpoints] == checkpoints
        assert opened.compaction.token_count() == plan.tokens_after
        [rotation] = list_rotations(opened.session.context_file)
        assert rotation.reason == "edit" and rotation.path.name == rotated

        assert rotated is not None
        await opened.travel.restore(rotated)
        assert texts(opened) == before
    finally:
        await opened.close()


async def test_a_range_of_checkpoints_drops_their_messages_but_keeps_the_checkpoints(
    project: Path,
) -> None:
    opened = await two_turns(project)
    try:
        checkpoints = list(opened.travel.timeline().checkpoints)
        # The first turn: from checkpoint 0 to the one before the second turn's.
        second = next(
            i for i, m in enumerate(opened.travel.timeline().history) if m.text == "second"
        )
        last = max(c.id for c in checkpoints if c.message_index < second) - 1
        notes = [t for t in texts(opened) if "CHECKPOINT" in t]

        plan = opened.drops.range_plan(0, last)

        assert plan.indexes and max(plan.indexes) < second
        assert plan.tool_results == 1
        await opened.drops.apply(plan)
        assert [c.id for c in opened.travel.timeline().checkpoints] == [c.id for c in checkpoints]
        kept = [t for t in texts(opened) if "CHECKPOINT" not in t]
        assert kept == ["user:second", "assistant:Two."]
        assert [t for t in texts(opened) if "CHECKPOINT" in t] == notes
        with pytest.raises(ValueError, match="no checkpoint 99"):
            opened.drops.range_plan(0, 99)
    finally:
        await opened.close()


async def test_a_plan_for_another_history_drops_nothing(project: Path) -> None:
    opened = await two_turns(project)
    try:
        plan = opened.drops.plan([1])
        await opened.drops.apply(opened.drops.plan([len(opened.travel.timeline().history) - 1]))
        before = texts(opened)
        with pytest.raises(ValueError, match="changed since"):
            await opened.drops.apply(plan)
        assert texts(opened) == before
    finally:
        await opened.close()
