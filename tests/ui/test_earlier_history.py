"""A resumed session's pane: what came before a compaction shows above it, as it did live."""

from __future__ import annotations

from pathlib import Path

import msgspec.structs

from kode_tui.message import COMPACTION_OUTPUT_PREFIX, Message, TextPart, system
from kode_tui.session.earlier import EarlierContexts
from kode_tui.session.rotation import list_rotations
from kode_tui.ui.widgets.conversation import Conversation
from kode_tui.wire import WireBus
from tests.ui.test_conversation import chat, describe, host


def compacted(tmp_path: Path, turns: int) -> tuple[list[Message], EarlierContexts]:
    """A live history compacted from `turns` turns (the last one kept after the summary),
    and the rotated file those turns are in."""
    before = chat(turns)
    lines = "".join(m.model_dump_json(exclude_none=True) + "\n" for m in before)
    (tmp_path / "context_1.jsonl").write_text(lines)
    (rotated,) = list_rotations(tmp_path / "context.jsonl")
    head = Message(role="user", content=[system(COMPACTION_OUTPUT_PREFIX), TextPart(text="so far")])
    after = [Message(role="user", content="next"), Message(role="assistant", content="done")]
    live = [head, *before[-2:], *after]
    return live, EarlierContexts([msgspec.structs.replace(rotated, reason="compaction")])


async def test_the_turns_before_a_compaction_show_above_its_summary_each_once(
    tmp_path: Path,
) -> None:
    live, earlier = compacted(tmp_path, 3)

    async def read() -> EarlierContexts:
        return earlier

    async with host(WireBus()).run_test(size=(80, 40)) as pilot:
        conversation = pilot.app.query_one(Conversation)
        await conversation.load_history(live)
        await conversation.load_earlier(read).wait()
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()

        assert describe(conversation) == [
            "user: question 0",
            "assistant: answer **0**",
            "user: question 1",
            "assistant: answer **1**",
            "compaction: ── compacted: summary ──",
            "user: question 2",  # kept by the compaction: after its summary only
            "assistant: answer **2**",
            "user: next",
            "assistant: done",
        ]


async def test_a_long_earlier_context_is_read_when_home_reaches_it(tmp_path: Path) -> None:
    live, earlier = compacted(tmp_path, 200)

    async def read() -> EarlierContexts:
        return earlier

    async with host(WireBus(), max_blocks=60).run_test(size=(80, 24)) as pilot:
        conversation = pilot.app.query_one(Conversation)
        await conversation.load_history(live)
        await conversation.load_earlier(read).wait()
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        assert describe(conversation)[-1] == "assistant: done"
        assert conversation.pending_count > 0

        conversation.focus()
        await pilot.press("home")
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        assert describe(conversation)[:2] == ["user: question 0", "assistant: answer **0**"]
        assert conversation.pending_count == 0
