"""The side panes: token gauge, checkpoint timeline (with details) and history of rotations."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from textual import on
from textual.color import Color
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widget import Widget

from kode_tui.message import FileEditRecord, FunctionBody, TextPart, ToolCall, system
from kode_tui.message import Message as ChatMessage
from kode_tui.session import Context, Rotation
from kode_tui.soul.compaction import COMPACTION_OUTPUT_PREFIX
from kode_tui.tools.background import TaskView, notification_text
from kode_tui.ui import widgets as widgets_module
from kode_tui.ui.widgets.gauge import (
    MARKER,
    PENDING,
    USED,
    TokenGauge,
    marker_column,
)
from kode_tui.ui.widgets.history import HistoryPane, reason_text
from kode_tui.ui.widgets.timeline import USER_MARK, CheckpointDetails, CheckpointTimeline
from kode_tui.wire import events as ev
from kode_tui.wire.bus import WireBus
from tests.conftest import KIMI_FIXTURE
from tests.session_helpers import write_turns
from tests.ui_helpers import Host, Posted, facade_of, wait_for

SIZE = (50, 40)


class PanesHost(Host):
    """Side panes alone, with their stylesheet and the main screen's glue between them: the
    details of the highlighted checkpoint show in `CheckpointDetails`."""

    def __init__(self, *widgets: Widget) -> None:
        # The panes' shared stylesheet, as KodeApp loads it.
        super().__init__(*widgets, css_path=Path(widgets_module.__file__).parent / "context.tcss")

    @on(CheckpointTimeline.Highlighted)
    def _details(self, event: CheckpointTimeline.Highlighted) -> None:
        for details in self.query(CheckpointDetails):
            details.show(event.details_text)


def lines(widget: Widget) -> list[str]:
    """The widget as drawn, border included, one string per line."""
    width, height = widget.outer_size
    return [strip.text for strip in widget.render_lines(Region(0, 0, width, height))]


def status(tokens: int, *, pending: int = 0, window: int = 200_000) -> ev.StatusUpdate:
    return ev.StatusUpdate(
        context_tokens=tokens,
        pending_tokens=pending,
        max_context_tokens=window,
        reserved_tokens=50_000,
        trigger_tokens=150_000,
    )


async def settle(pilot: Pilot[None], seconds: float = 0.0) -> None:
    """Let bus callbacks, scheduled rebuilds and the refresh they cause all run."""
    await pilot.pause(seconds)
    await pilot.pause()


# --- token gauge ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tokens", "level", "colour", "text"),
    [
        (60_000, "-fill-low", "success", "30% 60k/200k"),
        (140_000, "-fill-mid", "warning", "70% 140k/200k"),
        (180_000, "-fill-high", "error", "90% 180k/200k"),
    ],
)
async def test_gauge_colour_and_numbers_follow_the_fill(
    tokens: int, level: str, colour: str, text: str
) -> None:
    bus = WireBus()
    app = PanesHost(TokenGauge(bus))
    async with app.run_test(size=SIZE) as pilot:
        gauge = app.query_one(TokenGauge)
        bus.send(status(tokens))
        await settle(pilot)
        assert gauge.has_class(level)
        assert [
            name for name in ("-fill-low", "-fill-mid", "-fill-high") if gauge.has_class(name)
        ] == [level]
        assert text in "\n".join(lines(gauge))
        used = gauge.get_component_rich_style("token-gauge--used").color
        assert used is not None
        expected = Color.parse(app.theme_variables[colour])
        assert Color.from_rich_color(used) == expected
        assert f"{tokens:,}" in str(gauge.tooltip)


async def test_gauge_marks_the_compaction_trigger_under_the_bar() -> None:
    bus = WireBus()
    app = PanesHost(TokenGauge(bus))
    async with app.run_test(size=SIZE) as pilot:
        gauge = app.query_one(TokenGauge)
        gauge.set_status(status(20_000))
        await settle(pilot)
        width = gauge.content_size.width
        drawn = lines(gauge)
        bar_line, marker_line = drawn[1], drawn[2]
        bar_start = bar_line.index(USED)
        column = marker_line.index(MARKER) - bar_start
        assert column == marker_column(150_000, 200_000, width) == 150_000 * width // 200_000
        assert "compacts at 150k" in marker_line


async def test_gauge_shows_pending_tokens_in_a_lighter_shade() -> None:
    bus = WireBus()
    app = PanesHost(TokenGauge(bus))
    async with app.run_test(size=SIZE) as pilot:
        gauge = app.query_one(TokenGauge)
        gauge.set_status(status(100_000, pending=20_000))
        await settle(pilot)
        width = gauge.content_size.width
        bar = lines(gauge)[1]
        assert bar.count(USED) == round(80_000 * width / 200_000)
        assert bar.count(PENDING) == round(100_000 * width / 200_000) - bar.count(USED)
        used = gauge.get_component_rich_style("token-gauge--used").color
        pending = gauge.get_component_rich_style("token-gauge--pending").color
        assert used is not None and pending is not None and used != pending
        assert "~20k est." in lines(gauge)[3]


async def test_gauge_says_compacting_between_begin_and_end() -> None:
    bus = WireBus()
    app = PanesHost(TokenGauge(bus))
    async with app.run_test(size=SIZE) as pilot:
        gauge = app.query_one(TokenGauge)
        gauge.set_status(status(160_000))
        bus.send(ev.CompactionBegin(strategy="LLMSummaryCompaction"))
        await settle(pilot)
        assert gauge.has_class("-compacting")
        assert "compacting…" in "\n".join(lines(gauge))
        bus.send(ev.CompactionEnd(tokens_before=160_000, tokens_after=3_000))
        await settle(pilot)
        assert not gauge.has_class("-compacting")
        assert "compacting…" not in "\n".join(lines(gauge))


async def test_gauge_keeps_its_numbers_after_a_revert_until_the_next_status() -> None:
    bus = WireBus()
    app = PanesHost(TokenGauge(bus))
    async with app.run_test(size=SIZE) as pilot:
        gauge = app.query_one(TokenGauge)
        gauge.set_status(status(124_000))
        bus.send(ev.ContextReverted(checkpoint_id=2, rotated_file="context_1.jsonl"))
        await settle(pilot)
        assert gauge.has_class("-stale")
        assert "62% 124k/200k" in "\n".join(lines(gauge))
        bus.send(status(10_000))
        await settle(pilot)
        assert not gauge.has_class("-stale")
        assert "5% 10k/200k" in "\n".join(lines(gauge))


async def test_the_gauge_and_the_history_write_a_token_count_alike(tmp_path: Path) -> None:
    """One rule (kode_tui.humanize): 12,900 tokens read "12.9k" in the gauge, in the history
    and in the session picker (tests/ui/test_screens.py), never "13k" in one and "12.9k" in
    another."""
    context = Context(tmp_path / "session" / "context.jsonl")
    await write_turns(context, 1)
    await context.clear(reason="compaction", tokens_before=12_900, tokens_after=3_000)
    bus = WireBus()
    view = await facade_of(context)
    app = Host(TokenGauge(bus), HistoryPane(bus, view))
    try:
        async with app.run_test(size=SIZE) as pilot:
            pane = app.query_one(HistoryPane)
            await wait_for(pilot, lambda: len(pane.paths) == 1)
            bus.send(status(12_900))
            await settle(pilot)
            assert "12.9k/200k" in "\n".join(lines(app.query_one(TokenGauge)))
            assert "compaction 12.9k→3k" in "\n".join(lines(pane))
    finally:
        await context.close()


# --- checkpoint timeline --------------------------------------------------------------------------


def call(call_id: str, name: str, **arguments: str) -> ToolCall:
    return ToolCall(id=call_id, function=FunctionBody(name=name, arguments=json.dumps(arguments)))


async def build_context(path: Path) -> Context:
    """Checkpoints 0-7, shaped like the soul's turns, with one file edit after checkpoint 2."""
    context = Context(path)
    await context.checkpoint()  # 0
    await context.append_message(ChatMessage(role="user", content="Create hello.py\nwith a main"))
    await context.checkpoint()  # 1
    await context.update_token_count(3_800)
    await context.append_message(
        [
            ChatMessage(
                role="assistant",
                content="Reading.",
                tool_calls=[call("a", "ReadFile", path="README.md")],
            ),
            ChatMessage(role="tool", content="# Demo", tool_call_id="a"),
        ]
    )
    await context.checkpoint()  # 2
    await context.append_message(
        ChatMessage(
            role="assistant",
            content="",
            tool_calls=[call("b", "WriteFile", path="hello.py"), call("c", "Glob", pattern="*")],
        )
    )
    await context.append_file_edit(
        FileEditRecord(path="hello.py", before=None, after="ab" * 32, tool_call_id="b")
    )
    await context.append_message(
        [
            ChatMessage(role="tool", content="written", tool_call_id="b"),
            ChatMessage(role="tool", content="hello.py", tool_call_id="c"),
        ]
    )
    await context.checkpoint()  # 3
    await context.append_message(
        ChatMessage(role="assistant", content="All done: hello.py prints hello.")
    )
    await context.checkpoint(add_user_message=True)  # 4, followed by a CHECKPOINT note
    await context.append_message(ChatMessage(role="user", content="Now add tests"))
    await context.checkpoint()  # 5
    await context.append_message(
        ChatMessage(
            role="user",
            content=[system(COMPACTION_OUTPUT_PREFIX), TextPart(text="We made hello.py.")],
        )
    )
    await context.checkpoint()  # 6
    await context.append_message(
        ChatMessage(
            role="user",
            content="<system>You just got a D-Mail from your future self. ...</system>",
        )
    )
    await context.checkpoint()  # 7: nothing follows yet
    return context


@pytest.fixture
async def context(tmp_path: Path) -> AsyncIterator[Context]:
    built = await build_context(tmp_path / "session" / "context.jsonl")
    yield built
    await built.close()


async def timeline_app(bus: WireBus, context: Context) -> PanesHost:
    return PanesHost(CheckpointTimeline(bus, await facade_of(context)), CheckpointDetails())


async def test_timeline_labels_each_checkpoint_by_what_follows_it(context: Context) -> None:
    bus = WireBus()
    app = await timeline_app(bus, context)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        timeline = app.query_one(CheckpointTimeline)
        assert timeline.border_title == "Checkpoints"
        assert lines(timeline)[1:9] == [
            f"│ 0 {USER_MARK} Create hello.py                            │",
            "│ 1   ReadFile README.md                         │",
            "│ 2 ✎ WriteFile, Glob                            │",
            "│ 3   All done: hello.py prints hello.           │",
            f"│ 4 {USER_MARK} Now add tests                              │",
            "│ 5   compacted summary                          │",
            "│ 6   D-Mail                                     │",
            "│ 7   —                                          │",
        ]
        # The highlight starts on the newest checkpoint.
        assert timeline.highlighted_checkpoint == 7


async def test_timeline_labels_keep_code_and_dunder_names_and_drop_only_markup(
    tmp_path: Path,
) -> None:
    context = Context(tmp_path / "session" / "context.jsonl")
    try:
        for answer in (
            "## Edited `__init__.py`",
            "**Done**: __main__.py calls `run(**opts)`",
        ):
            await context.checkpoint()
            await context.append_message(ChatMessage(role="assistant", content=answer))
        # A background task's end, told to the model as Kimi does: a user message the user
        # never typed, labelled by its title rather than its `<notification …>` markup.
        task = TaskView(
            "bash-1", "bash", "tick five times", tmp_path / "out.log", status="completed"
        )
        await context.checkpoint()
        await context.append_message(
            ChatMessage(role="user", content=notification_text(task, "tick 5"))
        )
        app = await timeline_app(WireBus(), context)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            drawn = lines(app.query_one(CheckpointTimeline))
            assert drawn[1].startswith("│ 0   Edited __init__.py ")
            assert drawn[2].startswith("│ 1   Done: __main__.py calls run(**opts) ")
            assert drawn[3].startswith("│ 2   Background task completed: tick five time")
    finally:
        await context.close()


async def test_timeline_grows_live_and_follows_the_newest_checkpoint(context: Context) -> None:
    bus = WireBus()
    app = await timeline_app(bus, context)
    async with app.run_test(size=SIZE) as pilot:
        timeline = app.query_one(CheckpointTimeline)
        await context.append_message(ChatMessage(role="user", content="Run it"))
        checkpoint_id = await context.checkpoint()
        bus.send(ev.CheckpointCreated(id=checkpoint_id))
        await settle(pilot)
        assert timeline.checkpoint_ids == list(range(9))
        assert f"7 {USER_MARK} Run it" in lines(timeline)[8]
        assert timeline.highlighted_checkpoint == 8

        # Once the user moves the highlight, new checkpoints leave it where it is.
        timeline.focus()
        await pilot.press("up", "up")
        assert timeline.highlighted_checkpoint == 6
        bus.send(ev.CheckpointCreated(id=await context.checkpoint()))
        await settle(pilot)
        assert timeline.checkpoint_ids == list(range(10))
        assert timeline.highlighted_checkpoint == 6
        await pilot.press("end")
        bus.send(ev.CheckpointCreated(id=await context.checkpoint()))
        await settle(pilot)
        assert timeline.highlighted_checkpoint == 10


async def test_down_on_the_newest_checkpoint_keeps_it_following(context: Context) -> None:
    bus = WireBus()
    app = await timeline_app(bus, context)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        timeline = app.query_one(CheckpointTimeline)
        timeline.focus()
        await pilot.press("down")  # on the newest row: nowhere further down to go
        assert timeline.highlighted_checkpoint == 7
        bus.send(ev.CheckpointCreated(id=await context.checkpoint()))
        await settle(pilot)
        assert timeline.highlighted_checkpoint == 8
        await pilot.press("home", "up")  # nor further up than the oldest
        assert timeline.highlighted_checkpoint == 0


async def test_timeline_shows_what_a_revert_leaves_after_context_reverted(
    context: Context,
) -> None:
    bus = WireBus()
    app = await timeline_app(bus, context)
    async with app.run_test(size=SIZE) as pilot:
        timeline = app.query_one(CheckpointTimeline)
        rotated = await context.revert_to(3)
        bus.send(ev.ContextReverted(checkpoint_id=3, rotated_file=rotated.name))
        await settle(pilot)
        assert timeline.checkpoint_ids == [0, 1, 2]
        assert timeline.highlighted_checkpoint == 2


async def test_clearing_the_context_empties_the_timeline_and_its_details(
    context: Context,
) -> None:
    bus = WireBus()
    app = await timeline_app(bus, context)
    posted = Posted()
    async with app.run_test(size=SIZE, message_hook=posted) as pilot:
        timeline = app.query_one(CheckpointTimeline)
        await settle(pilot)
        rotated = await context.clear()
        assert rotated is not None
        bus.send(ev.ContextCleared(rotated_file=rotated.name))
        await settle(pilot)
        assert timeline.checkpoint_ids == []
        assert "no checkpoints yet" in lines(timeline)[1]
        highlighted = posted.of(CheckpointTimeline.Highlighted)
        assert highlighted[-1].checkpoint_id is None
        assert "Highlight a checkpoint" in "\n".join(lines(app.query_one(CheckpointDetails)))


async def test_highlighting_a_checkpoint_shows_its_details(context: Context) -> None:
    bus = WireBus()
    app = await timeline_app(bus, context)
    posted = Posted()
    async with app.run_test(size=SIZE, message_hook=posted) as pilot:
        timeline = app.query_one(CheckpointTimeline)
        timeline.focus()
        await pilot.press("home")
        await settle(pilot)
        highlighted = posted.of(CheckpointTimeline.Highlighted)
        assert highlighted[-1].checkpoint_id == 0
        details = str(highlighted[-1].details_text)
        assert "Checkpoint 0 · 0 tokens\n0 messages before it\n" in details
        assert "Files edited after it: hello.py" in details
        assert "Create hello.py\nwith a main" in details  # the whole user text

        await pilot.press("down")
        await settle(pilot)
        assert "1 message before it" in str(
            posted.of(CheckpointTimeline.Highlighted)[-1].details_text
        )

        await pilot.press("down", "down")
        await settle(pilot)
        shown = "\n".join(lines(app.query_one(CheckpointDetails)))
        assert "Checkpoint 3" in shown
        # The count reported before it and the messages since, as the gauge showed it then.
        assert "Checkpoint 3 · 3,825 tokens (25 estimated)" in shown
        assert "6 messages before it" in shown
        assert "No files edited after it" in shown

        await pilot.press("down", "down")
        await settle(pilot)
        shown = "\n".join(lines(app.query_one(CheckpointDetails)))
        # 9 messages in the file, one of them checkpoint 4's note for the model: not counted.
        assert "Checkpoint 5" in shown and "8 messages before it" in shown


async def test_enter_and_click_request_a_revert(context: Context) -> None:
    bus = WireBus()
    app = await timeline_app(bus, context)
    posted = Posted()
    async with app.run_test(size=SIZE, message_hook=posted) as pilot:
        timeline = app.query_one(CheckpointTimeline)
        timeline.focus()
        await pilot.press("home", "down", "enter")
        await settle(pilot)
        reverts = posted.of(CheckpointTimeline.RevertRequested)
        assert [m.checkpoint_id for m in reverts] == [1]
        assert reverts[0].control is timeline

        await pilot.click(CheckpointTimeline, offset=(4, 1 + 4))  # the row of checkpoint 4
        await settle(pilot)
        reverts = posted.of(CheckpointTimeline.RevertRequested)
        assert [m.checkpoint_id for m in reverts] == [1, 4]


async def test_timeline_of_a_kimi_session(tmp_path: Path) -> None:
    session = tmp_path / "kimi"
    shutil.copytree(KIMI_FIXTURE, session)
    context = Context(session / "context.jsonl")
    await context.restore()
    bus = WireBus()
    app = await timeline_app(bus, context)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            timeline = app.query_one(CheckpointTimeline)
            assert timeline.checkpoint_ids == [0, 1, 2]
            drawn = lines(timeline)
            assert "0   compacted summary" in drawn[1]
            assert f"1 {USER_MARK} What did we do so far?" in drawn[2]
            assert "2   We created hello.py, summarised big.txt" in drawn[3]
    finally:
        await context.close()


async def test_timeline_of_2000_checkpoints_rebuilds_quickly(tmp_path: Path) -> None:
    path = tmp_path / "big" / "context.jsonl"
    writer = Context(path)
    await write_turns(writer, 1000)  # two checkpoints a turn
    await writer.close()
    context = Context(path)
    await context.restore()
    bus = WireBus()
    app = await timeline_app(bus, context)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            timeline = app.query_one(CheckpointTimeline)
            assert len(timeline.checkpoint_ids) == 2000
            drawn = lines(timeline)
            assert any(f"1998 {USER_MARK} turn 999" in line for line in drawn)
            assert any("1999   Shell: ls" in line for line in drawn)
            timings = []
            for _ in range(3):
                timeline._cache.clear()  # as after a restore: every row is new
                started = time.perf_counter()
                timeline.rebuild()
                timings.append(time.perf_counter() - started)
            # The best of three leaves out a garbage collection landing in one of them.
            assert min(timings) < 0.050, timings
    finally:
        await context.close()


# --- history --------------------------------------------------------------------------------------


async def history_app(bus: WireBus, context: Context) -> PanesHost:
    return PanesHost(HistoryPane(bus, await facade_of(context)))


async def test_history_of_a_kimi_session_shows_why_each_rotation_was_made(
    tmp_path: Path,
) -> None:
    session = tmp_path / "kimi"
    shutil.copytree(KIMI_FIXTURE, session)
    context = Context(session / "context.jsonl")
    bus = WireBus()
    app = await history_app(bus, context)
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(HistoryPane)
        await wait_for(pilot, lambda: len(pane.paths) == 3)
        await settle(pilot)
        assert pane.border_title == "History"
        drawn = lines(pane)
        assert [line.split()[2] for line in drawn[1:7:2]] == ["context_3", "context_2", "context_1"]
        # Kimi CLI notes no reason: each is read from the file that followed it (a summary),
        # and each compaction continued the file before. Before: the count last reported and
        # the messages after it; after: the count the next request reported.
        reasons = [line.split("  ")[1].strip() for line in drawn[1:7:2]]
        assert reasons == ["compaction 4k→4k", "compaction 12.4k→3.9k", "compaction 12.4k→12.4k"]
        assert all("\N{BLACK CIRCLE}" in line for line in drawn[1:7:2])
        # Kimi's files have no notes: messages and tokens are counted from the file (the count
        # last reported and an estimate of a large tool result after it).
        assert "6 msgs · 4k tok" in drawn[2]
        assert "11 msgs · 12.4k tok" in drawn[6]


async def test_history_of_a_kimi_session_marks_the_branch_a_restore_left(tmp_path: Path) -> None:
    session = tmp_path / "kimi"
    shutil.copytree(KIMI_FIXTURE, session)
    # context_2 made live again, by a program that noted nothing: its content says so.
    live = session / "context.jsonl"
    live.rename(session / "context_4.jsonl")
    shutil.copy(session / "context_2.jsonl", live)
    context = Context(live)
    app = await history_app(WireBus(), context)
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(HistoryPane)
        await wait_for(pilot, lambda: len(pane.paths) == 4)
        await settle(pilot)
        rows = [line.split("  ")[0:2] for line in lines(pane)[1:9:2]]
    assert [(mark.split()[1], mark.split()[2], reason.strip()) for mark, reason in rows] == [
        ("\N{WHITE CIRCLE}", "context_4", "restore ← context_2"),
        ("\N{WHITE CIRCLE}", "context_3", "compaction 4k→4k"),
        ("\N{BLACK CIRCLE}", "context_2", "compaction 12.4k→3.9k"),
        ("\N{BLACK CIRCLE}", "context_1", "compaction 12.4k→12.4k"),
    ]


async def test_history_explains_our_rotations(tmp_path: Path) -> None:
    context = Context(tmp_path / "session" / "context.jsonl")
    await write_turns(context, 3)
    bus = WireBus()
    app = await history_app(bus, context)
    try:
        async with app.run_test(size=SIZE) as pilot:
            pane = app.query_one(HistoryPane)
            await settle(pilot)
            assert "no rotated contexts yet" in lines(pane)[1]

            rotated = await context.revert_to(4)
            bus.send(ev.ContextReverted(checkpoint_id=4, rotated_file=rotated.name))
            await wait_for(pilot, lambda: len(pane.paths) == 1)
            await context.clear(
                reason="compaction",
                strategy="LLMSummaryCompaction",
                tokens_before=48_000,
                tokens_after=3_000,
            )
            bus.send(ev.CompactionEnd(tokens_before=48_000, tokens_after=3_000))
            await wait_for(pilot, lambda: len(pane.paths) == 2)
            await context.append_message(ChatMessage(role="user", content="the summary"))
            await context.restore_from(rotated)
            bus.send(ev.ContextRestored(from_file=rotated.name, rotated_file="context_3.jsonl"))
            await wait_for(pilot, lambda: len(pane.paths) == 3)
            await settle(pilot)
            drawn = lines(pane)
            assert "context_3  restore ← context_1  just now" in drawn[1]
            assert "context_2  compaction 48k→3k  just now" in drawn[3]
            assert "190 tok · LLMSummary" in drawn[4]  # LLMSummaryCompaction, shortened
            assert "context_1  revert → 4  just now" in drawn[5]
            assert "9 msgs · 290 tok" in drawn[6]
    finally:
        await context.close()


async def test_a_rotation_written_by_another_process_appears_within_a_second(
    tmp_path: Path,
) -> None:
    session = tmp_path / "kimi"
    shutil.copytree(KIMI_FIXTURE, session)
    context = Context(session / "context.jsonl")
    bus = WireBus()
    app = await history_app(bus, context)
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(HistoryPane)
        await wait_for(pilot, lambda: len(pane.paths) == 3)
        await asyncio.sleep(0.2)  # let the watcher start
        shutil.copyfile(session / "context_1.jsonl", session / "context_4.jsonl")
        took = await wait_for(pilot, lambda: len(pane.paths) == 4)
        assert took < 1.0
        await settle(pilot)
        assert "context_4" in lines(pane)[1]
        # A new rotation on top is highlighted, as the user had not moved.
        assert pane.highlighted == 0
    assert pane._stop_watching.is_set()  # the watcher stops with the pane


async def test_enter_on_a_rotation_requests_its_preview(tmp_path: Path) -> None:
    session = tmp_path / "kimi"
    shutil.copytree(KIMI_FIXTURE, session)
    context = Context(session / "context.jsonl")
    app = await history_app(WireBus(), context)
    posted = Posted()
    async with app.run_test(size=SIZE, message_hook=posted) as pilot:
        pane = app.query_one(HistoryPane)
        await wait_for(pilot, lambda: len(pane.paths) == 3)
        pane.focus()
        await pilot.press("down", "enter")
        await settle(pilot)
        previews = posted.of(HistoryPane.PreviewRequested)
        assert [m.name for m in previews] == ["context_2.jsonl"]


async def test_history_ages_are_refreshed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    session = tmp_path / "kimi"
    shutil.copytree(KIMI_FIXTURE, session)
    hour_ago = time.time() - 3600
    for path in session.glob("context_*.jsonl"):
        os.utime(path, (hour_ago, hour_ago))
    context = Context(session / "context.jsonl")
    app = await history_app(WireBus(), context)
    async with app.run_test(size=SIZE) as pilot:
        pane = app.query_one(HistoryPane)
        await wait_for(pilot, lambda: len(pane.paths) == 3)
        await settle(pilot)
        assert "1h ago" in lines(pane)[1]
        later = time.time() + 3600
        monkeypatch.setattr(time, "time", lambda: later)
        pane._show_rows()  # what the 30 s interval calls
        await settle(pilot)
        assert "2h ago" in lines(pane)[1]


def test_reason_texts(tmp_path: Path) -> None:
    def rotation(
        reason: str | None, checkpoint: int | None = None, info: dict[str, Any] | None = None
    ) -> Rotation:
        path = tmp_path / "context_1.jsonl"
        return Rotation(path, 1, 0, 0.0, reason, checkpoint=checkpoint, info=info or {})

    assert reason_text(rotation("revert", checkpoint=4)) == "revert → 4"
    assert reason_text(rotation("dmail", checkpoint=2)) == "dmail → 2"
    compaction = rotation("compaction", info={"tokens_before": 48_000, "tokens_after": 3_000})
    assert reason_text(compaction) == "compaction 48k→3k"
    restore = rotation("restore", info={"source": "context_2.jsonl"})
    assert reason_text(restore) == "restore ← context_2"
    assert reason_text(rotation("clear")) == "clear"
    assert reason_text(rotation(None)) == "—"
