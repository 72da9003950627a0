"""The history pane: the rotated `context_N.jsonl` files of the session, newest first.

It stays live two ways: the soul's events (revert, restore, clear, compaction) and a watch on the
session folder, so a rotation made by another process (Kimi CLI, a second kode-tui reading the
session) shows up too. Reading the folder, and the files that rotations.jsonl says nothing about
(Kimi CLI's) for their counts and reasons, happens in a thread.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import on, work
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from kode_tui.humanize import format_age, format_size, format_tokens
from kode_tui.safetext import visible
from kode_tui.ui.widgets.session_pane import SessionPane
from kode_tui.ui.wire_messages import WireMessage

if TYPE_CHECKING:
    # Names only: the pane is drawn in the first frame, before the domain loads (`bind`).
    from kode_tui.soul.facade import AgentSession, Rotation, RotationEntry, SubagentEntry, WireBus

log = logging.getLogger(__name__)

AGE_REFRESH_SECONDS = 30.0

_GROUP = Binding.Group("History")


class HistoryPane(SessionPane, OptionList):
    """The rotated contexts of the session, newest first; Enter asks for a preview."""

    HELP: ClassVar[str] = """\
## History

Every earlier generation of this session's context, newest first. A revert, a compaction, a
clear or a restore keeps the context it replaced as `context_N.jsonl`: nothing is lost.

- Each row: the file, why it was made (`revert → 4`, `compaction 48k→3k`), how long ago, its
  size, messages and tokens. Kimi CLI notes no reason: its files' contents tell it (`—` when
  they do not).
- ● the live context descends from this file; ○ a branch left behind (by a restore):
  restoring it switches to that branch. `from context_N` names the file a context continued
  when that is not the one just before it (after a restore).
- **Enter** or a click opens a read-only preview, from which it can be restored.
- **F** forks it: a new session whose context is this file's, opened in its place (the
  session picker and this pane of the new session say where it came from).
- Below them, each subagent's own context (`subagents/<agent_id>`), latest first: its type,
  the task it was given and its status; **Enter** opens it read-only.
"""

    BORDER_TITLE: ClassVar[str] = "History"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select", "Preview", id="history.preview", group=_GROUP),
        Binding("F", "fork", "Fork", id="history.fork", group=_GROUP),
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

        name: str
        """The rotated file's name, `context_3.jsonl`."""
        history: HistoryPane

        @property
        def control(self) -> HistoryPane:
            return self.history

    @dataclass
    class ForkRequested(Message):
        """The user wants a new session made of a rotated context (the App makes it)."""

        name: str
        history: HistoryPane

        @property
        def control(self) -> HistoryPane:
            return self.history

    def init_state(self) -> None:
        self._stop_watching = asyncio.Event()
        self._entries: list[RotationEntry] = []
        self._subagents: list[SubagentEntry] = []
        self._follow = True
        """Whether the highlight stays on the newest rotation (until the user moves it)."""

    def show_new(self) -> None:
        self._show_rows()

    def bind(self, bus: WireBus, session: AgentSession) -> None:
        """Show `session`'s rotated contexts, read again on `bus`'s events and whenever the
        session folder changes, from now on."""
        from kode_tui.wire import events as ev

        self._bus, self._session = bus, session
        self._stop_watching.set()  # a watch of an earlier binding, if any
        self._stop_watching = asyncio.Event()  # a fresh one, should the pane be mounted again
        self.listen(
            bus,
            ev.ContextReverted,
            ev.ContextRestored,
            ev.ContextCleared,
            ev.ContextReloaded,
            ev.CompactionEnd,
            ev.TurnEnd,  # a turn's Agent calls made subagent contexts
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
        if self._session is None:
            return
        travel = self._session.travel
        entries = await asyncio.to_thread(travel.rotations)
        subagents = await asyncio.to_thread(travel.subagents)
        # Both at once with the rows: `paths` says what is shown, never what is about to be.
        self._entries, self._subagents = entries, subagents
        self._show_rows()

    @work(exclusive=True, group="history-watch", exit_on_error=False)
    async def _watch_folder(self) -> None:
        if self._session is None:
            return
        async for _change in self._session.travel.rotation_changes(self._stop_watching):
            self.refresh_rotations()

    def _show_rows(self) -> None:
        entries = self._entries
        now = time.time()
        subagents = [Option(_subagent_row(s, now), id=s.name) for s in self._subagents]
        if not entries:
            empty = Content.styled("no rotated contexts yet", ".history-pane--muted")
            self.set_options([Option(empty, disabled=True), *subagents, *self._lineage()])
            self._follow = True
            return
        highlighted = self.highlighted_option
        previous = highlighted.id if highlighted is not None else None
        follow = self._follow
        scroll_y = self.scroll_y
        self.set_options(
            [
                *(
                    Option(_row_content(entry, now), id=entry.rotation.path.name)
                    for entry in entries
                ),
                *subagents,
                *self._lineage(),
            ]
        )
        self.scroll_y = scroll_y
        index = 0
        if not follow and previous is not None:
            names = [entry.rotation.path.name for entry in entries]
            index = names.index(previous) if previous in names else 0
        self.highlighted = index

    def _lineage(self) -> list[Option]:
        """A last row saying where this session was forked from, when it was."""
        if self._session is None:
            return []
        from kode_tui.soul.facade import LineageNote

        note = LineageNote.of(self._session.session)
        if note is None:
            return []
        text = visible(f"⑂ {note.text}", multiline=False)
        return [Option(Content.styled(text, ".history-pane--muted"), disabled=True)]

    def watch_highlighted(self, highlighted: int | None) -> None:
        if highlighted is not None and self._entries:
            self._follow = highlighted == 0
        super().watch_highlighted(highlighted)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "select":
            return bool(self._entries or self._subagents)
        if action == "fork":
            return bool(self._entries)
        return True

    def action_fork(self) -> None:
        index = self.highlighted
        if index is not None and 0 <= index < len(self._entries):
            self.post_message(self.ForkRequested(self._entries[index].rotation.path.name, self))

    @on(OptionList.OptionHighlighted)
    def _swallow_highlight(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()

    @on(OptionList.OptionSelected)
    def _request_preview(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:  # a rotated context's or a subagent's
            self.post_message(self.PreviewRequested(event.option.id, self))


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
            return f"compaction {format_tokens(before)}→{format_tokens(after)}"
        return "compaction"
    if reason == "restore":
        source = info.get("source")
        return (
            f"restore ← {source.removesuffix('.jsonl')}" if isinstance(source, str) else "restore"
        )
    if reason == "system_prompt":
        return "new system prompt"
    if reason == "edit" and isinstance(info.get("dropped"), int):
        return f"edit: dropped {info['dropped']}"  # `/drop`
    return reason or "—"


def _subagent_row(entry: SubagentEntry, now: float) -> Content:
    """`⤷ explore a1b2c3d4e  idle  3m ago` and the task it was given."""
    return Content.assemble(
        ("⤷ ", ".history-pane--muted"),
        (
            visible(f"{entry.subagent_type} {entry.agent_id}", multiline=False),
            ".history-pane--name",
        ),
        "  ",
        (visible(entry.status, multiline=False), ".history-pane--reason"),
        "  ",
        (format_age(entry.updated_at, now), ".history-pane--age"),
        "\n  ",
        (visible(entry.description or "subagent", multiline=False), ".history-pane--muted"),
    )


def _row_content(entry: RotationEntry, now: float) -> Content:
    rotation = entry.rotation
    when = rotation.time if rotation.time is not None else rotation.mtime
    facts = [format_size(rotation.size)]
    if entry.parent is not None:
        facts.insert(0, f"from context_{entry.parent}")
    if entry.messages is not None:
        facts.append(f"{entry.messages} msgs")
    if entry.tokens is not None:
        facts.append(f"{'~' if entry.tokens_estimated else ''}{format_tokens(entry.tokens)} tok")
    strategy = rotation.info.get("strategy")
    if rotation.reason == "compaction" and isinstance(strategy, str) and strategy:
        # The class names all end so; the pane is narrow.
        facts.append(strategy.removesuffix("Compaction") or strategy)
    if rotation.reason == "compaction" and rotation.info.get("edited") is True:
        # The user changed the summary in the review: first, so the narrow pane shows it.
        facts.insert(0, "summary edited")
    # ● the live context descends from it; ○ an abandoned branch (restore it to switch).
    mark = "\N{BLACK CIRCLE} " if entry.on_live_path else "\N{WHITE CIRCLE} "
    # The file's name and what rotations.jsonl says of it are shown, so they are made visible.
    return Content.assemble(
        (mark, ".history-pane--name" if entry.on_live_path else ".history-pane--muted"),
        (visible(rotation.path.stem, multiline=False), ".history-pane--name"),
        "  ",
        (visible(reason_text(rotation), multiline=False), ".history-pane--reason"),
        "  ",
        (format_age(when, now), ".history-pane--age"),
        "\n  ",
        (visible(" · ".join(facts), multiline=False), ".history-pane--muted"),
    )


if __name__ == "__main__":
    import sys

    from textual.app import App, ComposeResult

    class HistoryDemo(App[None]):
        """The history of a session folder: python -m kode_tui.ui.widgets.history DIR."""

        def __init__(self, session: AgentSession) -> None:
            super().__init__()
            self.session = session

        def compose(self) -> ComposeResult:
            yield HistoryPane(self.session.bus, self.session)

        @on(HistoryPane.PreviewRequested)
        def _preview(self, event: HistoryPane.PreviewRequested) -> None:
            self.notify(f"preview {event.name} requested")

    from kode_tui.soul.facade import AgentSession

    async def _open() -> AgentSession:
        from kode_tui.soul.facade import Session

        return await AgentSession.view(await Session.from_dir(Path(sys.argv[1])))

    HistoryDemo(asyncio.run(_open())).run()
