"""Open a 5,000-turn session in the conversation pane and scroll through it with the keys.

usage: .venv/bin/python bench/bench_history.py [--turns 5000] [--pages 40] [--runs 3]
                                               [--json OUT]

The session is the issue's (`gen_context.py`, as bench_tui.py makes it: 5,000 turns are
about 33,000 messages), read back with `Context` as the App does, and shown headless at
120x36 in a `Conversation`. Per run: the time until `load_history` returns (the newest blocks
mounted) and until the screen shows them; then, after `gc.freeze()` (the App freezes what
start-up made once the agent is up), **PageUp** `--pages` times from the end, **Home** to
the first message and **End** back to the last. For each key: how long until its blocks are
on screen, and the longest stall of the event loop meanwhile (a 5 ms heartbeat, see
bench_stream.LoopMonitor: what a user feels). RSS is read before and after each key. Prints
medians over the runs (worst stall per page: the worst of all runs); `--json OUT` also
writes them (in seconds and MiB) to OUT.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter

from textual.app import App, ComposeResult
from textual.pilot import Pilot

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kode_tui.session import Context  # noqa: E402
from kode_tui.ui.widgets.conversation import Conversation  # noqa: E402
from kode_tui.wire import WireBus  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from bench_memory import proc_status_mib  # noqa: E402
from bench_stream import LoopMonitor  # noqa: E402
from bench_tui import make_session  # noqa: E402

SIZE = (120, 36)


class Host(App[None]):
    def compose(self) -> ComposeResult:
        yield Conversation(WireBus())


@dataclass
class Run:
    messages: int
    returned: float
    drawn: float
    page: list[float] = field(default_factory=list)
    """Per PageUp: seconds until its blocks were on screen."""
    page_stall: list[float] = field(default_factory=list)
    """Per PageUp: the longest the event loop was blocked meanwhile."""
    home: float = 0.0
    home_stall: float = 0.0
    end: float = 0.0
    end_stall: float = 0.0
    rss: list[float] = field(default_factory=list)
    """MiB, before the first key and after each."""
    blocks: list[int] = field(default_factory=list)
    """Blocks mounted after each key."""


async def press(pilot: Pilot[None], key: str, monitor: LoopMonitor) -> tuple[float, float]:
    """Press `key`; return the seconds until the screen shows its outcome (the scroll
    animated, the blocks it needs mounted and drawn), and the longest stall of the event loop
    meanwhile."""
    app = pilot.app
    conversation = app.query_one(Conversation)
    monitor.delays.clear()
    start = perf_counter()
    await pilot.press(key)
    await app.workers.wait_for_complete()
    drawn = asyncio.Event()
    conversation.call_after_refresh(drawn.set)
    await drawn.wait()
    return perf_counter() - start, max(monitor.delays, default=0.0)


async def run_once(context_file: Path, pages: int) -> Run:
    context = Context(context_file)
    await context.restore()
    history = context.history
    app = Host()
    async with app.run_test(size=SIZE) as pilot:
        conversation = app.query_one(Conversation)
        start = perf_counter()
        await conversation.load_history(history)
        returned = perf_counter() - start
        drawn = asyncio.Event()
        conversation.call_after_refresh(drawn.set)
        await drawn.wait()
        run = Run(len(history), returned, perf_counter() - start)
        await pilot.pause()
        await app.workers.wait_for_complete()
        conversation.focus()
        gc.collect()
        gc.freeze()
        run.rss.append(proc_status_mib("VmRSS"))

        def after_key() -> None:
            run.rss.append(proc_status_mib("VmRSS"))
            run.blocks.append(len(conversation.blocks))

        async with LoopMonitor() as monitor:
            for _ in range(pages):
                seconds, stall = await press(pilot, "pageup", monitor)
                run.page.append(seconds)
                run.page_stall.append(stall)
                after_key()
            run.home, run.home_stall = await press(pilot, "home", monitor)
            after_key()
            if conversation.pending_count or conversation.scroll_y:
                raise RuntimeError("Home did not show the first message")
            run.end, run.end_stall = await press(pilot, "end", monitor)
            after_key()
            if conversation.pending_below:
                raise RuntimeError("End did not show the last message")
        gc.unfreeze()
    await context.close()
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=5000)
    parser.add_argument("--pages", type=int, default=40)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", type=Path, metavar="OUT", help="write the numbers as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = make_session(Path(tmp) / "session", args.turns)
        results = [
            asyncio.run(run_once(folder / "context.jsonl", args.pages)) for _ in range(args.runs)
        ]

    def median(values: list[float]) -> float:
        return statistics.median(values)

    def ms(value: float) -> str:
        return f"{value * 1000:.0f} ms"

    stalls = [s for r in results for s in r.page_stall]
    numbers = {
        "turns": args.turns,
        "messages": results[0].messages,
        "pages": args.pages,
        "runs": args.runs,
        "returned_s": median([r.returned for r in results]),
        "drawn_s": median([r.drawn for r in results]),
        "page_s": median([t for r in results for t in r.page]),
        "page_stall_max_s": max(stalls),
        "page_stall_p95_s": statistics.quantiles(stalls, n=20)[-1],
        "home_s": median([r.home for r in results]),
        "home_stall_s": max(r.home_stall for r in results),
        "end_s": median([r.end for r in results]),
        "end_stall_s": max(r.end_stall for r in results),
        "rss_start_mib": median([r.rss[0] for r in results]),
        "rss_max_mib": median([max(r.rss) for r in results]),
        "rss_end_mib": median([r.rss[-1] for r in results]),
        "blocks_max": max(max(r.blocks) for r in results),
    }
    print(
        f"a {args.turns:,}-turn session ({numbers['messages']:,} messages) at {SIZE[0]}x{SIZE[1]}, "
        f"median of {args.runs} runs:\n"
        f"  load_history returned after {ms(numbers['returned_s'])}, "
        f"on screen after {ms(numbers['drawn_s'])}\n"
        f"  PageUp x{args.pages} from the end: each page on screen after "
        f"{ms(numbers['page_s'])}; the event loop blocked at most "
        f"{ms(numbers['page_stall_max_s'])} (p95 {ms(numbers['page_stall_p95_s'])})\n"
        f"  Home -> first message on screen {ms(numbers['home_s'])} "
        f"(blocked at most {ms(numbers['home_stall_s'])}); End -> last "
        f"{ms(numbers['end_s'])} (blocked at most {ms(numbers['end_stall_s'])})\n"
        f"  RSS {numbers['rss_start_mib']:.0f} MiB before scrolling, at most "
        f"{numbers['rss_max_mib']:.0f} MiB, {numbers['rss_end_mib']:.0f} MiB after; "
        f"at most {numbers['blocks_max']} blocks mounted"
    )
    if args.json:
        args.json.write_text(json.dumps(numbers, indent=2) + "\n")


if __name__ == "__main__":
    main()
