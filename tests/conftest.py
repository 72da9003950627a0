"""Every test runs with its own KODE_TUI_HOME and never sees the real home dir or the network."""

from __future__ import annotations

from pathlib import Path

import pytest

# A real session folder written by Kimi CLI 1.52 (read-only: tests work on copies).
KIMI_FIXTURE = Path(__file__).parent / "fixtures" / "kimi-session"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("KODE_TUI_HOME", str(home))
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    return home
