"""Run a program in tmux and time what its screen shows: the harness of issue 31's field rows.

`TmuxPane` starts a program in a detached session of its own tmux server (`-L`, no config) at
a given size, with exactly the environment given. The screen is read the way a person attached
to tmux would see it: `capture-pane -p`, the screen state tmux holds after parsing the program's
output, polled every `POLL_S`. Keys go in with `send-keys`. Both go through one control-mode
client (`tmux -C`, attached with `no-output,ignore-size`), so a poll is a line on a pipe rather
than a new tmux process each time (which would cost the 2-core machine ~3 ms of CPU per poll
while the program under test is measured). A poll's answer is timed when it is read: the screen
state is at most that old, so a time is late by at most one poll plus the command's round trip.

Why not `pipe-pane` or control mode's `%output` for timing: they give the bytes the program
wrote, not what tmux shows, and a renderer that writes a key's echo as a cursor move and one cell
(prompt_toolkit does) or a frame in several writes is judged wrongly from bytes (see README.md).
`pipe-pane` is used for what bytes are for: counting them, and the synchronized-update sequences.
"""

from __future__ import annotations

import itertools
import os
import shlex
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

TMUX = "tmux"
POLL_S = 0.01
SYNC_START = b"\x1b[?2026h"
_sockets = itertools.count()


class TmuxPane:
    """`argv` running alone in a cols x rows tmux pane; `start` is the `time.perf_counter()`
    just before the tmux server was asked to start it, `pid` the program's pid, `server_pid` the
    tmux server's (which parses what the program writes)."""

    def __init__(
        self,
        argv: list[str],
        env: dict[str, str],
        *,
        log: Path,
        cwd: str,
        cols: int = 120,
        rows: int = 36,
    ) -> None:
        self.socket = f"kode-bench-{os.getpid()}-{next(_sockets)}"
        self.log = log
        log.write_bytes(b"")
        command = ["/usr/bin/env", "-i", *(f"{k}={v}" for k, v in env.items()), *argv]
        self.start = time.perf_counter()
        # One tmux invocation: the pane's output is piped from its first byte, since the server
        # runs the whole command list before it reads the new pane.
        done = subprocess.run(
            [
                *self._tmux(),
                "new-session", "-d", "-s", "bench", "-x", str(cols), "-y", str(rows), "-c", cwd,
                *command, ";",
                "set-option", "-g", "window-size", "manual", ";",
                "pipe-pane", "-t", "bench", f"cat >> {shlex.quote(str(log))}", ";",
                "display-message", "-p", "-t", "bench", "#{pid} #{pane_pid}",
            ],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        server, pane = done.stdout.split()[-2:]
        self.pid, self.server_pid = int(pane), int(server)
        self._control = subprocess.Popen(
            [*self._tmux(), "-C", "attach-session", "-t", "bench", "-f", "no-output,ignore-size"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self._command("display-message -p bench-sync", until="bench-sync")

    def _tmux(self) -> list[str]:
        return [TMUX, "-L", self.socket, "-f", "/dev/null"]

    def _command(self, line: str, until: str | None = None) -> list[str]:
        """Run one tmux command through the control client: the lines of its answer. With
        `until`, answers are read until one holds that line (the attach's own comes first)."""
        assert self._control.stdin is not None and self._control.stdout is not None
        self._control.stdin.write(line.encode() + b"\n")
        self._control.stdin.flush()
        while True:
            answer: list[str] = []
            inside = False
            for raw in self._control.stdout:
                text = raw.decode(errors="replace").rstrip("\n")
                if not inside:
                    inside = text.startswith("%begin ")
                    if text.startswith("%exit"):
                        raise RuntimeError(f"tmux control client exited: {text}")
                    continue
                if text.startswith(("%end ", "%error ")):
                    break
                answer.append(text)
            else:
                raise RuntimeError("tmux control client closed")
            if until is None or until in answer:
                return answer

    def screen(self) -> str:
        """What the pane shows now, one line per row."""
        return "\n".join(self._command("capture-pane -p -t bench"))

    def send(self, keys: str, *, literal: bool = True) -> float:
        """Type `keys` (literally, or as tmux key names such as `Enter`); when they were sent."""
        flag = "-l " if literal else ""
        sent = time.perf_counter()
        self._command(f"send-keys -t bench {flag}{shlex.quote(keys)}")
        return sent

    def wait_shown(self, test: Callable[[str], bool], *, timeout: float = 60.0) -> float:
        """The `time.perf_counter()` of the first poll whose screen passes `test`."""
        deadline = time.perf_counter() + timeout
        while True:
            screen = self.screen()
            seen = time.perf_counter()
            if test(screen):
                return seen
            if seen > deadline:
                raise TimeoutError(f"not shown in {timeout} s; screen:\n{screen}")
            time.sleep(max(0.0, POLL_S - (time.perf_counter() - seen)))

    def written(self) -> bytes:
        """Every byte the program has written to its terminal so far."""
        return self.log.read_bytes()

    def close(self) -> None:
        """End the control client and the tmux server (and with it the program)."""
        if self._control.stdin is not None:
            self._control.stdin.close()
        self._control.wait(timeout=5)
        subprocess.run([*self._tmux(), "kill-server"], capture_output=True)
