"""A scrolling pane of blocks that keeps a bounded window of them mounted (DESIGN.md §10).

Textual lays out every mounted widget whenever anything changes, and a Markdown answer is
dozens of widgets, so at most `max_blocks` blocks are mounted: a window onto the session that
moves both ways. The others wait above and below it in a `HistoryWindow` as `BlockFactory`s
(a restored history's messages become factories a page at a time, when the window reaches
them). Scrolling up mounts older blocks and unmounts the newest beyond the window, scrolling
down does the reverse, **Home** and **End** move it to either end, and blocks far above a view
that follows the bottom are unmounted again. `Conversation` streams the wire into it.

New output is followed only by a view at the end of the session. Elsewhere the view stays
where the user scrolled: new blocks are mounted below it, or, when the window does not reach
the end (or is full), they wait hidden at the end of the pane (the *tail*: a streamed block
must be mounted to stream) until the user scrolls down to them or presses End; once finished
they leave the DOM and wait below the window like the others.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from itertools import takewhile
from typing import ClassVar

from textual import work
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.worker import WorkerCancelled, WorkerFailed

from kode_tui.ui.widgets.blocks import Block, BlockFactory, PlacedOnce, PruneMarker
from kode_tui.ui.widgets.history_window import HistoryWindow

INITIAL_BLOCKS = 16
"""Blocks mounted at once when a history is loaded or the window jumps (about a screen); the
rest are mounted as the user scrolls to them."""
REVEAL_BATCH = 10
"""Blocks mounted per step while scrolling up or down, a step a frame until the view is a
screen away from the edge: the new blocks are measured in that frame (a long answer with code
is Markdown and syntax highlighting to render), so small steps keep each frame short."""
MAX_BLOCKS = 120
"""Blocks mounted at most by default: about ten screens. Each move of the window lays out every
mounted block, so a smaller window moves faster; it only needs to cover a few screens."""
TRIM_SCREENS = 3
"""How many screens of blocks stay mounted above the view when trimming."""
TRIM_DELAY = 0.2
"""Seconds from a new block (or the end of a step) to looking for blocks to unmount."""


class BlockWindow(VerticalScroll, PlacedOnce):
    """A pane of blocks, at most `max_blocks` of them mounted (or, when that is less than a few
    screens, what those screens and one batch need); the rest are a scroll away."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("home", "first", "First block", show=False),
        Binding("end", "last", "Last block", show=False),
    ]

    def __init__(
        self, *, max_blocks: int = MAX_BLOCKS, id: str | None = None, classes: str | None = None
    ) -> None:
        if max_blocks < 1:
            raise ValueError("max_blocks must be at least 1")
        super().__init__(id=id, classes=classes)
        self.max_blocks = max_blocks
        self._window = HistoryWindow()
        """The blocks above and below the mounted ones: mounted as the user scrolls to them."""
        self._marker: PruneMarker | None = None
        self._tail: list[Widget] = []
        """New blocks at the end of the session, hidden while the view is elsewhere: the
        blocks below the window (`_window.below`) come before them."""
        self._moving = asyncio.Lock()
        """Held while the window moves (`_reveal`, `_jump`): one move at a time."""
        self._trim_scheduled = False

    @property
    def blocks(self) -> list[Widget]:
        """The mounted blocks, oldest first."""
        return [child for child in self.children if not isinstance(child, PruneMarker)]

    @property
    def hidden_count(self) -> int:
        """How many earlier messages of a restored history are not read into blocks yet."""
        return self._window.hidden_messages

    @property
    def pending_count(self) -> int:
        """What is above the mounted blocks (blocks, and messages not read yet): 0 at the top."""
        return self._window.pending_above

    @property
    def pending_below(self) -> int:
        """What is below the mounted blocks: 0 when they reach the end of the session."""
        return self._window.pending_below

    def _shown(self) -> list[Widget]:
        """The mounted blocks but the hidden tail: the window the view moves over."""
        blocks = self.blocks
        return blocks[: len(blocks) - len(self._tail)]

    def _busy(self) -> set[object]:
        """Blocks that may still change: they stay mounted (the pane's streamed blocks)."""
        return set()

    def _leaving(self, block: Block, factory: BlockFactory) -> BlockFactory:
        """`block` leaves the DOM; `factory` makes it again. What the window keeps for it
        (`factory`, or one that makes it with something the block carried)."""
        return factory

    def _movable(self, blocks: Sequence[Widget]) -> list[Block]:
        """The blocks at the start of `blocks` that may leave the DOM: up to a busy one."""
        busy = self._busy()
        movable: list[Block] = []
        for block in blocks:
            if not isinstance(block, Block) or block in busy:
                break
            movable.append(block)
        return movable

    async def _unmount(
        self, victims: Sequence[Block], keep: Callable[[list[BlockFactory]], None]
    ) -> None:
        """Unmount `victims`; `keep` is given the factories that make them again, in order,
        before they leave (so that no block is ever out of both the DOM and the window)."""
        factories: list[BlockFactory] = []
        for block in victims:
            factories.append(self._leaving(block, block.factory()))
        keep(factories)
        if victims:
            await self.remove_children(victims)

    async def _prune(self) -> None:
        """Keep at most `max_blocks` mounted: the oldest wait above the window."""
        blocks = self.blocks
        excess = len(blocks) - self.max_blocks
        if excess > 0:
            await self._unmount(self._movable(blocks)[:excess], self._window.put_above)

    async def _sync_marker(self) -> None:
        """The line at the top says how many earlier messages are not read yet."""
        hidden = self._window.hidden_messages
        if hidden and self._marker is None:
            self._marker = PruneMarker()
            await self.mount(self._marker, before=0)
        elif not hidden and self._marker is not None:
            marker, self._marker = self._marker, None
            await marker.remove()
        if self._marker is not None:
            self._marker.set_count(hidden)

    def _following(self) -> bool:
        """Whether the view sticks to the end of the session (it keeps its place there by
        itself): new output is followed only then."""
        at_end = not (self._tail or self._window.below)
        # What Textual's compositor follows by: any scroll releases the anchor, and reaching
        # the bottom again restores it (there is no public accessor).
        return at_end and self.is_anchored and not self._anchor_released

    async def _append(self, *blocks: Widget) -> None:
        """Add `blocks` at the end of the session, in view if the view follows the end; a view
        the user scrolled elsewhere stays where it is."""
        await self._settle_tail()
        if self._following():
            await self.mount_all(blocks)
            await self._prune()
            self._schedule_trim()
        elif self._tail or self._window.below or len(self.blocks) + len(blocks) > self.max_blocks:
            for block in blocks:
                block.display = False
            self._tail += blocks
            await self.mount_all(blocks)
        else:
            await self.mount_all(blocks)

    async def _append_above(self, factories: Sequence[BlockFactory], sizes: Sequence[int]) -> int:
        """Before finished blocks are added at the end (oldest first; `sizes`, their
        characters): while the view follows the end, what would be more than `TRIM_SCREENS` +
        1 screens above it once they are laid out goes above the window now, as `_trim` would
        move it then: mounted blocks, and of a fast model's burst of many screens, the new
        blocks that would never be seen before they left (never mounted, drawn nor laid
        out). How many of the new blocks went; the caller adds the others.

        A new block is taken for a row per `width` characters (markup takes no cell, so it
        may be fewer rows: the view then mounts what is above as for any block above the
        window), a mounted one for the rows it was last laid out in (one not laid out yet, the
        last frame's, as a new one)."""
        region = self.scrollable_content_region
        if not region or not self._following():
            return 0
        keep, rows = (TRIM_SCREENS + 1) * region.height, 0
        new = len(sizes)
        while new and rows < keep:
            new -= 1
            rows += -(-sizes[new] // region.width)
        blocks = self.blocks
        mounted = len(blocks)
        while not new and mounted and rows < keep:
            mounted -= 1
            block = blocks[mounted]
            source = getattr(block, "source", "")
            laid_out = block.virtual_region.height
            rows += laid_out or -(-len(source if isinstance(source, str) else "") // region.width)
        movable = self._movable(blocks)
        if len(movable) < mounted:
            if new:
                return 0  # a block that may still change stays, and so do those after it
            mounted = len(movable)
        if not (mounted or new):
            return 0
        await self._unmount(movable[:mounted], self._window.put_above)
        self._window.put_above(factories[:new])
        self.call_after_refresh(self._maybe_reveal)
        return new

    def _hide(self, blocks: Sequence[Widget]) -> None:
        """`blocks`, at the end of the session, wait hidden at the start of the tail."""
        for block in blocks:
            block.display = False
        self._tail[:0] = blocks

    def _show_tail(self) -> None:
        tail, self._tail = self._tail, []
        for block in tail:
            block.display = True

    async def _remove(self, blocks: Sequence[Widget]) -> None:
        """Remove `blocks` for good (a retried step's)."""
        self._tail = [block for block in self._tail if block not in blocks]
        await self.remove_children(blocks)

    async def _settle_tail(self) -> None:
        """Finished blocks at the start of the tail leave the DOM: they wait below the window."""
        done = self._movable(self._tail)
        if done:
            del self._tail[: len(done)]
            await self._unmount(done, self._window.put_end)

    def _schedule_trim(self) -> None:
        # Later, not now: where blocks are is known only once the screen has laid out what
        # was streamed into them.
        if not self._trim_scheduled:
            self._trim_scheduled = True
            self.set_timer(TRIM_DELAY, self._trim)

    async def _trim(self) -> None:
        """Unmount blocks far above a view that follows the bottom; they wait above the window.

        Textual lays out every mounted widget on each change, so a long session streams as
        smoothly as a short one only if old answers leave the DOM.
        """
        self._trim_scheduled = False
        if not self._moving.locked():
            await self._settle_tail()
        if self._moving.locked() or not self._following():
            return
        cut = self.scroll_y - TRIM_SCREENS * self.scrollable_content_region.height
        victims: list[Block] = []
        for block in self._movable(self.blocks):
            if not block.virtual_region or block.virtual_region.bottom >= cut:
                break
            victims.append(block)
        await self._unmount(victims, self._window.put_above)

    def _scrolled(self, old: float, new: float) -> None:
        if not self._moving.locked():
            self._maybe_reveal(up=new <= old)

    def _maybe_reveal(self, up: bool = True) -> None:
        if not self._moving.locked() and self._wants_more(up):
            self._reveal(up)

    def _wants_more(self, up: bool) -> bool:
        """Whether the view is near the top (`up`) or bottom edge of the window, with more
        of the session beyond it."""
        margin = self._screen
        if not up:
            beyond = self._window.below or self._tail
            return bool(beyond) and self.scroll_y >= self.max_scroll_y - margin
        # A view that follows the bottom only fills the window: it never moves it up.
        full = self._following() and len(self.blocks) >= self.max_blocks
        return bool(self._window.above) and self.scroll_y <= margin and not full

    @property
    def _screen(self) -> int:
        """The height of the view, at least 1."""
        return max(1, self.scrollable_content_region.height)

    async def stop_workers(self, *groups: str) -> None:
        """Cancel this pane's workers of `groups` and wait until they have ended, so that none
        mounts a block while the blocks go (`Conversation.clear`)."""
        for group in groups:
            for worker in self.workers.cancel_group(self, group):
                with contextlib.suppress(WorkerCancelled, WorkerFailed):
                    await worker.wait()

    @work(group="conversation-reveal", exit_on_error=False)
    async def _reveal(self, up: bool) -> None:
        """Mount blocks beyond the edge the view is near, a batch at a time until the view is
        a screen away from it."""
        if self._moving.locked():
            return
        async with self._moving:
            while self._wants_more(up):
                await (self._mount_above() if up else self._mount_below())
        # The view may have scrolled meanwhile (a scroll to the end lands after the layout).
        self.call_after_refresh(self._recheck)

    def _recheck(self) -> None:
        self._maybe_reveal(up=self._wants_more(True))

    async def _mount_above(self) -> None:
        batch = [make() for make in self._window.take_above(REVEAL_BATCH)]
        blocks = self.blocks
        first = blocks[0] if blocks else None
        # A view that follows the bottom stays there by itself; one the user scrolled up must
        # keep its place while content grows above it.
        following = self._following()
        top = first.virtual_region.y if first is not None else 0
        await self.mount_all(batch, before=first)
        await self._laid_out(batch)
        if first is not None and not following and first.parent is self:
            grown = first.virtual_region.y - top
            self.scroll_to(y=self.scroll_y + grown, animate=False, immediate=True)
        if not following:
            # The window keeps its size: the newest blocks beyond it wait below it, but those
            # within two screens below the view stay, so that scrolling down moves on.
            excess = len(self.blocks) - self.max_blocks
            below = self.scroll_y + 2 * self._screen
            shown = self._shown()
            far = list(takewhile(lambda block: block.virtual_region.y > below, shown[::-1]))
            if excess > 0 and not self._window.below:
                # A step streaming far below the view goes on hidden at the end, so that the
                # finished blocks before it may leave.
                busy = self._busy()
                live = [index for index, block in enumerate(far) if block in busy]
                if live:
                    self._hide(far[live[-1] :: -1])
                    far = far[live[-1] + 1 :]
            newest = self._movable(far)[: max(0, excess)]
            await self._unmount(newest[::-1], self._window.put_below)
        await self._sync_marker()

    async def _mount_below(self) -> None:
        batch = [make() for make in self._window.take_below(REVEAL_BATCH)]
        tail = self._tail
        await self.mount_all(batch, before=tail[0] if tail else None)
        if not self._window.below and tail:
            # The window reaches the end of the session: the new blocks there show.
            self._show_tail()
            batch += tail
        await self._laid_out(batch)
        # The window keeps its size: the oldest blocks beyond it wait above it, and the view
        # keeps its place as the content above it shrinks.
        blocks = self.blocks
        victims = self._movable(blocks)[: max(0, len(blocks) - self.max_blocks)]
        # Those within a screen above the view stay, so that scrolling up moves on.
        above = self.scroll_y - self._screen
        victims = list(takewhile(lambda block: block.virtual_region.bottom < above, victims))
        if victims:
            kept = blocks[len(victims)]
            shrunk = kept.virtual_region.y - victims[0].virtual_region.y
            await self._unmount(victims, self._window.put_above)
            self.scroll_to(y=self.scroll_y - shrunk, animate=False, immediate=True)

    async def _jump(self, *, to_start: bool) -> None:
        """Move the window to the start or the end of the session (Home, End): its blocks are
        replaced in one update. A step streaming at the end goes on there, hidden."""
        async with self._moving:
            shown = self._shown()
            movable = self._movable(shown)
            window = self._window
            if len(movable) < len(shown):
                if not to_start:
                    # Busy blocks in the window: it reaches the end already.
                    return
                self._hide(shown[len(movable) :])
            batch: list[BlockFactory] = []
            if to_start or window.below:
                await self._unmount(movable, window.to_start if to_start else window.to_end)
                size = min(INITIAL_BLOCKS, self.max_blocks)
                batch = window.take_below(size) if to_start else window.take_above(size)
            tail = self._tail
            with self.app.batch_update():
                await self._sync_marker()
                await self.mount_all((make() for make in batch), before=tail[0] if tail else None)
                if not to_start:
                    self._show_tail()
            if to_start:
                self.release_anchor()
                self.scroll_home(animate=False, immediate=True)
            else:
                self.anchor()
        # A short window grows towards what is beyond it.
        self.call_after_refresh(self._maybe_reveal, not to_start)

    async def action_first(self) -> None:
        """Home: the first block of the session."""
        if self._window.above:
            await self._jump(to_start=True)
        self.scroll_home(animate=False)

    async def action_last(self) -> None:
        """End: the last block of the session, followed from then on."""
        if self._window.below or self._tail:
            await self._jump(to_start=False)
        self.action_scroll_end()

    async def _laid_out(self, batch: Sequence[Widget]) -> None:
        """Wait until the screen has laid out the blocks just mounted (a busy screen may draw
        a frame first)."""
        for _ in range(10):
            await self._refreshed()
            if all(block.virtual_region for block in batch):
                break

    async def _refreshed(self) -> None:
        """Wait until the screen has laid out what was just mounted."""
        done = asyncio.Event()
        self.call_after_refresh(done.set)
        await done.wait()
