"""Images, audio and video in a tool result show as chips with their path and size."""

from __future__ import annotations

import json

from kode_tui.message import FunctionBody, Message, ToolCall, media_chips
from kode_tui.ui.widgets.conversation import Conversation
from kode_tui.ui.widgets.tool_block import ToolBlock
from kode_tui.wire import WireBus
from tests.test_ui_conversation import host

KIMI_IMAGE_RESULT = (
    '{"role":"tool","content":[{"type":"text","text":"<system>Loaded image file '
    '`/home/dev/cat & dog.png`.</system>"},{"type":"text","text":"<image path=\\"/home/dev/cat '
    '&amp; dog.png\\">"},{"type":"image_url","image_url":{"url":"data:image/png;base64,'
    'iVBORw0KGgoAAAA=","id":null}},{"type":"text","text":"</image>"},{"type":"text","text":'
    '"<video path=\\"clip.mp4\\">"},{"type":"video_url","video_url":{"url":"https://x/clip.mp4"}},'
    '{"type":"text","text":"</video>"}],"tool_call_id":"call_1_0"}'
)
"""A Kimi CLI 1.52 ReadMediaFile result as its context.jsonl keeps it (made with kimi-cli's
`tool_result_to_message` and `wrap_media_part`; the video part added the same way)."""


async def test_a_kimi_image_in_a_tool_result_shows_as_a_chip_with_its_path_and_size() -> None:
    read = ToolCall(
        id="call_1_0", function=FunctionBody(name="ReadMediaFile", arguments='{"path": "c.png"}')
    )
    messages = [
        Message(role="assistant", content="Looking.", tool_calls=[read]),
        Message.model_validate(json.loads(KIMI_IMAGE_RESULT)),
    ]
    async with host(WireBus()).run_test(size=(100, 40)) as pilot:
        conversation = pilot.app.query_one(Conversation)
        await conversation.load_history(messages)
        await pilot.pause()
        block = conversation.query_one(ToolBlock)
        block.toggle()
        shown = str(block.render())

    assert "[image · /home/dev/cat & dog.png · 11 B]" in shown
    assert "[video · clip.mp4]" in shown
    assert "<image" not in shown and "</video>" not in shown


def test_text_without_media_parts_is_left_as_it_is() -> None:
    text = 'An <image path="x.png"></image> mentioned in the output of a tool.'

    assert media_chips(text, []) == (text, [])
