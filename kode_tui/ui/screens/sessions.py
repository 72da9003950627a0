"""The session picker (/sessions): the sessions of the work dir, or of every work dir, newest first.

Each row shows what a user needs to recognise a conversation — title, age, messages, tokens,
cost — read cheaply from the session files: the context is scanned for record roles only, never
restored (restoring takes the session's lock and builds the whole history); the cost is the
running total in state.json, `—` for a session from before kode-tui counted it. A fork's title
ends in `⑂ of` its original's id. The columns fit the dialog's width, the title taking what the
others leave; the line under the table names the highlighted session whole.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import ClassVar

from rich.cells import cell_len, set_cell_size
from rich.text import Text
from textual import events, getters, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.reactive import var
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Input, Label, Static, Switch

from kode_tui.humanize import format_age, format_tokens, format_usd
from kode_tui.paths import canonical
from kode_tui.safetext import visible
from kode_tui.soul.facade import LineageNote, Session, SessionCatalog, SessionRow

log = logging.getLogger(__name__)

EMPTY_HERE = "No sessions here yet."
EMPTY_ANYWHERE = "No sessions yet."


# --- What a row shows ---------------------------------------------------------------------------


def _work_dir_label(session: Session) -> str:
    if session.work_dir is None:
        # A folder kode.json does not name: its md5 folder is all there is to show.
        return session.dir.parent.name
    home = str(Path.home())
    path = str(session.work_dir)
    if path == home or path.startswith(home + os.sep):
        return "~" + path[len(home) :]
    return path


def _cost_label(session: Session) -> str:
    """`$0.042`; `$0.042+` when some calls are left out (unknown price, or older than the
    count); `—` when nothing priced was counted."""
    spend = session.state.spend
    if spend is None or not any(m.usd is not None for m in spend.models.values()):
        return "—"
    return format_usd(spend.usd) + ("" if spend.exact else "+")


def _key(row: SessionRow) -> str:
    return str(row.session.dir)


def _fit(text: str, width: int) -> str:
    """`text` in `width` cells at most, its end cut to `…` when it is longer."""
    if cell_len(text) <= width:
        return text
    return set_cell_size(text, max(width - 1, 0)).rstrip() + "…"


def _fit_start(text: str, width: int) -> str:
    """`text` in `width` cells at most, its start cut to `…` (a path's end says most)."""
    if cell_len(text) <= width:
        return text
    kept = text
    while kept and cell_len(kept) > width - 1:
        kept = kept[1:]
    return "…" + kept


def _fork_mark(session: Session) -> str:
    """`⑂ of 1a2b3c4d` for a fork; "" otherwise."""
    note = LineageNote.of(session)
    return "" if note is None else f"⑂ of {note.origin.session[:8]}"


def _title_cell(session: Session, width: int, *, current: bool) -> Text:
    """The title, and a fork's mark after it, in `width` cells: the title gives way first,
    then the mark shrinks to `⑂` (the line under the table says the rest)."""
    title = visible(session.title, multiline=False)
    mark = visible(_fork_mark(session), multiline=False)
    if mark and width - cell_len(mark) - 2 < 8:
        mark = "⑂"
    gap = "  " if mark else ""
    cell = Text(_fit(title, max(width - cell_len(gap + mark), 0)))
    cell.stylize("bold" if current else "")
    if mark:
        cell.append(gap + mark, style="dim")
    return cell


MIN_TITLE = 12
"""Cells the title column keeps however narrow the dialog (the table scrolls sideways then)."""


# --- The screen ---------------------------------------------------------------------------------


class SessionPicker(ModalScreen[Session | None]):
    """Pick a session to open: dismissed with the chosen `Session`, or None (Esc).

    Sessions of other work dirs (Ctrl+A) come with their own `work_dir` (None when kode.json
    does not know the folder); the App opens whichever session it gets.
    """

    HELP = """\
## Sessions
Type to filter by title; **↑/↓** choose, **Enter** opens, **Esc** closes.
**Ctrl+A** lists the sessions of every work dir. ● marks the session open now.
"""
    BINDING_GROUP_TITLE = "Session picker"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "Open", id="sessions.open", priority=True),
        Binding("escape", "close", "Close", id="sessions.close"),
        Binding("ctrl+a", "toggle_all", "All work dirs", id="sessions.all", priority=True),
        Binding("down", "move(1)", "Next session", show=False, id="sessions.next"),
        Binding("up", "move(-1)", "Previous session", show=False, id="sessions.previous"),
        Binding("pagedown", "page(1)", "Page down", show=False, id="sessions.page_down"),
        Binding("pageup", "page(-1)", "Page up", show=False, id="sessions.page_up"),
    ]

    CSS_PATH = "screens.tcss"
    AUTO_FOCUS = "#sessions-filter"

    show_all: var[bool] = var(False, init=False)
    """List the sessions of every work dir, not only this one's."""
    filter_text: var[str] = var("", init=False)

    table = getters.query_one("#sessions-table", DataTable)
    empty = getters.query_one("#sessions-empty", Static)
    detail = getters.query_one("#sessions-detail", Static)
    all_switch = getters.query_one("#sessions-all", Switch)

    def __init__(self, work_dir: Path, current_id: str | None = None) -> None:
        super().__init__()
        self.work_dir = canonical(work_dir)
        self.current_id = current_id
        self._rows: list[SessionRow] = []
        self._shown: dict[str, SessionRow] = {}
        self._catalog = SessionCatalog()
        self._loaded = False

    def compose(self) -> ComposeResult:
        with Vertical(id="sessions-dialog") as dialog:
            dialog.border_title = "Sessions"
            with Horizontal(id="sessions-bar"):
                yield Input(placeholder="Filter by title…", id="sessions-filter")
                yield Switch(id="sessions-all")
                yield Label("all work dirs", id="sessions-all-label")
            yield DataTable(id="sessions-table", cursor_type="row", zebra_stripes=True)
            yield Static(EMPTY_HERE, id="sessions-empty")
            yield Static(id="sessions-detail")
        yield Footer()

    def on_mount(self) -> None:
        self.table.loading = True
        self._load()

    # --- Loading and filtering ---

    def watch_show_all(self, show_all: bool) -> None:
        self.all_switch.value = show_all
        self._load()

    def watch_filter_text(self) -> None:
        self._fill_table()

    @work(exclusive=True, group="session-picker", exit_on_error=False)
    async def _load(self) -> None:
        try:
            rows = await self._catalog.rows(self.work_dir, everywhere=self.show_all)
        except OSError as exc:
            self.notify(f"Cannot list the sessions: {exc}", severity="error")
            rows = []
        self._rows = rows
        self._loaded = True
        self.table.loading = False
        self._fill_table()

    def _fill_table(self) -> None:
        if not self._loaded:
            return
        table = self.table
        needle = self.filter_text.casefold().strip()
        shown = [row for row in self._rows if needle in row.session.title.casefold()]
        now = time.time()
        fixed: list[tuple[str, str, list[str]]] = [
            ("age", "Age", [format_age(row.session.updated_at, now) for row in shown]),
            ("messages", "Messages", [str(row.stats.messages) for row in shown]),
            ("tokens", "Tokens", [format_tokens(row.stats.tokens) for row in shown]),
            ("cost", "Cost", [_cost_label(row.session) for row in shown]),
        ]
        widths = {key: max(map(cell_len, [label, *values])) for key, label, values in fixed}
        dirs = [visible(_work_dir_label(row.session), multiline=False) for row in shown]
        titles = [_title_cell(row.session, 10**4, current=False).cell_len for row in shown]
        title_width, dir_width = self._flexible_widths(shown, widths, dirs, max(titles, default=0))

        table.clear(columns=True)
        table.add_column(" ", key="mark", width=1)
        table.add_column("Title", key="title", width=title_width)
        if self.show_all:
            table.add_column("Work dir", key="work_dir", width=dir_width)
        table.add_column("Age", key="age", width=widths["age"])
        for key, label, _values in fixed[1:]:
            table.add_column(Text(label, justify="right"), key=key, width=widths[key])
        for n, row in enumerate(shown):
            session = row.session
            current = self._is_current(session)
            cells: list[Text] = [
                Text("●" if current else " "),
                _title_cell(session, title_width, current=current),
            ]
            if self.show_all:
                cells.append(Text(_fit_start(dirs[n], dir_width)))
            cells.append(Text(fixed[0][2][n]))
            cells += [Text(values[n], justify="right") for _key, _label, values in fixed[1:]]
            table.add_row(*cells, key=_key(row))
        self._shown = {_key(row): row for row in shown}
        table.display = bool(shown)
        self.empty.display = not shown
        if not shown:
            # Content: the filter the user typed is not markup.
            self.empty.update(Content(visible(self._empty_text(needle), multiline=False)))
        self._show_detail()
        self.refresh_bindings()
        if shown:
            # A table just shown (or not laid out yet) had no width to fit: fit it once it has.
            fitted = table.size.width
            self.call_after_refresh(self._refit_if_resized, fitted)

    def _refit_if_resized(self, fitted: int) -> None:
        if not self.is_attached or not self.query("#sessions-table"):
            return  # closed before the refresh came (Enter right away)
        if self.table.size.width != fitted:
            self._refit(self.table.cursor_row)

    def _flexible_widths(
        self, shown: list[SessionRow], widths: dict[str, int], dirs: list[str], titles: int
    ) -> tuple[int, int]:
        """The title's and the work dir's widths: what the other columns leave of the table's
        width (and a scroll bar, when the rows overflow); the work dir gets what the longest
        title does not need, and at least 2/5 of it when both are too long."""
        table = self.table
        columns = 2 + len(widths) + (1 if self.show_all else 0)
        overflows = len(shown) + 1 > table.size.height
        scrollbar = table.styles.scrollbar_size_vertical if overflows else 0
        fixed = columns * 2 * table.cell_padding + 1 + sum(widths.values())  # 1: the mark
        room = table.size.width - scrollbar - fixed
        if not self.show_all:
            return max(room, MIN_TITLE), 0
        longest = max(map(cell_len, dirs), default=8)
        dir_width = max(min(longest, max(room * 2 // 5, room - titles)), 8)
        return max(room - dir_width, MIN_TITLE), dir_width

    def _show_detail(self) -> None:
        """Under the table: the highlighted session's id, its work dir (all work dirs shown:
        the column may cut it), and where a fork came from."""
        row = self._highlighted_row
        if row is None:
            self.detail.update("")
            return
        parts = [row.session.id]
        if self.show_all:
            parts.append(_work_dir_label(row.session))
        note = LineageNote.of(row.session)
        if note is not None:
            parts.append(f"⑂ {note.text}")
        self.detail.update(Content(visible("  ·  ".join(parts), multiline=False)))

    def on_resize(self, event: events.Resize) -> None:
        # The columns fit the width: fill them again for the new one, the cursor kept.
        cursor = self.table.cursor_row
        self.call_after_refresh(self._refit, cursor)

    def _refit(self, cursor: int) -> None:
        self._fill_table()
        if self._shown:
            self.table.move_cursor(row=min(cursor, self.table.row_count - 1))

    def _empty_text(self, needle: str) -> str:
        if needle and self._rows:
            return f"No session title matches “{self.filter_text.strip()}”."
        return EMPTY_ANYWHERE if self.show_all else EMPTY_HERE

    def _is_current(self, session: Session) -> bool:
        return (
            session.id == self.current_id
            and session.work_dir is not None
            and canonical(session.work_dir) == self.work_dir
        )

    # --- Input ---

    @on(Input.Changed, "#sessions-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.filter_text = event.value

    @on(Switch.Changed, "#sessions-all")
    def _switch_changed(self, event: Switch.Changed) -> None:
        event.stop()
        self.show_all = event.value

    @on(DataTable.RowHighlighted, "#sessions-table")
    def _row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self._show_detail()

    @on(DataTable.RowSelected, "#sessions-table")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        row = self._shown.get(str(event.row_key.value))
        if row is not None:
            self.dismiss(row.session)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("open", "move", "page"):
            # Dimmed, not hidden: the keys still belong here, there is just nothing to pick.
            return True if self._shown else None
        return True

    def action_open(self) -> None:
        session = self.highlighted
        if session is not None:
            self.dismiss(session)

    def action_close(self) -> None:
        self.dismiss(None)

    def action_toggle_all(self) -> None:
        self.show_all = not self.show_all

    def action_move(self, step: int) -> None:
        if step > 0:
            self.table.action_cursor_down()
        else:
            self.table.action_cursor_up()

    def action_page(self, step: int) -> None:
        if step > 0:
            self.table.action_page_down()
        else:
            self.table.action_page_up()

    @property
    def highlighted(self) -> Session | None:
        """The session under the cursor, if any row is shown."""
        row = self._highlighted_row
        return row.session if row is not None else None

    @property
    def _highlighted_row(self) -> SessionRow | None:
        table = self.table
        if not self._shown or table.row_count == 0:
            return None
        row_key, _ = table.coordinate_to_cell_key(table.cursor_coordinate)
        return self._shown.get(str(row_key.value))


if __name__ == "__main__":
    from textual.app import App

    class _Demo(App[None]):
        def on_mount(self) -> None:
            self.push_screen(SessionPicker(Path.cwd()), lambda session: self.exit())

    _Demo().run()
