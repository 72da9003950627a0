"""Time `Conversation.load_history` on a long generated session in a headless App.

usage: .venv/bin/python bench/bench_history.py [--messages 3300] [--runs 5] [--max-blocks 300]
                                               [--json OUT]

The session is turns of user message, assistant text with a tool call, tool result, and a
final answer (4 messages a turn), written as context.jsonl and read back with `Context`, as the
App does. Per run: the time until `load_history` returns (the newest blocks mounted), until
the screen shows them (laid out and drawn), and then, scrolling to the top again and again,
the time each batch of older blocks takes to appear and the total until all `max_blocks` are
mounted. Prints medians; `--json OUT` also writes them (in seconds) to OUT.
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

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kode_tui.session import Context  # noqa: E402
from kode_tui.ui.widgets.conversation import Conversation  # noqa: E402
from kode_tui.wire import WireBus  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from bench_stream import LoopMonitor  # noqa: E402

ANSWER = (
    "I looked at `src/app_{n}.py`. The function **parse** handles the input, then:\n\n"
    "1. it splits the lines,\n2. it strips comments,\n3. it returns the tokens.\n\n"
    "```python\ndef parse(text):\n    return [t for t in text.split() if t]\n```\n"
)


def write_session(path: Path, messages: int) -> None:
    lines: list[dict[str, object]] = []
    n = 0
    while len(lines) < messages:
        call = f"call_{n}"
        arguments = json.dumps({"path": f"src/app_{n}.py"})
        lines += [
            {"role": "user", "content": f"Question {n}: what does src/app_{n}.py do?"},
            {
                "role": "assistant",
                "content": [{"type": "text", "text": f"Reading src/app_{n}.py."}],
                "tool_calls": [
                    {
                        "type": "function",
                        "id": call,
                        "function": {"name": "ReadFile", "arguments": arguments},
                    }
                ],
            },
            {
                "role": "tool",
                "tool_call_id": call,
                "content": [
                    {"type": "text", "text": "<system>40 lines read from file.</system>"},
                    {"type": "text", "text": "".join(f"{i:6}\tline {i}\n" for i in range(40))},
                ],
            },
            {"role": "assistant", "content": ANSWER.format(n=n)},
        ]
        n += 1
    path.write_text("".join(json.dumps(line) + "\n" for line in lines[:messages]))


class Host(App[None]):
    def __init__(self, max_blocks: int) -> None:
        super().__init__()
        self.max_blocks = max_blocks

    def compose(self) -> ComposeResult:
        yield Conversation(WireBus(), max_blocks=self.max_blocks)


@dataclass
class Run:
    mounted: float
    drawn: float
    shown: int
    reveal_total: float = 0.0
    reveal_batches: list[float] = field(default_factory=list)
    blocks_at_top: int = 0
    blocked: list[float] = field(default_factory=list)
    """How late a 5 ms heartbeat woke while scrolling up (see bench_stream.LoopMonitor)."""


async def run_once(context_file: Path, max_blocks: int, freeze: bool) -> Run:
    context = Context(context_file)
    await context.restore()
    history = context.history
    app = Host(max_blocks)
    async with app.run_test(size=(120, 50)) as pilot:
        conversation = app.query_one(Conversation)
        start = perf_counter()
        await conversation.load_history(history)
        mounted = perf_counter() - start
        drawn = asyncio.Event()
        conversation.call_after_refresh(drawn.set)
        await drawn.wait()
        run = Run(mounted, perf_counter() - start, len(conversation.blocks))
        await pilot.pause()
        await app.workers.wait_for_complete()
        if freeze:
            gc.collect()
            gc.freeze()
        start = perf_counter()
        async with LoopMonitor() as monitor:
            while conversation.pending_count:
                batch_start = perf_counter()
                conversation.scroll_home(animate=False, immediate=True)
                await pilot.pause()
                await app.workers.wait_for_complete()
                await pilot.pause()
                run.reveal_batches.append(perf_counter() - batch_start)
        run.reveal_total = perf_counter() - start
        run.blocked = monitor.delays
        run.blocks_at_top = len(conversation.blocks)
    await context.close()
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=3300)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--max-blocks", type=int, default=300)
    parser.add_argument(
        "--gc-freeze",
        action="store_true",
        help="gc.freeze() before scrolling up, as an App could after startup",
    )
    parser.add_argument("--json", type=Path, metavar="OUT", help="write the numbers as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        context_file = Path(tmp) / "session" / "context.jsonl"
        context_file.parent.mkdir()
        write_session(context_file, args.messages)
        results = [
            asyncio.run(run_once(context_file, args.max_blocks, args.gc_freeze))
            for _ in range(args.runs)
        ]

    def ms(values: list[float]) -> str:
        return f"{statistics.median(values) * 1000:.0f} ms"

    batches = [t for r in results for t in r.reveal_batches]
    blocked = [t for r in results for t in r.blocked]
    print(
        f"load_history of {args.messages} messages (max_blocks {args.max_blocks}), "
        f"median of {args.runs} runs:\n"
        f"  returned after {ms([r.mounted for r in results])} with {results[0].shown} blocks "
        f"mounted; on screen after {ms([r.drawn for r in results])}\n"
        f"  scrolling to the top: {len(batches) // args.runs} reveals, each "
        f"{ms(batches)} (max {max(batches, default=0) * 1000:.0f} ms), "
        f"{ms([r.reveal_total for r in results])} in all, "
        f"then {results[0].blocks_at_top} blocks mounted;\n"
        f"  meanwhile the event loop was blocked at most {max(blocked) * 1000:.0f} ms "
        f"(p95 {statistics.quantiles(blocked, n=20)[-1] * 1000:.0f} ms)"
    )
    if args.json:
        numbers = {
            "messages": args.messages,
            "max_blocks": args.max_blocks,
            "runs": args.runs,
            "blocks_shown": results[0].shown,
            "returned_s": statistics.median(r.mounted for r in results),
            "drawn_s": statistics.median(r.drawn for r in results),
            "reveal_batch_s": statistics.median(batches) if batches else 0.0,
            "reveal_batch_max_s": max(batches, default=0.0),
            "reveal_total_s": statistics.median(r.reveal_total for r in results),
            "blocks_at_top": results[0].blocks_at_top,
            "loop_blocked_max_s": max(blocked),
        }
        args.json.write_text(json.dumps(numbers, indent=2) + "\n")


if __name__ == "__main__":
    main()
