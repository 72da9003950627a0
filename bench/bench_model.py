"""Responsiveness with a configured model, against a loopback OpenAI-compatible server (issue 14).

usage: .venv/bin/python bench/bench_model.py [--runs 3] [--kimi PYTHON] [--tokens 20000]
                                             [--rate 300] [--json OUT]

The bench starts `tests/llm_server.py`'s server on 127.0.0.1 and configures kode-tui's model
against it (a `config.toml` in a scratch KODE_TUI_HOME, `[models.local]` with the model
`openai/test-model`, `api_base` and its key in an environment variable), so the model process
really runs (with the OpenAI SDK, which serves `openai/` models). Each run, in a 120x36 pseudo-
terminal unless said otherwise:

- first request: launch, type "hi" + Enter as soon as the prompt is drawn, until the request
  has arrived at the server (from launch, and from Enter);
- print mode (`-p hi --print`, no terminal): launch until the request arrives, and the stream's
  last byte until the process has exited;
- one session: idle RSS of the whole process tree (parent and children, VmRSS from /proc) once
  it has settled; then three answers in turn: `--rate` tokens/s for 4 s with the tree's CPU time
  over the stream's wall time; the same again with a key typed every 150 ms into the prompt
  and the time until the screen shows it (the output run through a terminal emulator, see
  ptyrun.py: kimi-cli's prompt_toolkit writes only the new cell of an echo); then `--tokens`
  tokens as fast as the server writes them, until the last one is on screen;
- the first request again with the same server configured as `hosted_vllm/test-model`, a
  model litellm serves (its import is then on the first request's way).

With kimi-cli (`--kimi PYTHON`, a Python that has kimi-cli 1.52) every row but the full-speed
stream is measured for it too, in the same run against the same server, alternating: its
original CLI (the package's `kimi` script only prints a deprecation notice now) with a config
file for an `openai_legacy` provider at the server, HOME and KIMI_SHARE_DIR in a scratch
directory. Prints medians over `--runs`, and kode-tui's ratio to kimi-cli's; `--json OUT`
writes them with every raw number.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(REPO))
from bench_tui import env_for  # noqa: E402
from ptyrun import PtyProcess  # noqa: E402

from tests.llm_server import LLMServer, write_loopback_config  # noqa: E402

KODE = str(Path(sys.executable).parent / "kode-tui")
KEY_ENV = "BENCH_MODEL_KEY"
KODE_READY = b"palette"  # the footer: kode-tui's first frame, the prompt takes keys
KIMI_READY = b" input "  # the rule above kimi's prompt_toolkit input line
KIMI_MAIN = (
    "import sys; from kimi_cli.__main__ import run_original_cli; "
    "sys.exit(run_original_cli(sys.argv[1:]))"
)
OURS, KIMI = "kode-tui", "kimi-cli"
# The keys of --json that run_all.py reads.
FIRST, FIRST_ENTER = "first_request_s", "enter_to_request_s"
PRINT_FIRST, PRINT_EXIT = "print_first_request_s", "print_exit_s"
IDLE_RSS = "idle_rss_mib"
LITELLM_FIRST, LITELLM_MODEL = "litellm_first_request_s", "hosted_vllm/test-model"
CPU, ECHO_P90, ECHO_MAX, FULL = "stream_cpu", "echo_p90_s", "echo_max_s", "full_speed_s"
WORDS = ("the ", "model ", "streams ", "tokens ", "into ", "a ", "growing ", "answer ")
ECHO_KEYS = "qzxjvkwy" * 8  # never in an answer's words; at most 64 keys fit the prompt line
ECHO_EVERY_S = 0.15  # the tmux measurement: one key every 150 ms
STREAM_S = 4.0
SETTLE_MAX_S = 20.0


def answer(tokens: int, end: str) -> list[str]:
    """`tokens` word deltas in paragraphs of 50, then `end` (a marker to wait for)."""
    pieces = [WORDS[i % len(WORDS)] + ("\n\n" if i % 50 == 49 else "") for i in range(tokens)]
    return [*pieces, end]


# --- the process tree, from /proc ----------------------------------------------------------------


def tree(pid: int) -> list[int]:
    """`pid` and every descendant still alive."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        found.append(todo.pop())
        todo += children.get(found[-1], [])
    return found


QUIET_WINDOW_S = 0.1
QUIET_BUSY = 0.15
"""The machine is quiet when under this share of its CPU time was busy over a window."""


def settle(pids: list[int], timeout: float = 5.0) -> None:
    """Wait until `pids` have exited (gone, or zombies: their teardown done) and the machine is
    quiet, for at most `timeout` seconds. The next program measured then starts on an idle
    machine: OpenCode, killed, took ~0.25 s of a core to free its ~900 MB, which fell on the
    next contestant's start-up in the same bench."""
    deadline = time.perf_counter() + timeout

    def running(pid: int) -> bool:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return False
        return state not in ("Z", "X")

    while any(running(pid) for pid in pids) and time.perf_counter() < deadline:
        time.sleep(0.01)
    while time.perf_counter() < deadline:
        before = _cpu_times()
        time.sleep(QUIET_WINDOW_S)
        busy, total = (after - start for after, start in zip(_cpu_times(), before, strict=True))
        if total <= 0 or busy / total < QUIET_BUSY:
            return


def _cpu_times() -> tuple[int, int]:
    """The machine's busy and total CPU time so far (clock ticks, every CPU, /proc/stat)."""
    ticks = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = ticks[3] + ticks[4]  # idle and iowait
    return sum(ticks) - idle, sum(ticks)


def tree_rss_mib(pid: int) -> float:
    total = 0
    for each in tree(pid):
        try:
            status = Path(f"/proc/{each}/status").read_text()
        except OSError:
            continue
        total += next(
            (int(ln.split()[1]) for ln in status.splitlines() if ln.startswith("VmRSS")), 0
        )
    return total / 1024


def tree_cpu_s(pid: int) -> float:
    """User + system CPU time of the tree, with the children it has already reaped."""
    ticks = 0
    for each in tree(pid):
        try:
            fields = Path(f"/proc/{each}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def settled_rss_mib(pid: int) -> float:
    """The tree's RSS once it has moved less than 2 MiB over 2 s (or after SETTLE_MAX_S)."""
    samples: list[float] = []
    deadline = time.perf_counter() + SETTLE_MAX_S
    while time.perf_counter() < deadline:
        samples.append(tree_rss_mib(pid))
        if len(samples) >= 5 and max(samples[-5:]) - min(samples[-5:]) < 2:
            break
        time.sleep(0.5)
    return samples[-1]


# --- the two apps --------------------------------------------------------------------------------


class App:
    """How to start one app against the server, in a scratch home."""

    def __init__(
        self,
        name: str,
        home: Path,
        work: Path,
        server: LLMServer,
        kimi: Path | None,
        model: str = "openai/test-model",
    ):
        self.name, self.work, self.server = name, work, server
        if name == OURS:
            write_loopback_config(home, server, KEY_ENV, model)
            self.env = env_for(home, **{KEY_ENV: "dummy"})
            self.argv, self.ready = [KODE, str(work)], KODE_READY
        else:
            assert kimi is not None
            config = home / "kimi.toml"
            config.parent.mkdir(parents=True, exist_ok=True)
            config.write_text(
                'default_model = "local"\ntelemetry = false\n'
                f'[providers.local]\ntype = "openai_legacy"\nbase_url = "{server.url}"\n'
                'api_key = "dummy"\n[models.local]\nprovider = "local"\n'
                'model = "test-model"\nmax_context_size = 128000\n'
            )
            self.env = env_for(home, KIMI_SHARE_DIR=str(home / "kimi"), KIMI_CLI_NO_AUTO_UPDATE="1")
            self.argv = [str(kimi), "-c", KIMI_MAIN, "--config-file", str(config), "-w", str(work)]
            self.ready = KIMI_READY

    def launch(self) -> PtyProcess:
        process = PtyProcess(self.argv, self.env, cwd=str(self.work))
        process.wait_for(self.ready)
        return process


def _nth(times: list[float], count: int, what: str, timeout: float) -> float:
    """`times[count]`, once the server has appended it (waits for it)."""
    deadline = time.perf_counter() + timeout
    while len(times) <= count:
        if time.perf_counter() > deadline:
            raise TimeoutError(f"no {what} #{count + 1} in {timeout} s")
        time.sleep(0.002)
    return times[count]


def request_after(server: LLMServer, count: int, timeout: float = 120.0) -> float:
    """When request number `count + 1` arrived (waits for it)."""
    return _nth(server.arrived, count, "request", timeout)


def finished_after(server: LLMServer, count: int, timeout: float = 120.0) -> float:
    """When streamed reply number `count + 1` was fully written (waits for it)."""
    return _nth(server.finished, count, "finished reply", timeout)


# --- the rows ------------------------------------------------------------------------------------


def first_request(app: App) -> dict[str, float]:
    server, count = app.server, len(app.server.arrived)
    server.reply_text("Hello there")
    process = app.launch()
    try:
        enter = process.write(b"hi\r")
        arrived = request_after(server, count)
    finally:
        process.close()
    return {FIRST: arrived - process.start, FIRST_ENTER: arrived - enter}


def print_mode(app: App) -> dict[str, float]:
    server, count = app.server, len(app.server.arrived)
    server.reply_text("Hello there, this is the whole answer")
    start = time.perf_counter()
    done = subprocess.run(
        [*app.argv, "-p", "hi", "--print"],
        env=app.env, cwd=app.work, stdin=subprocess.DEVNULL, capture_output=True, timeout=120,
    )  # fmt: skip
    exited = time.perf_counter()
    if done.returncode != 0 or b"whole answer" not in done.stdout:
        raise RuntimeError(f"{app.name} --print failed: {done.stderr.decode()[-2000:]}")
    return {PRINT_FIRST: server.arrived[count] - start, PRINT_EXIT: exited - server.finished[-1]}


def submit(process: PtyProcess, server: LLMServer, text: bytes) -> tuple[int, float]:
    """Enter `text` (plus Enter); the output position before it and when the request arrived."""
    count, mark = len(server.arrived), process.mark()
    process.write(text + b"\r")
    return mark, request_after(server, count)


def streaming(app: App, rate: float, tokens: int) -> dict[str, Any]:
    """Idle RSS, then CPU at `rate`, echo while streaming at `rate`, `tokens` at full speed
    (kode-tui only: kimi-cli did not draw the end of 20k tokens within minutes)."""
    server, delay, paced = app.server, 1 / rate, int(rate * STREAM_S)
    process = app.launch()
    try:
        numbers: dict[str, Any] = {IDLE_RSS: settled_rss_mib(process.pid)}
        # CPU: the tree's CPU time over the stream's wall time.
        server.reply_text(answer(paced, "BENCH-CPU-END"), delay=delay)
        done = len(server.finished)
        mark, arrived = submit(process, server, b"hi")
        cpu = tree_cpu_s(process.pid)
        finished = finished_after(server, done)
        numbers[CPU] = (tree_cpu_s(process.pid) - cpu) / (finished - arrived)
        numbers["stream_rate_per_s"] = paced / (finished - arrived)
        process.wait_for(b"BENCH-CPU-END", since=mark)
        # Echo: a key about every ECHO_EVERY_S while the answer streams, until it is shown.
        server.reply_text(answer(paced, "BENCH-ECHO-END"), delay=delay)
        done = len(server.finished)
        process.screen()  # the emulator catches up on the session so far before keys are timed
        mark, _ = submit(process, server, b"again")
        time.sleep(0.3)  # well into the stream
        echoes = []
        for k in range(1, len(ECHO_KEYS) + 1):
            if len(server.finished) > done:
                break
            typed = ECHO_KEYS[:k]
            before = process.screen().count(typed)
            sent = process.write(ECHO_KEYS[k - 1].encode())
            shown = process.wait_shown(lambda screen, t=typed, n=before: screen.count(t) > n)
            echoes.append(shown - sent)
            time.sleep(max(0.0, sent + ECHO_EVERY_S - time.perf_counter()))
        numbers["echo_s"] = echoes
        numbers[ECHO_P90] = statistics.quantiles(echoes, n=10)[-1] if len(echoes) > 1 else None
        numbers[ECHO_MAX] = max(echoes, default=None)
        process.wait_for(b"BENCH-ECHO-END", since=mark)
        if app.name != OURS:
            return numbers
        # Full speed: the typed keys are the message; until the last token is on screen.
        server.reply_text(answer(tokens, "BENCH-FULL-END"))
        mark, arrived = submit(process, server, b"")
        if ECHO_KEYS[: len(echoes)] not in json.dumps(server.requests[-1]):
            raise RuntimeError("the keys typed while streaming did not reach the prompt")
        numbers[FULL] = process.wait_for(b"BENCH-FULL-END", since=mark, timeout=300) - arrived
        return numbers
    finally:
        process.close()


# --- main ----------------------------------------------------------------------------------------


def median(runs: list[dict[str, Any]], key: str) -> float | None:
    values = [run[key] for run in runs if run.get(key) is not None]
    return statistics.median(values) if values else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--kimi", type=Path, metavar="PYTHON", help="a Python with kimi-cli")
    parser.add_argument("--tokens", type=int, default=20_000, help="tokens sent at full speed")
    parser.add_argument("--rate", type=float, default=300.0, help="tokens per second")
    parser.add_argument("--json", type=Path, metavar="OUT")
    args = parser.parse_args()

    names = [OURS, KIMI] if args.kimi else [OURS]
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    with tempfile.TemporaryDirectory(prefix="kode-bench-model-") as tmp, LLMServer() as server:
        work = Path(tmp) / "project"
        work.mkdir()
        (work / "README.md").write_text("# Bench\n")
        for run in range(args.runs):
            for name in names:
                app = App(name, Path(tmp) / f"home-{name}-{run}", work, server, args.kimi)
                numbers = {**first_request(app), **print_mode(app)}
                numbers.update(streaming(app, args.rate, args.tokens))
                if name == OURS:
                    # The same server as a vLLM model: litellm serves it (see openai_route.py).
                    home = Path(tmp) / f"home-litellm-{run}"
                    via = App(name, home, work, server, None, model=LITELLM_MODEL)
                    numbers[LITELLM_FIRST] = first_request(via)[FIRST]
                runs[name].append(numbers)
                shown = {k: round(v, 3) for k, v in numbers.items() if isinstance(v, float)}
                print(f"run {run + 1} {name}: {shown}", flush=True)
            server.drop_pending()
        if server.errors:
            raise SystemExit(f"the loopback server failed: {server.errors[0]!r}")

    keys = [
        *(FIRST, FIRST_ENTER, PRINT_FIRST, PRINT_EXIT, IDLE_RSS, CPU, ECHO_P90, ECHO_MAX, FULL),
        LITELLM_FIRST,
    ]
    result: dict[str, Any] = {
        "runs": args.runs,
        "tokens": args.tokens,
        "rate_per_s": args.rate,
        "median": {name: {k: median(runs[name], k) for k in keys} for name in names},
        "raw": runs,
    }
    print(f"{'':28}" + "".join(f"{name:>14}" for name in names) + f"   ({args.runs} runs)")
    for key in keys:
        cells = [result["median"][name][key] for name in names]
        print(f"{key:28}" + "".join(f"{c:14.3f}" if c is not None else f"{'—':>14}" for c in cells))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
