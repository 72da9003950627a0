"""Themes: the shipped `themes/*.toml` and the user's `$KODE_TUI_HOME/themes/*.toml`.

A theme file is the keyword arguments of `textual.theme.Theme` in TOML (`name`, `primary`,
`background`, ..., `[variables]`). Every style in kode-tui uses theme variables, so any theme
works. A file that does not make a usable theme is skipped with a logged warning: a typo in a
user's theme must never stop the app from starting.
"""

from __future__ import annotations

import logging
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from textual.app import App
from textual.theme import BUILTIN_THEMES, Theme
from textual.worker import Worker

from kode_tui.paths import Paths, data_dir

log = logging.getLogger(__name__)

THEMES_DIR_NAME = "themes"


def shipped_themes_dir() -> Path:
    """The themes that come with kode-tui."""
    return data_dir(THEMES_DIR_NAME)


def user_themes_dir() -> Path:
    """Where the user's own themes live: `$KODE_TUI_HOME/themes`."""
    return Paths.current().home / THEMES_DIR_NAME


def load_theme_file(path: Path) -> Theme:
    """Build one theme from a TOML file; `name` defaults to the file name without `.toml`.

    Raises ValueError (with a one-line reason) when the file is not a usable theme.
    """
    try:
        data: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(str(exc)) from None
    data.setdefault("name", path.stem)
    if not isinstance(data["name"], str) or not data["name"].strip():
        raise ValueError("'name' should be a non-empty string")
    try:
        theme = Theme(**data)
        # Colours are parsed only when the theme is applied; parse them now, so a bad colour
        # is reported here instead of failing when the user switches to the theme.
        theme.to_color_system().generate()
    except Exception as exc:  # Theme and ColorSystem raise TypeError, ValueError, ColorParseError
        raise ValueError(str(exc) or type(exc).__name__) from None
    return theme


def load_themes() -> list[Theme]:
    """The shipped themes, then the user's; a user theme replaces a shipped one of its name."""
    themes: dict[str, Theme] = {}
    for directory in (shipped_themes_dir(), user_themes_dir()):
        for theme in _load_dir(directory):
            themes[theme.name] = theme
    return list(themes.values())


def _load_dir(directory: Path) -> Iterable[Theme]:
    try:
        paths = sorted(directory.glob("*.toml"))
    except OSError as exc:
        log.warning("Cannot list themes in %s: %s", directory, exc)
        return
    for path in paths:
        try:
            yield load_theme_file(path)
        except ValueError as exc:
            log.warning("Skipping theme %s: %s", path, exc)


def register_themes(app: App[Any]) -> None:
    """Register every theme of `load_themes()` on `app`, so `app.theme = name` can pick it."""
    for theme in load_themes():
        app.register_theme(theme)


def start_theme(app: App[Any], name: str) -> None:
    """Register the themes on `app` (not running yet) and take theme `name` if it exists,
    before the stylesheet is first read. Set once mounted, the theme's watcher read the whole
    stylesheet again and drew the screen anew after the first frame (~40 ms, and that frame
    in Textual's colours)."""
    register_themes(app)
    if name not in app.available_themes:
        return
    # What `App._watch_theme` does, less its stylesheet refresh: nothing is styled yet.
    app.set_reactive(App.theme, name)
    dark = app.current_theme.dark
    app.set_class(dark, "-dark-mode", update=False)
    app.set_class(not dark, "-light-mode", update=False)
    app.set_class(True, f"-theme-{name}", update=False)
    app._refresh_truecolor_filter(app.ansi_theme)
    app.stylesheet.set_variables(app.get_css_variables())


def theme_names(app: App[Any]) -> list[str]:
    """The themes `app` can switch to: kode-tui's and the user's first, then Textual's; each
    part sorted."""
    names = app.available_themes
    ours = sorted(name for name in names if name not in BUILTIN_THEMES)
    builtin = sorted(name for name in names if name in BUILTIN_THEMES)
    return ours + builtin


def watch_user_themes(app: App[Any], *, debounce_ms: int = 300) -> Worker[None]:
    """Re-register the user's themes whenever a file in `user_themes_dir()` changes.

    Runs as an app worker (cancelled with the app); the current theme is applied again, so
    editing the theme in use shows the result at once. Does nothing when the folder does not
    exist.
    """
    return app.run_worker(
        _watch(app, user_themes_dir(), debounce_ms),
        name="user-theme-watcher",
        group="themes",
        exclusive=True,
        exit_on_error=False,
    )


async def _watch(app: App[Any], directory: Path, debounce_ms: int) -> None:
    if not directory.is_dir():
        return
    # Imported here: watchfiles starts a Rust extension, which the first frame need not wait for.
    from kode_tui import watching

    async for _changes in watching.changes(directory, debounce=debounce_ms, step=50):
        # All themes again: a deleted user theme brings back the shipped one it replaced.
        for theme in load_themes():
            app.register_theme(theme)
        # A file's theme name need not match its file name, so whichever file changed, the
        # current theme is applied again (cheap); the name did not change, hence the mutate.
        app.mutate_reactive(App.theme)


DEFAULT_THEME = "kode-dark"


def configured_theme(config_file: Path | None = None) -> str:
    """The `theme` of config.toml, read with tomllib alone so the first frame has its colours
    before the config is validated; the default when there is none or the file is bad."""
    path = config_file or Paths.current().config_file
    try:
        value = tomllib.loads(path.read_text(encoding="utf-8")).get("theme")
    except (OSError, ValueError):
        return DEFAULT_THEME
    return value if isinstance(value, str) and value else DEFAULT_THEME
