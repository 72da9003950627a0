"""The facade front ends use (`kode_tui.soul.facade.AgentSession`): the same behaviour for the
TUI, print mode and the front ends to come, tested without a screen."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kode_tui.config import Config, HookConfig, LoopControl, ModelChoice, ModelConfig
from kode_tui.soul.facade import AgentSession, Session, SessionLocked, read_earlier
from kode_tui.soul.llm import process
from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.wire import events as ev

SCRIPTED = ModelChoice(name="scripted", model="scripted", source="flag")


def write_call(path: str, content: str) -> dict[str, object]:
    return {"name": "WriteFile", "arguments": {"path": path, "content": content}}


async def started(work_dir: Path, script: list[dict[str, object]]) -> AgentSession:
    opened = await AgentSession.open(work_dir)
    await opened.start(Config(), SCRIPTED, provider=ScriptedProvider(script), yolo=True)
    return opened


async def test_an_agent_with_a_provider_of_its_own_starts_no_model_process(
    tmp_path: Path,
) -> None:
    process.stop()
    opened = await started(tmp_path, [])
    try:
        assert process.worker_pid() is None
    finally:
        await opened.close()


async def test_a_view_of_a_session_being_written_follows_its_turns_and_rotations(
    tmp_path: Path,
) -> None:
    writer = await started(tmp_path, [{"text": "one"}, {"text": "two"}])
    try:
        await writer.run("first")
        with pytest.raises(SessionLocked):
            await AgentSession.open(tmp_path, writer.session)
        view = await AgentSession.view(writer.session)
        reloads = view.bus.subscribe(ev.ContextReloaded)
        stop = asyncio.Event()
        following = asyncio.create_task(view.follow(stop))
        try:
            assert view.read_only == "locked"
            assert len(view.travel.timeline().checkpoints) == len(
                writer.travel.timeline().checkpoints
            )
            await writer.run("second")
            await asyncio.wait_for(anext(aiter(reloads)), 60)
            assert "second" in [m.text for m in view.travel.timeline().history if m.role == "user"]
            await writer.clear()
            async with asyncio.timeout(60):
                while not view.travel.rotations():
                    await anext(aiter(reloads))
            assert [e.rotation.path.name for e in view.travel.rotations()] == ["context_1.jsonl"]
            assert list(view.travel.timeline().history) == []
        finally:
            stop.set()
            await following
            await view.close()
    finally:
        await writer.close()


async def test_a_view_cannot_run_a_turn_and_says_why(tmp_path: Path) -> None:
    writer = await started(tmp_path, [{"text": "one"}])
    try:
        await writer.run("first")
        view = await AgentSession.view(writer.session)
        await view.start(Config(), SCRIPTED)
        assert not view.started
        with pytest.raises(RuntimeError, match="read-only"):
            await view.run("hello")
        await view.close()
    finally:
        await writer.close()


async def test_an_agent_built_unannounced_tells_its_views_once_they_ask(tmp_path: Path) -> None:
    """The TUI builds the agent before its panes subscribe: what the agent says at start (its
    mode, the prompt's size) waits for `announce()`, and is said once."""
    opened = await AgentSession.open(tmp_path)
    try:
        await opened.start(Config(), SCRIPTED, provider=ScriptedProvider([]), announce=False)
        seen: list[ev.Event] = []
        views = opened.bus.subscribe(callback=seen.append, direct=True)
        statuses = opened.bus.subscribe(ev.StatusUpdate)
        assert opened.started and seen == []
        opened.announce()
        opened.announce()
        await asyncio.wait_for(anext(aiter(statuses)), 60)  # measured in the background
        assert [type(event) for event in seen] == [ev.PermissionsChanged, ev.StatusUpdate]
        views.close()
        statuses.close()
    finally:
        await opened.close()


async def test_clear_keeps_the_old_context_and_tells_the_views(tmp_path: Path) -> None:
    opened = await started(tmp_path, [{"text": "hello"}])
    try:
        await opened.run("hi")
        seen = []
        subscription = opened.bus.subscribe(ev.ContextCleared, callback=seen.append)
        rotated = await opened.clear()
        await subscription.join()
        assert rotated == "context_1.jsonl"
        assert [event.rotated_file for event in seen] == [rotated]
        assert opened.travel.rotated_file("1") == rotated
        assert opened.travel.rotated_file("7") is None
        assert opened.travel.rotated_file("../context") is None
    finally:
        await opened.close()


async def test_a_revert_plan_shows_each_conflict_as_a_diff(tmp_path: Path) -> None:
    opened = await started(
        tmp_path,
        [{"tool_calls": [write_call("a.txt", "agent\n")]}, {"text": "done"}],
    )
    try:
        await opened.run("write a.txt")
        (tmp_path / "a.txt").write_text("mine\n")
        plan = await opened.travel.revert_plan(0)
        assert [(p.path, p.action) for p in plan.preview.files] == [("a.txt", "conflict")]
        [diff] = plan.conflict_diffs
        assert (diff.old_text, diff.new_text) == ("agent\n", "mine\n")
        assert plan.label == "write a.txt"
        with pytest.raises(ValueError):
            await opened.travel.revert_plan(99)
    finally:
        await opened.close()


async def test_closing_twice_is_harmless_and_frees_the_session(tmp_path: Path) -> None:
    opened = await started(tmp_path, [{"text": "hello"}])
    await opened.run("hi")
    await opened.close()
    await opened.close()
    again = await AgentSession.open(tmp_path, opened.session)
    assert again.read_only is None
    await again.close()


async def test_a_session_left_without_a_word_is_removed_at_close_and_a_talked_one_kept(
    tmp_path: Path,
) -> None:
    left = await started(tmp_path, [])
    await left.close()
    talked = await started(tmp_path, [{"text": "hello"}])
    await talked.run("hi")
    await talked.close()

    assert not left.session.dir.exists()
    assert [s.id for s in await Session.list(tmp_path)] == [talked.session.id]


def test_the_library_api_names_the_facade() -> None:
    """DESIGN.md §9: the soul package names the facade next to the loop."""
    import kode_tui.soul as soul

    assert soul.AgentSession is AgentSession
    assert "AgentSession" in soul.__all__


async def test_a_resumed_session_reads_what_came_before_each_compaction_oldest_kept_once(
    tmp_path: Path,
) -> None:
    """Item 6 of issue 28: the old turns stay above the compaction, read from the rotated
    files (each message once: what a compaction kept shows after its summary)."""
    script: list[dict[str, object]] = [
        {"text": "one"},
        {"text": "two"},
        {"text": "summary A"},
        {"text": "three"},
        {"text": "summary B"},
    ]
    writer = await started(tmp_path, script)
    for prompt in ("first", "second"):
        await writer.run(prompt)
    assert await writer.compaction.compact()
    await writer.run("third")
    assert await writer.compaction.compact()
    await writer.close()

    resumed = await AgentSession.open(tmp_path, writer.session)
    try:
        history, _past = await resumed.messages()
        earlier = await resumed.earlier()
        assert [r.path.name for r in earlier.shown] == ["context_2.jsonl", "context_1.jsonl"]
        assert earlier.left_out == 0
        newer = read_earlier(earlier.shown[0].path, history)
        oldest = read_earlier(earlier.shown[1].path, newer)
        shown = [m.text for m in [*oldest, *newer, *history] if m.role in ("user", "assistant")]
        said = [text for text in shown if not text.startswith("<system>")]
        assert said == ["first", "one", "second", "two", "third", "three"]
        assert sum("summary A" in text for text in shown) == 1
    finally:
        await resumed.close()


async def test_a_config_read_again_applies_models_and_limits_now_and_says_what_waits(
    tmp_path: Path,
) -> None:
    mine = ModelConfig(model="openai/mine", api_base="http://127.0.0.1:9/v1")
    config = Config(models={"mine": mine})
    opened = await AgentSession.open(tmp_path)
    busy = {"error": {"status": 503, "message": "busy", "retry_after": 0}}
    provider = ScriptedProvider([busy, {"text": "ok"}])
    choice = ModelChoice(name="mine", model="openai/mine", source="config")
    await opened.start(config, choice, provider=provider, yolo=True)
    retries = opened.bus.subscribe(ev.StepRetry)
    try:
        added = config.model_copy(
            update={
                "models": {"mine": mine, "fast": ModelConfig(model="openai/fast")},
                "loop_control": LoopControl(max_retries_per_step=4),
                "hooks": [HookConfig(event="Stop", command="true")],
                "default_model": "fast",
            }
        )

        note = await opened.use_config(added)

        assert note == (
            "model fast added; loop_control changed; hooks: from the next session; "
            "default_model: at the next start"
        )
        assert "fast" in [option.name for option in opened.model_options()]
        assert (await opened.run("hi")).stop_reason == "done"
        assert (await asyncio.wait_for(anext(aiter(retries)), 60)).max_attempts == 4
        assert opened.model_name == "scripted"  # the model in use was not replaced

        note = await opened.use_config(added.model_copy(update={"models": {}}))

        assert note.startswith(
            "models mine, fast removed; the model in use stays as it was: unknown model 'mine'"
        )
    finally:
        retries.close()
        await opened.close()
