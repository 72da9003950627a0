"""The kode-tui app. Until the conversation screen lands, it shows the opened session: what the
session engine restored from context.jsonl, and the rotated generations beside it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import ClassVar

from rich.markup import escape
from rich.table import Table
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Footer, Header, Static

from kode_tui import __version__
from kode_tui.session import Context, Session


class KodeApp(App[None]):
    TITLE = "kode-tui"
    CSS = """
    #summary { padding: 1 2; }
    #rotations { padding: 0 2 1 2; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("ctrl+q,q", "quit", "Quit", id="quit")]

    def __init__(
        self, work_dir: Path, session: Session | None = None, context: Context | None = None
    ) -> None:
        super().__init__()
        self.work_dir = work_dir
        self.session = session
        self.context = context

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll():
            yield Static(self._summary(), id="summary")
            if self.context is not None:
                yield Static(self._rotations(), id="rotations")
        yield Footer()

    def on_mount(self) -> None:
        session = self.session
        self.sub_title = f"{self.work_dir}" + (f" · {session.title}" if session else "")

    def _summary(self) -> str:
        lines = [f"[b]kode-tui {__version__}[/b] in {escape(str(self.work_dir))}", ""]
        session, context = self.session, self.context
        if session is None or context is None:
            lines += [
                "No session is open. The conversation screen arrives with the TUI.",
                "Open an existing session with [b]-C[/b] (the last one), [b]-S ID[/b] or "
                "[b]--session-dir DIR[/b]; list them with [b]--list-sessions[/b].",
            ]
            return "\n".join(lines)
        lines += [
            f"Session   {escape(session.title)}  ({session.id})",
            f"Folder    {escape(str(session.dir))}",
            f"Messages  {len(context.history)}",
            f"Checkpoints {context.n_checkpoints}   Tokens {context.token_count:,}",
        ]
        lines += [f"[yellow]⚠ {escape(warning)}[/yellow]" for warning in context.warnings]
        return "\n".join(lines)

    def _rotations(self) -> Table:
        assert self.context is not None
        table = Table(title="History (rotated contexts)", title_justify="left", expand=True)
        for column in ("file", "reason", "when", "size", "tokens", "messages"):
            table.add_column(column)
        for rotation in reversed(self.context.rotations()):
            table.add_row(
                rotation.path.name,
                rotation.reason or "-",
                time.strftime("%Y-%m-%d %H:%M", time.localtime(rotation.time or rotation.mtime)),
                f"{rotation.size / 1024:.0f} KiB",
                f"{rotation.tokens:,}" if rotation.tokens is not None else "-",
                str(rotation.messages) if rotation.messages is not None else "-",
            )
        return table
