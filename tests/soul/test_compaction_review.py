"""Reviewable compaction through the facade (issue 17): a plan changes nothing until it is
applied, the edited summary is what the context holds and the model reads, and an automatic
compaction waits for a reviewer only when `[compaction] review` is on and one is set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kode_tui.config import CompactionConfig, Config, ModelChoice
from kode_tui.soul.facade import AgentSession, CompactionPlan
from kode_tui.soul.llm.scripted import ScriptedProvider

SCRIPTED = ModelChoice(name="scripted", model="scripted", source="flag")


async def opened(
    work_dir: Path, provider: ScriptedProvider, config: Config | None = None
) -> AgentSession:
    session = await AgentSession.open(work_dir)
    await session.start(config or Config(), SCRIPTED, provider=provider, yolo=True)
    return session


async def two_turns(work_dir: Path) -> AgentSession:
    """A session of two turns whose next model call answers "SUMMARY"."""
    provider = ScriptedProvider([{"text": "one."}, {"text": "two."}, {"text": "SUMMARY"}])
    agent = await opened(work_dir, provider)
    await agent.run("first")
    await agent.run("second")
    return agent


def files(directory: Path) -> dict[str, bytes]:
    # The state files are left out: the summary's model call was paid for, and `/cost` says so.
    return {
        p.name: p.read_bytes()
        for p in directory.iterdir()
        if p.is_file() and p.name not in ("state.json", "state.kode.json")
    }


async def test_an_edited_summary_is_what_the_context_holds_and_the_model_reads(
    tmp_path: Path,
) -> None:
    provider = ScriptedProvider(
        [{"text": "one."}, {"text": "two."}, {"text": "THE MODEL'S SUMMARY"}, {"text": "four."}]
    )
    agent = await opened(tmp_path, provider)
    await agent.run("first")
    await agent.run("second")
    plan = await agent.compaction.plan("keep the names")
    assert plan is not None
    assert plan.summary == "THE MODEL'S SUMMARY"
    assert plan.strategy == "LLMSummaryCompaction"
    assert "ToolResultHidingCompaction" in plan.strategies
    assert plan.kept[-1].text == "two." and plan.kept == plan.messages[1:]
    assert plan.hidden == len(plan.source) - len(plan.kept) > 0
    assert plan.tokens_after < plan.tokens_before

    await agent.compaction.apply(plan, "THE USER'S SUMMARY")
    live = agent.session.dir / "context.jsonl"
    assert "THE USER'S SUMMARY" in live.read_text()
    assert "THE MODEL'S SUMMARY" not in live.read_text()
    notes = [json.loads(line) for line in (agent.session.dir / "rotations.jsonl").open()]
    assert notes[-1]["reason"] == "compaction" and notes[-1]["edited"] is True
    rows = agent.travel.rotations()
    assert rows[0].rotation.info.get("edited") is True

    await agent.run("third")
    sent = json.dumps([m.model_dump(mode="json") for m in provider.requests[-1].history])
    assert "THE USER'S SUMMARY" in sent and "THE MODEL'S SUMMARY" not in sent
    await agent.close()


async def test_an_unedited_summary_notes_no_edit(tmp_path: Path) -> None:
    agent = await two_turns(tmp_path)
    plan = await agent.compaction.plan()
    assert plan is not None
    await agent.compaction.apply(plan, "SUMMARY")
    notes = [json.loads(line) for line in (agent.session.dir / "rotations.jsonl").open()]
    assert "edited" not in notes[-1]
    await agent.close()


async def test_a_plan_left_unapplied_changes_no_file(tmp_path: Path) -> None:
    agent = await two_turns(tmp_path)
    before = files(agent.session.dir)
    assert await agent.compaction.plan() is not None
    assert files(agent.session.dir) == before
    assert agent.travel.rotations() == []
    await agent.close()


async def test_a_plan_of_a_context_that_moved_on_is_refused(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        [{"text": "one."}, {"text": "two."}, {"text": "SUMMARY"}, {"text": "three."}]
    )
    agent = await opened(tmp_path, provider)
    await agent.run("first")
    await agent.run("second")
    plan = await agent.compaction.plan()
    assert plan is not None
    await agent.run("third")
    live = (agent.session.dir / "context.jsonl").read_bytes()
    with pytest.raises(ValueError, match="changed"):
        await agent.compaction.apply(plan, "edited")
    assert (agent.session.dir / "context.jsonl").read_bytes() == live
    assert agent.travel.rotations() == []
    await agent.close()


async def test_an_empty_summary_is_refused(tmp_path: Path) -> None:
    agent = await two_turns(tmp_path)
    plan = await agent.compaction.plan()
    assert plan is not None
    with pytest.raises(ValueError, match="empty"):
        await agent.compaction.apply(plan, "  \n")
    assert agent.travel.rotations() == []
    await agent.close()


async def test_an_unknown_strategy_is_refused(tmp_path: Path) -> None:
    agent = await opened(tmp_path, ScriptedProvider([{"text": "one."}]))
    await agent.run("first")
    with pytest.raises(ValueError, match="no compaction strategy named Nope"):
        await agent.compaction.plan(strategy="Nope")
    await agent.close()


def big_turns() -> list[dict[str, object]]:
    # The first answer reports a context past the trigger of a 1,000-token model.
    return [
        {"text": "one.", "usage": {"input": 900, "output": 50}},
        {"text": "SUMMARY"},
        {"text": "two."},
    ]


async def test_with_review_on_an_automatic_compaction_waits_for_the_reviewer(
    tmp_path: Path,
) -> None:
    provider = ScriptedProvider(big_turns(), max_context_size=1_000)
    config = Config(compaction=CompactionConfig(review=True))
    agent = await opened(tmp_path, provider, config)
    shown: list[CompactionPlan] = []

    async def review(plan: CompactionPlan) -> CompactionPlan | None:
        shown.append(plan)
        return plan.with_summary("REVIEWED")

    agent.compaction.set_reviewer(review)
    await agent.run("first")
    await agent.run("second")
    assert len(shown) == 1 and shown[0].summary == "SUMMARY"
    assert "REVIEWED" in json.dumps(
        [m.model_dump(mode="json") for m in provider.requests[-1].history]
    )
    await agent.close()


async def test_a_cancelled_automatic_review_lets_the_turn_go_on_uncompacted_and_unasked(
    tmp_path: Path,
) -> None:
    write = {"name": "WriteFile", "arguments": {"path": "a.txt", "content": "a"}}
    provider = ScriptedProvider(
        [
            {"text": "one.", "usage": {"input": 900, "output": 50}},
            {"text": "SUMMARY"},  # worked out at the second turn's first step, then declined
            {"tool_calls": [write], "usage": {"input": 950, "output": 20}},
            {"text": "two."},  # its second step, still past the trigger, is not asked again
        ],
        max_context_size=1_000,
    )
    agent = await opened(tmp_path, provider, Config(compaction=CompactionConfig(review=True)))
    asked: list[CompactionPlan] = []

    async def cancel(plan: CompactionPlan) -> CompactionPlan | None:
        asked.append(plan)
        return None

    agent.compaction.set_reviewer(cancel)
    await agent.run("first")
    result = await agent.run("second")
    assert result.error is None and len(asked) == 1
    assert agent.travel.rotations() == []
    sent = [m.text for m in provider.requests[-1].history]
    assert "first" in sent and "one." in sent
    await agent.close()


async def test_without_review_in_the_config_the_reviewer_is_not_asked(tmp_path: Path) -> None:
    provider = ScriptedProvider(big_turns(), max_context_size=1_000)
    agent = await opened(tmp_path, provider)

    async def never(plan: CompactionPlan) -> CompactionPlan | None:
        raise AssertionError("asked")

    agent.compaction.set_reviewer(never)
    await agent.run("first")
    await agent.run("second")
    assert agent.travel.rotations()[0].rotation.reason == "compaction"
    await agent.close()


async def test_with_review_on_but_no_reviewer_the_compaction_applies_unreviewed(
    tmp_path: Path,
) -> None:
    # Print mode sets no reviewer: nobody could answer, so the turn must not wait.
    provider = ScriptedProvider(big_turns(), max_context_size=1_000)
    agent = await opened(tmp_path, provider, Config(compaction=CompactionConfig(review=True)))
    await agent.run("first")
    await agent.run("second")
    assert agent.travel.rotations()[0].rotation.reason == "compaction"
    await agent.close()
