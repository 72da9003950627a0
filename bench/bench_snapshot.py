"""What a Shell call costs for its two snapshots of the work dir (issue 17, item 6).

usage: .venv/bin/python bench/bench_snapshot.py [--files 10000] [--runs 15] [--json OUT]

A git repository of `--files` small files in 100 folders is made in a tmp dir (committed, as a
project is), and a session's `WorkSnapshot` takes its baseline. Per run, what
`tools.snapshots.around` adds to a Shell call is timed: the snapshot before it, one file
rewritten (the "command"), the snapshot after it that records that edit. The same is timed
on a copy that is not a git repository, and the first snapshot once each: of the work dir's
first session (the baseline, which reads every file into the work dir's pool) and of the next
session (which reads only what the pool does not know). Prints medians; `--json OUT` also
writes them (in seconds) to OUT. Target: <= 150 ms per call.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from time import perf_counter

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kode_tui.session import Context  # noqa: E402
from kode_tui.session.journal import FileJournal  # noqa: E402
from kode_tui.session.snapshot import WorkSnapshot  # noqa: E402
from kode_tui.session.snapshot_pool import SnapshotPool  # noqa: E402

TARGET_S = 0.15


def make_tree(root: Path, files: int) -> None:
    for n in range(files):
        folder = root / f"pkg{n % 100}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"mod{n}.py").write_text(f"def f{n}():\n    return {n}\n" * 20)
    past = 1_600_000_000  # written long before: not re-read as "racily clean"
    for folder in root.iterdir():
        for file in folder.iterdir():
            os.utime(file, (past, past))


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=b", "-c", "user.email=b@b", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


async def baseline(work: Path, session: Path, pool: SnapshotPool) -> float:
    """Seconds for the first snapshot of a new session in `work`."""
    async with Context(session / "context.jsonl") as context:
        await context.restore()
        snapshots = WorkSnapshot(work, context, FileJournal(context), pool=pool)
        start = perf_counter()
        await snapshots.capture()
        return perf_counter() - start


async def measure(work: Path, session: Path, runs: int) -> tuple[float, list[float], float]:
    """(baseline seconds, seconds per Shell call for each run, the next session's baseline)."""
    pool = SnapshotPool(session.parent / f"{session.name}-pool")
    async with Context(session / "context.jsonl") as context:
        await context.restore()
        snapshots = WorkSnapshot(work, context, FileJournal(context), pool=pool)
        start = perf_counter()
        await snapshots.capture()
        first = perf_counter() - start
        times = []
        for run in range(runs):
            start = perf_counter()
            await snapshots.capture()
            (work / "pkg0" / "mod0.py").write_text(f"changed {run}\n")
            edits = await snapshots.capture(f"call_{run}")
            times.append(perf_counter() - start)
            assert [e.path for e in edits] == ["pkg0/mod0.py"], edits
    return first, times, await baseline(work, session.with_name(f"{session.name}-next"), pool)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--json", type=Path, metavar="OUT", help="write the numbers as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        repo = root / "repo"
        make_tree(repo, args.files)
        plain = root / "plain"
        shutil.copytree(repo, plain)
        git(repo, "init", "-q")
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "tree")
        git_base, git_times, git_next = asyncio.run(measure(repo, root / "s1", args.runs))
        walk_base, walk_times, walk_next = asyncio.run(measure(plain, root / "s2", args.runs))
    numbers = {
        "files": args.files,
        "runs": args.runs,
        "git_call_s": statistics.median(git_times),
        "git_baseline_s": git_base,
        "walk_call_s": statistics.median(walk_times),
        "walk_baseline_s": walk_base,
        "git_next_baseline_s": git_next,
        "walk_next_baseline_s": walk_next,
        "target_s": TARGET_S,
    }
    print(
        f"{args.files:,} files, median of {args.runs}: per Shell call "
        f"{numbers['git_call_s'] * 1000:.0f} ms (git repo) / "
        f"{numbers['walk_call_s'] * 1000:.0f} ms (plain folder); "
        f"first snapshot {git_base * 1000:.0f} / {walk_base * 1000:.0f} ms, "
        f"a later session's {git_next * 1000:.0f} / {walk_next * 1000:.0f} ms"
    )
    if args.json:
        args.json.write_text(json.dumps(numbers, indent=2))


if __name__ == "__main__":
    main()
