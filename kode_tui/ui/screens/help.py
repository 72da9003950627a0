"""The help screen (F1, /help): the keys that work right now, what the focused pane does, and the
slash commands.

The caller gathers the keys before pushing the screen (`collect_bindings`, `focused_help`): once
the help screen is up, the focused widget and its bindings are the help screen's own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from textwrap import dedent
from typing import Any, ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.dom import DOMNode
from textual.screen import ModalScreen, Screen
from textual.widget import Widget
from textual.widgets import Collapsible, DataTable, Footer, Markdown, Static

KeyRow = tuple[str, str, str]
"""(keys, description, group) of one action, e.g. ("ctrl+p", "Commands", "App")."""


def collect_bindings(app: App[Any], *, generic: bool | None = None) -> list[KeyRow]:
    """The keys active on the current screen, focused widget first, as (keys, description, group).

    Bindings without a description (internal ones) and Textual's system bindings are left out;
    several keys bound to one action of one widget share a row ("f1 ctrl+h"). `generic` True
    keeps only the keys a widget has from Textual (a text area's cursor keys, a list's paging),
    False only the others; None keeps both.
    """
    rows: list[KeyRow] = []
    row_of: dict[tuple[int, str], int] = {}
    for active in app.active_bindings.values():
        binding = active.binding
        if not binding.description or binding.system:
            continue
        if generic is not None and _is_generic(binding, active.node) != generic:
            continue
        key = app.get_key_display(binding)
        action = (id(active.node), binding.action)
        if action in row_of:
            keys, description, group = rows[row_of[action]]
            if key not in keys.split(" "):
                rows[row_of[action]] = (f"{keys} {key}", description, group)
            continue
        row_of[action] = len(rows)
        rows.append((key, binding.description, _group(binding, active.node)))
    # An app key the focused widget also binds (Ctrl+C: the prompt copies a selection, the app
    # interrupts or quits otherwise) is not among the active bindings, but it still works.
    by_key = app.active_bindings
    for binding in getattr(type(app), "BINDINGS", []) if not generic else ():
        if not isinstance(binding, Binding) or not binding.description or binding.system:
            continue
        shadowed = binding.key in by_key and by_key[binding.key].node is not app
        if shadowed and (id(app), binding.action) not in row_of:
            row_of[(id(app), binding.action)] = len(rows)
            rows.append((app.get_key_display(binding), binding.description, _group(binding, app)))
    return rows


def _is_generic(binding: Binding, node: DOMNode) -> bool:
    """Whether a widget has `binding` from Textual only: no class of ours declares it. The
    screen's and the app's keys work everywhere, so they are never generic."""
    if not isinstance(node, Widget) or isinstance(node, Screen):
        return False
    for cls in type(node).__mro__:
        if not cls.__module__.startswith("kode_tui") or "BINDINGS" not in vars(cls):
            continue
        for declared in Binding.make_bindings(vars(cls)["BINDINGS"]):
            if declared.key == binding.key and declared.action == binding.action:
                return False
    return True


def _group(binding: Binding, node: DOMNode) -> str:
    if binding.group is not None and binding.group.description:
        return binding.group.description
    if node.BINDING_GROUP_TITLE:
        return node.BINDING_GROUP_TITLE
    if isinstance(node, App):
        return "App"
    # "PromptInput" -> "Prompt input": the widget's class is the best name left.
    words = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+", type(node).__name__)
    return " ".join(words).capitalize() or type(node).__name__


def focused_help(app: App[Any]) -> str | None:
    """The `HELP` markdown of the focused widget, or of its nearest ancestor that has one."""
    start: Widget | None = app.focused or app.screen
    for node in start.ancestors_with_self if start is not None else ():
        if isinstance(node, Widget) and node.HELP:
            return dedent(node.HELP).strip()
    return None


class HelpScreen(ModalScreen[None]):
    """Keys, the focused pane's help and the slash commands; F1, Esc or q closes it."""

    HELP = """\
## Help
**↑/↓** or **PgUp/PgDn** scroll; **F1**, **Esc** or **q** closes.
"""
    BINDING_GROUP_TITLE = "Help"
    CSS_PATH = "screens.tcss"
    AUTO_FOCUS = "#help-body"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f1,escape,q", "close", "Close help", id="help.close"),
    ]

    def __init__(
        self,
        bindings: list[KeyRow],
        focused_help: str | None,
        commands: Sequence[tuple[str, str]],
        generic: Sequence[KeyRow] = (),
    ) -> None:
        """`generic`: keys every widget of its kind has (`collect_bindings(generic=True)`),
        shown folded after the others."""
        super().__init__()
        self.key_rows = list(bindings)
        self.focused_help = focused_help
        self.commands = list(commands)
        self.generic_rows = list(generic)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body") as body:
            body.border_title = "Help"
            if self.focused_help:
                yield Markdown(self.focused_help, id="help-focused")
            yield Static("Keys", classes="help-heading")
            yield self._keys_table(self.key_rows, "help-keys")
            if self.commands:
                yield Static("Commands", classes="help-heading")
                yield self._commands_table()
            if self.generic_rows:
                # Last and folded: the keys every text area or list has, not kode-tui's.
                with Collapsible(
                    title="Editing and moving keys (as in any Textual app)",
                    collapsed=True,
                    id="help-generic",
                ):
                    yield self._keys_table(self.generic_rows, "help-generic-keys")
        yield Footer()

    def _keys_table(self, key_rows: list[KeyRow], table_id: str) -> DataTable[Text]:
        table: DataTable[Text] = DataTable(id=table_id, show_cursor=False, zebra_stripes=True)
        # The scroll container takes the arrow keys; a focusable table would swallow them.
        table.can_focus = False
        table.add_columns("Key", "Action", "Where")
        # Grouped, each group where its first key came (the focused widget's first).
        order = list(dict.fromkeys(group for _, _, group in key_rows))
        rows = sorted(key_rows, key=lambda row: order.index(row[2]))
        # Text, not str: DataTable would read "[" in a key or a description as markup.
        table.add_rows([tuple(map(Text, row)) for row in rows])
        return table

    def _commands_table(self) -> DataTable[Text]:
        table: DataTable[Text] = DataTable(
            id="help-commands", show_cursor=False, zebra_stripes=True
        )
        table.can_focus = False
        table.add_columns("Command", "What it does")
        table.add_rows([tuple(map(Text, row)) for row in self.commands])
        return table

    def action_close(self) -> None:
        self.dismiss(None)


if __name__ == "__main__":
    from textual.widgets import Input

    class _Prompt(Input):
        HELP = "## Prompt\nType a message; **Enter** sends it."

    class _Demo(App[None]):
        BINDINGS: ClassVar[list[BindingType]] = [
            Binding("f1", "help", "Help", id="app.help"),
            Binding("ctrl+q", "quit", "Quit", id="app.quit"),
        ]

        def compose(self) -> ComposeResult:
            yield _Prompt(placeholder="Press F1")
            yield Footer()

        def action_help(self) -> None:
            commands = [("/help", "Show this help"), ("/quit", "Quit")]
            self.push_screen(HelpScreen(collect_bindings(self), focused_help(self), commands))

    _Demo().run()
