"""`kode-tui ARGS` run in the test's process: what the command runs (`cli.main`), without the
Python start per call that made the print-mode and transcript tests slow. tests/test_cli.py
runs the command itself (its exit, its flushing into a pipe)."""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Callable

import pytest

from kode_tui.cli import main

Kode = Callable[..., "subprocess.CompletedProcess[str]"]


def in_process(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Kode:
    """`kode(*args, stdin="")`: `kode-tui ARGS` with `stdin` piped in; its status, stdout and
    stderr (a test's `kode` fixture returns it). It runs its own event loop: an async test
    calls it with `asyncio.to_thread`."""

    def run(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        capsys.readouterr()
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        try:
            status = main(list(args))
        except SystemExit as exit_:  # argparse's --help, --version and usage errors
            status = exit_.code if isinstance(exit_.code, int) else 2
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(args, status, out, err)

    return run
