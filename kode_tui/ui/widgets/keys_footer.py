"""Textual's footer, composed again only when the keys it shows change.

Textual's `Footer` composes nothing until the screen first says its bindings changed, then
recomposes on every such word: at start-up three times (the screen's mount, the prompt's focus,
the agent's keys) before the first request, each a removal and a mount of some ten widgets and
their styles, on the loop the prompt's echo and the first request wait for. What it shows is a
function of the screen's active bindings, so the same keys mean the same footer.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer


class KeysFooter(Footer):
    """A `Footer` that recomposes only when the keys it shows change."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._composed: Hashable = None
        """What the last compose showed (`_shown`), or None before it."""

    def _shown(self) -> Hashable:
        """Everything `Footer.compose` reads: the screen's shown keys and the footer's flags."""
        palette = self.app.COMMAND_PALETTE_BINDING
        keys = tuple(
            (key, binding.action, binding.description, binding.group, enabled, tooltip)
            for key, (_node, binding, enabled, tooltip) in self.screen.active_bindings.items()
            if binding.show or key == palette
        )
        return (keys, self.show_command_palette, self.app.ENABLE_COMMAND_PALETTE)

    def compose(self) -> ComposeResult:
        if self._bindings_ready:
            self._composed = self._shown()
        yield from super().compose()

    def bindings_changed(self, screen: Screen[Any]) -> None:
        self._bindings_ready = True
        if not (screen.app.app_focus and self.is_attached and screen is self.screen):
            return
        shown = self._shown()
        if shown != self._composed:  # the same keys: the footer has them, or will
            self._composed = shown
            self.call_after_refresh(self.recompose)
