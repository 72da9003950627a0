"""Memory of a 10k-message conversation rendered in the real UI, against an empty session.

usage: .venv/bin/python bench/bench_memory.py [--turns 1502] [--runs 3] [--json OUT]

The session is made the way bench_tui.py makes its 500-turn one (`gen_context.py`, then a
last question and an answer holding a marker): 1502 turns are 10,001 messages (about 21 MB).
Each measurement is a fresh child process that does what `kode-tui --session-dir DIR` does,
headless at 120x36: restore the context, start the real `KodeApp` (demo model) on it, and wait
until the agent is up and the marker, the last message, is on screen. It then reads its own
VmRSS (resident now) and VmHWM (the peak) from /proc/self/status. The baseline child opens a
session holding only that last exchange the same way, so the difference between the two is
what the 10k messages cost. The children alternate and run with HOME, KODE_TUI_HOME and TMPDIR
in a scratch directory. Prints medians; `--json OUT` writes them and every raw run.
"""

from __future__ import annotations

import argparse
import asyncio
import html
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).parent))
from bench_tui import END_MARKER, make_session  # noqa: E402

SIZE = (120, 36)
SETTLE_S = 0.3
"""Pause after the last message is on screen, before reading RSS (timers and workers end)."""
TIMEOUT_S = 120.0
KINDS = ("empty", "full")


# --- the child -----------------------------------------------------------------------------------


def proc_status_mib(field: str) -> float:
    """A `VmRSS`-style line of /proc/self/status, in MiB."""
    found = re.search(rf"^{field}:\s+(\d+) kB", Path("/proc/self/status").read_text(), re.M)
    if found is None:
        raise RuntimeError(f"no {field} in /proc/self/status")
    return int(found.group(1)) / 1024


async def open_and_render(session_dir: Path, work_dir: Path) -> dict[str, float]:
    """What `kode-tui --session-dir DIR WORK_DIR` does, headless, with timestamps (monotonic)."""
    from kode_tui.soul.facade import AgentSession, Session
    from kode_tui.ui.app import KodeApp
    from kode_tui.ui.screens.main import MainScreen
    from kode_tui.ui.widgets.conversation import Conversation

    imported = time.monotonic()
    session = await Session.from_dir(session_dir)
    opened = await AgentSession.open(work_dir, session)
    restored = time.monotonic()
    messages = len(opened.travel.timeline().history)
    app = KodeApp(opened.work_dir, model="demo", opened=opened)

    def on_screen() -> bool:
        svg = app.export_screenshot()
        return END_MARKER in html.unescape(re.sub(r"<[^>]+>", "", svg))

    try:
        async with app.run_test(size=SIZE) as pilot:
            deadline = time.monotonic() + TIMEOUT_S
            while not (
                isinstance(app.screen, MainScreen)
                and app.screen.attached
                and app.agent_session is not None
                and app.agent_session.started
                and on_screen()
            ):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the last message was not on screen in {TIMEOUT_S} s")
                await pilot.pause(0.02)
            shown = time.monotonic()
            await pilot.pause(SETTLE_S)
            conversation = app.screen.query_one(Conversation)
            result = {
                "messages": messages,
                "imported_at": imported,
                "restored_at": restored,
                "shown_at": shown,
                "rss_mib": proc_status_mib("VmRSS"),
                "hwm_mib": proc_status_mib("VmHWM"),
                "blocks_mounted": len(conversation.blocks),
                "blocks_pending": conversation.pending_count,
                "messages_hidden": conversation.hidden_count,
            }
            # Home: the first message, with a full window of blocks mounted below it.
            start = time.monotonic()
            await app.run_action("first", conversation)
            if conversation.pending_count:
                raise RuntimeError("Home did not reach the first message")
            result["top_s"] = time.monotonic() - start
            await pilot.pause(SETTLE_S)
            result["top_rss_mib"] = proc_status_mib("VmRSS")
            result["top_hwm_mib"] = proc_status_mib("VmHWM")
            result["top_blocks_mounted"] = len(conversation.blocks)
            await app.action_quit()
    finally:
        await opened.close()
    return result


def run_as_child(session_dir: str, work_dir: str) -> None:
    print(json.dumps(asyncio.run(open_and_render(Path(session_dir), Path(work_dir)))))


# --- the parent ----------------------------------------------------------------------------------


def scratch_env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(
        HOME=str(root / "home"),
        KODE_TUI_HOME=str(root / "home" / ".kode-tui"),
        TMPDIR=str(root / "tmp"),
        KODE_TUI_OLLAMA_URL="",
    )
    return env


def measure(root: Path, source: Path, env: dict[str, str], name: str) -> dict[str, float]:
    """One child on a fresh copy of `source`; times are seconds from its spawn."""
    session_dir = root / "runs" / name
    shutil.copytree(source, session_dir)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, __file__, "--child", str(session_dir), str(root / "project")],
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S + 60,
    )
    shutil.rmtree(session_dir)
    if done.returncode != 0:
        tail = " | ".join(done.stderr.strip().splitlines()[-3:])
        raise SystemExit(f"bench_memory: the {name} child failed (exit {done.returncode}): {tail}")
    run: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    for key in ("imported_at", "restored_at", "shown_at"):
        run[key.replace("_at", "_s")] = run.pop(key) - started
    return run


def summarise(runs: dict[str, list[dict[str, float]]]) -> dict[str, dict[str, float]]:
    keys = ("rss_mib", "hwm_mib", "shown_s", "restored_s", "imported_s", "top_rss_mib", "top_s")
    median = {
        kind: {key: statistics.median(run[key] for run in runs[kind]) for key in keys}
        for kind in KINDS
    }
    median["difference"] = {key: median["full"][key] - median["empty"][key] for key in keys}
    return median


def render(info: dict[str, Any], median: dict[str, dict[str, float]], runs: int) -> str:
    full, empty, diff = median["full"], median["empty"], median["difference"]
    rows = [
        ("RSS after render (VmRSS)", "rss_mib", "MiB"),
        ("peak RSS (VmHWM)", "hwm_mib", "MiB"),
        ("last message on screen", "shown_s", "s"),
        ("  of which imports + restore", "restored_s", "s"),
        ("RSS scrolled to the top", "top_rss_mib", "MiB"),
        ("  Home, first message mounted", "top_s", "s"),
    ]

    def fmt(value: float, unit: str, sign: str = "") -> str:
        return f"{value:{sign}.1f} MiB" if unit == "MiB" else f"{value * 1000:{sign}.0f} ms"

    lines = [
        f"memory: {info['messages']:,} messages ({info['file_bytes'] / 1e6:.1f} MB, "
        f"{info['turns']} turns) against an empty session, real KodeApp headless "
        f"{SIZE[0]}x{SIZE[1]}, median of {runs} runs (times from the child's spawn):",
        f"  {'':28} {'empty session':>14} {'10k messages':>14} {'difference':>12}",
    ]
    for label, key, unit in rows:
        lines.append(
            f"  {label:28} {fmt(empty[key], unit):>14} {fmt(full[key], unit):>14} "
            f"{fmt(diff[key], unit, '+'):>12}"
        )
    lines.append(
        f"  on screen: {info['blocks_mounted']} blocks mounted, {info['blocks_pending']} more "
        f"built when scrolled to, {info['messages_hidden']:,} messages behind the top marker; "
        f"scrolled to the top: {info['top_blocks_mounted']} blocks mounted"
    )
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--turns", type=int, default=1502, help="generated turns (1502: 10,001 messages)"
    )
    parser.add_argument("--runs", type=int, default=3, help="children of each kind (default: 3)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="write the numbers as JSON")
    parser.add_argument("--child", nargs=2, metavar=("SESSION", "WORK"), help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.child:
        run_as_child(*args.child)
        return 0
    if args.runs < 1:
        print("bench_memory: --runs must be at least 1", file=sys.stderr)
        return 1
    runs: dict[str, list[dict[str, float]]] = {kind: [] for kind in KINDS}
    with tempfile.TemporaryDirectory(prefix="kode-bench-memory-") as tmp:
        root = Path(tmp)
        for name in ("home", "tmp", "project", "runs"):
            (root / name).mkdir()
        (root / "project" / "README.md").write_text("# Bench\n")
        print(f"generating a {args.turns}-turn session ...", file=sys.stderr)
        sources = {
            "empty": make_session(root / "empty", 0),
            "full": make_session(root / "full", args.turns),
        }
        file_bytes = (sources["full"] / "context.jsonl").stat().st_size
        env = scratch_env(root)
        for i in range(args.runs):
            print(f"memory: run {i + 1}/{args.runs}", file=sys.stderr)
            for kind in KINDS:  # alternating, so machine noise hits both
                runs[kind].append(measure(root, sources[kind], env, f"{kind}-{i}"))
    last = runs["full"][-1]
    info: dict[str, Any] = {
        "turns": args.turns,
        "messages": int(last["messages"]),
        "file_bytes": file_bytes,
        "size": f"{SIZE[0]}x{SIZE[1]}",
        "blocks_mounted": int(last["blocks_mounted"]),
        "blocks_pending": int(last["blocks_pending"]),
        "messages_hidden": int(last["messages_hidden"]),
        "top_blocks_mounted": int(last["top_blocks_mounted"]),
    }
    median = summarise(runs)
    print(render(info, median, args.runs))
    if args.json:
        payload = {**info, "runs_per_kind": args.runs, "median": median, "runs": runs}
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
