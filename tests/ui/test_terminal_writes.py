"""Screen updates written as Textual writes them, less what the terminal shows already
(kode_tui/ui/terminal_writes.py): a VT100 emulator (pyte) fed both must show the same."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pyte
import pytest
from rich.color import ColorSystem
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from textual._compositor import ChopsUpdate, CompositorUpdate, LayoutUpdate
from textual._context import active_app
from textual.app import App
from textual.geometry import Region
from textual.strip import Strip

from kode_tui.ui import terminal_writes
from kode_tui.ui.terminal_writes import ScreenCopy, _SteadyTimer, lean_update

WIDTH, HEIGHT = 30, 4
BLUE = Style(color="blue", bgcolor="black")
BOLD = Style(bold=True, color="red")
LINK = Style(link="https://example.com", color="green")


def _console() -> Console:
    console = Console(width=WIDTH, height=HEIGHT, color_system="256", force_terminal=True)
    assert console._color_system == ColorSystem.EIGHT_BIT
    return console


def _line(*parts: tuple[str, Style | None]) -> Strip:
    return Strip([Segment(text, style) for text, style in parts])


def _rows(texts: list[tuple[str, str]]) -> list[list[Strip]]:
    """Per row: a 20-cell text chop in BLUE and BOLD words, then a 10-cell side chop."""
    rows = []
    for main, side in texts:
        parts = [(word + " ", BLUE if i % 2 else BOLD) for i, word in enumerate(main.split())]
        text = _line(*parts, (" " * 20, BLUE)).crop(0, 20)
        rows.append([text, _line((side, LINK), (" " * 8, None))])
    return rows


def _chops(rows: list[list[Strip]], dirty: list[int]) -> ChopsUpdate:
    chops = [{0: row[0], 20: row[1]} for row in rows]
    return ChopsUpdate(chops, [(y, 0, WIDTH) for y in dirty], [[20, WIDTH] for _ in rows])


def _write(update: ChopsUpdate | LayoutUpdate, copy: ScreenCopy, console: Console) -> str:
    lean = lean_update(update, copy)
    assert isinstance(lean, CompositorUpdate)
    return lean.render_segments(console)


def _screen(*outputs: str) -> pyte.Screen:
    screen = pyte.Screen(WIDTH, HEIGHT)
    stream = pyte.Stream(screen)
    for output in outputs:
        stream.feed(output)
    return screen


def _cells(screen: pyte.Screen) -> list[list[tuple[str, str, str, bool]]]:
    return [
        [(c.data, c.fg, c.bg, c.bold) for c in (screen.buffer[y][x] for x in range(WIDTH))]
        for y in range(HEIGHT)
    ]


def test_the_terminal_shows_what_textual_would_have_written() -> None:
    console, copy = _console(), ScreenCopy()
    first = _rows([("a b c", "x1"), ("d e f", "x2"), ("g h", "x3"), ("", "x4")])
    # Scrolled by a row, one side chop changed, one row changed only in its text chop.
    second = _rows([("d e f", "x2"), ("g h", "y3"), ("i j k l", "x4"), ("", "x4")])
    full = LayoutUpdate(first, Region(0, 0, WIDTH, HEIGHT))
    textual = [full.render_segments(console)]
    ours = [_write(full, copy, console)]
    for rows, dirty in ((second, [0, 1, 2, 3]), (first, [1, 2]), (first, [0, 1, 2, 3])):
        update = _chops(rows, dirty)
        textual.append(update.render_segments(console))
        ours.append(_write(update, copy, console))
    for n in range(1, len(ours) + 1):
        assert _cells(_screen(*ours[:n])) == _cells(_screen(*textual[:n]))
    assert sum(map(len, ours)) < sum(map(len, textual))


def test_a_repaint_that_changes_nothing_writes_nothing() -> None:
    console, copy = _console(), ScreenCopy()
    rows = _rows([("a b c", "x1"), ("d e f", "x2"), ("g h", "x3"), ("", "x4")])
    _write(LayoutUpdate(rows, Region(0, 0, WIDTH, HEIGHT)), copy, console)
    assert _write(_chops(rows, [0, 1, 2, 3]), copy, console) == ""
    changed = _rows([("a b c", "x1"), ("d e F", "x2"), ("g h", "x3"), ("", "x4")])
    written = _write(_chops(changed, [0, 1, 2, 3]), copy, console)
    assert "F" in written and "a" not in written and "x" not in written
    # Once the terminal may show something else, everything is written again.
    copy.clear()
    assert "a" in _write(_chops(changed, [0]), copy, console)


async def test_a_screen_update_after_a_long_one_comes_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Textual's update timer, after an update longer than its interval, waits for the slot
    after the next: a key's echo waited up to two frames behind a streamed answer's layout."""
    clock, sleeps, ticks, durations = [100.0], list[float](), list[float](), [0.25, 0.02, 0.0]

    async def sleep(seconds: float) -> None:
        sleeps.append(round(seconds, 6))
        clock[0] += seconds

    monkeypatch.setattr(terminal_writes._time, "get_time", lambda: clock[0])
    monkeypatch.setattr(terminal_writes._time, "sleep", sleep)
    app = App[None]()
    active_app.set(app)

    def update() -> None:  # as Screen._on_timer_update: pauses, then takes its time
        timer.pause()
        ticks.append(clock[0])
        clock[0] += durations.pop(0)

    async def resumed(count: int) -> None:
        timer.resume()  # as Screen._on_idle does when something is dirty
        while len(ticks) < count:
            await asyncio.sleep(0)

    timer = _SteadyTimer(app, 0.1, callback=update, pause=True)
    timer._start()
    try:
        await resumed(1)
        await resumed(2)  # the first update took 0.25 s: the next one comes at once
        assert ticks == [100.0, 100.25] and sleeps == []
        await resumed(3)  # the second took 0.02 s: the third comes an interval after it began
        assert ticks[2] == pytest.approx(100.35) and sleeps == [pytest.approx(0.08)]
    finally:
        timer.stop()


async def test_ctrl_l_writes_the_whole_screen_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """After a terminal cleared behind the app's back, Ctrl+L on the main screen writes every
    cell again: the copy of what the terminal shows is forgotten, and a full update follows."""
    from tests.ui_helpers import make_app, ready

    written: list[str] = []
    real = terminal_writes.lean_update

    def recording(update: object, copy: ScreenCopy) -> object:
        written.append(type(update).__name__)
        return real(update, copy)  # type: ignore[arg-type]

    monkeypatch.setattr(terminal_writes, "lean_update", recording)
    app = make_app(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        copy = app._screen_copy
        assert copy is not None
        copy._rows[0] = {0: (5, "stale")}  # what a cleared terminal no longer shows
        written.clear()
        await pilot.press("ctrl+l")
        await pilot.pause()
        assert copy._rows.get(0) != {0: (5, "stale")}
        assert "LayoutUpdate" in written


async def test_a_scroll_bar_moved_by_a_layout_is_painted_in_that_update() -> None:
    """A scroll container whose content grows (a streamed answer, every frame) is laid out,
    which moves its scroll bar's thumb: the bar is painted in the same screen update as the
    content, not in an update of its own after it (a fifth of the updates while streaming)."""
    from textual.containers import VerticalScroll
    from textual.screen import Screen
    from textual.widgets import Static

    updates: list[CompositorUpdate] = []

    class Growing(terminal_writes.SteadyUpdates, Screen[None]):
        def compose(self):  # type: ignore[no-untyped-def]
            with VerticalScroll():
                yield Static("\n".join(f"line {n}" for n in range(6)), id="text")

    class Writes(terminal_writes.TerminalWrites):
        def on_mount(self) -> None:
            self.push_screen(Growing())

        def _display(self, screen: Screen[None], renderable: object) -> None:
            if isinstance(renderable, CompositorUpdate):
                updates.append(renderable)
            super()._display(screen, renderable)  # type: ignore[arg-type]

    app = Writes()
    async with app.run_test(size=(WIDTH, HEIGHT)) as pilot:
        await pilot.pause()
        scroll = app.screen.query_one(VerticalScroll)
        text = app.screen.query_one("#text", Static)
        for lines in (12, 40):
            before = len(updates)
            text.update("\n".join(f"line {n}" for n in range(lines)))
            scroll.scroll_end(animate=False, immediate=True)
            for _ in range(3):
                await pilot.pause()
            assert len(updates) == before + 1, [type(u).__name__ for u in updates[before:]]
            # What was written shows what a full repaint shows, scroll bar included.
            console = _console()
            shown = _screen(*(update.render_segments(console) for update in updates))
            whole = app.screen._compositor.render_update(full=True)
            assert _cells(shown) == _cells(_screen(whole.render_segments(console)))
