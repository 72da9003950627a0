"""Code run in a new interpreter, as the model process runs: for what a process imports and
sets up at its start, which the test process (with everything imported already) cannot show."""

from __future__ import annotations

import subprocess
import sys

from kode_tui import model_launch


def printed(code: str, env: dict[str, str] | None = None) -> list[str]:
    """The words `code` prints, run with `-P` in the model process's environment (`env` if
    given); the test fails with its error output when it does not exit 0."""
    done = subprocess.run(
        [sys.executable, "-P", "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env=model_launch._child_environment() if env is None else env,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()
