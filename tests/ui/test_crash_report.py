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


def test_an_unexpected_error_in_print_mode_is_one_visible_masked_line(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import logging

    from kode_tui import print_mode
    from kode_tui.cli import main
    from kode_tui.paths import Paths

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    masking.refresh()

    async def crash(*args: object, **kwargs: object) -> int:
        raise RuntimeError(f"model said \x1b]0;pwned\x07\x1b[8mhidden {KEY}")

    monkeypatch.setattr(print_mode, "run_print", crash)
    work = tmp_path / "work"
    work.mkdir()
    logger = logging.getLogger("kode_tui")
    before = list(logger.handlers)
    try:
        status = main([str(work), "-p", "hi", "--print"])
    finally:
        for handler in logger.handlers[len(before) :]:
            handler.close()
            logger.removeHandler(handler)

    err = capsys.readouterr().err
    assert status == 1
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "RuntimeError: model said ␛]0;pwned␇␛[8mhidden [masked: OPENAI_API_KEY]" in err
    log = Paths.current().log_file.read_text()
    assert "Traceback" in log and KEY not in log
