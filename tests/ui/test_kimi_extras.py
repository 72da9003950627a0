"""What Kimi CLI's sessions hold beyond text shows: images, audio and video of a tool result as
chips with their path and size, a subagent's steps under the call that ran it."""

from __future__ import annotations

import json
from pathlib import Path

from kode_tui.message import FunctionBody, Message, TextPart, ToolCall, media_chips
from kode_tui.soul.transcript import PastResults
from kode_tui.ui.widgets.blocks import UserBlock
from kode_tui.ui.widgets.conversation import Conversation
from kode_tui.ui.widgets.tool_block import ToolBlock
from kode_tui.wire import WireBus
from kode_tui.wire import events as ev
from tests.ui.test_conversation import host

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


def _subagent(event: dict[str, object]) -> dict[str, object]:
    return {
        "type": "SubagentEvent",
        "payload": {
            "parent_tool_call_id": "call_1_0",
            "agent_id": "a7f3",
            "subagent_type": "coder",
            "event": event,
        },
    }


SUBAGENT_RUN = [
    {"type": "TurnBegin", "payload": {"user_input": "Find the tests"}},
    {
        "type": "ToolCall",
        "payload": {
            "type": "function",
            "id": "call_1_0",
            "function": {"name": "Agent", "arguments": '{"description": "find tests"}'},
        },
    },
    _subagent({"type": "TurnBegin", "payload": {"user_input": "Find the tests"}}),
    _subagent({"type": "StepBegin", "payload": {"n": 1}}),
    _subagent({"type": "ContentPart", "payload": {"type": "text", "text": "Looking for "}}),
    _subagent({"type": "ContentPart", "payload": {"type": "text", "text": "test files."}}),
    _subagent(
        {
            "type": "ToolCall",
            "payload": {
                "type": "function",
                "id": "call_1_0",
                "function": {"name": "Glob", "arguments": '{"pattern": "tests/*.py"}'},
            },
        }
    ),
    _subagent(
        {
            "type": "ToolResult",
            "payload": {
                "tool_call_id": "call_1_0",
                "return_value": {
                    "is_error": False,
                    "output": "tests/test_a.py",
                    "message": "Found 1 file.",
                    "display": [],
                },
            },
        }
    ),
    _subagent({"type": "StepBegin", "payload": {"n": 2}}),
    _subagent({"type": "TurnEnd", "payload": {}}),
    {
        "type": "ToolResult",
        "payload": {
            "tool_call_id": "call_1_0",
            "return_value": {"is_error": False, "output": "done", "message": "", "display": []},
        },
    },
    {"type": "TurnEnd", "payload": {}},
]
"""A Kimi CLI 1.52 turn whose Agent call ran a subagent, as its wire.jsonl records it (made with
kimi-cli's `WireMessageEnvelope.from_wire_message(SubagentEvent(...))`). The subagent numbers
its calls from `call_1_0` too."""


async def test_a_kimi_subagent_shows_its_steps_in_the_block_of_the_call_that_ran_it(
    tmp_path: Path,
) -> None:
    wire = tmp_path / "wire.jsonl"
    wire.write_text(
        "".join(json.dumps({"timestamp": 1.0, "message": m}) + "\n" for m in SUBAGENT_RUN)
    )
    agent = ToolCall(
        id="call_1_0",
        function=FunctionBody(name="Agent", arguments='{"description": "find tests"}'),
    )
    messages = [
        Message(role="assistant", content="Asking a subagent.", tool_calls=[agent]),
        Message(role="tool", tool_call_id="call_1_0", content=[TextPart(text="done")]),
    ]
    async with host(WireBus()).run_test(size=(100, 40)) as pilot:
        conversation = pilot.app.query_one(Conversation)
        await conversation.load_history(messages, PastResults.read(wire))
        await pilot.pause()
        block = conversation.query_one(ToolBlock)
        block.toggle()
        shown = str(block.render()).splitlines()

    at = shown.index("subagent coder (a7f3)")
    assert shown[at + 1 :] == [
        "step 1",
        "  Looking for test files.",
        '  → Glob "tests/*.py"',
        "  ✔ Glob Found 1 file.",
        "step 2",
    ]
    assert "done" in shown[:at]


KIMI_MEDIA_USER_MESSAGE = (
    '{"role":"user","content":[{"type":"text","text":"Transcribe "},{"type":"text","text":'
    '"<audio path=\\"talk.mp3\\">"},{"type":"audio_url","audio_url":{"url":"data:audio/mpeg;'
    'base64,SUQzBAAAAA==","id":null}},{"type":"text","text":"</audio>"},{"type":"text","text":'
    '" and describe "},{"type":"video_url","video_url":{"url":"https://x/clip.mp4","id":null}}]}'
)
"""A Kimi CLI user message with an audio part (wrapped in its path tags) and a video link."""


async def test_audio_and_video_in_a_user_message_show_as_chips_in_history_and_live() -> None:
    message = Message.model_validate(json.loads(KIMI_MEDIA_USER_MESSAGE))
    bus = WireBus()
    async with host(bus).run_test(size=(100, 40)) as pilot:
        conversation = pilot.app.query_one(Conversation)
        await conversation.load_history([message])
        bus.send(ev.TurnBegin(user_input=list(message.parts)))
        await pilot.pause()
        shown = [str(block.render()) for block in conversation.query(UserBlock)]

    assert len(shown) == 2
    for text in shown:
        assert "Transcribe" in text and "[audio · talk.mp3 · 7 B] [video]" in text
        assert "<audio" not in text and "base64" not in text
