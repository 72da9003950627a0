"""A link in the model's answer opens only when it is a web address: the model writes both the
target and the text shown, so a click on "README.md" could start any application."""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import Markdown

from kode_tui.message import TextPart
from kode_tui.wire import WireBus
from kode_tui.wire import events as ev
from tests.test_ui_conversation import host, settle
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
