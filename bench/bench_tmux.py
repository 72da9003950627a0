"""What a person feels, in tmux, next to kimi-cli and the peers (issue 31).

usage: .venv/bin/python bench/bench_tmux.py [--runs 3] [--kimi PYTHON] [--peers DIR]
                                            [--only NAMES] [--tokens 20000] [--rate 300]
                                            [--json OUT]

Every contestant (kode-tui, kimi-cli with `--kimi`, and each peer of `field.py` installed under
`--peers DIR`, else $KODE_BENCH_PEERS, else /tmp/peers) runs alone in a detached 120x36 tmux
pane (`tmux_run.py`) against one `FieldServer` on 127.0.0.1, in a scratch HOME, alternating
run by run. Each run, one session:

- launch -> first frame (the first poll that shows anything) and -> prompt ready;
- "hi" typed as soon as the prompt is ready, Enter once "hi" is on screen: launch -> request,
  and "hi" on screen -> Enter -> request (the server notes when the request arrives);
- idle RSS of the process tree once settled (VmRSS of the program and its children);
- an answer at `--rate` tokens/s for 4 s: the tree's CPU time over the stream's wall time, the
  bytes the program wrote to its terminal (tmux `pipe-pane`) per second, and the synchronized-
  update sequences (`ESC[?2026h`) among them;
- the same again with a key typed every 150 ms: key -> the screen shows it (p90, max);
- `--tokens` tokens as fast as the server writes them (the typed keys are the message): the
  last byte sent -> the end marker on screen (None when not drawn within FULL_TIMEOUT_S).

Prints medians per contestant; `--json OUT` writes them with every raw number and why a
contestant was skipped.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))
import field  # noqa: E402
from bench_model import answer, settle, settled_rss_mib, tree, tree_cpu_s  # noqa: E402
from field_server import FieldServer  # noqa: E402
from tmux_run import SYNC_START, TmuxPane  # noqa: E402

ECHO_KEYS = "qzxjvkwy" * 8  # never in an answer's words
ECHO_EVERY_S = 0.15
STREAM_S = 4.0
READY_TIMEOUT_S = 30.0
FULL_TIMEOUT_S = 30.0
ECHO_TIMEOUT_S = 5.0
# The keys of --json that run_all.py reads.
FIRST_FRAME, READY, PANES = "first_frame_s", "ready_s", "every_pane_s"
FIRST, ENTER = "first_request_s", "enter_request_s"
ECHO_P90, ECHO_MAX, FULL = "echo_p90_s", "echo_max_s", "full_speed_s"
CPU, BYTES, SYNC, RSS = "stream_cpu", "bytes_per_s", "sync_per_s", "idle_rss_mib"
TMUX_CPU = "tmux_cpu"  # the tmux server's CPU over the same stream: what parsing our bytes costs
KEYS = (FIRST_FRAME, READY, PANES, FIRST, ENTER, ECHO_P90, ECHO_MAX, FULL, CPU, BYTES, SYNC)
KEYS += (TMUX_CPU, RSS)


# What may frame a prompt line around the typed text: borders, bars, a drawn cursor.
PROMPT_FRAME = " \u2502\u2503\u258a\u258c\u258e\u258f\u2588"


def prompt_lines(screen: str, text: str) -> int:
    """How many lines end with `text` (a prompt holding it), frames and cursor stripped."""
    return sum(line.strip(PROMPT_FRAME).endswith(text) for line in screen.splitlines())


def shown_more(text: str, before: str) -> Callable[[str], bool]:
    """A screen test: `text` shows more often than on the `before` screen, anywhere or at the
    end of a line (typing "hi" can hide a placeholder "Ask anything" that held it)."""
    count, lines = before.count(text), prompt_lines(before, text)
    return lambda screen: screen.count(text) > count or prompt_lines(screen, text) > lines


def turn(pane: TmuxPane, server: FieldServer, text: str) -> tuple[float, float]:
    """Type `text`, Enter once it is on screen: (when Enter was sent, when the request came)."""
    count = len(server.arrived)
    if text:
        before = pane.screen()
        pane.send(text)
        pane.wait_shown(shown_more(text, before), timeout=10)
    enter = pane.send("Enter", literal=False)
    deadline = time.perf_counter() + 60
    while len(server.arrived) <= count:
        if time.perf_counter() > deadline:
            raise TimeoutError(f"no request after {text!r} + Enter")
        time.sleep(0.002)
    return enter, server.arrived[count]


def own_cpu_s(pid: int) -> float:
    """User + system CPU time of the process itself (not its children: the program measured)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:13]) / os.sysconf("SC_CLK_TCK")


def finished(server: FieldServer, count: int, timeout: float = 120) -> float:
    """When the answer after `count` finished ones was fully written."""
    deadline = time.perf_counter() + timeout
    while len(server.finished) <= count:
        if time.perf_counter() > deadline:
            raise TimeoutError("the answer did not finish")
        time.sleep(0.005)
    return server.finished[count]


def one_run(
    who: field.Contestant, server: FieldServer, log: Path, work: Path, rate: float, tokens: int
) -> dict[str, Any]:
    """One session of `who`: every row's numbers (see the module's docstring)."""
    numbers: dict[str, Any] = {}
    server.drop_pending()
    settle([])  # what ran before (the previous script of `make bench`, say) has quieted down
    pane = TmuxPane(who.argv, who.env, log=log, cwd=str(work))
    pids: list[int] = []
    try:
        first = pane.wait_shown(lambda screen: bool(screen.strip()), timeout=READY_TIMEOUT_S)
        ready = pane.wait_shown(who.ready, timeout=READY_TIMEOUT_S)
        numbers[FIRST_FRAME], numbers[READY] = first - pane.start, ready - pane.start
        if who.panes is not None:
            numbers[PANES] = pane.wait_shown(who.panes, timeout=READY_TIMEOUT_S) - pane.start
        if who.launch_only:
            return numbers
        server.reply(["Hello ", "there, ", "BENCHHIEND"])
        enter, arrived = turn(pane, server, "hi")
        numbers[FIRST], numbers[ENTER] = arrived - pane.start, arrived - enter
        pane.wait_shown(lambda screen: "BENCHHIEND" in screen, timeout=30)
        numbers[RSS] = settled_rss_mib(pane.pid)
        pids = tree(pane.pid)

        paced, delay = int(rate * STREAM_S), 1 / rate
        server.reply(answer(paced, "BENCHCPUEND"), delay=delay, expect="benchcpu")
        done = len(server.finished)
        _, arrived = turn(pane, server, "benchcpu")
        cpu, tmux_cpu, written = (
            tree_cpu_s(pane.pid),
            own_cpu_s(pane.server_pid),
            len(pane.written()),
        )
        end = finished(server, done)
        wall = end - arrived
        numbers[CPU] = (tree_cpu_s(pane.pid) - cpu) / wall
        numbers[TMUX_CPU] = (own_cpu_s(pane.server_pid) - tmux_cpu) / wall
        stream = pane.written()[written:]
        numbers[BYTES], numbers[SYNC] = len(stream) / wall, stream.count(SYNC_START) / wall
        numbers["sync_sequences"] = pane.written().count(SYNC_START)
        pane.wait_shown(lambda screen: "BENCHCPUEND" in screen, timeout=60)

        server.reply(answer(paced, "BENCHECHOEND"), delay=delay, expect="benchecho")
        done = len(server.finished)
        turn(pane, server, "benchecho")
        time.sleep(0.3)  # well into the stream
        echoes: list[float] = []
        for k in range(1, len(ECHO_KEYS) + 1):
            if len(server.finished) > done:
                break
            typed = ECHO_KEYS[:k]
            before = pane.screen()
            sent = pane.send(ECHO_KEYS[k - 1])
            try:
                echoes.append(
                    pane.wait_shown(shown_more(typed, before), timeout=ECHO_TIMEOUT_S) - sent
                )
            except TimeoutError:
                echoes.append(ECHO_TIMEOUT_S)
            time.sleep(max(0.0, sent + ECHO_EVERY_S - time.perf_counter()))
        numbers["echo_s"] = echoes
        numbers[ECHO_P90] = statistics.quantiles(echoes, n=10)[-1] if len(echoes) > 1 else None
        numbers[ECHO_MAX] = max(echoes, default=None)
        pane.wait_shown(lambda screen: "BENCHECHOEND" in screen, timeout=60)

        server.reply(answer(tokens, "BENCHFULLEND"), expect=ECHO_KEYS[: min(3, len(echoes))])
        done = len(server.finished)
        turn(pane, server, "")
        sent_all = finished(server, done)
        try:
            shown = pane.wait_shown(lambda screen: "BENCHFULLEND" in screen, timeout=FULL_TIMEOUT_S)
            numbers[FULL] = shown - sent_all
        except TimeoutError:
            numbers[FULL] = None
        return numbers
    finally:
        pids = tree(pane.pid) + pids
        pane.close()
        for pid in pids:  # a daemon the program left behind, say
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        settle([*pids, pane.server_pid])  # its teardown is not the next program's start-up


def contestants(
    args: argparse.Namespace, home: Path, work: Path, server: FieldServer
) -> list[field.Contestant]:
    """kode-tui, the bare Textual app, kimi-cli and the peers (those `--only` names)."""
    peers = field.peers_dir(args.peers)
    found = [field.kode(home / "kode-tui", work, server)]
    found.append(field.bare_textual(home / "bare", work, server))
    found.append(field.kimi(home / "kimi-cli", work, server, args.kimi))
    for make in field.PEERS:
        found.append(make(home / make.__name__, work, server, peers))
    return [c for c in found if not args.only or c.name in args.only]


def median(values: list[Any]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--kimi", type=Path, metavar="PYTHON", help="a Python with kimi-cli")
    parser.add_argument("--peers", type=Path, metavar="DIR", help=f"else ${field.PEERS_ENV}")
    parser.add_argument("--only", type=lambda s: s.split(","), help="contestants by name")
    parser.add_argument("--tokens", type=int, default=20_000)
    parser.add_argument("--rate", type=float, default=300.0)
    parser.add_argument("--json", type=Path, metavar="OUT")
    args = parser.parse_args()
    # Stopped (a timeout, run_all's Ctrl+C): the tmux servers and what runs in them are ended
    # by the `finally`s below, not left running.
    signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(143))

    raw: dict[str, list[dict[str, Any]]] = {}
    skipped: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="kode-bench-tmux-") as tmp, FieldServer() as server:
        work = Path(tmp) / "project"
        work.mkdir()
        (work / "README.md").write_text("# Bench\n")
        for run in range(args.runs):
            for who in contestants(args, Path(tmp) / f"run{run}", work, server):
                if who.missing:
                    skipped[who.name] = who.missing
                    continue
                try:
                    numbers = one_run(
                        who, server, Path(tmp) / "out.log", work, args.rate, args.tokens
                    )
                except (TimeoutError, RuntimeError) as error:
                    numbers = {"error": str(error)[:2000]}
                raw.setdefault(who.name, []).append(numbers)
                shown = {k: round(v, 3) for k, v in numbers.items() if isinstance(v, float)}
                print(f"run {run + 1} {who.name}: {shown or numbers}", flush=True)
        if server.errors:
            raise SystemExit(f"the loopback server failed: {server.errors[0]!r}")

    result: dict[str, Any] = {
        "runs": args.runs,
        "tokens": args.tokens,
        "rate_per_s": args.rate,
        "median": {
            name: {k: median([r.get(k) for r in runs]) for k in KEYS} for name, runs in raw.items()
        },
        "skipped": skipped,
        "raw": raw,
    }
    names = list(raw)
    widths = [max(12, len(name)) + 2 for name in names]
    header = "".join(f"{name:>{w}}" for name, w in zip(names, widths, strict=True))
    print(f"{'':18}{header}   ({args.runs} runs)")
    for key in KEYS:
        cells = [result["median"][name][key] for name in names]
        print(
            f"{key:18}"
            + "".join(
                f"{c:{w}.3f}" if c is not None else f"{'—':>{w}}"
                for c, w in zip(cells, widths, strict=True)
            )
        )
    for name, why in skipped.items():
        print(f"skipped {name}: {why}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
