"""Run every benchmark and print one results table: what `make bench` does.

usage: .venv/bin/python bench/run_all.py [--kimi PYTHON | --no-kimi] [--markdown OUT]
                                         [--json OUT] [--only NAME,...] [--context-runs 5] ...

Each benchmark runs as its own process, its output streamed as it comes, its headline numbers
written as JSON to a scratch file; at the end one Markdown table holds them all with the
reference measured in the same run (Kimi CLI for the engine and, against the same loopback
server, for the litellm model rows; a minimal Textual app for the first frame; an empty session
for memory), the ratio, the issue's target and PASS/FAIL. Kimi CLI
is used when `--kimi PYTHON` is given, else `$KODE_TUI_KIMI_PYTHON`, else /tmp/kimi-ref/bin/python
when it exists (`../shared/bench/setup_kimi.sh /tmp/kimi-ref` installs it). The whole run takes
about seven minutes on a 2-core machine.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
from bench_context import ISSUE_TURNS, KIMI, METRICS, OURS, Metric  # noqa: E402
from bench_model import KIMI as MODEL_KIMI  # noqa: E402
from bench_model import LITELLM_FIRST, LITELLM_MODEL  # noqa: E402
from bench_model import OURS as MODEL_OURS  # noqa: E402
from bench_tui import DEMO, LITELLM, MINIMAL, RESUME  # noqa: E402
from field import PEERS_ENV  # noqa: E402

DEFAULT_KIMI = Path("/tmp/kimi-ref/bin/python")
KIMI_ENV = "KODE_TUI_KIMI_PYTHON"
BENCHMARKS = (
    *("context", "tui", "stream", "history", "memory", "model", "snapshot", "sandbox"),
    "tmux",
)
USES_KIMI = ("context", "model", "tmux")

# The targets of the issues that bench_context.py does not already carry.
FIRST_FRAME_MAX_RATIO = 1.5  # issue 5: first frame <= 1.5x the minimal Textual app
RESUME_MAX_S = 1.5  # issue 5: a resumed 500-turn session is interactive within 1.5 s
STREAM_LAG_MAX_S = 0.1  # issue 5: streaming lag < 100 ms at the end
# Issue 14, with a litellm model against a loopback server.
FIRST_REQUEST_MAX_RATIO = 1.2  # launch -> first request (TUI and print mode) <= 1.2x kimi's
PRINT_EXIT_MAX_S = 0.3  # print mode: last token -> process exit
ECHO_MAX_S = 0.2  # keystroke echo while streaming: max
ECHO_P90_MAX_RATIO = 2.0  # keystroke echo while streaming: p90 <= 2x kimi's
FULL_SPEED_MAX_S = 3.0  # 20k tokens at full speed -> all on screen
STREAM_CPU_MAX = 0.35  # app CPU while streaming at 300 tok/s, of one core
IDLE_RSS_MAX_RATIO = 1.5  # idle RSS of the process tree <= 1.5x kimi's
SCROLL_STALL_MAX_S = 0.1  # scrolling a 5,000-turn session: no stall > 100 ms per page
SNAPSHOT_CALL_MAX_S = 0.15  # issue 17: a Shell call's snapshots on a 10,000-file repo
SANDBOX_EXTRA_MAX_S = 0.03  # issue 26: the sandbox's cost per Shell call, over no sandbox
# Issue 31, in tmux next to the field: the goal of each row is the best peer's number.
TMUX_OURS, TMUX_KIMI, TMUX_BARE = "kode-tui", "kimi-cli", "bare Textual app"
FIELD_ORDER = (TMUX_OURS, "Vibe", "Claude Code", "Codex", "OpenCode", TMUX_KIMI, TMUX_BARE)


@dataclass(slots=True)
class Row:
    metric: str
    ours: str
    reference: str = "—"
    ratio: str = "—"
    target: str = "—"
    verdict: str = "—"


@dataclass(slots=True)
class Outcome:
    name: str
    argv: list[str]
    seconds: float
    code: int
    numbers: dict[str, Any] | None


# --- formatting ----------------------------------------------------------------------------------


def fmt_s(seconds: float) -> str:
    if seconds < 0.01:
        return f"{seconds * 1000:.1f} ms"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    return f"{seconds:.2f} s"


def fmt_value(value: float, unit: str) -> str:
    if unit == "MiB":
        return f"{value:.1f} MiB"
    if unit == "/s":
        return f"{value:,.0f}/s"
    return fmt_s(value)


def fmt_x(ratio: float) -> str:
    return f"{ratio:.2f}x" if ratio < 10 else f"{ratio:.1f}x"


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


# --- the rows of each benchmark ------------------------------------------------------------------


def engine_ratio(metric: Metric, ours: float, kimi: float) -> str:
    if metric.unit == "s":
        return f"{fmt_x(kimi / ours)} faster"
    if metric.unit == "/s":
        return f"{fmt_x(ours / kimi)} the rate"
    return f"{fmt_x(ours / kimi)} the RSS"


def context_rows(numbers: dict[str, Any]) -> list[Row]:
    rows: list[Row] = []
    for file in numbers["files"]:
        turns = file["turns"]
        what = f"engine, {turns} turns ({file['size_bytes'] / 1e6:.1f} MB)"
        summary = file["summary"]
        for metric in METRICS:
            if metric.kimi_key is None:
                continue
            row = summary[metric.key]
            ours = row[OURS]["median"]
            applies = metric.target is not None and metric.target_turns in (None, turns)
            line = Row(f"{what}: {metric.label.strip()}", fmt_value(ours, metric.unit))
            if applies:
                line.target = metric.target_text
                line.verdict = "not run (no kimi-cli)"
            if KIMI in row:
                kimi = row[KIMI]["median"]
                line.reference = fmt_value(kimi, metric.unit)
                line.ratio = engine_ratio(metric, ours, kimi)
                if "pass" in row:
                    line.verdict = verdict(row["pass"])
            rows.append(line)
    return rows


def tui_rows(numbers: dict[str, Any]) -> list[Row]:
    minimal = numbers[MINIMAL]["median_s"]
    rows = []
    for key, label in ((DEMO, "demo model"), (LITELLM, "litellm model configured")):
        ours = numbers[key]["median_s"]
        rows.append(
            Row(
                f"cold start, first frame, new session ({label})",
                fmt_s(ours),
                fmt_s(minimal),
                f"{fmt_x(ours / minimal)} the time",
                f"<= {FIRST_FRAME_MAX_RATIO}x the minimal app",
                verdict(ours / minimal <= FIRST_FRAME_MAX_RATIO),
            )
        )
    resume = numbers[RESUME]["median_s"]
    rows.append(
        Row(
            "resume the 500-turn session, last message on screen",
            fmt_s(resume),
            target=f"<= {RESUME_MAX_S} s",
            verdict=verdict(resume <= RESUME_MAX_S),
        )
    )
    return rows


def stream_rows(numbers: dict[str, Any]) -> list[Row]:
    what = f"streaming {numbers['tokens']:,} tokens at {numbers['rate_per_s']:g}/s (headless)"
    last = numbers["lag_last_s"]
    return [
        Row(
            f"{what}: lag of the last token",
            fmt_s(last),
            target=f"< {STREAM_LAG_MAX_S * 1000:.0f} ms",
            verdict=verdict(last < STREAM_LAG_MAX_S),
        ),
        Row(
            f"{what}: lag median / p95 / max",
            " / ".join(fmt_s(numbers[k]) for k in ("lag_median_s", "lag_p95_s", "lag_max_s")),
        ),
    ]


def history_rows(numbers: dict[str, Any]) -> list[Row]:
    what = f"{numbers['turns']:,}-turn session ({numbers['messages']:,} messages)"
    returned, drawn = fmt_s(numbers["returned_s"]), fmt_s(numbers["drawn_s"])
    page_max, page_p95 = numbers["page_stall_max_s"], numbers["page_stall_p95_s"]
    worst = max(page_max, numbers["home_stall_s"], numbers["end_stall_s"])
    target = f"no stall > {SCROLL_STALL_MAX_S * 1000:.0f} ms"
    rss = f"{numbers['rss_start_mib']:.0f} -> {numbers['rss_max_mib']:.0f} MiB"
    return [
        Row(f"{what}: load_history returned / on screen", f"{returned} / {drawn}"),
        Row(
            f"{what}: PageUp x{numbers['pages']} from the end, loop blocked per page max / p95",
            f"{fmt_s(page_max)} / {fmt_s(page_p95)}",
            target=target,
            verdict=verdict(page_max <= SCROLL_STALL_MAX_S),
        ),
        Row(
            f"{what}: Home -> first message / End -> last on screen (loop blocked at most)",
            f"{fmt_s(numbers['home_s'])} / {fmt_s(numbers['end_s'])} ({fmt_s(worst)})",
            target=target,
            verdict=verdict(worst <= SCROLL_STALL_MAX_S),
        ),
        Row(
            f"{what}: RSS while scrolling ({numbers['blocks_max']} blocks mounted at most)",
            rss,
        ),
    ]


def memory_rows(numbers: dict[str, Any]) -> list[Row]:
    full, empty = numbers["median"]["full"], numbers["median"]["empty"]
    what = f"{numbers['messages']:,}-message session rendered"

    def pair(label: str, key: str) -> Row:
        ours, ref = full[key], empty[key]
        ratio = f"{fmt_x(ours / ref)} (+{ours - ref:.1f} MiB)"
        return Row(f"{what}: {label}", f"{ours:.1f} MiB", f"{ref:.1f} MiB", ratio)

    return [
        pair("RSS after render", "rss_mib"),
        pair("peak RSS", "hwm_mib"),
        Row(
            f"{what}: last message on screen (from process start)",
            fmt_s(full["shown_s"]),
            fmt_s(empty["shown_s"]),
            f"{fmt_x(full['shown_s'] / empty['shown_s'])} "
            f"(+{fmt_s(full['shown_s'] - empty['shown_s'])})",
        ),
        pair(f"RSS scrolled to the top ({numbers['top_blocks_mounted']} blocks)", "top_rss_mib"),
    ]


CPU_KEY = "stream_cpu"


def echo(p90: float | None, worst: float | None) -> str:
    return f"{fmt_s(p90) if p90 is not None else '—'} / {fmt_s(worst) if worst else '—'}"


def model_rows(numbers: dict[str, Any]) -> list[Row]:
    ours, kimi = numbers["median"][MODEL_OURS], numbers["median"].get(MODEL_KIMI)
    what = "openai/ model, loopback server"

    def compared(label: str, key: str, max_ratio: float | None, mib: bool = False) -> Row:
        show = (lambda v: f"{v:.1f} MiB") if mib else fmt_s
        row = Row(f"{what}: {label}", show(ours[key]))
        if max_ratio is not None:
            row.target, row.verdict = f"<= {max_ratio}x kimi's", "not run (no kimi-cli)"
        if kimi is not None and kimi.get(key):
            ratio = ours[key] / kimi[key]
            row.reference, row.ratio = show(kimi[key]), f"{fmt_x(ratio)} kimi's"
            if max_ratio is not None:
                row.verdict = verdict(ratio <= max_ratio)
        return row

    def alone(label: str, value: str, target: str, ok: bool) -> Row:
        return Row(f"{what}: {label}", value, target=target, verdict=verdict(ok))

    rate, tokens = numbers["rate_per_s"], numbers["tokens"]
    p90, worst = ours["echo_p90_s"], ours["echo_max_s"]
    exit_row = compared("print mode, last token -> exit", "print_exit_s", None)
    exit_row.target = f"<= {PRINT_EXIT_MAX_S} s"
    exit_row.verdict = verdict(ours["print_exit_s"] <= PRINT_EXIT_MAX_S)
    cpu_row = compared(f"app CPU (process tree) while streaming {rate:g} tok/s", CPU_KEY, None)
    cpu_row.ours = f"{ours[CPU_KEY]:.0%} of a core"
    if kimi and kimi.get(CPU_KEY):
        cpu_row.reference = f"{kimi[CPU_KEY]:.0%} of a core"
    cpu_row.target = f"<= {STREAM_CPU_MAX:.0%}"
    cpu_row.verdict = verdict(ours[CPU_KEY] <= STREAM_CPU_MAX)
    echo_row = alone(
        f"key echo while streaming {rate:g} tok/s, p90 / max",
        echo(p90, worst),
        f"p90 <= {ECHO_P90_MAX_RATIO:g}x kimi's, max <= {ECHO_MAX_S * 1000:.0f} ms",
        worst is not None and worst <= ECHO_MAX_S,
    )
    kimi_p90 = kimi.get("echo_p90_s") if kimi else None
    if kimi_p90 and p90 is not None:
        echo_row.reference = echo(kimi_p90, kimi.get("echo_max_s") if kimi else None)
        echo_row.ratio = f"p90 {fmt_x(p90 / kimi_p90)} kimi's"
        ok = p90 <= ECHO_P90_MAX_RATIO * kimi_p90 and worst is not None and worst <= ECHO_MAX_S
        echo_row.verdict = verdict(ok)
    return [
        compared(
            'launch, "hi" + Enter at once -> request', "first_request_s", FIRST_REQUEST_MAX_RATIO
        ),
        compared("that Enter -> request", "enter_to_request_s", None),
        compared("print mode, launch -> request", "print_first_request_s", FIRST_REQUEST_MAX_RATIO),
        exit_row,
        echo_row,
        alone(
            f"{tokens:,} tokens at full speed -> all on screen",
            fmt_s(ours["full_speed_s"]),
            f"<= {FULL_SPEED_MAX_S:g} s",
            ours["full_speed_s"] <= FULL_SPEED_MAX_S,
        ),
        cpu_row,
        Row(
            f"{LITELLM_MODEL} (through litellm): launch, Enter at once -> request",
            fmt_s(ours[LITELLM_FIRST]) if ours.get(LITELLM_FIRST) else "—",
        ),
        compared(
            "idle RSS of the process tree, new session",
            "idle_rss_mib",
            IDLE_RSS_MAX_RATIO,
            mib=True,
        ),
    ]


def fmt_rate(value: float) -> str:
    return f"{value / 1000:.0f} kB/s"


@dataclass(frozen=True, slots=True)
class FieldRow:
    """One row of issue 31's table: how to show a contestant's medians, the goal, the check."""

    label: str
    show: Callable[[dict[str, Any]], str | None]
    goal: str = "—"
    passes: Callable[[dict[str, Any], dict[str, Any] | None], bool] | None = None


def _get(key: str, fmt: Callable[[float], str]) -> Callable[[dict[str, Any]], str | None]:
    return lambda m: fmt(m[key]) if m.get(key) is not None else None


def _pair(a: str, b: str, fmt: Callable[[float], str]) -> Callable[[dict[str, Any]], str | None]:
    def show(m: dict[str, Any]) -> str | None:
        if m.get(a) is None and m.get(b) is None:
            return None
        return " / ".join(fmt(m[k]) if m.get(k) is not None else "—" for k in (a, b))

    return show


def _at_most(key: str, limit: float) -> Callable[[dict[str, Any], dict[str, Any] | None], bool]:
    return lambda ours, kimi: ours.get(key) is not None and ours[key] <= limit


def field_rows(rate: float, tokens: int) -> list[FieldRow]:
    def rss_ok(ours: dict[str, Any], kimi: dict[str, Any] | None) -> bool:
        if not kimi or not kimi.get("idle_rss_mib") or ours.get("idle_rss_mib") is None:
            return False
        return bool(ours["idle_rss_mib"] <= 1.1 * kimi["idle_rss_mib"])

    def echo_ok(ours: dict[str, Any], kimi: dict[str, Any] | None) -> bool:
        p90, worst = ours.get("echo_p90_s"), ours.get("echo_max_s")
        return p90 is not None and worst is not None and p90 <= 0.04 and worst <= 0.06

    return [
        FieldRow(
            "launch -> first frame / prompt ready",
            _pair("first_frame_s", "ready_s", fmt_s),
            "<= 350 ms",
            _at_most("ready_s", 0.35),
        ),
        FieldRow(
            "launch -> every pane drawn (Conversation, Checkpoints, History)",
            _get("every_pane_s", fmt_s),
            "<= 350 ms",
            _at_most("every_pane_s", 0.35),
        ),
        FieldRow(
            "launch -> first request",
            _get("first_request_s", fmt_s),
            "<= 800 ms",
            _at_most("first_request_s", 0.8),
        ),
        FieldRow(
            '"hi" on screen -> Enter -> request',
            _get("enter_request_s", fmt_s),
            "<= 200 ms",
            _at_most("enter_request_s", 0.2),
        ),
        FieldRow(
            f"key echo while streaming {rate:g} tok/s, p90 / max",
            _pair("echo_p90_s", "echo_max_s", fmt_s),
            "<= 40 / 60 ms",
            echo_ok,
        ),
        FieldRow(
            f"{tokens:,} tokens at full speed: sent -> end on screen",
            # A contestant that streamed (it has an echo) but has no time never drew the end.
            lambda m: (
                fmt_s(m["full_speed_s"])
                if m.get("full_speed_s")
                else ("never drawn" if m.get("echo_p90_s") is not None else None)
            ),
            "<= 500 ms",
            _at_most("full_speed_s", 0.5),
        ),
        FieldRow(
            f"CPU of the process tree at {rate:g} tok/s",
            _get("stream_cpu", lambda v: f"{v:.0%}"),
            "<= 20%",
            _at_most("stream_cpu", 0.2),
        ),
        FieldRow(
            f"bytes to the terminal at {rate:g} tok/s",
            _get("bytes_per_s", fmt_rate),
            "<= 60 kB/s",
            _at_most("bytes_per_s", 60_000),
        ),
        FieldRow(
            f"synchronized updates (ESC[?2026h) at {rate:g} tok/s",
            _get("sync_per_s", lambda v: f"{v:.1f}/s"),
        ),
        FieldRow(
            f"tmux server CPU at {rate:g} tok/s (parsing what was written)",
            _get("tmux_cpu", lambda v: f"{v:.0%}"),
        ),
        FieldRow(
            "idle RSS of the process tree",
            _get("idle_rss_mib", lambda v: f"{v:.0f} MiB"),
            "<= 1.1x kimi's",
            rss_ok,
        ),
    ]


def tmux_rows(numbers: dict[str, Any]) -> list[Row]:
    medians = numbers["median"]
    ours, kimi = medians.get(TMUX_OURS), medians.get(TMUX_KIMI)
    if ours is None:
        return [Row("tmux, 120x36: kode-tui did not run", "—")]
    rows = []
    for spec in field_rows(numbers["rate_per_s"], numbers["tokens"]):
        row = Row(f"tmux, 120x36: {spec.label}", spec.show(ours) or "—", target=spec.goal)
        reference = kimi if kimi is not None else None
        if spec.label.startswith("launch -> every pane"):
            bare = medians.get(TMUX_BARE)
            row.reference = f"{fmt_s(bare['ready_s'])} (bare Textual app)" if bare else "—"
        elif reference is not None:
            row.reference = f"{spec.show(reference) or '—'} (kimi-cli)"
        if spec.passes is not None:
            row.verdict = verdict(spec.passes(ours, kimi))
        rows.append(row)
    return rows


def field_table(numbers: dict[str, Any]) -> list[str]:
    """Issue 31's side-by-side table: every contestant of the same run, the goal, our verdict."""
    medians = numbers["median"]
    names = [n for n in FIELD_ORDER if n in medians]
    head = ["row", *names, "goal: best in the field", "kode-tui"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for spec in field_rows(numbers["rate_per_s"], numbers["tokens"]):
        cells = [spec.show(medians[n]) or "—" for n in names]
        ok = "—"
        if spec.passes is not None and TMUX_OURS in medians:
            ok = verdict(spec.passes(medians[TMUX_OURS], medians.get(TMUX_KIMI)))
        lines.append("| " + " | ".join([spec.label, *cells, spec.goal, ok]) + " |")
    for name, why in numbers.get("skipped", {}).items():
        lines.append(f"\n{name}: skipped, {why}.")
    return lines


def snapshot_rows(numbers: dict[str, Any]) -> list[Row]:
    what = f"Shell call's two snapshots, {numbers['files']:,}-file repo"
    git_s, walk_s = numbers["git_call_s"], numbers["walk_call_s"]
    target = f"<= {SNAPSHOT_CALL_MAX_S * 1000:.0f} ms"
    return [
        Row(
            f"{what} (git repo)",
            fmt_s(git_s),
            target=target,
            verdict=verdict(git_s <= SNAPSHOT_CALL_MAX_S),
        ),
        Row(f"{what} (plain folder)", fmt_s(walk_s)),
        Row(
            f"{what}: first snapshot (git repo / plain, a work dir's first session)",
            f"{fmt_s(numbers['git_baseline_s'])} / {fmt_s(numbers['walk_baseline_s'])}",
        ),
        Row(
            f"{what}: first snapshot (git repo / plain, a later session)",
            f"{fmt_s(numbers['git_next_baseline_s'])} / {fmt_s(numbers['walk_next_baseline_s'])}",
        ),
    ]


def sandbox_rows(numbers: dict[str, Any]) -> list[Row]:
    what = f"Shell call in the sandbox, {numbers['files']:,}-file repo"
    plain = numbers["plain_call_s"]
    target = f"<= +{SANDBOX_EXTRA_MAX_S * 1000:.0f} ms"
    return [
        Row(
            f"{what} ({name})",
            fmt_s(numbers[f"{key}_call_s"]),
            reference=f"{fmt_s(plain)} (no sandbox)",
            ratio=f"+{numbers[f'{key}_extra_s'] * 1000:.1f} ms",
            target=target,
            verdict=verdict(numbers[f"{key}_extra_s"] <= SANDBOX_EXTRA_MAX_S),
        )
        for key, name in (("workspace", "ask/auto-edit/sandbox"), ("open", "yolo"))
    ]


ROWS: dict[str, Callable[[dict[str, Any]], list[Row]]] = {
    "context": context_rows,
    "tui": tui_rows,
    "stream": stream_rows,
    "history": history_rows,
    "memory": memory_rows,
    "model": model_rows,
    "snapshot": snapshot_rows,
    "sandbox": sandbox_rows,
    "tmux": tmux_rows,
}


# --- the machine ---------------------------------------------------------------------------------


def read_text(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def machine() -> dict[str, str]:
    cpu = re.search(r"^model name\s*:\s*(.+)$", read_text("/proc/cpuinfo"), re.M)
    ram = re.search(r"^MemTotal:\s+(\d+) kB", read_text("/proc/meminfo"), re.M)
    os_name = re.search(r'^PRETTY_NAME="?([^"\n]+)', read_text("/etc/os-release"), re.M)
    textual = subprocess.run(
        [sys.executable, "-c", "import importlib.metadata as m; print(m.version('textual'))"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    commit = subprocess.run(
        ["git", "-C", str(REPO), "describe", "--always", "--dirty"], capture_output=True, text=True
    ).stdout.strip()
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu.group(1).strip() if cpu else platform.processor() or "unknown",
        "cores": str(os.cpu_count()),
        "ram": f"{int(ram.group(1)) / 1024**2:.1f} GiB" if ram else "unknown",
        "os": f"{os_name.group(1) if os_name else platform.system()} (kernel {platform.release()})",
        "python": platform.python_version(),
        "textual": textual or "unknown",
        "commit": commit or "unknown",
    }


def kimi_version(python: Path) -> str | None:
    """kimi-cli's version in `python` (and that Python's), or None when it cannot import it."""
    code = (
        "import importlib.metadata as m, platform, kimi_cli; "
        "print(m.version('kimi-cli'), 'on Python', platform.python_version())"
    )
    try:
        done = subprocess.run([str(python), "-c", code], capture_output=True, text=True)
    except OSError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def find_kimi(args: argparse.Namespace) -> tuple[Path | None, str]:
    """The Python with kimi-cli to compare with, and a line saying what was found."""
    if args.no_kimi:
        return None, "not used (--no-kimi)"
    if args.kimi:
        python, source = args.kimi, "--kimi"
    elif os.environ.get(KIMI_ENV):
        python, source = Path(os.environ[KIMI_ENV]), f"${KIMI_ENV}"
    else:
        python, source = DEFAULT_KIMI, "the default place"
    if not os.access(python, os.X_OK):
        return None, f"not found ({python}, {source}): engine and model rows show kode-tui alone"
    version = kimi_version(python)
    if version is None:
        return (
            None,
            f"not found ({python} cannot import kimi_cli): "
            "engine and model rows show kode-tui alone",
        )
    return python, f"kimi-cli {version} ({python}, {source})"


# --- running -------------------------------------------------------------------------------------


def commands(args: argparse.Namespace, kimi: Path | None, out: Path) -> dict[str, list[str]]:
    """Each benchmark's command line; each writes its numbers to OUT/<name>.json."""
    stream = ["--tokens", str(args.tokens), "--rate", str(args.rate)]
    options = {
        "context": ["--runs", str(args.context_runs), "--turns", f"500,{ISSUE_TURNS}"],
        "tui": ["--runs", str(args.tui_runs)],
        "stream": stream,
        "history": ["--runs", str(args.history_runs)],
        "memory": ["--runs", str(args.memory_runs)],
        "model": ["--runs", str(args.model_runs), *stream],
        "snapshot": ["--runs", str(args.snapshot_runs)],
        "sandbox": ["--runs", str(args.snapshot_runs)],
        "tmux": ["--runs", str(args.tmux_runs), *stream],
    }
    if args.peers is not None:
        options["tmux"] += ["--peers", str(args.peers)]
    if kimi is not None:
        for name in USES_KIMI:
            options[name] += ["--kimi", str(kimi)]
    return {
        name: [
            sys.executable,
            str(BENCH / f"bench_{name}.py"),
            *extra,
            "--json",
            str(out / f"{name}.json"),
        ]
        for name, extra in options.items()
    }


def run_one(name: str, argv: list[str], out: Path) -> Outcome:
    shown = " ".join(Path(a).name if a == sys.executable else a for a in argv)
    shown = shown.replace(str(REPO) + "/", "").replace(str(out) + "/", "")
    print(f"\n=== {name}: {shown}", flush=True)
    start = time.monotonic()
    code = subprocess.run(argv, cwd=REPO).returncode  # its output goes straight to ours
    seconds = time.monotonic() - start
    result = out / f"{name}.json"
    numbers = json.loads(result.read_text()) if code == 0 and result.exists() else None
    print(f"=== {name}: {'done' if numbers else f'FAILED (exit {code})'} in {seconds:.0f} s")
    return Outcome(name, argv, seconds, code, numbers)


# --- the table -----------------------------------------------------------------------------------


def table(rows: list[Row]) -> list[str]:
    head = ("metric", "ours (median)", "reference (same run)", "ratio", "target", "verdict")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = (r.metric, r.ours, r.reference, r.ratio, r.target, r.verdict)
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def report(facts: dict[str, str], kimi_line: str, outcomes: list[Outcome], total: float) -> str:
    rows: list[Row] = []
    for outcome in outcomes:
        if outcome.numbers is None:
            rows.append(Row(f"{outcome.name}: the benchmark failed (exit {outcome.code})", "—"))
            continue
        try:
            rows += ROWS[outcome.name](outcome.numbers)
        except (KeyError, TypeError, ZeroDivisionError) as error:
            rows.append(Row(f"{outcome.name}: unreadable results ({error!r})", "—"))
    verdicts = [r.verdict for r in rows if r.verdict in ("PASS", "FAIL")]
    lines = [
        f"- date: {facts['date']}",
        f"- machine: {facts['cpu']}, {facts['cores']} cores, {facts['ram']} RAM",
        f"- OS: {facts['os']}",
        f"- Python {facts['python']}, Textual {facts['textual']}, kode-tui {facts['commit']}",
        f"- kimi-cli: {kimi_line}",
        "",
        *table(rows),
        "",
        *field_section(outcomes),
        "References: Kimi CLI's `Context` on the same file for the engine rows, "
        "`bench/minimal_app.py` for the first frame, a session holding only the last exchange "
        "for the memory rows, Kimi CLI against the same loopback server for the model rows. "
        f"{verdicts.count('PASS')} PASS, {verdicts.count('FAIL')} FAIL; "
        f"the whole run took {f'{total / 60:.1f} min' if total >= 60 else f'{total:.0f} s'} "
        f"({', '.join(f'{o.name} {o.seconds:.0f} s' for o in outcomes)}).",
    ]
    return "\n".join(lines)


def field_section(outcomes: list[Outcome]) -> list[str]:
    """The tmux benchmark's side-by-side table, when it ran."""
    for outcome in outcomes:
        if outcome.name == "tmux" and outcome.numbers is not None:
            try:
                return [
                    "In tmux (120x36) against one loopback server, medians of "
                    f"{outcome.numbers['runs']} runs, alternating:",
                    "",
                    *field_table(outcome.numbers),
                    "",
                ]
            except (KeyError, TypeError) as error:
                return [f"tmux: unreadable results ({error!r})", ""]
    return []


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--kimi", type=Path, metavar="PYTHON", help=f"a Python with kimi-cli (else ${KIMI_ENV})"
    )
    which.add_argument("--no-kimi", action="store_true", help="measure kode-tui alone")
    parser.add_argument("--markdown", type=Path, metavar="OUT", help="write the table to OUT too")
    parser.add_argument("--json", type=Path, metavar="OUT", help="write every number as JSON")
    parser.add_argument(
        "--only",
        default=",".join(BENCHMARKS),
        help="comma-separated benchmarks to run (default: %(default)s)",
    )
    parser.add_argument("--context-runs", type=int, default=5, metavar="N")
    parser.add_argument("--tui-runs", type=int, default=9, metavar="N")
    parser.add_argument("--history-runs", type=int, default=3, metavar="N")
    parser.add_argument("--memory-runs", type=int, default=3, metavar="N")
    parser.add_argument("--model-runs", type=int, default=3, metavar="N")
    parser.add_argument("--snapshot-runs", type=int, default=15, metavar="N")
    parser.add_argument("--tmux-runs", type=int, default=3, metavar="N")
    parser.add_argument(
        "--peers", type=Path, metavar="DIR", help=f"where the peers are (else ${PEERS_ENV})"
    )
    parser.add_argument("--tokens", type=int, default=20_000, help="streamed tokens")
    parser.add_argument("--rate", type=float, default=300.0, help="tokens per second")
    args = parser.parse_args(argv)
    args.only = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = sorted(set(args.only) - set(BENCHMARKS))
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; choose from {BENCHMARKS}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    start = time.monotonic()
    facts = machine()
    uses_kimi = set(USES_KIMI) & set(args.only)
    kimi, kimi_line = find_kimi(args) if uses_kimi else (None, "not needed")
    print(f"kimi-cli: {kimi_line}", flush=True)
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="kode-bench-all-") as tmp:
        out = Path(tmp)
        argvs = commands(args, kimi, out)
        for name in (name for name in BENCHMARKS if name in args.only):
            outcomes.append(run_one(name, argvs[name], out))
    text = report(facts, kimi_line, outcomes, time.monotonic() - start)
    print("\n## Results\n\n" + text)
    if args.markdown:
        args.markdown.write_text(text + "\n")
    if args.json:
        raw = {
            "machine": facts,
            "kimi": kimi_line,
            "benchmarks": {
                o.name: {"argv": o.argv, "seconds": o.seconds, "exit": o.code, "numbers": o.numbers}
                for o in outcomes
            },
        }
        args.json.write_text(json.dumps(raw, indent=2) + "\n")
    return 0 if all(o.numbers is not None for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
