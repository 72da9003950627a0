"""The history pane: the rotated `context_N.jsonl` files of the session, newest first.

It stays live two ways: the soul's events (revert, restore, clear, compaction) and a watch on the
session folder, so a rotation made by another process (Kimi CLI, a second kode-tui reading the
session) shows up too. Reading the folder and counting the messages of files that
rotations.jsonl says nothing about (Kimi CLI's) happens in a thread.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, NamedTuple

from textual import on, work
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option
from watchfiles import Change, awatch

from kode_tui.safetext import visible
from kode_tui.session import Context, Rotation
from kode_tui.session.rotation import ROTATIONS_LOG
from kode_tui.session.scan import scan
from kode_tui.session.timetravel import lineage
from kode_tui.ui.widgets.gauge import short_tokens
from kode_tui.ui.wire_messages import WireListener, WireMessage
from kode_tui.wire import events as ev
from kode_tui.wire.bus import WireBus

log = logging.getLogger(__name__)

AGE_REFRESH_SECONDS = 30.0
WATCH_DEBOUNCE_MS = 100
_MAX_SUMMARISED_SIZE = 64 << 20
"""Larger rotations without a note are not read just to count their messages."""

_GROUP = Binding.Group("History")


class _Summary(NamedTuple):
    messages: int
    tokens: int


@dataclass(frozen=True, slots=True)
class _Entry:
    rotation: Rotation
    messages: int | None
    tokens: int | None
    on_live_path: bool = True
    """Whether the live context descends from it (else it is an abandoned branch)."""
    parent: int | None = None
    """The rotated context this one continued, when that is not simply the one before it."""


class HistoryPane(WireListener, OptionList):
    """The rotated contexts of the session, newest first; Enter asks for a preview."""

    HELP: ClassVar[str] = """\
## History

Every earlier generation of this session's context, newest first. A revert, a compaction, a
clear or a restore keeps the context it replaced as `context_N.jsonl`: nothing is lost.

- Each row: the file, why it was made (`revert → 4`, `compaction 48k→3k`, `—` when unknown,
  as for Kimi CLI's files), how long ago, its size, messages and tokens.
- ● the live context descends from this file; ○ a branch left behind (by a restore):
  restoring it switches to that branch. `from context_N` names the file a context continued
  when that is not the one just before it (after a restore).
- **Enter** or a click opens a read-only preview, from which it can be restored.
"""

    BORDER_TITLE: ClassVar[str] = "History"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select", "Preview", id="history.preview", group=_GROUP),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = OptionList.COMPONENT_CLASSES | {
        "history-pane--name",
        "history-pane--reason",
        "history-pane--age",
        "history-pane--muted",
    }

    @dataclass
    class PreviewRequested(Message):
        """The user wants to look at a rotated context (the App opens the preview)."""

        path: Path
        history: HistoryPane

        @property
        def control(self) -> HistoryPane:
            return self.history

    def __init__(self, bus: WireBus, context: Context, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._bus = bus
        # Not `_context`: MessagePump has a method of that name.
        self._live_context = context
        self._stop_watching = asyncio.Event()
        self._entries: list[_Entry] = []
        self._summaries: dict[tuple[str, int, float], _Summary | None] = {}
        self._follow = True
        """Whether the highlight stays on the newest rotation (until the user moves it)."""
        live = context.path
        self._rotation_name = re.compile(
            rf"{re.escape(live.stem)}_\d+{re.escape(live.suffix)}|{re.escape(ROTATIONS_LOG)}"
        )

    def on_mount(self) -> None:
        self._stop_watching = asyncio.Event()  # a fresh one, should the pane be mounted again
        self.listen(
            self._bus, ev.ContextReverted, ev.ContextRestored, ev.ContextCleared, ev.CompactionEnd
        )
        self._show_rows()
        self.refresh_rotations()
        self._watch_folder()
        self.set_interval(AGE_REFRESH_SECONDS, self._show_rows)

    def on_unmount(self) -> None:
        self._stop_watching.set()

    @property
    def paths(self) -> list[Path]:
        """The rotated files shown, top (newest) to bottom."""
        return [entry.rotation.path for entry in self._entries]

    def on_wire_message(self, message: WireMessage) -> None:
        self.refresh_rotations()

    @work(exclusive=True, group="history-refresh", exit_on_error=False)
    async def refresh_rotations(self) -> None:
        """Read the session folder again and show what it holds."""
        self._entries = await asyncio.to_thread(self._load)
        self._show_rows()

    @work(exclusive=True, group="history-watch", exit_on_error=False)
    async def _watch_folder(self) -> None:
        folder = self._live_context.path.parent
        if not folder.is_dir():
            log.debug("not watching %s: it does not exist", folder)
            return
        async for _changes in awatch(
            folder,
            watch_filter=self._is_rotation_change,
            debounce=WATCH_DEBOUNCE_MS,
            step=50,
            stop_event=self._stop_watching,
            recursive=False,
        ):
            self.refresh_rotations()

    def _is_rotation_change(self, change: Change, path: str) -> bool:
        return self._rotation_name.fullmatch(os.path.basename(path)) is not None

    def _load(self) -> list[_Entry]:
        rotations = self._live_context.rotations()
        source = [(r.number, r.reason, _source(r)) for r in rotations]
        found = lineage(source)
        live_path = found.live_path
        entries = []
        for rotation in reversed(rotations):
            messages, tokens = rotation.messages, rotation.tokens
            if messages is None or tokens is None:
                summary = self._summary(rotation)
                if summary is not None:
                    messages = summary.messages if messages is None else messages
                    tokens = summary.tokens if tokens is None else tokens
            parent = found.parent.get(rotation.number)
            branched = parent is not None and parent != rotation.number - 1
            entries.append(
                _Entry(
                    rotation,
                    messages,
                    tokens,
                    rotation.number in live_path,
                    parent if branched else None,
                )
            )
        return entries

    def _summary(self, rotation: Rotation) -> _Summary | None:
        key = (rotation.path.name, rotation.size, rotation.mtime)
        if key in self._summaries:
            return self._summaries[key]
        summary = None
        if rotation.size <= _MAX_SUMMARISED_SIZE:
            try:
                found = scan(rotation.path.read_bytes(), rotation.path.name)
            except OSError:
                return None
            summary = _Summary(len(found.message_starts), found.token_count)
        self._summaries[key] = summary
        return summary

    def _show_rows(self) -> None:
        entries = self._entries
        if not entries:
            empty = Content.styled("no rotated contexts yet", ".history-pane--muted")
            self.set_options([Option(empty, disabled=True)])
            self._follow = True
            return
        highlighted = self.highlighted_option
        previous = highlighted.id if highlighted is not None else None
        follow = self._follow
        scroll_y = self.scroll_y
        now = time.time()
        self.set_options(
            [Option(_row_content(entry, now), id=entry.rotation.path.name) for entry in entries]
        )
        self.scroll_y = scroll_y
        index = 0
        if not follow and previous is not None:
            names = [entry.rotation.path.name for entry in entries]
            index = names.index(previous) if previous in names else 0
        self.highlighted = index

    def watch_highlighted(self, highlighted: int | None) -> None:
        if highlighted is not None and self._entries:
            self._follow = highlighted == 0
        super().watch_highlighted(highlighted)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "select":
            return bool(self._entries)
        return True

    @on(OptionList.OptionHighlighted)
    def _swallow_highlight(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()

    @on(OptionList.OptionSelected)
    def _request_preview(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if 0 <= event.option_index < len(self._entries):
            path = self._entries[event.option_index].rotation.path
            self.post_message(self.PreviewRequested(path, self))


# --- rows -----------------------------------------------------------------------------------------


def reason_text(rotation: Rotation) -> str:
    """Why a rotation was made, in a few words: `revert → 4`, `compaction 48k→3k`, `—`."""
    reason, info = rotation.reason, rotation.info
    if reason in ("revert", "dmail"):
        return f"{reason} → {rotation.checkpoint}" if rotation.checkpoint is not None else reason
    if reason == "compaction":
        before = info.get("tokens_before", rotation.tokens)
        after = info.get("tokens_after")
        if isinstance(before, int) and isinstance(after, int):
            return f"compaction {short_tokens(before)}→{short_tokens(after)}"
        return "compaction"
    if reason == "restore":
        source = info.get("source")
        return (
            f"restore ← {source.removesuffix('.jsonl')}" if isinstance(source, str) else "restore"
        )
    if reason == "system_prompt":
        return "new system prompt"
    return reason or "—"


def age_text(seconds: float) -> str:
    """How long ago, in the largest whole unit: `just now`, `2m ago`, `3h ago`, `5d ago`."""
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)}m ago"
    if seconds < 86_400:
        return f"{int(seconds // 3600)}h ago"
    return f"{int(seconds // 86_400)}d ago"


def size_text(size: int) -> str:
    """A file size: `850 B`, `4.2 KiB`, `12 KiB`, `3.1 MiB`."""
    value = float(size)
    for unit in ("B", "KiB", "MiB"):
        if value < 1024 or unit == "MiB":
            if unit == "B":
                return f"{size} B"
            return f"{value:.1f} {unit}" if value < 10 else f"{value:.0f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def _source(rotation: Rotation) -> str | None:
    value = rotation.info.get("source")
    return value if isinstance(value, str) else None


def _row_content(entry: _Entry, now: float) -> Content:
    rotation = entry.rotation
    when = rotation.time if rotation.time is not None else rotation.mtime
    facts = [size_text(rotation.size)]
    if entry.parent is not None:
        facts.insert(0, f"from context_{entry.parent}")
    if entry.messages is not None:
        facts.append(f"{entry.messages} msgs")
    if entry.tokens is not None:
        facts.append(f"{short_tokens(entry.tokens)} tok")
    strategy = rotation.info.get("strategy")
    if rotation.reason == "compaction" and isinstance(strategy, str) and strategy:
        # The class names all end so; the pane is narrow.
        facts.append(strategy.removesuffix("Compaction") or strategy)
    # ● the live context descends from it; ○ an abandoned branch (restore it to switch).
    mark = "\N{BLACK CIRCLE} " if entry.on_live_path else "\N{WHITE CIRCLE} "
    # The file's name and what rotations.jsonl says of it are shown, so they are made visible.
    return Content.assemble(
        (mark, ".history-pane--name" if entry.on_live_path else ".history-pane--muted"),
        (visible(rotation.path.stem, multiline=False), ".history-pane--name"),
        "  ",
        (visible(reason_text(rotation), multiline=False), ".history-pane--reason"),
        "  ",
        (age_text(max(0.0, now - when)), ".history-pane--age"),
        "\n  ",
        (visible(" · ".join(facts), multiline=False), ".history-pane--muted"),
    )


if __name__ == "__main__":
    import sys

    from textual.app import App, ComposeResult

    class HistoryDemo(App[None]):
        """The history of a session folder: python -m kode_tui.ui.widgets.history DIR."""

        def compose(self) -> ComposeResult:
            # Context() only opens the file on restore or write, so this reads nothing else.
            yield HistoryPane(WireBus(), Context(Path(sys.argv[1]) / "context.jsonl"))

        @on(HistoryPane.PreviewRequested)
        def _preview(self, event: HistoryPane.PreviewRequested) -> None:
            self.notify(f"preview {event.path.name} requested")

    HistoryDemo().run()
