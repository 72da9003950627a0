"""What the Shell sandbox adds to a Shell call (issue 26: at most 30 ms over no sandbox).

usage: .venv/bin/python bench/bench_sandbox.py [--files 10000] [--runs 15] [--json OUT]

A git repository of `--files` small files in 100 folders (bench_snapshot.py's) is the work dir
of a session whose agent has its usual snapshots. Per run, one whole Shell call is timed as the
soul makes it (`Toolset.run`: the snapshot before, the command, the snapshot after), the
command editing one file: without the sandbox, in the `workspace` profile (modes ask,
auto-edit, sandbox) and in the `open` one (yolo), taken in turns so that the machine's noise
falls on all three alike. Prints medians and the differences; `--json OUT` writes them (in
seconds) to OUT. Needs bubblewrap; without it, says so and exits 2.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from time import perf_counter

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_snapshot import git, make_tree  # noqa: E402

from kode_tui.message import FunctionBody, ToolCall  # noqa: E402
from kode_tui.session import Context  # noqa: E402
from kode_tui.session.journal import FileJournal  # noqa: E402
from kode_tui.session.snapshot import WorkSnapshot  # noqa: E402
from kode_tui.session.snapshot_pool import SnapshotPool  # noqa: E402
from kode_tui.tools.base import ToolEnv  # noqa: E402
from kode_tui.tools.sandbox import Confinement, Profile, Sandbox, support  # noqa: E402
from kode_tui.tools.shell import Shell  # noqa: E402
from kode_tui.tools.toolset import Toolset  # noqa: E402

TARGET_S = 0.03
WAYS: tuple[Profile | None, ...] = (None, "workspace", "open")


async def measure(root: Path, files: int, runs: int) -> dict[str, float]:
    work, session = root / "work", root / "session"
    work.mkdir()
    session.mkdir()
    make_tree(work, files)
    git(work, "init", "-q")
    git(work, "add", "-A")
    git(work, "commit", "-qm", "files")
    context = Context(session / "context.jsonl")
    await context.restore()
    journal = FileJournal(context)
    snapshots = WorkSnapshot(
        work,
        context,
        journal,
        index_path=session / "snapshot.json",
        pool=SnapshotPool(root / "pool"),
    )
    await snapshots.capture()  # the baseline, before any timed call
    program = support().program
    assert program is not None
    sandbox = Sandbox(program, work, refused_dir=session / "refused")
    sandbox.start()
    toolset = Toolset([Shell(sandboxed=True)])
    env = ToolEnv(work_dir=work, journal=journal, snapshots=snapshots)
    times: dict[Profile | None, list[float]] = {way: [] for way in WAYS}
    for n in range(runs + 1):
        for way in WAYS:
            confined = (
                env
                if way is None
                else ToolEnv(
                    work_dir=work,
                    journal=journal,
                    snapshots=snapshots,
                    sandbox=Confinement(sandbox, way),
                )
            )
            arguments = json.dumps({"command": f"echo {n} >> pkg0/mod0.py"})
            body = FunctionBody(name="Shell", arguments=arguments)
            call = ToolCall(id=f"call-{n}-{way}", function=body)
            start = perf_counter()
            result = await toolset.run(toolset.prepare(call), confined)
            took = perf_counter() - start
            if result.is_error:
                raise SystemExit(f"the command failed ({way}): {result.message} {result.output}")
            if n:  # the first round warms every path up
                times[way].append(took)
    await sandbox.close()
    await snapshots.close()
    await context.close()
    plain = statistics.median(times[None])
    workspace = statistics.median(times["workspace"])
    opened = statistics.median(times["open"])
    return {
        "files": files,
        "plain_call_s": plain,
        "workspace_call_s": workspace,
        "open_call_s": opened,
        "workspace_extra_s": workspace - plain,
        "open_extra_s": opened - plain,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--json", type=Path, metavar="OUT")
    args = parser.parse_args()
    if not support().available:
        print(f"bench_sandbox: {support().problem}", file=sys.stderr)
        raise SystemExit(2)
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["KODE_TUI_HOME"] = str(Path(scratch) / "home")
        numbers = asyncio.run(measure(Path(scratch), args.files, args.runs))
    ms = {key: value * 1000 for key, value in numbers.items() if key.endswith("_s")}
    print(f"Shell call on a {args.files:,}-file repo (median of {args.runs}):")
    print(f"  no sandbox          {ms['plain_call_s']:7.1f} ms")
    for key, name in (("workspace", "workspace"), ("open", "open     ")):
        print(f"  sandbox ({name}) {ms[f'{key}_call_s']:7.1f} ms  (+{ms[f'{key}_extra_s']:.1f})")
    worst = max(numbers["workspace_extra_s"], numbers["open_extra_s"])
    print(f"  target: <= {TARGET_S * 1000:.0f} ms more: {'PASS' if worst <= TARGET_S else 'FAIL'}")
    if args.json:
        args.json.write_text(json.dumps(numbers, indent=2))


if __name__ == "__main__":
    main()
