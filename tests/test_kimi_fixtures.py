"""kode-tui on real session folders written by kimi-cli 1.52 (tests/fixtures/README.md): every
line parses, each opens with its checkpoints, and what we write into them is what Kimi writes."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest

from kode_tui.config import Config, resolve_model
from kode_tui.message import is_checkpoint_note
from kode_tui.session import Context, Session
from kode_tui.session.metadata import Metadata, save_metadata
from kode_tui.session.state import load_state
from kode_tui.soul.agent import Agent, open_agent
from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.soul.transcript import PastResults
from kode_tui.wire import events as ev
from kode_tui.wire.recorder import read_wire
from tests.conftest import KIMI_DEFAULT_FIXTURE, KIMI_FIXTURES, KIMI_OKABE_FIXTURE

SUMMARY = {"text": "<current_focus>\nGreeting\n</current_focus>"}


def copy_fixture(fixture: Path, tmp_path: Path) -> Path:
    """A copy of `fixture` whose files have Kimi's mode (0644), as in a real Kimi session."""
    folder = tmp_path / fixture.name
    shutil.copytree(fixture, folder)
    for path in folder.iterdir():
        path.chmod(0o644)
    return folder


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


async def open_fixture(folder: Path, tmp_path: Path, replies: list[dict[str, Any]]) -> Agent:
    work_dir = tmp_path / "work"
    work_dir.mkdir(exist_ok=True)
    session = await Session.from_dir(folder)
    config = Config()
    return await open_agent(
        session,
        config,
        resolve_model(config),
        provider=ScriptedProvider(replies),
        work_dir=work_dir,
    )


@pytest.mark.parametrize("fixture", KIMI_FIXTURES, ids=lambda path: path.name)
async def test_every_line_of_every_kimi_file_parses_and_each_context_restores(
    fixture: Path,
) -> None:
    files = sorted(fixture.rglob("*.jsonl"))  # subagents/<id>/ too
    assert {"context.jsonl", "wire.jsonl"} <= {path.name for path in files}
    for path in files:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            assert isinstance(json.loads(line), dict), f"{path.name}:{number}"
    for path in fixture.rglob("context*.jsonl"):
        context = Context(path, read_only=True)
        assert await context.restore()
        assert context.warnings == [], path.name
        kimi_ids = [r["id"] for r in records(path) if r.get("role") == "_checkpoint"]
        assert [c.id for c in context.checkpoints] == kimi_ids
        await context.close()
    assert list(read_wire(fixture / "wire.jsonl"))


@pytest.mark.parametrize("fixture", KIMI_FIXTURES, ids=lambda path: path.name)
async def test_kode_tui_opens_each_kimi_session_with_its_checkpoints(
    fixture: Path, tmp_path: Path
) -> None:
    from kode_tui.ui.widgets.timeline import CheckpointTimeline
    from tests.ui_helpers import make_app, ready, screen_text, wait_for

    folder = copy_fixture(fixture, tmp_path)
    session = await Session.from_dir(folder)
    last_answer = next(
        r["content"]
        for r in reversed(records(folder / "context.jsonl"))
        if r.get("role") == "assistant" and isinstance(r["content"], str)
    )
    app = make_app(tmp_path, ScriptedProvider([]), session=session)
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        timeline = app.screen.query_one(CheckpointTimeline)
        # The history is drawn and the timeline filled after the agent is up.
        await wait_for(pilot, lambda: bool(timeline.checkpoint_ids))
        await wait_for(pilot, lambda: last_answer in screen_text(app))
        shown = timeline.checkpoint_ids
        assert last_answer in screen_text(app)
    ids = [r["id"] for r in records(folder / "context.jsonl") if r.get("role") == "_checkpoint"]
    assert shown and set(shown) <= set(ids)


async def test_a_compaction_of_ours_ends_with_the_usage_record_kimi_writes(
    tmp_path: Path,
) -> None:
    # Kimi's compacted files end with its estimate of the new context's size as `_usage`;
    # without one, Kimi reads the size as 0 after our /compact.
    assert records(KIMI_DEFAULT_FIXTURE / "context.jsonl")[-1]["role"] == "_usage"
    folder = copy_fixture(KIMI_DEFAULT_FIXTURE, tmp_path)
    agent = await open_fixture(folder, tmp_path, [{"text": "Still here."}, SUMMARY])
    ended: list[ev.CompactionEnd] = []
    agent.bus.subscribe(ev.CompactionEnd, callback=ended.append)
    await agent.soul.run("Are you there?")
    assert await agent.soul.compact()
    shown = agent.soul.status().context_tokens
    await agent.close()

    written = records(folder / "context.jsonl")
    assert [r["role"] for r in written[:2]] == ["_system_prompt", "_checkpoint"]
    # What the next request carries (Kimi's gauge reads it), as ours shows it.
    assert written[-1] == {"role": "_usage", "token_count": ended[-1].tokens_after}
    assert ended[-1].tokens_after == shown > 0
    async with Context(folder / "context.jsonl") as reopened:
        await reopened.restore()
        # An estimate, not a count the model reported: the messages count as added since.
        assert reopened.token_count == 0
        assert reopened.pending_tokens == sum(m.estimated_tokens() for m in reopened.history)
        # rotations.jsonl notes the sizes the compaction was shown with.
        note = records(folder / "rotations.jsonl")[-1]
        assert note["reason"] == "compaction"
        assert (note["tokens"], note["tokens_after"]) == (
            ended[-1].tokens_before,
            ended[-1].tokens_after,
        )


async def test_no_checkpoint_note_is_written_into_a_kimi_default_agent_session(
    tmp_path: Path,
) -> None:
    # Kimi's default agent has no SendDMail: its checkpoints carry no CHECKPOINT n notes, and
    # ours must not add any, by a turn, a compaction's checkpoint 0 or after a /clear.
    folder = copy_fixture(KIMI_DEFAULT_FIXTURE, tmp_path)
    agent = await open_fixture(
        folder, tmp_path, [{"text": "One."}, {"text": "Two."}, SUMMARY, {"text": "Three."}]
    )
    assert "SendDMail" not in agent.soul.toolset
    await agent.soul.run("one")
    await agent.soul.run("two")
    assert await agent.soul.compact()
    await agent.context.clear()
    await agent.soul.run("three")
    await agent.close()
    for path in folder.glob("context*.jsonl"):
        notes = [r for r in records(path) if r.get("role") == "user" and "CHECKPOINT" in str(r)]
        assert notes == [], path.name


async def test_a_kimi_default_agent_session_kimi_cleared_gets_no_checkpoint_note(
    tmp_path: Path,
) -> None:
    # Kimi's /clear: the context rotated, the new one holding only the system prompt. The
    # rotation still tells which agent wrote the session.
    folder = copy_fixture(KIMI_DEFAULT_FIXTURE, tmp_path)
    (folder / "context.jsonl").rename(folder / "context_4.jsonl")
    prompt = records(folder / "context_4.jsonl")[0]
    (folder / "context.jsonl").write_text(json.dumps(prompt) + "\n")
    agent = await open_fixture(folder, tmp_path, [{"text": "One."}])
    assert "SendDMail" not in agent.soul.toolset
    await agent.soul.run("one")
    await agent.close()
    assert not [r for r in records(folder / "context.jsonl") if "CHECKPOINT" in str(r)]


async def test_a_kimi_okabe_session_goes_on_with_its_checkpoint_notes(tmp_path: Path) -> None:
    folder = copy_fixture(KIMI_OKABE_FIXTURE, tmp_path)
    agent = await open_fixture(folder, tmp_path, [{"text": "Four."}])
    assert "SendDMail" in agent.soul.toolset
    before = agent.context.n_checkpoints
    await agent.soul.run("four")
    await agent.close()
    async with Context(folder / "context.jsonl") as context:
        await context.restore()
        texts = [m.text for m in context.history if m.role == "user"]
    new_ids = range(before, context.n_checkpoints)
    assert new_ids and all(f"<system>CHECKPOINT {n}</system>" in texts for n in new_ids)
    assert all(is_checkpoint_note(f"<system>CHECKPOINT {n}</system>") for n in new_ids)


async def test_the_kimi_files_we_rewrite_keep_their_mode(tmp_path: Path, home: Path) -> None:
    folder = copy_fixture(KIMI_DEFAULT_FIXTURE, tmp_path)
    async with Context(folder / "context.jsonl") as context:
        await context.restore()
        await context.restore_from(folder / "context_1.jsonl")
        await context.revert_to(3)
        await context.write_system_prompt("A prompt of ours.")
    session = await Session.from_dir(folder)
    session.state.custom_title = "Renamed"
    session.save_state()
    home.mkdir(parents=True, exist_ok=True)
    (home / "kode.json").write_text('{"work_dirs": []}')
    (home / "kode.json").chmod(0o644)
    save_metadata(Metadata())
    for path in (folder / "context.jsonl", folder / "state.json", home / "kode.json"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o644, path.name
    assert load_state(folder / "state.json").custom_title == "Renamed"


async def test_print_mode_compact_of_a_kimi_session_prints_the_size_it_writes(
    tmp_path: Path,
) -> None:
    from tests.soul_helpers import print_turn

    folder = copy_fixture(KIMI_OKABE_FIXTURE, tmp_path)
    work_dir = tmp_path / "work"
    work_dir.mkdir()
    session = await Session.from_dir(folder, work_dir)
    provider = ScriptedProvider([{"text": "Ours."}, SUMMARY])
    assert (await print_turn(work_dir, provider, "one of ours", session=session)).status == 0

    printed = await print_turn(work_dir, provider, "/compact", session=session)

    assert printed.status == 0, printed.err
    [line] = printed.out.splitlines()
    after = int(line.rsplit("→ ", 1)[1].removesuffix(" tokens.").replace(",", ""))
    assert "compacted" not in printed.err.lower()
    assert records(folder / "context.jsonl")[-1] == {"role": "_usage", "token_count": after}


AGENT_CALL = (
    '{"description": "Find the image", "prompt": "Which files are images?", '
    '"subagent_type": "explore"}'
)
"""The arguments of the Agent call in the kimi-default fixture."""


def subagent_blocks(wire: Path, call_id: str) -> list[ev.SubagentBlock]:
    result = PastResults.read(wire).find(call_id, AGENT_CALL)
    assert result is not None
    return [block for block in result.display if isinstance(block, ev.SubagentBlock)]


def test_a_subagent_the_parents_wire_has_no_events_of_is_read_from_its_own_folder(
    tmp_path: Path,
) -> None:
    folder = copy_fixture(KIMI_DEFAULT_FIXTURE, tmp_path)
    wire = folder / "wire.jsonl"
    from_events = subagent_blocks(wire, "call_agent")
    # As a background subagent leaves it: no SubagentEvent in the parent's wire.
    lines = wire.read_text().splitlines(keepends=True)
    wire.write_text("".join(line for line in lines if '"SubagentEvent"' not in line))

    from_folder = subagent_blocks(wire, "call_agent")

    assert from_folder == from_events
    (block,) = from_folder
    assert (block.agent_id, block.subagent_type) == ("a5f81639e", "explore")
    assert block.steps[0] == "step 1" and block.steps[1].startswith("  Only dot.png is an image")
