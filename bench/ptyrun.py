"""Run a program in a pseudo-terminal: time how long it takes to draw a text, type into it.

`PtyProcess` starts a program in a rows x cols terminal of its own; a thread drains what it
draws (so it never blocks on a full terminal) and notes when each chunk arrived, so
`wait_for(text)` returns the moment the text was written, not when it was looked for. Like a
real terminal it answers cursor-position requests.

`wait_shown(test)` judges the screen a terminal would show rather than the byte stream: the output
is fed, chunk by chunk, to a VT100 emulator (pyte), and the arrival time of the first chunk after
which `test(screen text)` holds is returned. A renderer that moves the cursor and writes only the
changed cell (prompt_toolkit echoes a key as `ESC[3C` + `x`) never writes the typed text as one
run of bytes: `wait_for` would see it only at the next full redraw, a terminal at once.
"""

from __future__ import annotations

import bisect
import contextlib
import fcntl
import os
import pty
import signal
import struct
import termios
import threading
import time
from collections.abc import Callable

import pyte

CPR_REQUEST = b"\x1b[6n"
CPR_REPLY = b"\x1b[1;1R"


class PtyProcess:
    """`argv` running in a rows x cols pseudo-terminal with exactly `env`; `start` is the
    `time.perf_counter()` just before it was forked."""

    def __init__(
        self,
        argv: list[str],
        env: dict[str, str],
        *,
        rows: int = 36,
        cols: int = 120,
        cwd: str | None = None,
    ) -> None:
        self.argv = argv
        self.start = time.perf_counter()
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: size its terminal, then become the program
            try:
                fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
                if cwd:
                    os.chdir(cwd)
                os.execvpe(argv[0], argv, env)
            finally:
                os._exit(127)
        self._screen = pyte.Screen(cols, rows)
        self._terminal = pyte.ByteStream(self._screen)
        self._fed = 0  # how many chunks the emulator has been fed
        self._output = bytearray()
        self._chunks: list[tuple[int, float]] = []  # (end offset, arrival time) of each read
        self._changed = threading.Condition()
        self._eof = False
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                chunk = b""
            now = time.perf_counter()
            # Answer cursor-position requests as a terminal does (prompt_toolkit waits for one).
            for _ in range(chunk.count(CPR_REQUEST)):
                with contextlib.suppress(OSError):
                    os.write(self.fd, CPR_REPLY)
            with self._changed:
                if not chunk:
                    self._eof = True
                    self._changed.notify_all()
                    return
                self._output += chunk
                self._chunks.append((len(self._output), now))
                self._changed.notify_all()

    def mark(self) -> int:
        """A position in the output: `wait_for(..., since=mark)` looks only after it."""
        with self._changed:
            return len(self._output)

    def write(self, data: bytes) -> float:
        """Send keys (b"\\r" is Enter); returns when they were sent."""
        os.write(self.fd, data)
        return time.perf_counter()

    def wait_for(self, marker: bytes, *, since: int = 0, timeout: float = 60.0) -> float:
        """The `time.perf_counter()` at which `marker` was drawn after output position `since`."""
        deadline = time.perf_counter() + timeout
        searched = since
        with self._changed:
            while True:
                found = self._output.find(marker, searched)
                if found >= 0:
                    end = found + len(marker)
                    # The chunk that completed the marker: the first one ending at or after it.
                    return self._chunks[bisect.bisect_left(self._chunks, end, key=_end)][1]
                searched = max(since, len(self._output) - len(marker) + 1)
                if self._eof:
                    raise RuntimeError(f"{self.argv[0]} exited before drawing {marker!r}")
                left = deadline - time.perf_counter()
                if left <= 0:
                    tail = bytes(self._output[-1500:]).decode(errors="replace")
                    raise TimeoutError(
                        f"{self.argv[0]} did not draw {marker!r} in {timeout} s; tail: {tail!r}"
                    )
                self._changed.wait(left)

    def _feed_next(self) -> float | None:
        """Feed the emulator the next chunk: its arrival time, or None when none is left. The
        lock is held only to copy the chunk, so the reader keeps draining (and timing) meanwhile."""
        with self._changed:
            if self._fed >= len(self._chunks):
                return None
            start = self._chunks[self._fed - 1][0] if self._fed else 0
            end, arrived = self._chunks[self._fed]
            data = bytes(self._output[start:end])
        self._terminal.feed(data)
        self._fed += 1
        return arrived

    def screen(self) -> str:
        """The screen as a terminal shows it after everything drawn so far, one line per row."""
        while self._feed_next() is not None:
            pass
        return "\n".join(self._screen.display)

    def wait_shown(self, test: Callable[[str], bool], *, timeout: float = 60.0) -> float:
        """The `time.perf_counter()` of the first chunk not yet on the screen after which
        `test(screen)` holds (`screen()` as it is then). Only one thread may call it."""
        deadline = time.perf_counter() + timeout
        while True:
            arrived = self._feed_next()
            if arrived is not None:
                if test("\n".join(self._screen.display)):
                    return arrived
                continue
            with self._changed:
                if self._fed < len(self._chunks):
                    continue
                if self._eof:
                    raise RuntimeError(f"{self.argv[0]} exited before showing what was awaited")
                left = deadline - time.perf_counter()
                if left <= 0:
                    shown = "\n".join(self._screen.display)
                    raise TimeoutError(f"{self.argv[0]}: not shown in {timeout} s; screen: {shown}")
                self._changed.wait(left)

    def close(self) -> None:
        """SIGTERM, then SIGKILL, then reap it."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)
        with contextlib.suppress(OSError):
            os.close(self.fd)
        self._reader.join(timeout=2)


def _end(chunk: tuple[int, float]) -> int:
    return chunk[0]


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
    process = PtyProcess(argv, env, rows=rows, cols=cols, cwd=cwd)
    try:
        return process.wait_for(marker, timeout=timeout) - process.start
    finally:
        process.close()
