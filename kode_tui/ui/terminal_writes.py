"""What the app writes to the terminal: only the cells that changed, in few bytes.

Textual's compositor repaints a widget's whole region whenever the widget is refreshed, and
writes each segment as `ESC[<style>m text ESC[0m` after a cursor move per fragment of a line.
While an answer streams, the conversation pane is refreshed once for the new text and again
by the layout pass that follows (the same cells), and most lines keep the style of the line
before: most of what was written changed nothing on screen (issue 31: ~160 kB/s at 300 tok/s).

`TerminalWrites`, mixed into the app, rewrites each screen update before it is written:

- `ScreenCopy` remembers what each fragment of a line (a compositor "chop": the part of a
  row one widget draws) last put on the terminal; a fragment that would write the same again
  is left out, so a repaint that changes nothing writes nothing;
- a style is written only where it changes (`ESC[0;<style>m`, no reset after every segment);
- the cursor is moved only where the next fragment does not start where the last one ended.

A full update (first frame, resize, a screen that covers all) is written whole and starts the
copy afresh; so does whatever Textual writes that is not a compositor update, and a suspend
(an editor or a shell ran in the terminal).

Keys first: from a key's arrival until the screen update after the focused widget handled it,
`keys_waiting` is true, and a streamed answer holds its next frame (`Conversation`), so the
prompt's echo is not written behind a repaint of the conversation. And the screen on which
keys are typed (`SteadyUpdates`) updates within a frame (1/60 s) of its last update: Textual's
update timer, after an update that took longer than a frame (a streamed answer's layout can),
skips the next slot too and waits up to two frames, with the echo already handled.

What this relies on in Textual 8.2 (not a public API): `App._display(screen, renderable)` is
where every screen update is written, after `renderable.render_segments(console)`;
`ChopsUpdate` carries `chops` (per row, {x: Strip | None}), `spans` ((y, x1, x2) to draw) and
`chop_ends` (per row, the end of each chop), `LayoutUpdate` carries `strips` (per row, the
chops from the left) and `region`; `App._suspend_signal` runs before the terminal is handed
over. For keys first: `App.on_event` forwards a key to the focused widget's queue, and a
widget's `call_after_refresh` runs after the screen update that follows what is in that queue;
`Screen._update_timer` (a property) is the paused timer `Screen._on_idle` resumes when
something is dirty, and `Timer` ticks through `_tick` once `_active` is set. For a layout's
late repaints: `Screen._compositor_refresh` renders an update, a widget's `refresh()` sets its
`_repaint_required` (turned into an `Update` message only when it is next idle), and
`Compositor.update_widgets` adds a widget's dirty regions to the next render.
"""

from __future__ import annotations

import math
import time
from typing import Any

from rich.color import ColorSystem
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from textual import _time, events
from textual._compositor import ChopsUpdate, CompositorUpdate, LayoutUpdate
from textual.app import App
from textual.screen import UPDATE_PERIOD, Screen
from textual.strip import Strip
from textual.timer import EventTargetGone, Timer

__all__ = ["ScreenCopy", "SteadyUpdates", "TerminalWrites", "keys_waiting", "lean_update"]

_RESET = "\x1b[0m"
KEY_HOLD_S = 0.1
"""The longest a key holds the conversation's frames (should its echo never be painted)."""


class ScreenCopy:
    """What the terminal shows: per row, the fragments last written, by column."""

    def __init__(self) -> None:
        self._rows: dict[int, dict[int, tuple[int, str]]] = {}

    def clear(self) -> None:
        """Forget everything (the terminal shows something else now)."""
        self._rows.clear()

    def shows(self, y: int, x: int, end: int, text: str) -> bool:
        """Whether columns x..end of row y show exactly `text` (as `fragment` wrote it)."""
        return self._rows.get(y, {}).get(x) == (end, text)

    def wrote(self, y: int, x: int, end: int, text: str) -> None:
        """Note that `text` was written at x..end of row y: what it overlaps is gone."""
        row = self._rows.setdefault(y, {})
        for start in [s for s, (e, _) in row.items() if s < end and e > x]:
            del row[start]
        row[x] = (end, text)


def fragment(strip: Strip, color_system: ColorSystem) -> str:
    """The strip as terminal text that stands alone: its first style is written in full
    (`ESC[0;...m` resets what came before), a later one only where it changes."""
    parts: list[str] = []
    current: str | None = None  # the SGR parameters in force; None: not known yet
    render_ansi = Strip.render_ansi
    for text, style, _ in strip:
        if not text:
            continue
        if style is not None and style.link:
            # A hyperlink: as Textual writes it (it ends reset).
            if current != "":
                parts.append(_RESET)
            parts.append(Strip.render_style(style, text, color_system))
            current = ""
            continue
        ansi = "" if style is None else render_ansi(style, color_system)
        if ansi != current:
            parts.append(f"\x1b[0;{ansi}m" if ansi else _RESET)
            current = ansi
        parts.append(text)
    return "".join(parts)


def _move(x: int, y: int) -> str:
    return f"\x1b[{y + 1};{x + 1}H"


class _Writer:
    """Builds one update's terminal text, leaving out what the terminal shows already."""

    def __init__(self, copy: ScreenCopy, color_system: ColorSystem) -> None:
        self.copy, self.color_system = copy, color_system
        self.parts: list[str] = []
        self.cursor: tuple[int, int] | None = None

    def put(self, y: int, x: int, strip: Strip) -> None:
        text = fragment(strip, self.color_system)
        end = x + strip.cell_length
        if self.copy.shows(y, x, end, text):
            return
        if self.cursor != (x, y):
            self.parts.append(_move(x, y))
        self.parts.append(text)
        self.cursor = (end, y)
        self.copy.wrote(y, x, end, text)

    def text(self) -> str:
        return "".join(self.parts) + _RESET if self.parts else ""


class _LeanUpdate(CompositorUpdate):
    """A compositor update written by `_Writer` (Textual calls `render_segments`)."""

    def __init__(self, update: ChopsUpdate | LayoutUpdate, copy: ScreenCopy) -> None:
        self.update, self.copy = update, copy

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        return self.update.__rich_console__(console, options)

    def render_segments(self, console: Console) -> str:
        color_system = console._color_system or ColorSystem.TRUECOLOR
        update = self.update
        if isinstance(update, LayoutUpdate):
            self.copy.clear()
            writer = _Writer(self.copy, color_system)
            for y, line in enumerate(update.strips, update.region.y):
                x = update.region.x
                for strip in line:
                    writer.put(y, x, strip)
                    x += strip.cell_length
            return writer.text()
        writer = _Writer(self.copy, color_system)
        for y, x1, x2 in update.spans:
            for end, (x, chop) in zip(update.chop_ends[y], update.chops[y].items(), strict=False):
                if chop is None or x > x2 or end <= x1:
                    continue
                if x2 > x >= x1 and end <= x2:
                    writer.put(y, x, chop)
                else:  # part of the chop is in the span: Textual writes it from its start
                    writer.put(y, x, chop.crop(0, min(end, x2) - x))
        return writer.text()


def lean_update(renderable: RenderableType | None, copy: ScreenCopy) -> RenderableType | None:
    """The renderable `App._display` is given, as it should be written (see the module)."""
    if isinstance(renderable, ChopsUpdate | LayoutUpdate):
        return _LeanUpdate(renderable, copy)
    if renderable is not None:
        copy.clear()  # written some other way: what the terminal shows is not known
    return renderable


class TerminalWrites(App[None]):
    """Mixed into the app: screen updates write only what changed, keys first (see the
    module)."""

    _screen_copy: ScreenCopy | None = None
    _keys = _keys_shown = 0
    _key_at = 0.0

    @property
    def keys_waiting(self) -> bool:
        """A key arrived whose handling is not on screen yet."""
        return self._keys_shown < self._keys and time.monotonic() - self._key_at < KEY_HOLD_S

    async def on_event(self, event: events.Event) -> None:
        if not isinstance(event, events.Key) or event.is_forwarded:
            await super().on_event(event)
            return
        self._keys += 1
        self._key_at = time.monotonic()
        target = self.focused or self.screen
        await super().on_event(event)
        # Queued behind the key on the widget that handles it: runs after the screen update
        # that shows what the key did.
        target.call_after_refresh(self._key_shown, self._keys)

    def _key_shown(self, key: int) -> None:
        self._keys_shown = max(self._keys_shown, key)

    def _display(self, screen: Screen[Any], renderable: RenderableType | None) -> None:
        if self._screen_copy is None:
            self._screen_copy = ScreenCopy()
        if self.is_inline:
            self._screen_copy.clear()
        else:
            renderable = lean_update(renderable, self._screen_copy)
        super()._display(screen, renderable)

    def redraw(self) -> None:
        """Write the whole screen again: a terminal cleared behind the app's back (Cmd+K, a
        `clear` in a shell sharing the tty) shows the unchanged cells again (Ctrl+L)."""
        if self._screen_copy is not None:
            self._screen_copy.clear()
        self.screen.refresh(layout=True)

    def _suspend_signal(self) -> None:
        # The terminal is handed to another program: nothing on it can be trusted after.
        if self._screen_copy is not None:
            self._screen_copy.clear()
        super()._suspend_signal()


def keys_waiting(app: App[object]) -> bool:
    """Whether `app` has a key to show before anything else is drawn (see the module)."""
    return isinstance(app, TerminalWrites) and app.keys_waiting


class _SteadyTimer(Timer):
    """Ticks as soon as it is resumed, unless it ticked less than an interval ago: then one
    interval after that tick."""

    async def _run(self) -> None:
        last = -math.inf
        while True:
            await self._active.wait()
            wait = last + self._interval - _time.get_time()
            if wait > 0:
                await _time.sleep(wait)
                await self._active.wait()
            last = _time.get_time()
            try:
                await self._tick(next_timer=last, count=0)
            except EventTargetGone:
                break


class SteadyUpdates(Screen[Any]):
    """Mixed into a screen: its updates come at most a frame after the last one (see the
    module)."""

    _steady_timer: Timer | None = None

    @property
    def _update_timer(self) -> Timer:
        if self._steady_timer is None:
            timer = _SteadyTimer(
                self,
                UPDATE_PERIOD,
                name="screen_update",
                callback=self._on_timer_update,
                pause=True,
            )
            timer._start()
            self._timers.add(timer)
            self._steady_timer = timer
        return self._steady_timer

    def _compositor_refresh(self) -> None:
        # A widget the layout pass asked to repaint as it ran (a scroll container's scroll
        # bar, when what it holds grew: every frame of a streamed answer) is painted in this
        # update, not in one of its own a frame later (~2 ms each, a fifth of the updates).
        if self is self.app.screen and not self.app.is_inline:
            compositor = self._compositor
            late = {w for w in compositor.visible_widgets if w._repaint_required and w.display}
            if late:
                for widget in late:
                    widget._repaint_required = False
                compositor.update_widgets(late)
        super()._compositor_refresh()
