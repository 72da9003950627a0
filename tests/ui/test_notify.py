"""A long turn's end, or an approval waiting, is notified through the terminal when the user
is not looking (`[notifications]`)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kode_tui.config import Config, ConfigError, NotificationsConfig, load_config
from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.ui.app import KodeApp
from kode_tui.ui.notify import Notifier, sequence
from kode_tui.wire import WireBus
from kode_tui.wire import events as ev
from tests.ui_helpers import make_app, ready, send, turn_running, wait_for


class Terminal:
    """What the notifier wrote, and a clock and a focus the test sets."""

    def __init__(self, *, focused: bool = False) -> None:
        self.written: list[str] = []
        self.focused = focused
        self.now = 0.0

    def notifier(self, **settings: object) -> Notifier:
        config = NotificationsConfig.model_validate(settings)
        return Notifier(config, self.written.append, lambda: self.focused, lambda: self.now)


def request(description: str) -> ev.ApprovalRequest:
    return ev.ApprovalRequest(
        id="r1", tool_call_id="c1", action="run command", description=description
    )


async def test_a_long_turn_that_ends_while_the_terminal_is_unfocused_is_notified() -> None:
    terminal = Terminal(focused=False)
    with terminal.notifier(turn_seconds=10).turn(WireBus()):
        terminal.now += 42

    assert terminal.written == ["\x1b]9;kode-tui: turn finished after 42 s\x07"]


async def test_a_short_turn_a_focused_terminal_and_never_are_not_notified() -> None:
    for terminal, settings, seconds in (
        (Terminal(focused=False), {"turn_seconds": 10}, 3.0),
        (Terminal(focused=True), {"turn_seconds": 10}, 60.0),
        (Terminal(focused=False), {"when": "never"}, 60.0),
    ):
        with terminal.notifier(**settings).turn(WireBus()):
            terminal.now += seconds
        assert terminal.written == []


async def test_always_notifies_a_focused_terminal_and_a_failed_turn_says_so() -> None:
    terminal = Terminal(focused=True)
    with terminal.notifier(when="always", turn_seconds=0, method="osc777").turn(WireBus()) as turn:
        turn.failed = True

    assert terminal.written == ["\x1b]777;notify;kode-tui;kode-tui: turn failed after 0 s\x07"]


async def test_an_interrupted_turn_is_not_notified() -> None:
    terminal = Terminal(focused=False)
    with pytest.raises(asyncio.CancelledError), terminal.notifier(turn_seconds=0).turn(WireBus()):
        raise asyncio.CancelledError


async def test_an_approval_asked_for_during_the_turn_is_notified() -> None:
    terminal, bus = Terminal(focused=False), WireBus()
    with terminal.notifier(turn_seconds=3600, method="bell").turn(bus):
        bus.send(request("make test"))
        for _ in range(20):
            await asyncio.sleep(0)
    bus.send(request("after the turn"))
    await asyncio.sleep(0.01)

    assert terminal.written == ["\x07"]


def test_a_hostile_command_cannot_end_the_sequence_or_start_another() -> None:
    written = sequence("osc9", "approval needed, run command: rm -rf /\x07\x1b]52;c;evil\x1b\\\x9d")

    assert written.startswith("\x1b]9;kode-tui: approval needed") and written.endswith("\x07")
    assert written.count("\x1b") == 1 and written.count("\x07") == 1 and "\x9d" not in written


def test_the_notifications_table_is_read_and_a_bad_value_is_one_line(tmp_path: Path) -> None:
    good = tmp_path / "good.toml"
    good.write_text('[notifications]\nwhen = "always"\nturn_seconds = 5\nmethod = "bell"\n')
    assert load_config(good).notifications == NotificationsConfig(
        when="always", turn_seconds=5, method="bell"
    )
    bad = tmp_path / "bad.toml"
    bad.write_text('[notifications]\nwhen = "sometimes"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(bad)
    assert "notifications.when" in str(caught.value) and "\n" not in str(caught.value)


async def test_the_app_notifies_the_end_of_a_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    written: list[str] = []
    original = KodeApp._notifier

    def notifier(app: KodeApp) -> Notifier:
        made = original(app)
        made._write = written.append
        return made

    monkeypatch.setattr(KodeApp, "_notifier", notifier)
    config = Config.model_validate({"notifications": {"when": "always", "turn_seconds": 0}})
    app = make_app(tmp_path, ScriptedProvider([{"text": "Done."}]), config=config)
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot)
        await send(pilot, "hello")
        await wait_for(pilot, lambda: bool(written) and not turn_running(app))

    assert written == ["\x1b]9;kode-tui: turn finished after 0 s\x07"]
