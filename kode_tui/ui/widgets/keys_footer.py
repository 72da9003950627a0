"""The main screen's footer: the keys of what has focus, drawn as one line of one widget.

Textual's `Footer` is a scrolling container of a widget per key (~10 on the main screen). It
composes them again at every change of the screen's bindings (three before the first request:
the screen's mount, the prompt's focus, the agent's keys), and each new set is laid out three
times over: the mount, the footer's new size, then each key's. That was ~35 ms of the loop
after the first frame, while the first message typed waited for it. Here the keys are text:
new keys are one repaint of one line, and no layout.

It looks and acts as Textual's footer does: each key and what it does, a binding group's keys
under the group's label, a disabled key dimmed, the command palette's key at the right edge;
a key is highlighted under the mouse and pressed by a click (a disabled one rings the bell),
and shows its tooltip. Keys that do not fit are cut at the right, before the palette's.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import groupby
from typing import Any, ClassVar, NamedTuple

from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.screen import Screen
from textual.widget import Widget


class FooterItem(NamedTuple):
    """One key the footer shows."""

    key: str
    """The key, as bindings name it (`ctrl+q`): a click presses it."""
    key_display: str
    """The key, as the footer shows it (`^q`)."""
    description: str
    """What it does (empty for a key in a group: the group's label says it)."""
    enabled: bool
    tooltip: str
    group: str | None = None
    """The label of the binding group it is shown under, if any."""


_DIM = Style(dim=True)

_SEPARATOR = "▏"
"""Left of the palette's key, as Textual's footer draws its border there."""


class KeysFooter(Widget):
    """The keys of the focused widget, its ancestors and the app, on one line."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "keys-footer--key",
        "keys-footer--description",
        "keys-footer--hover-key",
        "keys-footer--hover-description",
        "keys-footer--separator",
    }
    DEFAULT_CSS = """
    KeysFooter {
        dock: bottom;
        height: 1;
        color: $footer-foreground;
        background: $footer-background;
        text-wrap: nowrap;
        .keys-footer--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        .keys-footer--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        .keys-footer--hover-key {
            color: $footer-key-foreground;
            background: $block-hover-background;
            text-style: bold;
        }
        .keys-footer--hover-description {
            color: $footer-description-foreground;
            background: $block-hover-background;
        }
        .keys-footer--separator {
            color: $foreground 20%;
        }
    }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._items: tuple[FooterItem, ...] = ()
        self._palette: FooterItem | None = None
        self._spans: list[tuple[int, int, FooterItem]] = []
        """Where each key was drawn last: its first and past-last cells, and the key."""
        self._hovered: FooterItem | None = None

    @property
    def shown(self) -> list[FooterItem]:
        """The keys on the footer, left to right, the palette's last."""
        return [*self._items, *([self._palette] if self._palette else [])]

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen[Any]) -> None:
        """The screen's keys may have changed: a repaint if the shown ones did. Nothing is
        shown before the first word (the screen's focus is not settled before), as Textual's
        footer does, and nothing changes while the app has no focus."""
        if not (screen.app.app_focus and self.is_attached and screen is self.screen):
            return
        items, palette = self._collect()
        if (items, palette) != (self._items, self._palette):
            self._items, self._palette = items, palette
            self._hovered = None
            self.refresh()

    def _collect(self) -> tuple[tuple[FooterItem, ...], FooterItem | None]:
        """The keys Textual's footer would show now: one per action, in binding order."""
        app = self.app
        active = self.screen.active_bindings
        by_action: dict[str, list[tuple[Binding, bool, str]]] = {}
        for _node, binding, enabled, tooltip in active.values():
            if binding.show:
                by_action.setdefault(binding.action, []).append((binding, enabled, tooltip))
        items: list[FooterItem] = []
        firsts = [bindings[0] for bindings in by_action.values()]
        for group, members in groupby(firsts, lambda first: first[0].group):
            grouped = list(members)
            label = group.description if group is not None and len(grouped) > 1 else None
            for binding, enabled, tooltip in grouped:
                items.append(
                    FooterItem(
                        binding.key,
                        app.get_key_display(binding),
                        "" if label is not None else binding.description,
                        enabled,
                        tooltip or (binding.description if label is not None else ""),
                        label,
                    )
                )
        palette = None
        if app.ENABLE_COMMAND_PALETTE and app.COMMAND_PALETTE_BINDING in active:
            _node, binding, enabled, _tooltip = active[app.COMMAND_PALETTE_BINDING]
            palette = FooterItem(
                binding.key,
                app.get_key_display(binding),
                binding.description,
                enabled,
                binding.tooltip or binding.description,
            )
        return tuple(items), palette

    def render(self) -> Text:
        width = self.size.width
        line = Text(no_wrap=True, overflow="crop", end="")
        spans: list[tuple[int, int, FooterItem]] = []
        for text, item in self._pieces():
            if item is not None:
                spans.append((line.cell_len, line.cell_len + text.cell_len, item))
            line.append_text(text)
        if self._palette is not None:
            palette = self._palette_text(self._palette)
            left = max(0, width - palette.cell_len)
            if line.cell_len > left:  # keys that do not fit are cut, the palette's is not
                line.truncate(left)
                spans = [(a, min(b, left), item) for a, b, item in spans if a < left]
            line.pad_right(left - line.cell_len)
            start = left + len(_SEPARATOR)
            spans.append((start, start + palette.cell_len - len(_SEPARATOR), self._palette))
            line.append_text(palette)
        self._spans = spans
        return line

    def _pieces(self) -> Iterator[tuple[Text, FooterItem | None]]:
        """The keys left to right: each one's text, and the key (None for a group's label and
        the spaces around its keys)."""
        for label, members in groupby(self._items, lambda item: item.group):
            if label is None:
                for item in members:
                    yield (
                        self._key_text(item, f" {item.key_display} ", f"{item.description} "),
                        item,
                    )
                continue
            # A group: its keys, a space either side of each, then its label.
            yield Text(" ", end=""), None
            for item in members:
                yield self._key_text(item, item.key_display, ""), item
                yield Text(" ", end=""), None
            yield Text(f"{label} ", style=self._style("keys-footer--description"), end=""), None

    def _palette_text(self, item: FooterItem) -> Text:
        separator = Text(_SEPARATOR, style=self._style("keys-footer--separator"), end="")
        return separator + self._key_text(item, item.key_display, f" {item.description} ")

    def _key_text(self, item: FooterItem, key: str, description: str) -> Text:
        """One key as Textual's `FooterKey` draws it: bold in the key's colour, then what it
        does; on the hover background under the mouse; dimmed when disabled."""
        hover = "hover-" if item == self._hovered else ""
        text = Text.assemble(
            (key, self._style(f"keys-footer--{hover}key")),
            (description, self._style(f"keys-footer--{hover}description")),
            end="",
        )
        if not item.enabled:
            text.stylize(_DIM)
        return text

    def _style(self, component: str) -> Style:
        return self.get_component_rich_style(component)

    def _at(self, x: int) -> FooterItem | None:
        return next((item for start, end, item in self._spans if start <= x < end), None)

    def on_mouse_move(self, event: events.MouseMove) -> None:
        item = self._at(event.x)
        if item != self._hovered:
            self._hovered = item
            self.tooltip = item.tooltip if item is not None and item.tooltip else None
            self.refresh()

    def on_leave(self, _event: events.Leave) -> None:
        if self._hovered is not None:
            self._hovered = None
            self.tooltip = None
            self.refresh()

    def on_mouse_down(self, event: events.MouseDown) -> None:
        item = self._at(event.x)
        if item is None:
            return
        if item.enabled:
            self.app.simulate_key(item.key)
        else:
            self.app.bell()
