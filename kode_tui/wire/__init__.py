"""Wire events, the in-process bus and the wire.jsonl recorder (DESIGN.md §3)."""

from kode_tui.wire import events
from kode_tui.wire.bus import Subscription, WireBus
from kode_tui.wire.recorder import WireRecorder, read_wire

__all__ = ["Subscription", "WireBus", "WireRecorder", "events", "read_wire"]
