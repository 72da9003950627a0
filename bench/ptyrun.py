"""Run a program in a pseudo-terminal and time how long it takes to draw a given text."""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import select
import signal
import struct
import termios
import time


def time_to_text(
    argv: list[str],
    marker: bytes,
    env: dict[str, str],
    *,
    rows: int = 36,
    cols: int = 120,
    timeout: float = 60.0,
    cwd: str | None = None,
) -> float:
    """Seconds from starting `argv` in a rows x cols terminal until `marker` is written."""
    start = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:  # the child: size its terminal, then become the program
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        if cwd:
            os.chdir(cwd)
        os.execvpe(argv[0], argv, env)
    seen = b""
    try:
        while True:
            left = timeout - (time.perf_counter() - start)
            if left <= 0:
                raise TimeoutError(f"{argv[0]} did not draw {marker!r} in {timeout} s")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                raise RuntimeError(f"{argv[0]} exited before drawing {marker!r}") from None
            if not chunk:
                raise RuntimeError(f"{argv[0]} exited before drawing {marker!r}")
            seen = (seen + chunk)[-200_000:]
            if marker in seen:
                return time.perf_counter() - start
    finally:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        os.close(fd)
