"""The report Textual prints when the app crashes quotes exception messages and the values of
local variables: no escape sequence and no API key in it reaches the terminal."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from kode_tui import masking
from kode_tui.soul.llm.scripted import ScriptedProvider
from tests.ui_helpers import make_app, ready

KEY = "sk-crash-0123456789abcdef"


async def test_a_crash_report_shows_escapes_visibly_and_masks_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    masking.refresh()
    app = make_app(tmp_path, ScriptedProvider([]))
    report = io.StringIO()
    app.error_console = Console(file=report, force_terminal=True, width=120)

    def crash() -> None:
        api_key = KEY  # a local: the report shows its value
        raise ValueError(f"model said \x1b]0;pwned\x07\x1b[8mhidden {api_key}")

    with pytest.raises(ValueError):
        async with app.run_test() as pilot:
            await ready(pilot)
            app.call_later(crash)
            await pilot.pause()

    shown = report.getvalue()
    assert "ValueError" in shown and "hidden" in shown
    assert KEY not in shown and "[masked: OPENAI_API_KEY]" in shown
    assert "\x1b]0;" not in shown and "\x1b[8m" not in shown
    assert "␛" in shown  # shown visibly (Rich's highlighting styles what follows it)
