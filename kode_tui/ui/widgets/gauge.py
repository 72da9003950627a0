"""The token gauge: how full the context is, where compaction starts, and whether it runs."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import RenderResult
from textual.content import Content
from textual.reactive import reactive, var
from textual.widget import Widget

from kode_tui.humanize import format_tokens, format_usd
from kode_tui.ui.wire_messages import WireListener, WireMessage

if TYPE_CHECKING:
    # The gauge is drawn in the first frame, before the domain loads; its events come after.
    from kode_tui.soul.facade import WireBus
    from kode_tui.wire import events as ev

USED = "█"
PENDING = "▒"
FREE = "░"
MARKER = "▲"

# Fill thresholds of the colour levels (DESIGN.md §10): success below 60%, warning below 85%.
_LEVELS = ((0.60, "-fill-low"), (0.85, "-fill-mid"), (float("inf"), "-fill-high"))
LEVEL_CLASSES = tuple(name for _, name in _LEVELS)


def level_class(fill: float) -> str:
    """The CSS class that colours a gauge filled to `fill` (0..1, may exceed 1)."""
    return next(name for limit, name in _LEVELS if fill < limit)


def marker_column(trigger_tokens: int, max_tokens: int, width: int) -> int:
    """The bar cell the compaction marker sits under: the cell holding trigger/max."""
    if width <= 0 or max_tokens <= 0:
        return 0
    return max(0, min(width - 1, trigger_tokens * width // max_tokens))


class TokenGauge(WireListener, Widget):
    """A bar of the context size against the model's window, with the compaction trigger."""

    HELP: ClassVar[str] = """\
## Context gauge

How much of the model's context window the conversation uses.

- `█` tokens the model reported, `▒` an estimate for messages added since, `░` free.
- `▲` marks where compaction starts.
- Green below 60%, yellow below 85%, red above. Hover for the exact numbers.
- On the right: the session's cost so far and, in brackets, the last turn's (litellm's prices;
  a `+` says some calls are left out: unknown price, or older than the count). `/cost` details it.
"""

    BORDER_TITLE: ClassVar[str] = "Context"

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "token-gauge--used",
        "token-gauge--pending",
        "token-gauge--free",
        "token-gauge--marker",
        "token-gauge--percent",
        "token-gauge--numbers",
        "token-gauge--muted",
        "token-gauge--compacting",
        "token-gauge--cost",
    }

    status: reactive[ev.StatusUpdate | None] = reactive(None)
    """The last status the soul sent; None until the first one."""
    compacting: reactive[bool] = reactive(False, toggle_class="-compacting")
    stale: var[bool] = var(False, toggle_class="-stale")
    """The context was rewritten and the numbers wait for the next StatusUpdate."""

    def __init__(
        self,
        bus: WireBus | None = None,
        status: ev.StatusUpdate | None = None,
        *,
        id: str | None = None,
    ) -> None:
        """`status`: the agent's numbers when the gauge is made (None: none yet). Without
        `bus`, the gauge shows no count until `bind()` gives it the session's."""
        super().__init__(id=id)
        self._bus = bus
        self._first_status = status

    def on_mount(self) -> None:
        if self._bus is not None:
            self.bind(self._bus, self._first_status)

    def bind(self, bus: WireBus, status: ev.StatusUpdate | None) -> None:
        """Follow `bus`, showing `status` now if there is one (drawn in place: same rows)."""
        from kode_tui.wire import events as ev

        self._bus = bus
        if status is not None:
            self.set_status(status)
        self.listen(
            bus,
            ev.StatusUpdate,
            ev.CompactionBegin,
            ev.CompactionEnd,
            ev.ContextReverted,
            ev.ContextRestored,
            ev.ContextCleared,
            ev.TurnEnd,
        )

    def set_status(self, event: ev.StatusUpdate) -> None:
        """Show `event`'s numbers."""
        self.status = event
        self.stale = False

    def on_wire_message(self, message: WireMessage) -> None:
        from kode_tui.wire import events as ev

        event = message.event
        if isinstance(event, ev.StatusUpdate):
            self.set_status(event)
        elif isinstance(event, ev.CompactionBegin):
            self.compacting = True
        elif isinstance(event, ev.CompactionEnd | ev.TurnEnd):
            # A turn cancelled mid-compaction never sends CompactionEnd.
            self.compacting = False
        else:
            # Revert, restore, clear: the size is unknown until the App's next StatusUpdate.
            self.compacting = False
            self.stale = True

    @property
    def fill(self) -> float:
        """Context tokens / window size (0 with no status yet)."""
        status = self.status
        if status is None or status.max_context_tokens <= 0:
            return 0.0
        return status.context_tokens / status.max_context_tokens

    def watch_status(self, status: ev.StatusUpdate | None) -> None:
        level = level_class(self.fill)
        for name in LEVEL_CLASSES:
            self.set_class(name == level, name)
        self.tooltip = _tooltip(status)

    def render(self) -> RenderResult:
        width = self.content_size.width
        return Content("\n").join(
            [self._bar_line(width), self._marker_line(width), self._numbers_line(width)]
        )

    def _bar_line(self, width: int) -> Content:
        status = self.status
        if status is None or status.max_context_tokens <= 0:
            return Content.styled(FREE * width, ".token-gauge--free")
        window = status.max_context_tokens
        pending = min(max(status.pending_tokens, 0), status.context_tokens)
        total_cells = min(width, round(status.context_tokens * width / window))
        used_cells = min(total_cells, round((status.context_tokens - pending) * width / window))
        if pending and total_cells == used_cells and total_cells < width:
            total_cells += 1  # an estimate too small for a cell still shows
        return Content.assemble(
            (USED * used_cells, ".token-gauge--used"),
            (PENDING * (total_cells - used_cells), ".token-gauge--pending"),
            (FREE * (width - total_cells), ".token-gauge--free"),
        )

    def _marker_line(self, width: int) -> Content:
        status = self.status
        if status is None or status.max_context_tokens <= 0 or width <= 0:
            return Content("")
        column = marker_column(status.trigger_tokens, status.max_context_tokens, width)
        if self.compacting:
            label = Content.styled("compacting…", ".token-gauge--compacting")
        else:
            label = Content.styled(
                f"compacts at {format_tokens(status.trigger_tokens)}", ".token-gauge--muted"
            )
        marker = Content.styled(MARKER, ".token-gauge--marker")
        if column + 2 + label.cell_length <= width:
            return Content.assemble(" " * column, marker, " ", label)
        if label.cell_length + 1 <= column:
            return Content.assemble(" " * (column - label.cell_length - 1), label, " ", marker)
        return Content.assemble(" " * column, marker)

    def _numbers_line(self, width: int) -> Content:
        numbers = self._token_numbers()
        status = self.status
        cost = status.cost if status is not None else None
        if cost is None:
            return numbers
        # The longest cost that fits to the right of the numbers: with the last turn's, without.
        for text in cost_labels(cost):
            gap = width - numbers.cell_length - len(text)
            if gap >= 2:
                return Content.assemble(numbers, " " * gap, (text, ".token-gauge--cost"))
        return numbers

    def _token_numbers(self) -> Content:
        status = self.status
        if status is None or status.max_context_tokens <= 0:
            return Content.styled("no token count yet", ".token-gauge--muted")
        parts: list[Content | str | tuple[str, str]] = [
            (f"{self.fill:.0%}", ".token-gauge--percent"),
            " ",
            (
                f"{format_tokens(status.context_tokens)}/{format_tokens(status.max_context_tokens)}",
                ".token-gauge--numbers",
            ),
        ]
        if status.pending_tokens > 0:
            parts.append((f"  ~{format_tokens(status.pending_tokens)} est.", ".token-gauge--muted"))
        return Content.assemble(*parts)


def cost_labels(cost: ev.CostStatus) -> list[str]:
    """What the gauge says of the cost, longest first: `$0.042 (last $0.004)`, `$0.042`."""
    if not cost.priced:
        return ["price unknown"]
    total = format_usd(cost.session_usd) + ("" if cost.exact else "+")
    if cost.turn_usd is None:
        return [total]
    return [f"{total} (last {format_usd(cost.turn_usd)})", total]


def _tooltip(status: ev.StatusUpdate | None) -> str:
    if status is None:
        return "No token count yet: it comes with the first reply."
    window = max(status.max_context_tokens, 1)
    lines = [
        f"{status.context_tokens:,} of {status.max_context_tokens:,} tokens "
        f"({status.context_tokens / window:.1%})",
    ]
    if status.pending_tokens > 0:
        lines.append(f"including ~{status.pending_tokens:,} estimated for new messages")
    lines.append(f"compaction starts at {status.trigger_tokens:,}")
    lines.append(f"{status.reserved_tokens:,} reserved for the reply")
    if status.usage is not None:
        usage = status.usage
        lines.append(
            f"last call: {usage.input:,} in · {usage.output:,} out"
            + (f" · {usage.cache_read:,} cached" if usage.cache_read else "")
        )
    if status.cost is not None and status.cost.priced:
        lines.append(f"cost so far: {cost_labels(status.cost)[0]} · /cost details it")
    return "\n".join(lines)


if __name__ == "__main__":
    from textual.app import App, ComposeResult
    from textual.binding import Binding, BindingType

    from kode_tui.soul.facade import WireBus
    from kode_tui.wire import events as ev

    class GaugeDemo(App[None]):
        """Fills the gauge step by step; `c` toggles compaction."""

        BINDINGS: ClassVar[list[BindingType]] = [
            Binding("c", "compact", "Compact", id="demo.compact"),
        ]

        def __init__(self) -> None:
            super().__init__()
            self.bus = WireBus()
            self.tokens = 0

        def compose(self) -> ComposeResult:
            yield TokenGauge(self.bus)

        def on_mount(self) -> None:
            self.set_interval(0.3, self.grow)

        def grow(self) -> None:
            self.tokens = (self.tokens + 7_000) % 200_000
            self.bus.send(
                ev.StatusUpdate(
                    context_tokens=self.tokens,
                    pending_tokens=self.tokens // 10,
                    max_context_tokens=200_000,
                    reserved_tokens=50_000,
                    trigger_tokens=150_000,
                )
            )

        def action_compact(self) -> None:
            gauge = self.query_one(TokenGauge)
            if gauge.compacting:
                self.bus.send(ev.CompactionEnd(tokens_before=self.tokens, tokens_after=3000))
            else:
                self.bus.send(ev.CompactionBegin(strategy="demo"))

    GaugeDemo().run()
