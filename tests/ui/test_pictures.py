"""Images drawn in the conversation: below the chip of a message or a ReadMediaFile result, a
picture (half blocks in a headless run, as in tmux), decoded in a thread; a broken image is one
line; `pictures = "off"` leaves the chips alone. The same in History's preview of a context."""

from __future__ import annotations

import base64
import io
import json
import sys
from typing import Any

from PIL import Image
from rich.color_triplet import ColorTriplet
from textual.css.scalar import Scalar
from textual.pilot import Pilot
from textual.widget import Widget

from kode_tui.config import PictureSetting
from kode_tui.message import FunctionBody, ImageURL, ImageURLPart, Message, TextPart, ToolCall
from kode_tui.session.timetravel import compare, read_snapshot
from kode_tui.ui.pictures import (
    PICTURE_ROWS,
    choose_protocol,
    picture_cells,
    picture_widget,
    thumbnail,
)
from kode_tui.ui.screens.timetravel import PreviewScreen
from kode_tui.ui.widgets.blocks import PictureBlock, UserBlock
from kode_tui.ui.widgets.conversation import Conversation
from kode_tui.wire import WireBus
from kode_tui.wire import events as ev
from tests.conftest import KIMI_DEFAULT_FIXTURE
from tests.ui_helpers import Host, Posted, wait_for

RED, BLUE = (255, 0, 0), (0, 0, 255)


def halves_png() -> str:
    """A 200x100 PNG, red on the left, blue on the right, as a data URL."""
    image = Image.new("RGB", (200, 100), RED)
    image.paste(BLUE, (100, 0, 200, 100))
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def wrapped(path: str, url: str) -> list[TextPart | ImageURLPart]:
    image = ImageURLPart(image_url=ImageURL(url=url))
    return [TextPart(text=f'<image path="{path}">'), image, TextPart(text="</image>")]


class PictureHost(Host):
    """The test app says how pictures are drawn, as KodeApp reads it from the config."""

    pictures: PictureSetting = "auto"


def colours(picture: Widget, row: int) -> list[ColorTriplet | None]:
    """The foreground colour of each cell of a drawn row (a half block's upper pixel)."""
    strip = picture.render_line(row)
    return [
        segment.style.color.triplet if segment.style and segment.style.color else None
        for segment in strip
        if segment.text.strip()
    ]


async def drawn(pilot: Pilot[Any], blocks: list[PictureBlock]) -> None:
    """Wait until each block's picture (or note) is mounted and laid out."""
    await wait_for(
        pilot, lambda: all(block.children and block.children[0].size.height for block in blocks)
    )


async def test_images_draw_below_their_chips_broken_ones_say_so_and_off_draws_none() -> None:
    read = ToolCall(
        id="call_1", function=FunctionBody(name="ReadMediaFile", arguments='{"path": "h.png"}')
    )
    messages = [
        Message(
            role="user", content=[TextPart(text="what is it?"), *wrapped("s.png", halves_png())]
        ),
        Message(role="assistant", content="Looking.", tool_calls=[read]),
        Message(
            role="tool",
            tool_call_id="call_1",
            content=[TextPart(text="<system>Loaded.</system>"), *wrapped("h.png", halves_png())],
        ),
        Message(role="user", content=[*wrapped("bad.png", "data:image/png;base64,AAAA")]),
    ]
    bus, posted = WireBus(), Posted()
    app = PictureHost(Conversation(bus, id="conversation"))
    async with app.run_test(size=(100, 50), message_hook=posted) as pilot:
        conversation = app.query_one(Conversation)
        await conversation.load_history(messages)
        blocks = list(conversation.query(PictureBlock))
        await drawn(pilot, blocks)
        order = [type(block).__name__ for block in conversation.blocks]
        prompt_picture, result_picture, broken = (block.children[0] for block in blocks)
        # 200x100 pixels in 10x20-pixel cells: 20 columns, 5 rows; its halves keep their colours.
        size = (prompt_picture.size.width, prompt_picture.size.height)
        row = colours(prompt_picture, 2)
        result_size = (result_picture.size.width, result_picture.size.height)
        note = str(broken.render())
        user_text = app.query(UserBlock).first().text

        app.pictures = "off"
        await conversation.load_history(messages)
        await pilot.pause()
        hidden = [
            (block.has_class("-off"), len(block.children), block.outer_size.height)
            for block in conversation.query(PictureBlock)
        ]

        # Drawn before, a picture is drawn at once when its block comes back (no decoding).
        app.pictures = "auto"
        await conversation.load_history(messages)
        again = [len(block.children) for block in conversation.query(PictureBlock)]

        # Live: the prompt's image below the prompt, each result's below its call, also when
        # two calls were made together.
        await conversation.clear()
        image = wrapped("", halves_png())[1]
        await posted.deliver(
            pilot,
            bus,
            ev.TurnBegin(user_input=[TextPart(text="and this?"), *wrapped("l.png", halves_png())]),
            ev.ToolCall(id="call_2", function=FunctionBody(name="ReadMediaFile", arguments="{}")),
            ev.ToolCall(id="call_3", function=FunctionBody(name="ReadMediaFile", arguments="{}")),
            ev.ToolResult(tool_call_id="call_2", output="Loaded.", parts=[image]),
            ev.ToolResult(tool_call_id="call_3", output="Loaded.", parts=[image]),
        )
        live = [type(block).__name__ for block in conversation.blocks]
        await drawn(pilot, list(conversation.query(PictureBlock)))

    assert order[:2] == ["UserBlock", "PictureBlock"]
    assert order.index("ToolBlock") + 1 == order.index("PictureBlock", 2)
    assert user_text == "what is it? [image · s.png · " + user_text.split(" · ")[-1]
    assert size == result_size == (20, 5)
    # (Scaling blends the two cells where the halves meet.)
    assert len(row) == 20
    assert row[:9] == [ColorTriplet(*RED)] * 9 and row[11:] == [ColorTriplet(*BLUE)] * 9
    assert note == "picture not shown: not a readable image"
    assert hidden == [(True, 0, 0)] * 3
    assert again == [1, 1, 1]
    assert live == ["UserBlock", "PictureBlock", *["ToolBlock", "PictureBlock"] * 2]


async def test_history_preview_draws_the_image_kimi_read_with_read_media_file() -> None:
    rotated = read_snapshot(KIMI_DEFAULT_FIXTURE / "context_1.jsonl")
    live = read_snapshot(KIMI_DEFAULT_FIXTURE / "context.jsonl").messages
    line = (KIMI_DEFAULT_FIXTURE / "context_1.jsonl").read_text().splitlines()[18]
    assert '"image_url"' in line and json.loads(line)["role"] == "tool"
    app = PictureHost(screen=PreviewScreen(rotated, None, compare(rotated.messages, live)))
    async with app.run_test(size=(120, 40)) as pilot:
        conversation = app.screen.query_one("#preview-conversation", Conversation)
        await wait_for(pilot, lambda: bool(conversation.query(PictureBlock)))
        blocks = list(conversation.query(PictureBlock))
        await drawn(pilot, blocks)
        picture = blocks[0].children[0]
        shown = (picture.size.width, picture.size.height, colours(picture, 0))

    # Kimi's dot.png: one red pixel, one cell.
    assert shown == (1, 1, [ColorTriplet(*RED)])


def test_auto_draws_by_what_the_environment_says_the_terminal_is() -> None:
    kitty = {"TERM": "xterm-kitty"}
    assert choose_protocol("auto", kitty) == "kitty"
    assert choose_protocol("auto", {**kitty, "TMUX": "/tmp/tmux-1/default,1,0"}) == "halfblocks"
    assert choose_protocol("auto", {"TERM_PROGRAM": "iTerm.app"}) == "sixel"
    assert choose_protocol("auto", {"TERM": "foot"}) == "sixel"
    assert choose_protocol("auto", {"TERM": "xterm-256color"}) == "halfblocks"
    assert choose_protocol("halfblocks", kitty) == "halfblocks"
    assert choose_protocol("off", kitty) is None


def test_a_picture_keeps_its_shape_and_fits_the_rows_and_columns_it_is_given() -> None:
    assert picture_cells(200, 100, 60, (10, 20)) == (20, 5)
    assert picture_cells(4000, 1000, 60, (10, 20)) == (60, 8)  # as wide as allowed
    columns, rows = picture_cells(1000, 4000, 60, (10, 20))
    assert rows == PICTURE_ROWS and columns == 6
    assert picture_cells(1, 1, 60, (10, 20)) == (1, 1)


def test_every_drawing_loads_without_textual_images_terminal_queries() -> None:
    # textual-image's `renderable` package picks its `Image` by querying the terminal when it
    # is imported: the drawings load past it, so it stays a bare package without one.
    made = thumbnail(halves_png())
    drawn = {name: picture_widget(name, made, 4, 2) for name in ("kitty", "sixel", "halfblocks")}

    assert {name: (w.styles.width, w.styles.height) for name, w in drawn.items()} == {
        name: (Scalar.parse("4"), Scalar.parse("2")) for name in drawn
    }
    assert type(drawn["kitty"])._Renderable.__module__ == "textual_image.renderable.tgp"
    assert not hasattr(sys.modules["textual_image.renderable"], "Image")


def test_a_checkpoint_is_named_by_the_words_of_a_prompt_not_its_images_wrapper() -> None:
    from kode_tui.ui.widgets.timeline import _label  # the Checkpoints pane's row label

    with_words = Message(role="user", content=[TextPart(text="what is it?"), *wrapped("s.png", "")])
    image_only = Message(role="user", content=wrapped("/tmp/s.png", "data:image/png;base64,"))

    assert (_label([with_words], 0, 1).text, _label([image_only], 0, 1).text) == (
        "what is it?",
        "(image)",
    )
