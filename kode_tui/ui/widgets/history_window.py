"""What the conversation pane keeps off screen: the blocks above and below its mounted window.

The pane mounts a bounded window of blocks (Textual lays out every mounted widget on each
change). Everything else waits here, in order, as `BlockFactory`s that make the block again,
or, for a stored history not read yet, as a `PageGap`: a run of pages of messages that become
factories (`page_blocks`) only when the window reaches them. A session of 33k messages thus
costs the pane its message list, the factories of the pages visited, and the mounted window.
Above a resumed history, an `EarlierGap` stands for the contexts it was compacted from: each
is read from its rotated file only when the window reaches it (`read_earlier`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import partial

from kode_tui.humanize import plural
from kode_tui.message import Message
from kode_tui.soul.facade import EarlierContexts, PastResults, read_earlier
from kode_tui.ui.widgets.blocks import BlockFactory, MarkerBlock, divider
from kode_tui.ui.widgets.history_blocks import page_blocks
from kode_tui.ui.widgets.tool_views import TodoBoard

log = logging.getLogger(__name__)

PAGE_MESSAGES = 40
"""Messages read into blocks at a time when the window reaches a part not read yet."""


@dataclass
class PageGap:
    """Pages `first` to `end` (excluded) of a stored history, not read into blocks yet."""

    messages: Sequence[Message]
    count: int
    """How many of `messages` the history had when it was loaded."""
    past: PastResults | None
    first: int
    end: int
    todos: TodoBoard
    offset: int = 0
    """The message page 0 starts at (a window opened at a message starts a page there)."""

    @property
    def message_count(self) -> int:
        return min(self.offset + self.end * PAGE_MESSAGES, self.count) - (
            self.offset + self.first * PAGE_MESSAGES
        )

    def page(self, index: int) -> list[BlockFactory]:
        start = self.offset + index * PAGE_MESSAGES
        stop = min(start + PAGE_MESSAGES, self.count)
        return page_blocks(self.messages, start, stop, self.past, self.todos)


@dataclass
class EarlierGap:
    """The contexts a stored history was compacted from (`earlier.shown`, newest first), not
    read yet; `successor` is the history the newest of them was compacted into."""

    earlier: EarlierContexts
    successor: Sequence[Message]
    past: PastResults | None
    todos: TodoBoard

    @property
    def message_count(self) -> int:
        """What the rotation notes say they hold (a Kimi CLI rotation has no note: 0)."""
        return sum(rotation.messages or 0 for rotation in self.earlier.shown) or 1

    def read(self) -> list[Item]:
        """The newest context's pages, under a gap for the older ones (or a line saying
        what is left out). Blocking: reads one rotated file."""
        shown = self.earlier.shown
        rotation = shown[0]
        try:
            messages = read_earlier(rotation.path, self.successor)
        except OSError as error:
            log.warning("could not read %s: %s", rotation.path, error)
            return [_left_out(f"{rotation.path.name} could not be read")]
        items: list[Item] = []
        if len(shown) > 1:
            older = EarlierContexts(shown[1:], self.earlier.left_out)
            items.append(replace(self, earlier=older, successor=messages))
        elif self.earlier.left_out:
            # The cap of a long lineage, said where it cuts.
            count = plural(self.earlier.left_out, "earlier context")
            items.append(_left_out(f"{count} not shown here: History (Tab) previews them"))
        if messages:
            items.append(
                PageGap(messages, len(messages), self.past, 0, _pages(len(messages)), self.todos)
            )
        return items


Item = BlockFactory | PageGap | EarlierGap


class HistoryWindow:
    """The blocks above and below the mounted ones, oldest first on both sides."""

    def __init__(self) -> None:
        self.above: list[Item] = []
        self.below: list[Item] = []
        self.todos = TodoBoard()
        """Which todo-list call shows its checklist (the newest), stored or live."""

    def load(
        self, messages: Sequence[Message], past: PastResults | None, at: int | None = None
    ) -> None:
        """Start over with a stored history, all of it above the (empty) window; or, `at` a
        message, what comes before it above and the rest (from it) below."""
        count = len(messages)
        self.todos.clear()
        split = count if at is None else max(0, min(at, count))
        before = _pages(split)
        after = _pages(count - split)
        self.above = [PageGap(messages, split, past, 0, before, self.todos)] if before else []
        self.below = (
            [PageGap(messages, count, past, 0, after, self.todos, offset=split)] if after else []
        )

    def clear(self) -> None:
        self.above = []
        self.below = []
        self.todos.clear()

    def add_earlier(
        self, earlier: EarlierContexts, successor: Sequence[Message], past: PastResults | None
    ) -> None:
        """Put the contexts `successor` was compacted from before everything else."""
        if earlier.shown:
            self.above.insert(0, EarlierGap(earlier, successor, past, self.todos))

    @property
    def hidden_messages(self) -> int:
        """Messages above the window not read into blocks yet."""
        return sum(item.message_count for item in self.above if isinstance(item, _Gap))

    @property
    def pending_above(self) -> int:
        """Blocks waiting above the window plus messages not read yet there; 0 at the top."""
        return sum(item.message_count if isinstance(item, _Gap) else 1 for item in self.above)

    @property
    def pending_below(self) -> int:
        """Blocks and unread messages below the window; 0 when it shows the end."""
        return sum(item.message_count if isinstance(item, _Gap) else 1 for item in self.below)

    def take_above(self, count: int) -> list[BlockFactory]:
        """The (at most) `count` blocks right above the window, oldest first; they leave here."""
        taken: list[BlockFactory] = []
        while self.above and len(taken) < count:
            item = self.above.pop()
            if isinstance(item, EarlierGap):
                self.above.extend(item.read())
            elif isinstance(item, PageGap):
                self.above.extend(_split_last(item))
            else:
                taken.append(item)
        taken.reverse()
        return taken

    def take_below(self, count: int) -> list[BlockFactory]:
        """The (at most) `count` blocks right below the window, oldest first; they leave here."""
        taken: list[BlockFactory] = []
        while self.below and len(taken) < count:
            item = self.below.pop(0)
            if isinstance(item, EarlierGap):
                self.below[:0] = item.read()
            elif isinstance(item, PageGap):
                self.below[:0] = _split_first(item)
            else:
                taken.append(item)
        return taken

    def put_above(self, factories: Iterable[BlockFactory]) -> None:
        """Blocks that left the top of the window (oldest first)."""
        self.above.extend(factories)

    def put_below(self, factories: Iterable[BlockFactory]) -> None:
        """Blocks that left the bottom of the window (oldest first)."""
        self.below[:0] = factories

    def put_end(self, factories: Iterable[BlockFactory]) -> None:
        """Blocks that came after everything below the window (oldest first)."""
        self.below.extend(factories)

    def to_start(self, window: list[BlockFactory]) -> None:
        """Move the window's blocks and all above it below it: the window goes to the start."""
        self.below = [*self.above, *window, *self.below]
        self.above = []

    def to_end(self, window: list[BlockFactory]) -> None:
        """Move the window's blocks and all below it above it: the window goes to the end."""
        self.above = [*self.above, *window, *self.below]
        self.below = []

    def discard(self, factories: Iterable[BlockFactory]) -> None:
        """Forget these blocks (a step that is retried streams its answer again)."""
        gone = {id(factory) for factory in factories}
        self.above = [item for item in self.above if id(item) not in gone]
        self.below = [item for item in self.below if id(item) not in gone]


_Gap = (PageGap, EarlierGap)


def _left_out(text: str) -> BlockFactory:
    return partial(MarkerBlock, divider(text), kind="compaction")


def _pages(messages: int) -> int:
    return -(-messages // PAGE_MESSAGES)


def _split_last(gap: PageGap) -> list[Item]:
    """`gap` with its last page read: the rest of the gap (if any), then the page's blocks."""
    rest: list[Item] = []
    if gap.end - 1 > gap.first:
        rest.append(replace(gap, end=gap.end - 1))
    return [*rest, *gap.page(gap.end - 1)]


def _split_first(gap: PageGap) -> list[Item]:
    """`gap` with its first page read: the page's blocks, then the rest of the gap (if any)."""
    rest: list[Item] = []
    if gap.end > gap.first + 1:
        rest.append(replace(gap, first=gap.first + 1))
    return [*gap.page(gap.first), *rest]
