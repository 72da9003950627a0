"""Time kode-tui's `Context` against Kimi CLI's on the same generated context files.

usage: .venv/bin/python bench/bench_context.py [--turns 500,5000] [--runs 5]
                                               [--kimi PYTHON] [--shared DIR] [--json OUT]

Every measurement runs in a fresh process, so imports, page cache and RSS start alike for both
engines; with --kimi, our runs and Kimi's alternate so that machine noise hits both. The table
shows medians (min-max) and the ratios of medians next to the targets of the issue.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Any, Literal

REPO = Path(__file__).resolve().parent.parent
DATA_DIR = REPO / "bench" / ".data"
DEFAULT_SHARED = REPO.parent / "shared" / "bench"
ISSUE_TURNS = 5000  # the ~70 MB file, on which the issue states the revert target
APPENDS = 500  # as many as kimi_ref.py appends

OURS, KIMI = "kode-tui", "kimi-cli"

# The restore-only process whose peak RSS is compared: the same few lines for both engines, so
# the difference is the engine and what it imports, nothing else.
RESTORE_ONLY = """\
import asyncio, sys
from pathlib import Path
from {module} import Context
asyncio.run(Context(Path(sys.argv[1])).restore())
"""
OURS_MODULE = "kode_tui.session.context"
KIMI_MODULE = "kimi_cli.soul.context"


@dataclass(frozen=True, slots=True)
class Metric:
    key: str
    label: str
    unit: Literal["s", "/s", "MiB"]
    kimi_key: str | None  # Kimi's number to compare with, if it has one
    target: float | None = None  # the ratio the issue asks for, if any
    target_text: str = ""
    target_turns: int | None = None  # the file the target is stated for (None: every file)

    @property
    def higher_is_better(self) -> bool:
        return self.unit == "/s"


METRICS = (
    Metric("restore_s", "restore()", "s", "restore_s", 30, ">= 30x faster"),
    Metric("revert_s", "revert_to(middle)", "s", "revert_s", 200, ">= 200x faster", ISSUE_TURNS),
    Metric(
        "append_per_s",
        f"append_message x{APPENDS}",
        "/s",
        "append_per_s",
        10,
        ">= 10x records/s",
    ),
    Metric("rss_restore_mib", "peak RSS, restore only", "MiB", "rss_restore_mib", 1, "<= kimi's"),
    # Transparency: our restore leaves message bodies unparsed and Kimi's parses every one, so
    # Kimi's restore is what these rows compare with.
    Metric("restore_parse_all_s", "restore + parse every msg", "s", "restore_s"),
    Metric("materialise_s", "  of which parsing history", "s", None),
    Metric("rss_parsed_mib", "peak RSS, every msg parsed", "MiB", "rss_restore_mib"),
)


class BenchError(Exception):
    """Something the user can fix (a path, a missing tool); shown as one line."""


@dataclass(slots=True)
class Child:
    stdout: str
    max_rss_mib: float


@dataclass(slots=True)
class FileResult:
    turns: int
    path: Path
    size_bytes: int
    runs: dict[str, list[dict[str, float]]] = field(default_factory=dict)


# --- children ------------------------------------------------------------------------------------


def fresh_copy(source: Path, parent: Path | None = None) -> Path:
    """`source` as `context.jsonl` in a new temp dir (under `parent`, else TMPDIR), fsynced.

    A real session's file is durable at the end of each turn (`Context.sync`), so the file is
    synced before timing starts: otherwise the fsyncs inside our revert would also flush the
    copy's dirty pages, a cost no real revert pays.
    """
    live = Path(tempfile.mkdtemp(prefix="run-", dir=parent)) / "context.jsonl"
    shutil.copyfile(source, live)
    with live.open("rb") as f:
        os.fsync(f.fileno())
    return live


async def time_ours(live: Path) -> dict[str, float]:
    """What kimi_ref.py times, in the same order, on our engine."""
    # Only the children import the engine; the parent stays light.
    from kode_tui.message import Message
    from kode_tui.session.context import Context

    ctx = Context(live)
    start = perf_counter()
    await ctx.restore()
    restore_s = perf_counter() - start
    messages, checkpoints = len(ctx.history), ctx.n_checkpoints
    start = perf_counter()
    await ctx.revert_to(checkpoints // 2)
    revert_s = perf_counter() - start
    start = perf_counter()
    for i in range(APPENDS):
        await ctx.append_message(Message(role="user", content=f"message {i}"))
    append_per_s = APPENDS / (perf_counter() - start)
    await ctx.close()
    return {
        "messages": messages,
        "checkpoints": checkpoints,
        "restore_s": restore_s,
        "revert_s": revert_s,
        "append_per_s": append_per_s,
    }


async def time_parse_all(live: Path) -> dict[str, float]:
    """Restore, then read every message of the history (each is parsed on first read)."""
    from kode_tui.session.context import Context

    ctx = Context(live)
    start = perf_counter()
    await ctx.restore()
    restored = perf_counter()
    for _ in ctx.history:
        pass
    materialise_s = perf_counter() - restored
    await ctx.close()
    return {
        "restore_parse_all_s": restored - start + materialise_s,
        "materialise_s": materialise_s,
    }


def run_as_child(kind: str, source: str) -> None:
    timer = {"timing": time_ours, "parse-all": time_parse_all}[kind]
    live = fresh_copy(Path(source))
    try:
        print(json.dumps(asyncio.run(timer(live))))
    finally:
        shutil.rmtree(live.parent)


# --- the parent ----------------------------------------------------------------------------------


class Runner:
    """Spawns every measured process in a scratch root that stands in for HOME and TMPDIR."""

    def __init__(self, root: Path, kimi_python: Path | None, shared: Path) -> None:
        self.root = root
        self.kimi_python = kimi_python
        self.shared = shared
        for name in ("home", "tmp"):
            (root / name).mkdir()
        self.env = {
            **os.environ,
            "HOME": str(root / "home"),
            "KODE_TUI_HOME": str(root / "home" / ".kode-tui"),
            "KIMI_SHARE_DIR": str(root / "home" / ".kimi"),
            "TMPDIR": str(root / "tmp"),
        }

    def spawn(self, argv: list[str], what: str) -> Child:
        """Run `argv` to its end; its own peak RSS comes from wait4, not from its children."""
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            pid = os.posix_spawn(
                argv[0],
                argv,
                self.env,
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, out.fileno(), 1),
                    (os.POSIX_SPAWN_DUP2, err.fileno(), 2),
                ],
            )
            _, status, usage = os.wait4(pid, 0)
            out.seek(0)
            err.seek(0)
            stdout, stderr = out.read().decode(), err.read().decode(errors="replace")
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            tail = " | ".join(stderr.strip().splitlines()[-3:])
            raise BenchError(f"{what} failed (exit {code}): {tail}")
        # ru_maxrss is in KiB on Linux, in bytes on macOS.
        scale = 1024 * 1024 if sys.platform == "darwin" else 1024
        return Child(stdout, usage.ru_maxrss / scale)

    def restore_only_rss(self, python: str, module: str, source: Path, what: str) -> float:
        live = fresh_copy(source, self.root / "tmp")
        try:
            code = RESTORE_ONLY.format(module=module)
            return self.spawn([python, "-c", code, str(live)], what).max_rss_mib
        finally:
            shutil.rmtree(live.parent)

    def ours_child(self, kind: str, source: Path) -> Child:
        return self.spawn([sys.executable, __file__, "--child", kind, str(source)], f"our {kind}")

    def ours(self, source: Path) -> dict[str, float]:
        run: dict[str, float] = json.loads(self.ours_child("timing", source).stdout)
        parsed = self.ours_child("parse-all", source)
        run |= json.loads(parsed.stdout)
        run["rss_parsed_mib"] = parsed.max_rss_mib
        run["rss_restore_mib"] = self.restore_only_rss(
            sys.executable, OURS_MODULE, source, "our restore-only process"
        )
        return run

    def kimi(self, source: Path) -> dict[str, float]:
        assert self.kimi_python is not None
        python = str(self.kimi_python)
        out = self.spawn([python, str(self.shared / "kimi_ref.py"), str(source)], "kimi_ref.py")
        run = parse_kimi_line(out.stdout)
        run["rss_restore_mib"] = self.restore_only_rss(
            python, KIMI_MODULE, source, "Kimi's restore-only process"
        )
        return run


def parse_kimi_line(stdout: str) -> dict[str, float]:
    """`kimi-cli messages=.. checkpoints=.. restore_s=.. revert_s=.. append_per_s=..`"""
    for line in stdout.splitlines():
        if line.startswith("kimi-cli "):
            return {key: float(value) for key, value in re.findall(r"(\w+)=([\d.]+)", line)}
    raise BenchError(f"kimi_ref.py printed no result line: {stdout.strip()!r}")


def context_file(turns: int, shared: Path) -> Path:
    """The generated file for `turns`, made once and kept in bench/.data/."""
    path = DATA_DIR / f"context-{turns}.jsonl"
    if path.exists():
        return path
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    print(f"generating {path.name} ...", file=sys.stderr)
    subprocess.run(
        [sys.executable, str(shared / "gen_context.py"), str(partial), str(turns)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    partial.replace(path)  # a killed generation never passes for a cached file
    return path


def bench_file(runner: Runner, turns: int, runs: int) -> FileResult:
    path = context_file(turns, runner.shared)
    result = FileResult(turns, path, path.stat().st_size)
    engines = [OURS] + ([KIMI] if runner.kimi_python else [])
    result.runs = {engine: [] for engine in engines}
    for i in range(runs):
        print(f"{turns} turns: run {i + 1}/{runs}", file=sys.stderr)
        result.runs[OURS].append(runner.ours(path))
        if runner.kimi_python:
            result.runs[KIMI].append(runner.kimi(path))
    return result


# --- the report ----------------------------------------------------------------------------------


def spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def summarise(result: FileResult) -> dict[str, dict[str, Any]]:
    summary: dict[str, dict[str, Any]] = {}
    for metric in METRICS:
        row: dict[str, Any] = {OURS: spread([run[metric.key] for run in result.runs[OURS]])}
        if KIMI in result.runs and metric.kimi_key:
            row[KIMI] = spread([run[metric.kimi_key] for run in result.runs[KIMI]])
            ours, kimi = row[OURS]["median"], row[KIMI]["median"]
            # Above 1 means kode-tui is better, whichever way the metric points.
            row["ratio"] = ours / kimi if metric.higher_is_better else kimi / ours
            applies = metric.target_turns in (None, result.turns)
            if metric.target is not None and applies:
                row["target"] = metric.target
                row["pass"] = row["ratio"] >= metric.target
        summary[metric.key] = row
    return summary


def fmt_spread(stats: dict[str, float], unit: str) -> str:
    """`median (min-max)`, all three in the median's unit."""
    median, low, high = stats["median"], stats["min"], stats["max"]
    if unit == "MiB":
        return f"{median:.1f} MiB ({low:.1f}-{high:.1f})"
    if unit == "/s":
        return f"{median:,.0f}/s ({low:,.0f}-{high:,.0f})"
    if median < 1:
        return f"{median * 1e3:.1f} ms ({low * 1e3:.1f}-{high * 1e3:.1f})"
    return f"{median:.2f} s ({low:.2f}-{high:.2f})"


def fmt_ratio(ratio: float) -> str:
    return f"{ratio:.2f}x" if ratio < 10 else f"{ratio:.1f}x"


def file_header(result: FileResult, runs: int) -> str:
    first = result.runs[OURS][0]
    return (
        f"{result.turns} turns: {result.path.name}, {result.size_bytes / 1e6:.1f} MB, "
        f"{first['messages']:.0f} messages, {first['checkpoints']:.0f} checkpoints, runs: {runs}"
    )


def render_file(result: FileResult, summary: dict[str, dict[str, Any]], runs: int) -> list[str]:
    with_kimi = KIMI in result.runs
    lines = [file_header(result, runs)]
    header = f"  {'metric':<28} {OURS + ' median (min-max)':<34}"
    if with_kimi:
        header += f" {KIMI + ' median (min-max)':<34} {'ratio':>8}  {'target':<17} verdict"
    lines.append(header.rstrip())
    for metric in METRICS:
        row = summary[metric.key]
        line = f"  {metric.label:<28} {fmt_spread(row[OURS], metric.unit):<34}"
        if KIMI in row:
            line += f" {fmt_spread(row[KIMI], metric.unit):<34} {fmt_ratio(row['ratio']):>8}"
            if "target" in row:
                line += f"  {metric.target_text:<17} {'PASS' if row['pass'] else 'FAIL'}"
        lines.append(line.rstrip())
    if with_kimi:
        lines.extend(count_mismatches(result))
    return lines


def count_mismatches(result: FileResult) -> list[str]:
    """Both engines must have read the same file the same way, or the ratios mean nothing."""
    ours, kimi = result.runs[OURS][0], result.runs[KIMI][0]
    return [
        f"  WARNING: {key}: kode-tui read {ours[key]:.0f}, kimi-cli read {kimi[key]:.0f}"
        for key in ("messages", "checkpoints")
        if ours[key] != kimi[key]
    ]


def python_version(python: str) -> str:
    code = "import platform; print(platform.python_version())"
    return subprocess.run([python, "-c", code], capture_output=True, text=True).stdout.strip()


def package_version(python: str, package: str) -> str:
    code = f"import importlib.metadata as m; print(m.version({package!r}))"
    done = subprocess.run([python, "-c", code], capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


def machine_facts(kimi_python: Path | None) -> dict[str, Any]:
    cpu_model = ""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        found = re.search(r"^model name\s*:\s*(.+)$", cpuinfo.read_text(), re.MULTILINE)
        cpu_model = found.group(1) if found else ""
    commit = subprocess.run(
        ["git", "-C", str(REPO), "describe", "--always", "--dirty"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    facts: dict[str, Any] = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu_model,
        "kode_tui_commit": commit,
        "kode_tui_python": f"{platform.python_version()} ({sys.executable})",
    }
    if kimi_python:
        facts["kimi_python"] = f"{python_version(str(kimi_python))} ({kimi_python})"
        facts["kimi_cli_version"] = package_version(str(kimi_python), "kimi-cli")
    return facts


def render(facts: dict[str, Any], results: list[FileResult], runs: int) -> str:
    lines = [f"{key}: {value}" for key, value in facts.items()]
    for result in results:
        lines += ["", *render_file(result, summarise(result), runs)]
    if any(KIMI in result.runs for result in results):
        lines += [
            "",
            "ratio: kimi/ours for times and RSS, ours/kimi for appends/s; above 1x kode-tui is "
            "better. Rows without a target are for transparency (Kimi's restore parses every "
            "message, ours leaves message bodies unparsed until read).",
        ]
    return "\n".join(lines)


def to_json(facts: dict[str, Any], results: list[FileResult]) -> dict[str, Any]:
    return {
        "machine": facts,
        "appends_per_run": APPENDS,
        "files": [
            {
                "turns": result.turns,
                "file": str(result.path),
                "size_bytes": result.size_bytes,
                "runs": result.runs,
                "summary": summarise(result),
            }
            for result in results
        ],
    }


# --- command line --------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--turns",
        default=f"500,{ISSUE_TURNS}",
        help="comma-separated turn counts of the generated files (default: %(default)s)",
    )
    parser.add_argument("--runs", type=int, default=5, help="runs per file (default: 5)")
    parser.add_argument(
        "--kimi", type=Path, metavar="PYTHON", help="a Python with kimi-cli (setup_kimi.sh)"
    )
    parser.add_argument(
        "--shared",
        type=Path,
        default=DEFAULT_SHARED,
        metavar="DIR",
        help="where gen_context.py and kimi_ref.py are (default: %(default)s)",
    )
    parser.add_argument("--json", type=Path, metavar="OUT", help="write raw numbers as JSON")
    parser.add_argument("--child", nargs=2, metavar=("KIND", "FILE"), help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def check_setup(args: argparse.Namespace) -> list[int]:
    if not (args.shared / "gen_context.py").is_file():
        raise BenchError(f"no gen_context.py in {args.shared} (point --shared at shared/bench)")
    if args.kimi:
        if not os.access(args.kimi, os.X_OK):
            raise BenchError(f"--kimi {args.kimi} is not an executable Python (see setup_kimi.sh)")
        if not (args.shared / "kimi_ref.py").is_file():
            raise BenchError(f"no kimi_ref.py in {args.shared} (point --shared at shared/bench)")
    if args.runs < 1:
        raise BenchError("--runs must be at least 1")
    try:
        turns = [int(part) for part in args.turns.split(",")]
    except ValueError:
        raise BenchError(f"--turns wants numbers like 500,5000, not {args.turns!r}") from None
    if any(n < 1 for n in turns):
        raise BenchError("--turns must all be positive")
    return turns


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        run_as_child(*args.child)
        return 0
    try:
        turns = check_setup(args)
        facts = machine_facts(args.kimi)
        with tempfile.TemporaryDirectory(prefix="kode-bench-") as root:
            runner = Runner(Path(root), args.kimi, args.shared)
            results = [bench_file(runner, n, args.runs) for n in turns]
    except (BenchError, subprocess.CalledProcessError) as error:
        print(f"bench: {error}", file=sys.stderr)
        return 1
    facts["files"] = ", ".join(f"{r.path.name} {r.size_bytes:,} bytes" for r in results)
    print(render(facts, results, args.runs))
    if args.json:
        args.json.write_text(json.dumps(to_json(facts, results), indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
