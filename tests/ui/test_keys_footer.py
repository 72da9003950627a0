"""The footer: the keys of what has focus, one line of one widget, pressed by a click."""

from __future__ import annotations

from typing import Any, ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Input

from kode_tui.ui.widgets.keys_footer import KeysFooter
from tests.ui_helpers import wait_for

_GROUP = Binding.Group("Move")


class _Keys(App[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+t", "toggle", "Toggle", tooltip="Toggle the thing"),
        Binding("ctrl+y", "hidden", "Hidden", show=False),
        Binding("f5", "up", "Up", group=_GROUP),
        Binding("f6", "down", "Down", group=_GROUP),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.toggle_enabled = True
        self.toggled = 0
        self.moved: list[str] = []
        self.bells = 0

    def compose(self) -> ComposeResult:
        yield Input(id="first")
        yield Input(id="second")
        yield KeysFooter()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "toggle":
            return True if self.toggle_enabled else None  # None: shown, disabled
        return True

    def action_toggle(self) -> None:
        self.toggled += 1

    def action_up(self) -> None:
        self.moved.append("up")

    def action_down(self) -> None:
        self.moved.append("down")

    def bell(self) -> None:
        self.bells += 1


def _footer(app: App[Any]) -> KeysFooter:
    return app.screen.query_one(KeysFooter)


def _line(app: App[Any]) -> str:
    return _footer(app).render().plain


def _x_of(app: App[Any], text: str) -> int:
    """The column where `text` starts on the footer."""
    return _line(app).index(text)


async def test_the_footer_shows_the_keys_as_textuals_does() -> None:
    app = _Keys()
    async with app.run_test(size=(80, 10)) as pilot:
        await wait_for(pilot, lambda: "Toggle" in _line(app))
        line = _line(app)
        # Each key and what it does; a group's keys under its label; the hidden key not; the
        # palette's key at the right edge.
        assert line.startswith(" ^t Toggle  f5 f6 Move ")
        assert "Hidden" not in line
        assert line.endswith("▏^p palette ") and len(line) == 80
        assert [key.description for key in _footer(app).shown] == ["Toggle", "", "", "palette"]
        assert not _footer(app).children  # one widget, not one per key


async def test_new_keys_are_a_repaint_of_the_footer_not_a_layout() -> None:
    """Textual's footer mounted a widget per key at each change of the keys, and the screen
    laid them out three times over. A key that changes here is drawn again, and that is all."""
    app = _Keys()
    async with app.run_test(size=(80, 10)) as pilot:
        await wait_for(pilot, lambda: "Toggle" in _line(app))
        await pilot.pause()
        layouts: list[object] = []
        screen = app.screen
        refresh_layout = screen._refresh_layout

        def counted(*args: Any, **kwargs: Any) -> None:
            layouts.append(args)
            refresh_layout(*args, **kwargs)

        screen._refresh_layout = counted  # type: ignore[method-assign]
        app.toggle_enabled = False
        app.refresh_bindings()
        await wait_for(pilot, lambda: not _footer(app).shown[0].enabled)
        await pilot.pause()
        assert layouts == []
        assert _footer(app).render().spans  # still styled: the disabled key is dimmed
        toggle = _footer(app).render()
        start = toggle.plain.index("^t")
        assert any(
            span.start <= start < span.end and "dim" in str(span.style) for span in toggle.spans
        )


async def test_the_same_keys_are_not_drawn_again() -> None:
    app = _Keys()
    async with app.run_test(size=(80, 10)) as pilot:
        await wait_for(pilot, lambda: "Toggle" in _line(app))
        await pilot.pause()
        footer = _footer(app)
        drawn: list[object] = []
        refresh = footer.refresh

        def counted(*args: Any, **kwargs: Any) -> Any:
            drawn.append(args)
            return refresh(*args, **kwargs)

        footer.refresh = counted  # type: ignore[method-assign]
        await pilot.press("tab")  # focus moves: the same keys
        assert app.focused is not None and app.focused.id == "second"
        app.refresh_bindings()
        await pilot.pause()
        assert drawn == []


async def test_a_click_on_a_key_presses_it_and_a_disabled_one_rings() -> None:
    app = _Keys()
    async with app.run_test(size=(80, 10)) as pilot:
        await wait_for(pilot, lambda: "Toggle" in _line(app))
        footer = _footer(app)
        await pilot.click(footer, offset=(_x_of(app, "Toggle"), 0))
        await wait_for(pilot, lambda: app.toggled == 1)
        await pilot.click(footer, offset=(_x_of(app, "f6"), 0))
        await pilot.click(footer, offset=(_x_of(app, "f5"), 0))
        await wait_for(pilot, lambda: app.moved == ["down", "up"])
        await pilot.click(footer, offset=(_x_of(app, "Move"), 0))  # the group's label: nothing
        await pilot.click(footer, offset=(40, 0))  # between the keys and the palette's
        await pilot.pause()
        assert app.moved == ["down", "up"] and app.toggled == 1 and app.bells == 0

        app.toggle_enabled = False
        app.refresh_bindings()
        await wait_for(pilot, lambda: not footer.shown[0].enabled)
        await pilot.click(footer, offset=(_x_of(app, "Toggle"), 0))
        await wait_for(pilot, lambda: app.bells == 1)
        assert app.toggled == 1


async def test_the_key_under_the_mouse_is_highlighted_with_its_tooltip() -> None:
    app = _Keys()
    async with app.run_test(size=(80, 10)) as pilot:
        await wait_for(pilot, lambda: "Toggle" in _line(app))
        footer = _footer(app)
        plain = footer.render()
        await pilot.hover(footer, offset=(_x_of(app, "Toggle"), 0))
        await wait_for(pilot, lambda: footer.tooltip == "Toggle the thing")
        hovered = footer.render()
        at = hovered.plain.index("Toggle")
        assert hovered.get_style_at_offset(app.console, at) != plain.get_style_at_offset(
            app.console, at
        )
        # The palette's key is the other end's.
        await pilot.hover(footer, offset=(_x_of(app, "palette"), 0))
        await wait_for(pilot, lambda: footer.tooltip != "Toggle the thing")
        assert footer.render().get_style_at_offset(app.console, at) == plain.get_style_at_offset(
            app.console, at
        )
