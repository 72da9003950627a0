"""Forking a session through the facade: a new session of the same work dir, a context Kimi CLI
reads as it reads the original, and a record of where it came from."""

from __future__ import annotations

from pathlib import Path

import pytest

from kode_tui.session import Context, Session
from kode_tui.session.state import Pin, load_state
from kode_tui.soul.facade import AgentSession, LineageNote
from tests.session_helpers import session_with_turns
from tests.test_kimi_compat import KIMI_PYTHON, KIMI_RESTORE, kimi, kimi_view, ours


def _before_checkpoint(path: Path, checkpoint: int) -> bytes:
    data = path.read_bytes()
    marker = f'{{"role": "_checkpoint", "id": {checkpoint}}}'.encode()
    return data[: data.index(marker)]


async def test_fork_up_to_a_checkpoint_copies_the_records_before_it_into_a_new_session(
    tmp_path: Path,
) -> None:
    project, source = await session_with_turns(tmp_path, 3)
    opened = await AgentSession.open(project, source)
    try:
        forked = await opened.lineage.fork(2)
    finally:
        await opened.close()
    assert forked.id != source.id
    assert forked.work_dir == source.work_dir
    assert forked.dir.parent == source.dir.parent
    assert forked.context_file.read_bytes() == _before_checkpoint(source.context_file, 2)
    state = load_state(forked.state_file)
    assert state.forked_from is not None
    assert (state.forked_from.session, state.forked_from.file) == (source.id, "context.jsonl")
    assert state.forked_from.checkpoint == 2
    note = LineageNote.of(forked)
    assert note is not None
    assert note.text == f"forked from {source.id[:8]} before checkpoint 2"
    # It restores as any context does, and the source is untouched.
    async with Context(forked.context_file) as context:
        await context.restore()
        assert [m.text for m in context.history if m.role == "user"] == ["turn 0"]
        assert list(context.checkpoints.ids) == [0, 1]
    assert [s.id for s in await Session.list(project)][:1] == [forked.id]


async def test_fork_without_a_checkpoint_copies_the_whole_live_context(tmp_path: Path) -> None:
    project, source = await session_with_turns(tmp_path, 2)
    source.state.pins = [Pin(text="Always answer in French.")]
    source.save_state()
    opened = await AgentSession.open(project, source)
    try:
        forked = await opened.lineage.fork()
    finally:
        await opened.close()
    assert forked.context_file.read_bytes() == source.context_file.read_bytes()
    assert forked.title == f"{source.title} (fork)"
    # The pinned notes go with the conversation.
    assert [pin.text for pin in load_state(forked.state_file).pins] == ["Always answer in French."]


async def test_fork_of_a_rotated_context_records_the_file(tmp_path: Path) -> None:
    project, source = await session_with_turns(tmp_path, 2)
    async with Context(source.context_file) as context:
        await context.revert_to(2)
    opened = await AgentSession.open(project, source)
    try:
        forked = await opened.lineage.fork(from_file="1")
    finally:
        await opened.close()
    assert forked.context_file.read_bytes() == (source.dir / "context_1.jsonl").read_bytes()
    origin = load_state(forked.state_file).forked_from
    assert origin is not None
    assert (origin.file, origin.checkpoint) == ("context_1.jsonl", None)


async def test_fork_keeps_the_file_journal_blobs(tmp_path: Path) -> None:
    project, source = await session_with_turns(tmp_path, 1)
    blobs = source.dir / "blobs"
    blobs.mkdir()
    (blobs / "abc").write_bytes(b"before")
    opened = await AgentSession.open(project, source)
    try:
        forked = await opened.lineage.fork()
    finally:
        await opened.close()
    assert (forked.dir / "blobs" / "abc").read_bytes() == b"before"


async def test_fork_at_a_missing_checkpoint_says_so_and_makes_nothing(tmp_path: Path) -> None:
    project, source = await session_with_turns(tmp_path, 1)
    opened = await AgentSession.open(project, source)
    try:
        with pytest.raises(ValueError, match=r"there is no checkpoint 9 in context\.jsonl"):
            await opened.lineage.fork(9)
        with pytest.raises(ValueError, match="there is no rotated context 4"):
            await opened.lineage.fork(from_file="4")
    finally:
        await opened.close()
    assert [s.id for s in await Session.list(project)] == [source.id]


@pytest.mark.skipif(KIMI_PYTHON is None, reason="kimi-cli is not installed")
async def test_kimi_restores_a_fork_as_we_do(tmp_path: Path) -> None:
    project, source = await session_with_turns(tmp_path, 3)
    opened = await AgentSession.open(project, source)
    try:
        forked = await opened.lineage.fork(4)
    finally:
        await opened.close()
    async with Context(forked.context_file) as context:
        await context.restore()
        expected = kimi_view(ours(context))
    assert len(expected["history"]) == 6
    assert kimi(KIMI_RESTORE, forked.context_file) == expected


async def test_fork_of_a_context_without_messages_says_so(tmp_path: Path) -> None:
    project, source = await session_with_turns(tmp_path, 1)
    async with Context(source.context_file) as context:
        await context.clear()
    opened = await AgentSession.open(project, source)
    try:
        with pytest.raises(ValueError, match="there is nothing to fork"):
            await opened.lineage.fork()
        with pytest.raises(ValueError, match="there is nothing to fork"):
            await opened.lineage.fork(0, from_file="1")
    finally:
        await opened.close()
