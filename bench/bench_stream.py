"""Does the conversation keep up with a fast model? Streams tokens into it in a headless App.

usage: .venv/bin/python bench/bench_stream.py [--tokens 2000] [--rate 300] [--history 0]
                                              [--json OUT]

ContentPart events go on the wire at `--rate` tokens per second (a token is ~4 characters of
Markdown: paragraphs, lists, code blocks), as the soul sends them. The lag of a token is the
time from its event being sent to its text being in the assistant block's Markdown source;
the script prints the median, 95th percentile and maximum lag, the lag of the last token, and
how far the sender itself fell behind its schedule (the UI shares its event loop). 20,000
tokens at 300/s take about 67 s; the default is a short run. `--history N` first restores a
session of N messages and mounts all its blocks, so the stream runs next to a full pane;
`--gc-freeze` shows what `gc.freeze()` after startup would do to the pauses. `--json OUT`
writes the numbers (in seconds) to OUT.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import gc
import json
import random
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter

from textual.app import App, ComposeResult
from textual.await_complete import AwaitComplete
from textual.widgets import Markdown

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kode_tui.message import Message, TextPart  # noqa: E402
from kode_tui.ui.widgets.blocks import AnswerBlock, AssistantBlock  # noqa: E402
from kode_tui.ui.widgets.conversation import Conversation  # noqa: E402
from kode_tui.wire import WireBus  # noqa: E402
from kode_tui.wire import events as ev  # noqa: E402

WORDS = ["context", "window", "message", "tool", "result", "compaction", "summary", "the"]
WORDS += ["checkpoint", "revert", "restore", "session", "model", "keeps", "newest", "turns"]


def markdown_tokens(count: int, seed: int = 7) -> list[str]:
    """`count` tokens of plausible assistant Markdown, about 4 characters each."""
    rng = random.Random(seed)
    tokens: list[str] = []
    while len(tokens) < count:
        kind = rng.random()
        if kind < 0.15:
            tokens += ["\n\n", "```", "python", "\n"]
            for _ in range(rng.randint(3, 8)):
                tokens += ["    ", "x", " = ", rng.choice(WORDS), "(", str(rng.randint(1, 99))]
                tokens += [")", "\n"]
            tokens += ["```", "\n\n"]
        elif kind < 0.35:
            for n in range(rng.randint(2, 5)):
                tokens += [f"{n + 1}.", " **", rng.choice(WORDS), "**"]
                tokens += [" " + rng.choice(WORDS) for _ in range(rng.randint(4, 12))]
                tokens.append("\n")
            tokens.append("\n")
        else:
            tokens.append(rng.choice(WORDS).capitalize())
            tokens += [" " + rng.choice(WORDS) for _ in range(rng.randint(20, 80))]
            tokens += [".", "\n\n"]
    return tokens[:count]


class Host(App[None]):
    def __init__(self, bus: WireBus) -> None:
        super().__init__()
        self.bus = bus

    def compose(self) -> ComposeResult:
        yield Conversation(self.bus)


class LoopMonitor:
    """How long the event loop was blocked: a task that asks to wake every 5 ms notes how late
    it woke. The UI, the wire and the soul share this loop, so this is what a user feels."""

    TICK = 0.005

    def __init__(self) -> None:
        self.delays: list[float] = []
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> LoopMonitor:
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()

    async def _run(self) -> None:
        while True:
            start = perf_counter()
            await asyncio.sleep(self.TICK)
            self.delays.append(perf_counter() - start - self.TICK)

    def summary(self) -> str:
        if not self.delays:
            return "the event loop was never measured"
        p95 = statistics.quantiles(self.delays, n=20)[-1] if len(self.delays) > 1 else 0.0
        return (
            f"the event loop was blocked at most {max(self.delays) * 1000:.0f} ms "
            f"(p95 {p95 * 1000:.0f} ms)"
        )


class SourceClock:
    """Records when the answer's Markdown source grew: by wrapping `Markdown.append` for the
    streamed block, and the making of an `AnswerBlock` for a block a burst both opened and
    closed in one frame (mounted whole, drawn in that frame).

    A long answer goes on in new blocks, so the length is that of all of them together.
    """

    def __init__(self) -> None:
        self.times: list[float] = []
        self.lengths: list[int] = []
        self.block_lengths: dict[int, int] = {}
        self._original = Markdown.append
        self._original_answer = AnswerBlock.__init__

    def _grew(self, block: object, length: int) -> None:
        self.block_lengths[id(block)] = length
        self.times.append(perf_counter())
        self.lengths.append(sum(self.block_lengths.values()))

    def __enter__(self) -> SourceClock:
        original, original_answer, clock = self._original, self._original_answer, self

        def append(self: Markdown, markdown: str) -> AwaitComplete:
            result = original(self, markdown)
            if isinstance(self, AssistantBlock):
                clock._grew(self, len(self.source))
            return result

        def answer(self: AnswerBlock, markdown: str) -> None:
            original_answer(self, markdown)
            clock._grew(self, len(markdown))

        Markdown.append = append  # type: ignore[method-assign]
        AnswerBlock.__init__ = answer  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        Markdown.append = self._original  # type: ignore[method-assign]
        AnswerBlock.__init__ = self._original_answer  # type: ignore[method-assign]

    def arrival(self, length: int) -> float:
        """When the source first held `length` characters."""
        return self.times[bisect.bisect_left(self.lengths, length)]


def history(messages: int) -> list[Message]:
    result: list[Message] = []
    for n in range(messages // 2):
        result.append(Message(role="user", content=f"Question {n}"))
        result.append(Message(role="assistant", content=f"Answer {n}: **done**.\n\n- a\n- b\n"))
    return result


async def run(
    tokens: list[str], rate: float, history_messages: int, freeze: bool
) -> dict[str, float]:
    bus = WireBus()
    app = Host(bus)
    async with app.run_test(size=(120, 50)) as pilot:
        conversation = app.query_one(Conversation)
        if history_messages:
            await conversation.load_history(history(history_messages))
            await pilot.pause()
            # As if the user had gone to the first message (Home) and back (End): a full
            # window of blocks is mounted above the new answer.
            await app.run_action("first", conversation)
            await app.workers.wait_for_complete()
            await app.run_action("last", conversation)
            await pilot.pause()
            await app.workers.wait_for_complete()
            await pilot.pause()
        bus.send(ev.TurnBegin(user_input="Explain the context engine."))
        bus.send(ev.StepBegin(n=1))
        # The new block trims what a restored history mounted; that is not streaming.
        await asyncio.sleep(1)
        await pilot.pause()
        if freeze:
            gc.collect()
            gc.freeze()
        async with LoopMonitor() as monitor:
            streamed = await stream(bus, tokens, rate)
        bus.send(ev.TurnEnd())
        await pilot.pause()
        lags = streamed.lags
        quantiles = statistics.quantiles(lags, n=20)
        clock = streamed.clock
        print(
            f"{len(tokens)} tokens at {rate:g}/s ({streamed.ends[-1]} characters, "
            f"{len(clock.times)} Markdown updates in {len(clock.block_lengths)} blocks"
            + (f", next to {len(conversation.blocks)} mounted blocks" if history_messages else "")
            + "):\n"
            f"  lag median {statistics.median(lags) * 1000:.1f} ms, "
            f"p95 {quantiles[-1] * 1000:.1f} ms, max {max(lags) * 1000:.1f} ms, "
            f"last token {lags[-1] * 1000:.1f} ms\n"
            f"  the sender fell behind its schedule by at most {streamed.behind * 1000:.1f} ms; "
            + monitor.summary()
        )
        blocked = monitor.delays or [0.0]
        return {
            "tokens": len(tokens),
            "rate_per_s": rate,
            "characters": streamed.ends[-1],
            "history_messages": history_messages,
            "lag_median_s": statistics.median(lags),
            "lag_p95_s": quantiles[-1],
            "lag_max_s": max(lags),
            "lag_last_s": lags[-1],
            "sender_behind_max_s": streamed.behind,
            "loop_blocked_max_s": max(blocked),
            "loop_blocked_p95_s": (
                statistics.quantiles(blocked, n=20)[-1] if len(blocked) > 1 else 0.0
            ),
        }


@dataclass
class Streamed:
    clock: SourceClock
    sent: list[float] = field(default_factory=list)
    """When each token was sent."""
    ends: list[int] = field(default_factory=list)
    """Where each token ends in the text."""
    behind: float = 0.0
    """How late the sender was at worst."""

    @property
    def lags(self) -> list[float]:
        return [self.clock.arrival(end) - at for end, at in zip(self.ends, self.sent, strict=True)]


async def stream(bus: WireBus, tokens: list[str], rate: float) -> Streamed:
    """Send the tokens on schedule and wait until the Markdown holds them all."""
    with SourceClock() as clock:
        result = Streamed(clock)
        total = 0
        start = perf_counter()
        for index, token in enumerate(tokens):
            due = start + index / rate
            if due > (now := perf_counter()):
                await asyncio.sleep(due - now)
            now = perf_counter()
            result.behind = max(result.behind, now - due)
            bus.send(ev.ContentPart(part=TextPart(text=token)))
            total += len(token)
            result.sent.append(now)
            result.ends.append(total)
        while not clock.lengths or clock.lengths[-1] < total:
            await asyncio.sleep(0.001)
            if perf_counter() - result.sent[-1] > 30:
                raise SystemExit("the stream never caught up (30 s)")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=2000, help="20000 for the full run")
    parser.add_argument("--rate", type=float, default=300.0, help="tokens per second")
    parser.add_argument("--history", type=int, default=0, help="messages restored first")
    parser.add_argument(
        "--gc-freeze",
        action="store_true",
        help="gc.freeze() before streaming, as an App could after startup (shorter GC pauses)",
    )
    parser.add_argument("--json", type=Path, metavar="OUT", help="write the numbers as JSON")
    args = parser.parse_args()
    numbers = asyncio.run(
        run(markdown_tokens(args.tokens), args.rate, args.history, args.gc_freeze)
    )
    if args.json:
        args.json.write_text(json.dumps(numbers, indent=2) + "\n")


if __name__ == "__main__":
    main()
