"""A link in the model's answer opens only when it is a web address: the model writes both the
target and the text shown, so a click on "README.md" could start any application."""

from __future__ import annotations

from typing import Any

import pytest
from textual.geometry import Region
from textual.widgets import Markdown

from kode_tui.message import Message, TextPart
from kode_tui.ui.widgets.blocks import AnswerBlock
from kode_tui.ui.widgets.conversation import Conversation
from kode_tui.wire import WireBus
from kode_tui.wire import events as ev
from tests.ui.test_conversation import host, settle
from tests.ui_helpers import Posted


@pytest.mark.parametrize(
    ("href", "opens"),
    [
        ("https://example.com/docs", True),
        ("HTTP://example.com", True),
        ("./setup.desktop", False),
        ("README.md", False),
        ("ms-officecmd:open?x", False),
        ("vscode://file/etc/passwd", False),
        ("ftp://example.com/x", False),
    ],
)
async def test_only_web_links_in_an_answer_open(
    href: str, opens: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    bus, posted = WireBus(), Posted()
    app = host(bus)
    opened: list[str] = []
    notes: list[str] = []

    def open_url(url: str, **kwargs: Any) -> None:
        opened.append(url)

    def notify(message: str, **kwargs: Any) -> None:
        notes.append(message)

    monkeypatch.setattr(app, "open_url", open_url)
    monkeypatch.setattr(app, "notify", notify)
    async with app.run_test(message_hook=posted) as pilot:
        answer_text = ev.ContentPart(part=TextPart(text=f"See [the docs]({href}).\n"))
        conversation = await settle(pilot, posted, bus, ev.TurnBegin(user_input="hi"), answer_text)
        answer = conversation.query_one("AssistantBlock", Markdown)
        answer.post_message(Markdown.LinkClicked(answer, href))
        await pilot.pause()

    assert opened == ([href] if opens else [])
    if not opens:
        assert notes and href in notes[0]


async def test_a_restored_answer_shows_links_and_images_as_text_with_nothing_to_open() -> None:
    text = (
        "See [the docs](vscode://file/etc/passwd) and ![a picture](file:///etc/passwd), "
        "or www.example.com/faq.\n"
    )
    messages = [Message(role="user", content="hi"), Message(role="assistant", content=text)]
    async with host(WireBus()).run_test(size=(100, 30)) as pilot:
        conversation = pilot.app.query_one(Conversation)
        await conversation.load_history(messages)
        await pilot.pause()
        answer = conversation.query_one(AnswerBlock)
        lines = answer.render_lines(Region(0, 0, answer.size.width, answer.size.height))

    segments = [segment for line in lines for segment in line]
    assert "the docs" in "".join(segment.text for segment in segments)
    assert "a picture" in "".join(segment.text for segment in segments)
    assert "or www.example.com/faq." in "".join(segment.text for segment in segments)
    styles = [segment.style for segment in segments if segment.style is not None]
    assert not any(style.link or style.meta.get("@click") for style in styles)
