"""The static checks are part of the suite: ruff (lint and format) and mypy --strict."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def run(tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    executable = BIN / tool
    if not executable.exists():
        pytest.skip(f"{tool} is not installed in this environment (pip install -e '.[dev]')")
    return subprocess.run(
        [str(executable), *args], cwd=ROOT, capture_output=True, text=True, timeout=240
    )


def test_ruff_finds_nothing() -> None:
    done = run("ruff", "check", "kode_tui", "tests", "bench", "scripts")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_code_is_formatted() -> None:
    done = run("ruff", "format", "--check", "kode_tui", "tests", "bench", "scripts")
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_strict_is_clean() -> None:
    done = run("mypy")  # [tool.mypy] in pyproject.toml: strict, the kode_tui package
    assert done.returncode == 0, done.stdout + done.stderr


MAX_MODULE_LINES = 700


def test_no_module_is_over_700_lines() -> None:
    """One concern per module: a file that grows past this is doing two things."""
    long = {
        str(path.relative_to(ROOT)): lines
        for path in (ROOT / "kode_tui").rglob("*.py")
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not long
