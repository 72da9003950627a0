"""The palette's Screenshot saves an SVG in kode-tui's home and says where."""

from __future__ import annotations

import stat
from pathlib import Path

from textual.command import CommandPalette

from kode_tui.paths import Paths, tilde
from kode_tui.soul.llm.demo import DemoProvider
from tests.ui_helpers import make_app, ready, wait_for


async def test_the_palettes_screenshot_lands_in_the_home_and_the_notice_says_where(
    tmp_path: Path,
) -> None:
    app = make_app(tmp_path, DemoProvider(delay=0))
    notes: list[str] = []
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        app.notify = lambda message, **kwargs: notes.append(str(message))  # type: ignore[method-assign]
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette))
        await pilot.press(*"screenshot")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(pilot, lambda: bool(notes))

    [saved] = list(Paths.current().screenshots_dir.glob("kode-tui-*.svg"))
    assert notes == [f"Screenshot saved to {tilde(saved)}"]
    assert saved.read_text().lstrip().startswith("<svg")
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    assert not list(tmp_path.glob("*.svg"))  # nothing dropped in the work dir


async def test_a_screenshot_that_cannot_be_saved_says_why(tmp_path: Path) -> None:
    Paths.current().home.mkdir(parents=True, exist_ok=True)
    Paths.current().screenshots_dir.write_text("a file where the folder should be")
    app = make_app(tmp_path, DemoProvider(delay=0))
    notes: list[str] = []
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        app.notify = lambda message, **kwargs: notes.append(str(message))  # type: ignore[method-assign]
        app.action_screenshot()

    assert len(notes) == 1 and notes[0].startswith("Could not save the screenshot in ")
