"""The conversation's window over a long session: every message is reachable, few are mounted."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.pilot import Pilot

from kode_tui.message import FunctionBody, Message, TextPart, ToolCall
from kode_tui.ui.widgets.block_window import REVEAL_BATCH
from kode_tui.ui.widgets.conversation import NEW_OUTPUT_HINT, Conversation
from kode_tui.ui.widgets.tool_block import ToolBlock
from kode_tui.wire import WireBus
from kode_tui.wire import events as ev
from tests.ui.test_conversation import chat, describe, host, settle
from tests.ui_helpers import Posted

MAX_BLOCKS = 60
BOUND = MAX_BLOCKS + REVEAL_BATCH
"""At most `max_blocks` are mounted, or a few screens and a batch when that is more."""


async def scroll(
    pilot: Pilot[Any],
    conversation: Conversation,
    *,
    up: bool,
    visit: Callable[[Conversation], None] = lambda _: None,
) -> list[int]:
    """Scroll to the edge of the mounted blocks until nothing more is beyond it, calling
    `visit` at each step; return how many blocks were mounted after each step."""
    mounted: list[int] = []
    for _ in range(1000):
        if not (conversation.pending_count if up else conversation.pending_below):
            break
        if up:
            conversation.scroll_home(animate=False, immediate=True)
        else:
            # A screen at a time (as Page Down), so that every block passes through the view.
            height = conversation.scrollable_content_region.height
            y = min(conversation.max_scroll_y, conversation.scroll_y + height)
            conversation.scroll_to(y=y, animate=False, immediate=True)
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
        mounted.append(len(conversation.blocks))
        visit(conversation)
    return mounted


def tool_turns(turns: int) -> list[Message]:
    """Turns of a question, a call and its result: 3 messages, so pages of messages end
    between a call and its result too."""
    messages: list[Message] = []
    for n in range(turns):
        call = ToolCall(id=f"c{n}", function=FunctionBody(name="ReadFile", arguments="{}"))
        messages += [
            Message(role="user", content=f"question {n}"),
            Message(role="assistant", content=f"reading {n}", tool_calls=[call]),
            Message(role="tool", tool_call_id=f"c{n}", content=[TextPart(text=f"read {n}")]),
        ]
    return messages


async def test_home_goes_to_the_first_message_of_a_long_history_and_end_to_the_last() -> None:
    async with host(WireBus(), max_blocks=MAX_BLOCKS).run_test(size=(80, 24)) as pilot:
        conversation = pilot.app.query_one(Conversation)
        await conversation.load_history(chat(1000))  # 2,000 messages
        conversation.focus()
        await pilot.pause()
        await pilot.press("home")
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        lines = describe(conversation)
        assert lines[:2] == ["user: question 0", "assistant: answer **0**"]
        assert len(lines) <= BOUND
        assert conversation.scroll_y == 0
        assert conversation.pending_count == 0 and conversation.hidden_count == 0

        await pilot.press("end")
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        assert describe(conversation)[-1] == "assistant: answer **999**"
        assert len(conversation.blocks) <= BOUND
        assert conversation.pending_below == 0
        assert conversation.scroll_y == conversation.max_scroll_y


async def test_scrolling_up_reaches_the_first_message_and_down_the_last_with_few_mounted() -> None:
    async with host(WireBus(), max_blocks=MAX_BLOCKS).run_test(size=(80, 24)) as pilot:
        conversation = pilot.app.query_one(Conversation)
        await conversation.load_history(chat(150))  # 300 blocks: five windows
        await pilot.pause()
        mounted = await scroll(pilot, conversation, up=True)
        assert conversation.pending_count == 0
        assert max(mounted) <= BOUND
        lines = describe(conversation)
        assert lines[:2] == ["user: question 0", "assistant: answer **0**"]
        # The window holds consecutive blocks, in order.
        assert lines == [
            line
            for n in range(len(lines) // 2)
            for line in (f"user: question {n}", f"assistant: answer **{n}**")
        ]

        mounted = await scroll(pilot, conversation, up=False)
        assert conversation.pending_below == 0
        assert max(mounted) <= BOUND
        assert describe(conversation)[-2:] == ["user: question 149", "assistant: answer **149**"]


async def test_tool_calls_keep_their_results_wherever_the_history_is_read_from() -> None:
    async with host(WireBus(), max_blocks=MAX_BLOCKS).run_test(size=(80, 24)) as pilot:
        conversation = pilot.app.query_one(Conversation)
        await conversation.load_history(tool_turns(100))
        conversation.focus()
        await pilot.pause()
        seen: dict[str, str] = {}

        def visit(conversation: Conversation) -> None:
            for block in conversation.query(ToolBlock):
                seen[block.state.id] = block.state.status

        await pilot.press("home")
        await pilot.app.workers.wait_for_complete()
        visit(conversation)
        await scroll(pilot, conversation, up=False, visit=visit)
        assert len(seen) == 100
        assert set(seen.values()) == {"ok"}, "no call lost its result at a page's end"


def in_view(conversation: Conversation) -> list[str]:
    """The blocks the view shows, as `describe` names them."""
    top = conversation.scroll_y
    bottom = top + conversation.scrollable_content_region.height
    lines = describe(conversation)
    return [
        line
        for line, block in zip(lines, conversation.blocks, strict=True)
        if block.display and block.virtual_region.y < bottom and block.virtual_region.bottom > top
    ]


SENT: list[ev.Event] = [ev.TurnBegin(user_input="one more"), ev.StepBegin(n=1)]
"""The user sends "one more" and the model's step begins."""


def answered(answer: str) -> list[ev.Event]:
    """The model answers `answer`, in small pieces, and the turn ends."""
    return [
        *(ev.ContentPart(part=TextPart(text=answer[n : n + 8])) for n in range(0, len(answer), 8)),
        ev.TurnEnd(),
    ]


def new_turn(answer: str) -> list[ev.Event]:
    return [*SENT, *answered(answer)]


async def press(pilot: Pilot[Any], key: str) -> None:
    """Press `key` and wait until the window has moved (its mounting runs in a worker)."""
    await pilot.press(key)
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def focused_with(pilot: Pilot[Any], messages: list[Message]) -> Conversation:
    """The pane showing `messages`, focused (so that keys reach it)."""
    conversation = pilot.app.query_one(Conversation)
    await conversation.load_history(messages)
    conversation.focus()
    await pilot.pause()
    return conversation


async def page_up(pilot: Pilot[Any], times: int) -> None:
    for _ in range(times):
        await press(pilot, "pageup")


async def test_a_new_answer_leaves_a_view_at_the_first_message_there_and_end_shows_it() -> None:
    bus, posted = WireBus(), Posted()
    async with host(bus, max_blocks=MAX_BLOCKS).run_test(size=(80, 24), message_hook=posted) as p:
        conversation = await focused_with(p, chat(500))
        await settle(p, posted, bus, *SENT)
        await press(p, "home")
        shown = in_view(conversation)
        assert shown[0] == "user: question 0"
        assert NEW_OUTPUT_HINT not in str(conversation.border_subtitle)

        conversation = await settle(p, posted, bus, *answered("The new answer."))
        await p.app.workers.wait_for_complete()
        await p.pause()
        assert conversation.scroll_y == 0
        assert in_view(conversation) == shown
        assert len(conversation.blocks) <= BOUND
        assert NEW_OUTPUT_HINT in str(conversation.border_subtitle)

        await press(p, "end")
        assert in_view(conversation)[-3:] == [
            "assistant: answer **499**",
            "user: one more",
            "assistant: The new answer.",
        ]
        assert conversation.pending_below == 0
        assert conversation.scroll_y == conversation.max_scroll_y
        assert NEW_OUTPUT_HINT not in str(conversation.border_subtitle)

        # At the end, new output is followed.
        conversation = await settle(p, posted, bus, *new_turn("And another."))
        await p.pause()
        assert in_view(conversation)[-1] == "assistant: And another."
        assert conversation.scroll_y == conversation.max_scroll_y


async def test_a_streamed_answer_does_not_move_a_view_scrolled_up_and_is_there_below_it() -> None:
    bus, posted = WireBus(), Posted()
    async with host(bus, max_blocks=MAX_BLOCKS).run_test(size=(80, 24), message_hook=posted) as p:
        conversation = await focused_with(p, chat(500))
        await settle(p, posted, bus, *SENT)
        await page_up(p, 3)
        y, shown = conversation.scroll_y, in_view(conversation)
        assert shown and "answer **499**" not in shown[-1]

        # A long answer: the window fills up while the view stays where it was.
        answer = " ".join(f"word{n}" for n in range(400))
        conversation = await settle(p, posted, bus, *answered(answer))
        await p.app.workers.wait_for_complete()
        await p.pause()
        assert conversation.scroll_y == y
        assert in_view(conversation) == shown
        assert len(conversation.blocks) <= BOUND
        assert NEW_OUTPUT_HINT in str(conversation.border_subtitle)

        # Scrolling down comes to it.
        for _ in range(100):
            if conversation.scroll_y >= conversation.max_scroll_y and not (
                conversation.pending_below
            ):
                break
            await press(p, "pagedown")
        assert describe(conversation)[-2:] == ["user: one more", f"assistant: {answer}"]
        assert in_view(conversation)[-1] == f"assistant: {answer}"
        assert NEW_OUTPUT_HINT not in str(conversation.border_subtitle)


async def test_sending_while_scrolled_up_brings_the_message_and_the_answer_into_view() -> None:
    bus, posted = WireBus(), Posted()
    async with host(bus, max_blocks=MAX_BLOCKS).run_test(size=(80, 24), message_hook=posted) as p:
        conversation = await focused_with(p, chat(500))
        await press(p, "home")
        assert in_view(conversation)[0] == "user: question 0"

        conversation = await settle(p, posted, bus, *new_turn("Here it is."))
        await p.app.workers.wait_for_complete()
        await p.pause()

        assert in_view(conversation)[-2:] == ["user: one more", "assistant: Here it is."]
        assert conversation.scroll_y == conversation.max_scroll_y
        assert NEW_OUTPUT_HINT not in str(conversation.border_subtitle)


async def test_paging_up_from_the_end_reaches_the_first_message_with_few_blocks_mounted() -> None:
    async with host(WireBus(), max_blocks=MAX_BLOCKS).run_test(size=(80, 24)) as pilot:
        conversation = pilot.app.query_one(Conversation)
        await conversation.load_history(tool_turns(30))  # 90 messages
        conversation.focus()
        await pilot.pause()
        mounted: list[int] = []
        for _ in range(200):
            if conversation.scroll_y == 0 and not conversation.pending_count:
                break
            await page_up(pilot, 1)
            mounted.append(len(conversation.blocks))
        assert in_view(conversation)[:2] == ["user: question 0", "assistant: reading 0"]
        assert max(mounted) <= BOUND


async def test_home_while_an_answer_streams_goes_to_the_first_message_and_end_shows_it() -> None:
    bus, posted = WireBus(), Posted()
    async with host(bus, max_blocks=MAX_BLOCKS).run_test(size=(80, 24), message_hook=posted) as p:
        conversation = await focused_with(p, chat(500))
        start = [ev.TurnBegin(user_input="one more"), ev.StepBegin(n=1)]
        await settle(p, posted, bus, *start, ev.ContentPart(part=TextPart(text="A first try")))

        await press(p, "home")
        assert in_view(conversation)[0] == "user: question 0"
        assert conversation.scroll_y == 0

        # The step goes on (and is retried) out of sight; the view stays.
        retry = ev.StepRetry(n=1, attempt=1, max_attempts=3, wait_s=0.0, error="overloaded")
        rest = [ev.ContentPart(part=TextPart(text="The answer.")), ev.TurnEnd()]
        await settle(p, posted, bus, ev.ContentPart(part=TextPart(text=", more.")), retry, *rest)
        await p.app.workers.wait_for_complete()
        await p.pause()
        assert conversation.scroll_y == 0
        assert in_view(conversation)[0] == "user: question 0"

        await press(p, "end")
        lines = in_view(conversation)
        assert lines[-3:-1] == [
            "user: one more",
            "note: overloaded; retrying in 0 s (attempt 2 of 3)",
        ]
        assert lines[-1] == "assistant: The answer."
        assert not any("A first try" in line for line in describe(conversation))
