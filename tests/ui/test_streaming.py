"""Frame-paced streaming: deltas are drawn once a frame, in order, and keys go on meanwhile."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt
from textual import events
from textual._compositor import Compositor
from textual.app import App
from textual.widgets import Markdown
from textual.widgets.markdown import MarkdownBlock

from kode_tui.message import TextPart, ThinkPart
from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.ui import terminal_writes
from kode_tui.ui.widgets import block_window
from kode_tui.ui.widgets import conversation as conversation_module
from kode_tui.ui.widgets.answer_split import split_answer
from kode_tui.ui.widgets.blocks import AnswerBlock, AssistantBlock, ThinkingBlock, UserBlock
from kode_tui.ui.widgets.conversation import Conversation
from kode_tui.ui.widgets.prompt import PromptInput
from kode_tui.ui.wire_messages import WireMessage
from kode_tui.wire import WireBus
from kode_tui.wire import events as ev
from tests.ui.test_conversation import call, describe, host, text
from tests.ui_helpers import Posted, make_app, ready, send, turn_running, wait_for


def think(delta: str) -> ev.ContentPart:
    return ev.ContentPart(part=ThinkPart(think=delta))


def compositor(app: App[Any]) -> Compositor:
    return app.screen._compositor


def answer_blocks(conversation: Conversation) -> list[AssistantBlock | AnswerBlock]:
    return [b for b in conversation.blocks if isinstance(b, AssistantBlock | AnswerBlock)]


def shown_text(conversation: Conversation) -> str:
    return "".join(block.source for block in answer_blocks(conversation))


async def test_deltas_within_a_frame_are_drawn_together_and_before_what_follows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A frame that never comes by itself: only the events that follow draw the buffer.
    monkeypatch.setattr(conversation_module, "FRAME_INTERVAL", 3600.0)
    monkeypatch.setattr(conversation_module, "QUIET", 3600.0)  # nor when the stream pauses
    bus, posted = WireBus(), Posted()
    async with host(bus).run_test(size=(100, 40), message_hook=posted) as pilot:
        conversation = pilot.app.query_one(Conversation)
        await posted.deliver(
            pilot, bus, ev.TurnBegin(user_input="Go"), ev.StepBegin(n=1), text("The first")
        )
        assert shown_text(conversation) == "The first", "the first delta is drawn at once"

        await posted.deliver(pilot, bus, think("Hm, "), think("a tool."), text(" answer"))
        assert shown_text(conversation) == "The first", "later deltas wait for the frame"
        assert conversation.query_one(ThinkingBlock).text == ""

        # A tool call in the same frame: the text is complete before the tool's block.
        await posted.deliver(pilot, bus, text(" ends here."), call("t1", "Shell"))
        assert describe(conversation) == [
            "user: Go",
            "assistant: The first answer ends here.",
            "thinking: Hm, a tool.",
            "tool: ▸ Shell  running…",
        ]

        # Interrupted mid-frame: what was sent is shown, then the note.
        await posted.deliver(
            pilot,
            bus,
            text("Then "),
            text("more."),
            ev.StepInterrupted(reason="interrupted by the user"),
            ev.TurnEnd(),
        )
        assert describe(conversation)[-3:] == [
            "tool: ▸ Shell  interrupted",
            "assistant: Then more.",
            "note: interrupted",
        ]


MARKDOWN = """# A heading

Some **bold** text and `code`, then a list:

- one item
- two items with more words, enough of them to wrap around the pane's width once at least
- three

```python
def hello(name: str) -> str:
    return f"hello {name}"
```

## Second heading

1. first
2. second

> a quote that goes on

| a | b |
|---|---|
| 1 | 2 |

The end paragraph with words words words words words words words words words words words.
"""


def drawn(markdown: Markdown) -> list[tuple[str, list[str]]]:
    """Each block of `markdown` and the lines it draws at the size it was laid out at."""
    return [
        (type(block).__name__, [strip.text for strip in block.render_lines(block.size.region)])
        for block in markdown.query(MarkdownBlock)
    ]


async def test_a_burst_of_deltas_is_shown_whole_when_its_frame_comes() -> None:
    deltas = [f"word{n} " for n in range(200)] + ["\n\n- a list\n", "- item\n"]
    bus, posted = WireBus(), Posted()
    async with host(bus).run_test(size=(100, 40), message_hook=posted) as pilot:
        conversation = pilot.app.query_one(Conversation)
        await posted.deliver(pilot, bus, ev.StepBegin(n=1), *map(text, deltas))
        # No event follows: the frame's timer draws the rest.
        await wait_for(pilot, lambda: shown_text(conversation) == "".join(deltas))

        # Markdown streamed a few characters at a time ends drawn as it is drawn whole.
        pieces = [MARKDOWN[i : i + 7] for i in range(0, len(MARKDOWN), 7)]
        await posted.deliver(pilot, bus, ev.StepBegin(n=2), *map(text, pieces))
        await wait_for(pilot, lambda: conversation.query(AssistantBlock)[-1].source == MARKDOWN)
        streamed = conversation.query(AssistantBlock)[-1]
        whole = AssistantBlock(MARKDOWN)  # below it, in the same pane
        await conversation.mount(whole)
        await pilot.pause()
        assert drawn(streamed) == drawn(whole)
        assert any("Some bold text" in line for _, lines in drawn(streamed) for line in lines)


async def by_itself(condition: Callable[[], bool], timeout: float = 10) -> bool:
    """Whether `condition()` comes true within `timeout` seconds (a safety net) while the app
    runs on its own: `Pilot.pause` would run the screen's update itself."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not condition():
        if loop.time() > end:
            return False
        await asyncio.sleep(0.01)
    return True


async def test_each_drawn_frame_is_laid_out_and_shown_without_waiting_for_other_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(conversation_module, "FRAME_INTERVAL", 0.0)
    monkeypatch.setattr(conversation_module, "DRAW_BUDGET", 1e9)
    bus, posted = WireBus(), Posted()
    async with host(bus).run_test(size=(100, 30), message_hook=posted) as pilot:
        conversation = pilot.app.query_one(Conversation)
        await posted.deliver(pilot, bus, ev.StepBegin(n=1), text("The answer begins."))
        block = conversation.query_one(AssistantBlock)
        for n in range(4):
            height = block.region.height
            # A paragraph more, drawn at once: nothing but the frame asks for a screen update.
            bus.send(text(f"\n\nParagraph {n}."))
            assert await by_itself(lambda height=height: block.region.height > height)


async def test_a_stream_that_pauses_shows_what_came_without_waiting_for_a_slow_frame(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A machine so slow that the pacer draws a frame every 30 s at best.
    monkeypatch.setattr(conversation_module, "FRAME_INTERVAL", 30.0)
    monkeypatch.setattr(conversation_module, "FRAME_SLOWEST", 30.0)
    bus, posted = WireBus(), Posted()
    async with host(bus).run_test(size=(100, 30), message_hook=posted) as pilot:
        conversation = pilot.app.query_one(Conversation)
        await posted.deliver(pilot, bus, ev.StepBegin(n=1), text("The answer "))
        await wait_for(pilot, lambda: shown_text(conversation) == "The answer ")
        # The next frame is 30 s away; the stream stops here (the model is thinking).
        await posted.deliver(pilot, bus, text("begins, "), text("then waits."))
        assert await by_itself(
            lambda: shown_text(conversation) == "The answer begins, then waits.", timeout=10
        )


def test_a_long_answer_is_cut_at_paragraph_breaks_outside_code() -> None:
    paragraph = "word " * 9 + "end.\n\n"  # 50 characters
    fence = "```\ncode\n\nmore code\n```\n\n"
    # Cut once the block holds 100 characters, where a line starts after a blank one.
    assert split_answer("", paragraph * 5, 100) == [paragraph * 2, paragraph * 2, paragraph]
    # The first piece goes on with the block streamed so far; a blank line inside code, or
    # before indented text, is no place to cut.
    assert split_answer(paragraph, fence + paragraph, 10) == [fence, paragraph]
    assert split_answer(paragraph * 2, "   indented\n\nnext\n", 100) == [
        "   indented\n\n",
        "next\n",
    ]
    # Not before a heading, a list, a table, a quote, a fence or a rule (each has a margin
    # above it): at the next paragraph's words.
    marked = "## Heading\n\n- item\n\n1. item\n\n| a |\n\n> quote\n\n---\n\n"
    assert split_answer(paragraph * 2, marked + "Words.\n", 100) == [marked, "Words.\n"]
    # A break at the very end: what follows decides, in the next frame.
    assert split_answer("", paragraph * 2, 100) == [paragraph * 2]
    assert split_answer(paragraph * 2, "next", 100) == ["", "next"]
    assert split_answer(paragraph * 2, "  indented", 100) == ["  indented"]


async def test_a_burst_is_mounted_as_few_widgets_and_ends_drawn_as_a_slow_stream(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    paragraphs = [f"Paragraph {n}: " + "some words " * 30 + "\n\n" for n in range(80)]
    answer = "".join(paragraphs) + MARKDOWN
    # Slowly: a frame for each delta, each shorter than a block (SPLIT_CHARS), so that every
    # block is drawn before it ends. Then as a burst: every delta but the first in one frame.
    deltas = [answer[i : i + 900] for i in range(0, len(answer), 900)]
    screens: list[str] = []
    widgets: list[int] = []
    monkeypatch.setattr(block_window, "TRIM_SCREENS", 1000)  # every block stays mounted
    monkeypatch.setattr(conversation_module, "BURST", len(answer) + 1)  # frames are paced
    for frame in (0.0, 3600.0):
        monkeypatch.setattr(conversation_module, "FRAME_INTERVAL", frame)
        monkeypatch.setattr(conversation_module, "QUIET", 3600.0)
        monkeypatch.setattr(conversation_module, "DRAW_BUDGET", 1e9)
        bus, posted = WireBus(), Posted()
        async with host(bus).run_test(size=(100, 50), message_hook=posted) as pilot:
            conversation = pilot.app.query_one(Conversation)
            await posted.deliver(pilot, bus, ev.TurnBegin(user_input="Go"), ev.StepBegin(n=1))
            if frame:
                await posted.deliver(pilot, bus, *map(text, deltas))
                assert shown_text(conversation) == deltas[0], "the rest waits for its frame"
            else:
                for delta in deltas:
                    await posted.deliver(pilot, bus, text(delta))
            await posted.deliver(pilot, bus, ev.TurnEnd())
            await wait_for(pilot, lambda: not pilot.app.screen._layout_required)
            await pilot.pause()
            assert shown_text(conversation) == answer
            answer_widgets = conversation.query(MarkdownBlock).nodes + answer_blocks(conversation)
            widgets.append(len(answer_widgets))
            # The whole answer, a screen at a time from the end.
            shown: list[str] = []
            for y in range(conversation.max_scroll_y, -1, -40):
                conversation.scroll_to(y=y, animate=False, immediate=True)
                await pilot.pause()
                shown += (strip.text for strip in compositor(pilot.app).render_strips())
            screens.append("\n".join(shown))
    # The burst's blocks that were finished before their first frame are one widget each.
    assert widgets[1] < widgets[0] / 2
    assert screens[1] == screens[0]
    assert "Paragraph 39: some words" in screens[0] and "second" in screens[0]


async def test_a_burst_is_drawn_as_it_comes_and_so_is_the_end_that_follows_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A frame that never comes by itself: what waits for it is drawn only by what follows.
    monkeypatch.setattr(conversation_module, "FRAME_INTERVAL", 3600.0)
    monkeypatch.setattr(conversation_module, "QUIET", 3600.0)
    burst = "Many words at once. " * 1000  # 20,000 characters in one delta
    bus, posted = WireBus(), Posted()
    async with host(bus).run_test(size=(100, 40), message_hook=posted) as pilot:
        conversation = pilot.app.query_one(Conversation)
        await posted.deliver(
            pilot, bus, ev.TurnBegin(user_input="Go"), ev.StepBegin(n=1), text("First. ")
        )
        await posted.deliver(pilot, bus, text("Then "), text("slowly. "))
        assert shown_text(conversation) == "First. ", "a slow stream waits for its frame"

        await posted.deliver(pilot, bus, text(burst))
        assert shown_text(conversation) == "First. Then slowly. " + burst
        await posted.deliver(pilot, bus, text("The end."))
        assert shown_text(conversation).endswith(burst + "The end.")

        await posted.deliver(pilot, bus, text(" And more"))
        assert shown_text(conversation).endswith("The end."), "slow again: it waits"


async def test_a_burst_of_many_screens_mounts_only_its_end_and_keeps_the_rest_in_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Blocks far above the view leave the DOM only when the pane trims: never, here.
    monkeypatch.setattr(block_window, "TRIM_DELAY", 3600.0)
    monkeypatch.setattr(conversation_module, "FRAME_INTERVAL", 3600.0)
    monkeypatch.setattr(conversation_module, "QUIET", 3600.0)
    answer = "".join(f"Paragraph {n}: " + "some words " * 30 + "\n\n" for n in range(200))
    answer += "The end of a long answer."
    # As the model process hands a burst over: its replies of 50 ms joined, 15-50k characters.
    deltas = [answer[i : i + 30000] for i in range(0, len(answer), 30000)]
    bus, posted = WireBus(), Posted()
    async with host(bus).run_test(size=(100, 40), message_hook=posted) as pilot:
        conversation = pilot.app.query_one(Conversation)
        await posted.deliver(pilot, bus, ev.TurnBegin(user_input="Go"), ev.StepBegin(n=1))
        await posted.deliver(pilot, bus, *map(text, deltas), ev.TurnEnd())
        await wait_for(pilot, lambda: not pilot.app.screen._layout_required)
        await pilot.pause()

        mounted = answer_blocks(conversation)
        # ~70k characters: ~35 blocks, of which those of the last few screens are mounted.
        assert len(mounted) < 10
        assert "The end of a long answer." in "\n".join(
            strip.text for strip in compositor(pilot.app).render_strips()[-6:]
        )
        above = [make() for make in conversation._window.above if callable(make)]
        assert (
            "".join(b.source for b in above if isinstance(b, AnswerBlock))
            + "".join(b.source for b in mounted)
            == answer
        )
        assert isinstance(above[0], UserBlock)


def test_a_finished_block_of_a_burst_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Rich's Markdown parses what it is given; the block hands it the tokens of its own parse.
    parsed: list[str] = []
    parse = MarkdownIt.parse

    def counted(self: MarkdownIt, src: str, env: Any = None) -> Any:
        parsed.append(src)
        return parse(self, src, env)

    monkeypatch.setattr(MarkdownIt, "parse", counted)
    markdown = "A *burst* of words, see www.example.com.\n\n" + MARKDOWN

    block = AnswerBlock(markdown)

    assert [src for src in parsed if src] == [markdown]
    assert block.source == markdown


async def test_keys_typed_while_an_answer_streams_reach_the_prompt_and_the_answer_stays_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Keys first: no frame of the answer is drawn between a key's arrival and the screen
    # update that shows it (however long that takes here), though every delta would be drawn
    # at once otherwise.
    monkeypatch.setattr(terminal_writes, "KEY_HOLD_S", 3600.0)
    monkeypatch.setattr(conversation_module, "FRAME_INTERVAL", 0.0)
    monkeypatch.setattr(conversation_module, "DRAW_BUDGET", 1e9)
    answer = " ".join(f"Word {n}, **bold** and `code`." for n in range(600))
    provider = ScriptedProvider(
        [{"think": "Let me think. " * 20, "text": answer, "hang": True}], delay=0.005
    )
    app, posted = make_app(tmp_path, provider), Posted()
    async with app.run_test(size=(140, 40), message_hook=posted) as pilot:
        await ready(pilot)
        await send(pilot, "Write a long answer")
        conversation = app.screen.query_one(Conversation)
        await wait_for(pilot, lambda: shown_text(conversation))
        drawn_while_keys_waited: list[str] = []
        draw = conversation._draw_frame

        async def recorded_draw() -> None:
            if conversation._pending_text and app.keys_waiting:
                drawn_while_keys_waited.append("".join(conversation._pending_text))
            await draw()

        monkeypatch.setattr(conversation, "_draw_frame", recorded_draw)

        # Posted as a terminal would send them (`pilot.press` waits for an idle app, and a
        # streaming app is never idle).
        typed = "hi there keys first"
        prompt = app.screen.query_one(PromptInput)
        for n, key in enumerate(typed, 1):
            app.post_message(events.Key("space" if key == " " else key, key))
            if n % 2:  # and a burst now and then
                await wait_for(pilot, lambda n=n: prompt.text == typed[:n])  # type: ignore[misc]
        await wait_for(pilot, lambda: prompt.text == typed)
        await wait_for(pilot, lambda: not app.keys_waiting)
        assert len(shown_text(conversation)) < len(answer), "the answer was still streaming"
        assert drawn_while_keys_waited == []

        app.post_message(events.Key("escape", None))
        await wait_for(pilot, lambda: not turn_running(app))
        await pilot.pause()
        # Every delta the pane was sent is shown, in order, though it stopped mid-frame.
        sent = {id(m.event): m.event for m in posted.of(WireMessage)}.values()
        parts = [e.part for e in sent if isinstance(e, ev.ContentPart)]
        texts = "".join(p.text for p in parts if isinstance(p, TextPart))
        thoughts = "".join(p.think for p in parts if isinstance(p, ThinkPart))
        assert texts and answer.startswith(texts)
        assert shown_text(conversation) == texts
        assert conversation.query_one(ThinkingBlock).text == thoughts == "Let me think. " * 20
        assert prompt.text == typed


async def test_a_growing_answer_moves_nothing_outside_the_conversation(tmp_path: Path) -> None:
    # Long enough to go on in new blocks (SPLIT_CHARS) and to scroll.
    answer = "".join(f"Paragraph {n} begins: " + "a few words " * 40 + "\n\n" for n in range(6))
    provider = ScriptedProvider([{"text": answer, "hang": True}], delay=0.005)
    app = make_app(tmp_path, provider)
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        await send(pilot, "Write a long answer")
        conversation = app.screen.query_one(Conversation)
        await wait_for(pilot, lambda: shown_text(conversation))
        outside = [
            widget
            for widget in app.screen.walk_children(with_self=False)
            if conversation not in widget.ancestors_with_self and widget.display
        ]
        regions = {widget: widget.region for widget in outside}
        region = conversation.region

        await wait_for(pilot, lambda: shown_text(conversation) == answer)
        await pilot.pause()
        assert len(answer_blocks(conversation)) > 1
        assert conversation.region == region
        assert [widget for widget in outside if widget.region != regions[widget]] == []
