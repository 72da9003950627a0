"""The footer: the keys of what has focus, composed again only when the keys it shows change."""

from __future__ import annotations

from typing import ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Input
from textual.widgets._footer import FooterKey

from kode_tui.ui.widgets.keys_footer import KeysFooter
from tests.ui_helpers import wait_for


class _Keys(App[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+t", "toggle", "Toggle"),
        Binding("ctrl+y", "hidden", "Hidden", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.toggle_enabled = True
        self.hidden_enabled = True

    def compose(self) -> ComposeResult:
        yield Input(id="first")
        yield Input(id="second")
        yield KeysFooter()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "toggle":
            return True if self.toggle_enabled else None  # None: shown, disabled
        if action == "hidden":
            return self.hidden_enabled
        return True

    def action_toggle(self) -> None:
        pass


def _keys(app: App[None]) -> list[FooterKey]:
    return list(app.screen.query(FooterKey))


async def test_the_footer_is_built_again_only_when_the_keys_it_shows_change() -> None:
    app = _Keys()
    async with app.run_test(size=(80, 10)) as pilot:
        await wait_for(pilot, lambda: any(k.description == "Toggle" for k in _keys(app)))
        shown = _keys(app)
        assert "palette" in [key.description for key in shown]

        # Focus moves and bindings are refreshed, a hidden key is disabled: the same keys show,
        # so the same footer stays (Textual's own rebuilt it each time).
        await pilot.press("tab")
        assert app.focused is not None and app.focused.id == "second"
        app.hidden_enabled = False
        app.refresh_bindings()
        await pilot.pause()
        app.screen.refresh_bindings()
        await pilot.pause()
        assert _keys(app) == shown

        # A key it shows changes: it shows the change.
        app.toggle_enabled = False
        app.refresh_bindings()
        await wait_for(pilot, lambda: _keys(app) != shown)
        toggle = next(key for key in _keys(app) if key.description == "Toggle")
        assert toggle.has_class("-disabled")
