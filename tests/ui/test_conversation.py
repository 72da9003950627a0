"""The conversation pane: blocks streamed from the wire, restored sessions, pruning."""

from __future__ import annotations

import gc
import json
import shutil
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.widget import Widget

from kode_tui.humanize import format_tokens
from kode_tui.message import (
    FunctionBody,
    ImageURL,
    ImageURLPart,
    Message,
    TextPart,
    ThinkPart,
    ToolCall,
    parse_record,
)
from kode_tui.session import Context
from kode_tui.soul.transcript import PastResults
from kode_tui.ui.widgets.blocks import (
    AnswerBlock,
    AssistantBlock,
    DetailBlock,
    MarkerBlock,
    NoticeBlock,
    PictureBlock,
    PruneMarker,
    ThinkingBlock,
    UserBlock,
)
from kode_tui.ui.widgets.conversation import Conversation
from kode_tui.ui.widgets.rows import Rows
from kode_tui.ui.widgets.tool_block import ToolBlock
from kode_tui.wire import WireBus
from kode_tui.wire import events as ev
from kode_tui.wire import records as wire_records
from tests.conftest import KIMI_FIXTURE
from tests.ui_helpers import Host, Posted, wait_for

DIFF = ev.DiffBlock(path="hello.py", old_text="print('hi')\n", new_text="print('hello')\n")


def host(bus: WireBus, max_blocks: int = 300) -> Host:
    """An app showing only a conversation pane fed by `bus`."""
    return Host(Conversation(bus, max_blocks=max_blocks, id="conversation"))


async def settle(
    pilot: Pilot[Any], posted: Posted, bus: WireBus, *events: ev.Event
) -> Conversation:
    """Send `events` on `bus`, wait until the pane has handled them, and return the pane."""
    await posted.deliver(pilot, bus, *events)
    return pilot.app.query_one(Conversation)


def header(block: Widget) -> str:
    return str(block.render()).splitlines()[0]


def describe(conversation: Conversation) -> list[str]:
    """Each block as a line a reader would recognise."""
    lines: list[str] = []
    for block in conversation.blocks:
        if isinstance(block, UserBlock):
            lines.append(f"user: {block.text}")
        elif isinstance(block, AssistantBlock | AnswerBlock):
            lines.append(f"assistant: {block.source}")
        elif isinstance(block, ThinkingBlock):
            lines.append(f"thinking: {block.text}")
        elif isinstance(block, DetailBlock):
            lines.append(f"{block.kind}: {block.title}")
        elif isinstance(block, ToolBlock):
            lines.append(f"tool: {header(block)}")
        elif isinstance(block, NoticeBlock):
            lines.append(f"{block.kind}: {block.text}")
        elif isinstance(block, MarkerBlock):
            lines.append(f"marker: {block.text}")
        elif isinstance(block, PictureBlock):
            lines.append("picture")
        else:
            lines.append(f"? {type(block).__name__}")
    return lines


def call(call_id: str, name: str, arguments: str = "") -> ev.ToolCall:
    return ev.ToolCall(id=call_id, function=FunctionBody(name=name, arguments=arguments))


def text(delta: str) -> ev.ContentPart:
    return ev.ContentPart(part=TextPart(text=delta))


async def test_a_turn_streams_into_blocks_and_a_retry_discards_the_partial_answer() -> None:
    bus, posted = WireBus(), Posted()
    full = gc.get_threshold()[2]
    async with host(bus).run_test(size=(100, 60), message_hook=posted) as pilot:
        conversation = await settle(
            pilot,
            posted,
            bus,
            ev.TurnBegin(user_input="Make hello.py say hello"),
            ev.StepBegin(n=1),
            ev.ContentPart(part=ThinkPart(think="A one-line ")),
            ev.ContentPart(part=ThinkPart(think="edit.")),
            text("I'll edit "),
            text("**hello.py**."),
            call("t1", "StrReplaceFile"),
            ev.ToolCallPart(id="t1", arguments_delta='{"path": "hel'),
        )
        tool = conversation.query_one(ToolBlock)
        assert header(tool) == "▸ StrReplaceFile  running…"
        # No full collection (a stall of tens of ms) while the turn streams.
        assert gc.get_threshold()[2] > 10_000

        await settle(
            pilot,
            posted,
            bus,
            ev.ToolCallPart(id="t1", arguments_delta='lo.py", "edit": {"old": "hi"}}'),
            ev.ApprovalRequest(
                id="a1", tool_call_id="t1", action="edit file", description="", display=[DIFF]
            ),
        )
        assert header(tool) == "▸ StrReplaceFile hello.py  waiting for approval"
        assert not tool.expanded, "the approval panel shows the diff; it shows once"

        await settle(pilot, posted, bus, ev.ApprovalResolved(id="a1", response="approve"))
        assert header(tool) == "▾ StrReplaceFile hello.py  running…", "answered, it opens"

        brief = ev.BriefBlock(text="1 edit")
        conversation = await settle(
            pilot,
            posted,
            bus,
            ev.ToolResult(tool_call_id="t1", message="File edited.", display=[brief, DIFF]),
            ev.StepBegin(n=2),
            text("Partial answ"),
        )
        assert "assistant: Partial answ" in describe(conversation)

        error = "Connection reset by peer"
        conversation = await settle(
            pilot,
            posted,
            bus,
            ev.StepRetry(n=2, attempt=1, max_attempts=3, wait_s=0.4, error=error),
            text("Done: it says hello."),
            ev.Error(message="demo/model: the model stopped answering"),
            ev.TurnEnd(),
        )
        # Full collections again once the turn's end is on screen.
        await wait_for(pilot, lambda: gc.get_threshold()[2] == full)

        assert describe(conversation) == [
            "user: Make hello.py say hello",
            "thinking: A one-line edit.",
            "assistant: I'll edit **hello.py**.",
            "tool: ▾ StrReplaceFile hello.py  ✔ 1 edit",
            f"note: {error}; retrying in 0.4 s (attempt 2 of 3)",
            "assistant: Done: it says hello.",
            "error: ✘ demo/model: the model stopped answering",
        ]
        rendered = tool.render()
        shown = rendered.content(200) if isinstance(rendered, Rows) else rendered
        assert "-print('hi')" in str(shown)
        added = str(shown).index("+print('hello')")
        assert any(
            span.start <= added < span.end and "$success" in str(span.style) for span in shown.spans
        ), "added lines are coloured as a success"
        thinking = conversation.query_one(ThinkingBlock)
        assert not thinking.expanded


async def test_a_long_answer_goes_on_in_new_blocks_at_paragraph_breaks_outside_code() -> None:
    paragraph = " ".join(["word"] * 240) + "."
    code = "```python\n" + f"x = '{'a' * 90}'\n\n" * 25 + "```\n\n"
    fragments = [paragraph, "\n\n", paragraph, "\n\n", *code.splitlines(keepends=True)]
    fragments += ["   indented, so it continues\n\n", "Last paragraph.\n"]
    bus, posted = WireBus(), Posted()
    async with host(bus).run_test(size=(100, 60), message_hook=posted) as pilot:
        conversation = await settle(
            pilot, posted, bus, ev.StepBegin(n=1), *map(text, fragments), ev.TurnEnd()
        )
        assert conversation.pending_count == 0
        answer = [b for b in conversation.blocks if isinstance(b, AssistantBlock | AnswerBlock)]
        # Not before the code (a fence has a margin above it), nor inside it, nor before the
        # indented line: before the next paragraph's words.
        assert [block.source for block in answer] == [
            f"{paragraph}\n\n{paragraph}\n\n" + code + "   indented, so it continues\n\n",
            "Last paragraph.\n",
        ]


async def test_a_retry_also_discards_parts_of_the_answer_that_left_the_dom() -> None:
    paragraph = " ".join(["word"] * 420) + ".\n\n"
    bus, posted = WireBus(), Posted()
    async with host(bus).run_test(size=(80, 12), message_hook=posted) as pilot:
        begin = [ev.TurnBegin(user_input="Write a lot"), ev.StepBegin(n=1)]
        conversation = await settle(pilot, posted, bus, *begin, *[text(paragraph)] * 6)
        await wait_for(pilot, lambda: conversation.pending_count > 0)  # left the DOM

        retry = ev.StepRetry(n=1, attempt=1, max_attempts=3, wait_s=1, error="timeout")
        conversation = await settle(pilot, posted, bus, retry)
        # The user's message left the DOM too; with the answer gone it comes back.
        await wait_for(pilot, lambda: conversation.pending_count == 0)
        assert describe(conversation) == [
            "user: Write a lot",
            "note: timeout; retrying in 1 s (attempt 2 of 3)",
        ]


async def test_tool_results_show_ok_error_and_rejected() -> None:
    bus, posted = WireBus(), Posted()
    async with host(bus).run_test(size=(100, 40), message_hook=posted) as pilot:
        rejected = (
            "The tool call is rejected by the user. "
            "Stop what you are doing and wait for the user to tell you how to proceed."
        )
        conversation = await settle(
            pilot,
            posted,
            bus,
            ev.TurnBegin(user_input="Clean up"),
            ev.StepBegin(n=1),
            call("s1", "Shell", '{"command": "ls"}'),
            call("s2", "Shell", '{"command": "rm -rf build"}'),
            call("g1", "Grep", '{"pattern": "TODO", "path": "src"}'),
            call("s3", "Shell", '{"command": "git push"}'),
            ev.ToolResult(tool_call_id="s1", output="a\nb\n", message="Command executed."),
            ev.ToolResult(
                tool_call_id="s2",
                is_error=True,
                message=rejected,
                display=[ev.BriefBlock(text="Rejected by user")],
            ),
            ev.ToolResult(
                tool_call_id="s3",
                is_error=True,
                message="The tool call is rejected by the user. User feedback: not yet",
            ),
            ev.ToolResult(
                tool_call_id="g1",
                is_error=True,
                output="",
                message="rg exited with code 2",
                display=[ev.BriefBlock(text="search failed")],
            ),
        )
        ok, refused, failed, told = conversation.query(ToolBlock)
        assert header(ok) == "▸ Shell: ls  ✔ Command executed."
        # What the user did, not the words meant for the model ("Stop what you are doing…").
        assert header(refused) == "▸ Shell: rm -rf build  ⊘ Rejected"
        assert str(refused.render()) == header(refused)
        assert header(told) == "▸ Shell: git push  ⊘ Rejected: not yet"
        assert header(failed) == '▸ Grep "TODO" in src  ✘ search failed'
        assert refused.has_class("-rejected") and failed.has_class("-error")

        await pilot.click(failed)
        assert failed.expanded
        assert "rg exited with code 2" in str(failed.render())


async def test_long_output_shows_its_first_lines_and_how_many_more() -> None:
    bus, posted = WireBus(), Posted()
    async with host(bus).run_test(size=(100, 60), message_hook=posted) as pilot:
        output = "".join(f"line {n}\n" for n in range(1, 51))
        conversation = await settle(
            pilot,
            posted,
            bus,
            ev.StepBegin(n=1),
            call("r1", "ReadFile", '{"path": "big.txt"}'),
            ev.ToolResult(tool_call_id="r1", output=output, message="50 lines read."),
        )
        block = conversation.query_one(ToolBlock)
        block.toggle()
        shown = str(block.render())
        assert "line 20" in shown and "line 21" not in shown
        assert "… 30 more lines" in shown


async def test_an_interrupted_step_keeps_what_was_shown() -> None:
    bus, posted = WireBus(), Posted()
    async with host(bus).run_test(message_hook=posted) as pilot:
        conversation = await settle(
            pilot,
            posted,
            bus,
            ev.TurnBegin(user_input="Run the tests"),
            ev.StepBegin(n=1),
            text("Running them now."),
            call("s1", "Shell", '{"command": "pytest"}'),
            ev.StepInterrupted(reason="interrupted by the user"),
            ev.TurnEnd(),
        )
        assert describe(conversation) == [
            "user: Run the tests",
            "assistant: Running them now.",
            "tool: ▸ Shell: pytest  interrupted",
            "note: interrupted",
        ]

        failure = "demo/model: 503 Service Unavailable"
        conversation = await settle(
            pilot,
            posted,
            bus,
            ev.TurnBegin(user_input="Try again"),
            ev.StepBegin(n=1),
            ev.StepInterrupted(reason=failure),
            ev.Error(message=failure),
            ev.TurnEnd(),
        )
        assert describe(conversation)[-2:] == ["user: Try again", f"error: ✘ {failure}"]


async def test_compaction_revert_restore_clear_reminders_hooks_warnings_and_plans_are_marked() -> (
    None
):
    bus, posted = WireBus(), Posted()
    async with host(bus).run_test(size=(120, 50), message_hook=posted) as pilot:
        begin = ev.CompactionBegin(strategy="LLMSummaryCompaction")
        conversation = await settle(pilot, posted, bus, begin)
        running = conversation.query_one(MarkerBlock)
        assert running.text == "── compacting… ──"
        assert running.has_class("-running")

        conversation = await settle(
            pilot,
            posted,
            bus,
            ev.CompactionEnd(tokens_before=48_000, tokens_after=3_000, rotated_file="context_1"),
            ev.ContextReverted(checkpoint_id=3, rotated_file="context_2.jsonl", reason="dmail"),
            ev.ContextReverted(
                checkpoint_id=3,
                rotated_file="context_3.jsonl",
                files_restored=["src/a.py"],
                conflicts=["src/b.py"],
            ),
            ev.ContextRestored(from_file="/s/context_1.jsonl", rotated_file="/s/context_4.jsonl"),
            ev.ContextCleared(rotated_file="/s/context_5.jsonl"),
            ev.SystemReminders(
                reminders=[
                    ev.ReminderItem(kind="todo", text="1 task in progress: write tests"),
                    ev.ReminderItem(kind="mention", text="@README.md was mentioned"),
                ]
            ),
            ev.HookRan(
                hook_event="PreToolUse",
                command="./check",
                exit_code=2,
                duration_s=0.12,
                outcome="blocked",
                note="blocked: no rm",
                stderr="no \x1b[1mrm\n",
            ),
            ev.Warning(message="Stopped after 100 steps."),
            ev.PlanDisplay(content="# Plan\n1. Greet\n", file_path="/h/plans/plan-1.md"),
        )
        assert describe(conversation) == [
            "marker: ── compacted: 48k → 3k tokens (LLMSummaryCompaction) ──",
            "marker: ── reverted to checkpoint 3 (D-Mail) ──",
            "marker: ── reverted to checkpoint 3 ──\n"
            "   files restored: src/a.py\n"
            "   changed since, left alone: src/b.py",
            "marker: ── restored context_1.jsonl (the previous context kept as context_4.jsonl) ──",
            "marker: ── context cleared (kept as context_5.jsonl) ──",
            "reminders: 2 reminders: todo, mention",
            "hook -blocked: ⛔ hook PreToolUse · blocked: no rm · 0.1 s · ./check",
            "warning: ⚠ Stopped after 100 steps.",
            "marker: ── plan · /h/plans/plan-1.md ──",
            "assistant: # Plan\n1. Greet\n",
        ]
        assert not running.has_class("-running")
        reminders = conversation.query_one(DetailBlock)
        assert "write tests" not in str(reminders.render())
        await pilot.click(reminders)
        assert "@README.md was mentioned" in str(reminders.render())
        hook = conversation.query(DetailBlock).last()
        await pilot.click(hook)
        assert str(hook.render()).splitlines()[1:] == [
            "  command: ./check",
            "  stderr:",
            "  no ␛[1mrm",
        ]


def kimi_messages(name: str) -> list[Message]:
    lines = (KIMI_FIXTURE / name).read_text(encoding="utf-8").splitlines()
    return [r for r in map(parse_record, lines) if isinstance(r, Message)]


async def test_a_kimi_session_renders_its_messages_tool_results_and_diffs() -> None:
    async with host(WireBus()).run_test(size=(120, 60)) as pilot:
        conversation = pilot.app.query_one(Conversation)
        messages = kimi_messages("context_1.jsonl")
        await conversation.load_history(messages, PastResults.read(KIMI_FIXTURE / "wire.jsonl"))
        await pilot.pause()
        lines = describe(conversation)
        assert lines[:8] == [
            "user: Create hello.py",
            "assistant: Let me look at the files.",
            "tool: ▸ SetTodoList read todo list  ✔",
            "assistant: Reading the readme.",
            "tool: ▸ ReadFile README.md  ✔ 3 lines read from file starting from line 1. "
            "Total lines in…",
            "assistant: Now I will write a file.",
            "tool: ▾ WriteFile hello.py  ✔ File successfully overwritten. Current size: 15 bytes.",
            "assistant: Done: created hello.py which prints hello.",
        ]
        assert lines[8:11] == [
            "user: Read big.txt and summarise it",
            "thinking: The user wants a summary of big.txt; I should read it first.",
            "assistant: Reading big.txt.",
        ]
        _, readme, write, big = conversation.query(ToolBlock)
        assert "+print('hello')" in str(write.render()), "the diff comes from wire.jsonl"
        readme.toggle()
        assert "# Demo repo" in str(readme.render())
        big.toggle()
        assert "more lines" in str(big.render())
        assert conversation.hidden_count == 0


async def test_a_kimi_session_after_compaction_shows_the_summary_block(tmp_path: Path) -> None:
    folder = tmp_path / "kimi-session"
    shutil.copytree(KIMI_FIXTURE, folder)
    context = Context(folder / "context.jsonl")
    await context.restore()
    try:
        async with host(WireBus()).run_test(size=(120, 40)) as pilot:
            conversation = pilot.app.query_one(Conversation)
            await conversation.load_history(context.history)
            await pilot.pause()
            assert describe(conversation) == [
                "compaction: ── compacted: summary ──",
                "assistant: Running it.",
                "tool: ▸ Shell: python3 hello.py  ✔ Command executed successfully.",
                "assistant: hello.py now defines greet() and prints hello world.",
                "user: What did we do so far?",
                "assistant: We created hello.py, summarised big.txt and added greet().",
            ]
            summary = conversation.query_one(DetailBlock)
            summary.toggle()
            assert "Adding a greeting function" in str(summary.render())
    finally:
        await context.close()


def tool_message(call_id: str, *parts: str) -> Message:
    return Message(role="tool", tool_call_id=call_id, content=[TextPart(text=p) for p in parts])


async def test_restored_markers_d_mail_errors_and_rejections() -> None:
    edit = ToolCall(id="c1", function=FunctionBody(name="WriteFile", arguments='{"path": "a"}'))
    shell = ToolCall(id="c2", function=FunctionBody(name="Shell", arguments='{"command": "x"}'))
    dmail = (
        "<system>You just got a D-Mail from your future self. It is likely that ... "
        "D-Mail content:\n\nDo not touch a.py</system>"
    )
    image = ImageURLPart(image_url=ImageURL(url="data:image/png;base64,AAAA"))
    messages = [
        Message(role="user", content=[TextPart(text="Look at this"), image]),
        Message(role="user", content="<system>CHECKPOINT 1</system>"),
        Message(
            role="assistant",
            content=[ThinkPart(think="Try both."), TextPart(text="Trying.")],
            tool_calls=[edit, shell],
        ),
        tool_message("c1", "<system>ERROR: The tool call is rejected by the user.</system>"),
        tool_message("c2", "<system>ERROR: Command failed with exit code 1.</system>", "boom"),
        Message(role="user", content=[TextPart(text=dmail)]),
    ]
    async with host(WireBus()).run_test(size=(120, 40)) as pilot:
        conversation = pilot.app.query_one(Conversation)
        await conversation.load_history(messages)
        await pilot.pause()
        assert describe(conversation) == [
            "user: Look at this [image · 3 B]",
            "picture",
            "thinking: Try both.",
            "assistant: Trying.",
            "tool: ▸ WriteFile a  ⊘ Rejected",
            "tool: ▸ Shell: x  ✘ Command failed with exit code 1.",
            "dmail: ── D-Mail from the future ──",
        ]
        # A command shows the start of its output unasked.
        failed = conversation.query(ToolBlock)[1]
        assert "boom" in str(failed.render())
        mail = conversation.query(DetailBlock).last()
        mail.toggle()
        assert "Do not touch a.py" in str(mail.render())


async def test_restored_tool_blocks_take_their_brief_from_the_wire(tmp_path: Path) -> None:
    arguments = '{"command": "make test"}'
    wire = tmp_path / "wire.jsonl"
    records = [
        ev.ToolCall(id="c1", function=FunctionBody(name="Shell", arguments="")),
        ev.ToolCallPart(id="c1", arguments_delta=arguments),
        ev.ToolResult(
            tool_call_id="c1",
            output="ok",
            message="Command executed successfully.",
            display=[ev.BriefBlock(text="exit 0, 12 tests")],
        ),
    ]
    wire.write_text(
        json.dumps(wire_records.METADATA)
        + "\n"
        + "".join(json.dumps(wire_records.to_record(r, 1.0)) + "\n" for r in records)
    )
    shell = ToolCall(id="c1", function=FunctionBody(name="Shell", arguments=arguments))
    messages = [
        Message(role="assistant", content="Testing.", tool_calls=[shell]),
        tool_message("c1", "<system>Command executed successfully.</system>", "ok"),
    ]
    async with host(WireBus()).run_test() as pilot:
        conversation = pilot.app.query_one(Conversation)
        await conversation.load_history(messages, PastResults.read(wire))
        await pilot.pause()
        assert header(conversation.query_one(ToolBlock)) == "▸ Shell: make test  ✔ exit 0, 12 tests"


async def test_live_blocks_beyond_max_blocks_leave_the_dom_and_come_back_with_home() -> None:
    bus, posted = WireBus(), Posted()
    async with host(bus, max_blocks=5).run_test(message_hook=posted) as pilot:
        questions = [ev.TurnBegin(user_input=f"question {n}") for n in range(8)]
        conversation = await settle(pilot, posted, bus, *questions)
        assert describe(conversation) == [f"user: question {n}" for n in range(3, 8)]
        assert conversation.pending_count == 3
        assert not conversation.query(PruneMarker), "nothing is dropped, so nothing is hidden"
        conversation.focus()
        await pilot.press("home")
        await pilot.app.workers.wait_for_complete()
        assert describe(conversation)[:5] == [f"user: question {n}" for n in range(5)]
        await pilot.press("end")
        await pilot.app.workers.wait_for_complete()
        assert describe(conversation)[-1] == "user: question 7"


async def test_a_block_marked_to_drop_stays_marked_off_screen_and_when_it_comes_back() -> None:
    bus, posted = WireBus(), Posted()
    async with host(bus, max_blocks=5).run_test(message_hook=posted) as pilot:
        first = [ev.TurnBegin(user_input=f"question {n}") for n in range(5)]
        conversation = await settle(pilot, posted, bus, *first)
        conversation.blocks[1].add_class("-marked")  # what `x` does to "question 1"
        rest = [ev.TurnBegin(user_input=f"question {n}") for n in range(5, 9)]
        await settle(pilot, posted, bus, *rest)
        assert "user: question 1" not in describe(conversation)
        # Off screen, /drop still finds it.
        away = conversation.marked_away()
        assert [b.text for b in away if isinstance(b, UserBlock)] == ["question 1"]

        conversation.focus()
        await pilot.press("home")
        await pilot.app.workers.wait_for_complete()
        [back] = [b for b in conversation.query(UserBlock) if b.text == "question 1"]
        assert back.has_class("-marked")
        assert conversation.marked_away() == []


def chat(turns: int) -> list[Message]:
    messages: list[Message] = []
    for n in range(turns):
        messages.append(Message(role="user", content=f"question {n}"))
        messages.append(Message(role="assistant", content=f"answer **{n}**"))
    return messages


async def test_a_long_history_mounts_the_newest_blocks_and_older_ones_on_scrolling_up() -> None:
    async with host(WireBus(), max_blocks=100).run_test(size=(80, 24)) as pilot:
        conversation = pilot.app.query_one(Conversation)
        await conversation.load_history(chat(1650))  # 3,300 messages
        await pilot.pause()
        # Settled: on a loaded machine a page may still be coming in, and the marker with it.
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        # Only the newest page of messages was read.
        hidden = conversation.hidden_count
        assert 0 < hidden < 3300 - len(conversation.blocks)
        assert str(conversation.children[0].render()) == f"… {hidden} earlier messages not shown"
        mounted, pending = len(conversation.blocks), conversation.pending_count
        assert mounted < 100
        assert describe(conversation)[-1] == "assistant: answer **1649**"

        oldest = conversation.blocks[0]
        conversation.scroll_home(animate=False, immediate=True)
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        assert len(conversation.blocks) > mounted
        assert conversation.pending_count < pending
        # Blocks came in above it, yet it stays where scrolling up put it: under the marker.
        assert oldest.region.y == conversation.content_region.y + 2
        while len(conversation.blocks) < 100:
            conversation.scroll_home(animate=False, immediate=True)
            await pilot.pause()
            await pilot.app.workers.wait_for_complete()
        # A window of 100 blocks, in order: the newest left it as older ones came in.
        lines = describe(conversation)
        first = int(lines[0].removeprefix("user: question "))
        assert first < 1600
        assert lines == [
            line
            for n in range(first, first + 50)
            for line in (f"user: question {n}", f"assistant: answer **{n}**")
        ]
        assert conversation.pending_below > 0


async def test_blocks_far_above_the_bottom_leave_the_dom_and_come_back_in_order() -> None:
    bus, posted = WireBus(), Posted()
    async with host(bus).run_test(size=(80, 24), message_hook=posted) as pilot:
        conversation = pilot.app.query_one(Conversation)
        await conversation.load_history(chat(60))
        await pilot.pause()
        while conversation.pending_count:
            conversation.scroll_home(animate=False, immediate=True)
            await pilot.pause()
            await pilot.app.workers.wait_for_complete()
        assert len(conversation.blocks) == 120
        conversation.anchor()
        await pilot.pause()

        await settle(pilot, posted, bus, ev.TurnBegin(user_input="one more"))
        await wait_for(pilot, lambda: len(conversation.blocks) < 60)  # old ones were unmounted
        assert conversation.pending_count + len(conversation.blocks) == 121

        while conversation.pending_count:
            conversation.scroll_home(animate=False, immediate=True)
            await pilot.pause()
            await pilot.app.workers.wait_for_complete()
        lines = describe(conversation)
        assert lines == [
            *(
                line
                for n in range(60)
                for line in (f"user: question {n}", f"assistant: answer **{n}**")
            ),
            "user: one more",
        ]


async def test_the_text_of_a_finished_answer_can_be_selected_and_copied() -> None:
    answer = "Some **bold** words.\n\n- an item\n\n```python\nx = 1\n```\n"
    messages = [Message(role="user", content="hi"), Message(role="assistant", content=answer)]
    async with host(WireBus()).run_test(size=(80, 30)) as pilot:
        conversation = pilot.app.query_one(Conversation)
        await conversation.load_history(messages)
        await pilot.pause()
        conversation.query_one(AnswerBlock).text_select_all()
        await pilot.pause()
        selected = pilot.app.screen.get_selected_text() or ""
    # As drawn: the Markdown's text, not its marks.
    assert [line.strip() for line in selected.splitlines() if line.strip()] == [
        "Some bold words.",
        "• an item",
        "x = 1",
    ]


async def test_clear_removes_every_block() -> None:
    bus, posted = WireBus(), Posted()
    async with host(bus, max_blocks=2).run_test(message_hook=posted) as pilot:
        questions = [ev.TurnBegin(user_input=f"question {n}") for n in range(3)]
        conversation = await settle(pilot, posted, bus, *questions)
        await conversation.clear()
        assert list(conversation.children) == []
        assert conversation.hidden_count == 0


async def test_the_keyboard_cursor_opens_and_closes_blocks() -> None:
    bus, posted = WireBus(), Posted()
    async with host(bus).run_test(message_hook=posted) as pilot:
        conversation = await settle(
            pilot,
            posted,
            bus,
            ev.StepBegin(n=1),
            call("r1", "ReadFile", '{"path": "a.txt"}'),
            call("r2", "ReadFile", '{"path": "b.txt"}'),
        )
        first, second = conversation.query(ToolBlock)
        conversation.focus()
        await pilot.press("alt+up")
        assert second.has_class("-cursor")
        await pilot.press("alt+up", "enter")
        assert first.expanded and not second.expanded
        await pilot.press("enter")
        assert not first.expanded


async def test_the_pane_is_posted_its_events_in_the_order_they_were_sent() -> None:
    bus, posted = WireBus(), Posted()
    events = [
        ev.TurnBegin(user_input="Read it"),
        ev.StepBegin(n=1),
        *(text(f"word {n} ") for n in range(50)),
        call("r1", "ReadFile", '{"path": "a.txt"}'),
        ev.ToolResult(tool_call_id="r1", output="a", message="1 line read."),
        ev.TurnEnd(),
    ]
    async with host(bus).run_test(message_hook=posted) as pilot:
        conversation = await settle(pilot, posted, bus, *events)
        assert posted.wire_events == events
        assert describe(conversation) == [
            "user: Read it",
            "assistant: " + "".join(f"word {n} " for n in range(50)),
            "tool: ▸ ReadFile a.txt  ✔ 1 line read.",
        ]


async def test_the_pane_unsubscribes_when_unmounted() -> None:
    bus, posted = WireBus(), Posted()
    async with host(bus).run_test(message_hook=posted) as pilot:
        conversation = pilot.app.query_one(Conversation)
        assert bus._subscriptions
        await conversation.remove()
        assert not bus._subscriptions
        bus.send(ev.TurnBegin(user_input="nobody listens"))
        await pilot.pause()
        assert posted.wire_events == []


def test_token_counts_are_short() -> None:
    assert [format_tokens(n) for n in (950, 3_000, 3_240, 48_000, 124_500)] == [
        "950",
        "3k",
        "3.2k",
        "48k",
        "124k",
    ]


def test_a_long_hook_command_is_cut_on_the_folded_line_and_whole_inside() -> None:
    from kode_tui.ui.widgets.blocks import hook_block

    command = "python3 -c 'import sys, json; event = json.load(sys.stdin); sys.exit(0)'"
    block = hook_block(ev.HookRan(hook_event="Stop", command=command, exit_code=0))()

    assert block.title.startswith("hook Stop · exit 0 · 0.0 s · python3 -c")
    assert block.title.endswith("…") and len(block.title) < 80
    assert f"command: {command}" in block.text
