"""The results of /search: one row per message holding the words, Enter opens the one chosen."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from kode_tui.safetext import visible
from kode_tui.soul.facade import Match
from kode_tui.ui.widgets.message_lines import shorten

TITLE_CHARS = 24
"""Of another session's title, what a row shows."""


def match_row(match: Match, current_id: str | None) -> Content:
    """`● 1a2b3c4d  context_2.jsonl  #3  user: …the words…` (● this session; another
    session's title after its id). One line: what does not fit ends in an ellipsis."""
    here = match.session.id == current_id
    checkpoint = "-" if match.checkpoint is None else f"#{match.checkpoint}"
    title = "" if here else f"{shorten(match.session.title, TITLE_CHARS)}  "
    return Content.assemble(
        ("● " if here else "  ", "$accent"),
        (f"{visible(match.session.id[:8], multiline=False)}  ", "bold"),
        (visible(title, multiline=False), "$text-muted"),
        (f"{match.file}  {checkpoint}  ", "$text-muted"),
        (f"{match.role}: ", "italic"),
        match.snippet,
    )


class SearchScreen(ModalScreen[Match | None]):
    """The matches of a search: dismissed with the one chosen, or None (Esc)."""

    HELP = """\
## Search
**↑/↓** choose a match, **Enter** opens it: a rotated context of this session in its preview,
a match in the live context on the timeline, another session's by opening that session.
**Esc** closes. ● marks this session's matches.
"""
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", id="search.close"),
    ]
    DEFAULT_CSS = """
    SearchScreen { align: center middle; }
    #search-dialog {
        width: 90%; height: 80%; border: round $accent; background: $surface; padding: 0 1;
    }
    #search-summary { color: $text-muted; height: 1; }
    #search-results { height: 1fr; text-wrap: nowrap; text-overflow: ellipsis; }
    """
    AUTO_FOCUS = "#search-results"

    def __init__(self, query: str, matches: list[Match], current_id: str | None) -> None:
        super().__init__()
        self.query_text = query
        self.matches = matches
        self.current_id = current_id

    def compose(self) -> ComposeResult:
        with Vertical(id="search-dialog") as dialog:
            dialog.border_title = f"Search: {visible(self.query_text, multiline=False)}"
            count = len(self.matches)
            yield Static(
                f"{count} message{'s' if count != 1 else ''} · Enter opens · Esc closes",
                id="search-summary",
            )
            yield OptionList(
                *(
                    Option(match_row(match, self.current_id), id=str(index))
                    for index, match in enumerate(self.matches)
                ),
                id="search-results",
            )
        yield Footer()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(self.matches[event.option_index])

    def action_close(self) -> None:
        self.dismiss(None)
