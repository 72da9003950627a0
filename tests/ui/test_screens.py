"""Themes, the session picker and the help screen, driven the way a user drives them."""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any, ClassVar

import pytest
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Markdown, Static

from kode_tui.paths import Paths, work_dir_hash
from kode_tui.session import Session
from kode_tui.session.catalog import ContextStats, read_context_stats
from kode_tui.session.fork import fork_session
from kode_tui.ui.screens.help import HelpScreen, collect_bindings, focused_help
from kode_tui.ui.screens.sessions import EMPTY_HERE, SessionPicker
from kode_tui.ui.themes import load_themes, register_themes, theme_names, watch_user_themes
from tests.ui_helpers import Host

# --- Themes -------------------------------------------------------------------------------------


def write_user_theme(home: Path, name: str, text: str) -> Path:
    path = home / "themes" / f"{name}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_load_themes_finds_the_shipped_and_the_user_themes_and_skips_broken_ones(
    home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_user_theme(home, "mine", 'primary = "#ff00ff"\nbackground = "#101010"\n')
    write_user_theme(home, "typo", 'name = "typo"\nprimery = "#ff00ff"\n')
    write_user_theme(home, "bad-colour", 'name = "bad-colour"\nprimary = "not a colour"\n')
    write_user_theme(home, "not-toml", "name = \n")

    with caplog.at_level(logging.WARNING):
        themes = {theme.name: theme for theme in load_themes()}

    assert {"kode-dark", "kode-light", "kode-high-contrast", "mine"} <= set(themes)
    assert themes["mine"].primary == "#ff00ff"
    assert not {"typo", "bad-colour", "not-toml"} & set(themes)
    skipped = " ".join(record.getMessage() for record in caplog.records)
    assert "typo.toml" in skipped and "bad-colour.toml" in skipped and "not-toml.toml" in skipped


def test_a_user_theme_replaces_the_shipped_theme_of_its_name(home: Path) -> None:
    write_user_theme(home, "kode-dark", 'name = "kode-dark"\nprimary = "#123456"\n')

    themes = [theme for theme in load_themes() if theme.name == "kode-dark"]

    assert [theme.primary for theme in themes] == ["#123456"]


def test_the_light_and_high_contrast_themes_are_what_they_say() -> None:
    themes = {theme.name: theme for theme in load_themes()}
    assert themes["kode-light"].dark is False
    high_contrast = themes["kode-high-contrast"]
    assert (high_contrast.background, high_contrast.foreground) == ("#000000", "#ffffff")


class ThemedApp(App[None]):
    def on_mount(self) -> None:
        register_themes(self)


async def test_registered_themes_can_be_chosen_by_name(home: Path) -> None:
    write_user_theme(home, "mine", 'primary = "#ff00ff"\n')
    app = ThemedApp()
    async with app.run_test() as pilot:
        app.theme = "kode-light"
        await pilot.pause()
        assert app.current_theme.name == "kode-light"
        names = theme_names(app)
        assert names[:4] == ["kode-dark", "kode-high-contrast", "kode-light", "mine"]
        assert "textual-dark" in names[4:]
        assert names[4:] == sorted(names[4:])


async def test_editing_a_user_theme_on_disk_reapplies_it(home: Path) -> None:
    path = write_user_theme(home, "mine", 'primary = "#ff00ff"\n')
    app = ThemedApp()
    async with app.run_test() as pilot:
        app.theme = "mine"
        watch_user_themes(app, debounce_ms=50)
        await pilot.pause(0.3)  # the watcher starts
        path.write_text('primary = "#00ff00"\n')
        for _ in range(50):
            await pilot.pause(0.05)
            if app.current_theme.primary == "#00ff00":
                break
        assert app.current_theme.primary == "#00ff00"
        assert app.get_css_variables()["primary"].lower() == "#00ff00"


# --- Session picker ---------------------------------------------------------------------------


async def make_session(
    work_dir: Path, title: str, *, messages: int, tokens: int | None, age: float
) -> Session:
    """A session written the way the soul writes one: context records and a TurnBegin."""
    session = await Session.create(work_dir)
    # A turn's checkpoint, then its step's: a `_usage` before checkpoint 1 is a compaction's.
    records: list[dict[str, Any]] = [{"role": "_checkpoint", "id": i} for i in (0, 1)]
    for n in range(messages):
        records.append({"role": ("user", "assistant")[n % 2], "content": f"message {n}"})
        if tokens is not None:
            records.append({"role": "_usage", "token_count": tokens - messages + n + 1})
    session.context_file.write_text("".join(json.dumps(record) + "\n" for record in records))
    turn = {"timestamp": 1.0, "message": {"type": "TurnBegin", "payload": {"user_input": title}}}
    session.wire_file.write_text(
        json.dumps({"type": "metadata", "protocol_version": "1"}) + "\n" + json.dumps(turn) + "\n"
    )
    stamp = time.time() - age
    for path in (session.context_file, session.wire_file):
        os.utime(path, (stamp, stamp))
    return session


async def loaded(pilot: Pilot[None]) -> None:
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def rows(picker: SessionPicker) -> list[list[str]]:
    table = picker.table
    if not table.display:
        return []
    return [[str(cell) for cell in table.get_row_at(n)] for n in range(table.row_count)]


def column(picker: SessionPicker, label: str) -> list[str]:
    labels = [str(col.label) for col in picker.table.ordered_columns]
    return [row[labels.index(label)] for row in rows(picker)]


@pytest.fixture
def work_dir(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


async def test_the_picker_lists_the_sessions_newest_first_with_title_messages_and_tokens(
    work_dir: Path,
) -> None:
    old = await make_session(work_dir, "Fix the parser", messages=4, tokens=12_873, age=3 * 3600)
    new = await make_session(work_dir, "Add a README", messages=2, tokens=None, age=120)
    await Session.create(work_dir)  # nobody talked in it: not listed

    picker = SessionPicker(work_dir, current_id=old.id)
    async with Host(screen=picker).run_test(size=(120, 30)) as pilot:
        await loaded(pilot)

        assert column(picker, "Title") == ["Add a README", "Fix the parser"]
        assert column(picker, "Age") == ["2m ago", "3h ago"]
        assert column(picker, "Messages") == ["2", "4"]
        assert column(picker, "Tokens") == ["-", "12.9k"]
        assert column(picker, " ") == [" ", "●"]  # the session open now
        assert "Work dir" not in [str(col.label) for col in picker.table.ordered_columns]
        assert new.id != old.id


async def test_typing_filters_by_title_and_enter_opens_the_highlighted_session(
    work_dir: Path,
) -> None:
    await make_session(work_dir, "Fix the parser", messages=2, tokens=100, age=60)
    wanted = await make_session(work_dir, "Write parser tests", messages=2, tokens=100, age=600)
    await make_session(work_dir, "Add a README", messages=2, tokens=100, age=30)

    picker = SessionPicker(work_dir)
    app = Host(screen=picker)
    async with app.run_test(size=(120, 30)) as pilot:
        await loaded(pilot)
        assert isinstance(picker.focused, Input)

        await pilot.press(*"PARSER")
        await pilot.pause()
        assert column(picker, "Title") == ["Fix the parser", "Write parser tests"]

        await pilot.press("down", "enter")
        await pilot.pause()

    [chosen] = app.results
    assert chosen is not None and chosen.id == wanted.id and chosen.dir == wanted.dir


async def test_a_filter_matching_nothing_says_so(work_dir: Path) -> None:
    await make_session(work_dir, "Fix the parser", messages=2, tokens=100, age=60)
    picker = SessionPicker(work_dir)
    app = Host(screen=picker)
    async with app.run_test(size=(120, 30)) as pilot:
        await loaded(pilot)
        await pilot.press(*"zzz", "enter")
        await pilot.pause()

        assert rows(picker) == []
        assert "No session title matches “zzz”." in str(picker.empty.render())
        assert app.results == []  # Enter with nothing to open does nothing


async def test_escape_closes_the_picker_with_none(work_dir: Path) -> None:
    await make_session(work_dir, "Fix the parser", messages=2, tokens=100, age=60)
    app = Host(screen=SessionPicker(work_dir))
    async with app.run_test(size=(120, 30)) as pilot:
        await loaded(pilot)
        await pilot.press("escape")
        await pilot.pause()

    assert app.results == [None]


async def test_a_work_dir_without_sessions_says_so(work_dir: Path) -> None:
    picker = SessionPicker(work_dir)
    async with Host(screen=picker).run_test(size=(120, 30)) as pilot:
        await loaded(pilot)

        assert rows(picker) == []
        assert isinstance(picker.empty, Static)
        assert str(picker.empty.render()) == EMPTY_HERE


async def test_ctrl_a_lists_the_sessions_of_every_work_dir(work_dir: Path, tmp_path: Path) -> None:
    other_dir = tmp_path / "other"
    other_dir.mkdir()
    await make_session(work_dir, "Here", messages=2, tokens=100, age=60)
    elsewhere = await make_session(other_dir, "Elsewhere", messages=6, tokens=5000, age=30)
    # A folder kode.json knows nothing about (a copied-in session): shown by its md5 folder.
    stranger_hash = work_dir_hash(tmp_path / "gone")
    stranger = Paths.current().sessions_dir / stranger_hash / "s1"
    stranger.mkdir(parents=True)
    (stranger / "context.jsonl").write_text('{"role": "user", "content": "hi"}\nnot json\n')
    os.utime(stranger / "context.jsonl", (time.time() - 7200, time.time() - 7200))

    picker = SessionPicker(work_dir)
    app = Host(screen=picker)
    async with app.run_test(size=(140, 30)) as pilot:
        await loaded(pilot)
        assert column(picker, "Title") == ["Here"]

        await pilot.press("ctrl+a")
        await loaded(pilot)
        assert picker.all_switch.value is True
        assert column(picker, "Title") == ["Elsewhere", "Here", "Untitled"]
        # A long path gives way at its start; the line under the table has it whole.
        work_dirs = [str(other_dir), str(work_dir), stranger_hash]
        shown = column(picker, "Work dir")
        assert all(
            path.endswith(cell.removeprefix("…"))
            for cell, path in zip(shown, work_dirs, strict=True)
        )
        assert shown[2] == stranger_hash
        assert str(picker.detail.render()).endswith(f"{elsewhere.id}  ·  {other_dir}")
        assert column(picker, "Messages") == ["6", "2", "1"]

        await pilot.press("enter")
        await pilot.pause()

    [chosen] = app.results
    assert chosen is not None
    assert (chosen.dir, chosen.work_dir) == (elsewhere.dir, other_dir)


async def test_the_all_work_dirs_switch_can_be_clicked(work_dir: Path, tmp_path: Path) -> None:
    other_dir = tmp_path / "other"
    other_dir.mkdir()
    await make_session(other_dir, "Elsewhere", messages=2, tokens=None, age=30)
    picker = SessionPicker(work_dir)
    async with Host(screen=picker).run_test(size=(140, 30)) as pilot:
        await loaded(pilot)
        assert rows(picker) == []

        await pilot.click("#sessions-all")
        await loaded(pilot)

        assert picker.show_all is True
        assert column(picker, "Title") == ["Elsewhere"]


async def test_the_picker_fits_its_width_titles_take_the_room_and_a_fork_says_of_what(
    work_dir: Path,
) -> None:
    title = "Why does the picker cut the last column at 120 columns wide?"
    original = await make_session(work_dir, title, messages=4, tokens=12_873, age=600)
    forked = await fork_session(original, original.context_file, None, original.title)

    def table_width(picker: SessionPicker) -> int:
        table = picker.table
        return sum(column.get_render_width(table) for column in table.ordered_columns)

    picker = SessionPicker(work_dir)
    async with Host(screen=picker).run_test(size=(120, 30)) as pilot:
        await loaded(pilot)
        assert table_width(picker) <= picker.table.size.width  # no column cut at 120
        fork_row, original_row = column(picker, "Title")
        assert original_row.strip() == title  # 60 characters, whole
        assert fork_row.endswith(f"⑂ of {original.id[:8]}")
        assert column(picker, "Cost") == ["—", "—"]
        assert str(picker.detail.render()).endswith(f"⑂ forked from {original.id[:8]}")

        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        await loaded(pilot)
        assert table_width(picker) <= picker.table.size.width  # nor at 80
        fork_row, original_row = column(picker, "Title")
        assert original_row.startswith("Why does the picker") and original_row.endswith("…")
        assert "⑂" in fork_row
        await pilot.press("down")
        assert str(picker.detail.render()) == original.id
    assert forked.id != original.id


def test_context_stats_survive_bad_lines(tmp_path: Path) -> None:
    path = tmp_path / "context.jsonl"
    path.write_bytes(
        b'{"role": "_system_prompt", "content": "x"}\n'
        b'{"role": "user", "content": "a"}\n'
        b'{"role": "_usage", "token_count": 10}\n'
        b"garbage\n\n"
        b'{"role": "_usage", "token_count": "many"}\n'
        b'{"role": "assistant", "content": "b"}\n'
        b'{"role": "_usage", "token_count": 42}\n'
        b'{"role": "tool", "content": "c", "tool_call_id": "t"}\n'
        b'{"role": "user", "cont'
    )

    assert read_context_stats(path) == ContextStats(messages=3, tokens=42)
    assert read_context_stats(tmp_path / "missing.jsonl") == ContextStats(0, None)


def test_a_compacted_sessions_row_shows_the_compactions_estimate_until_a_count_comes(
    tmp_path: Path,
) -> None:
    # Compacted and quit before another request: the gauge's figure, not "-".
    path = tmp_path / "context.jsonl"
    compacted = (
        b'{"role": "_checkpoint", "id": 0}\n'
        b'{"role": "user", "content": "<system>Previous context has been compacted.</system>"}\n'
        b'{"role": "assistant", "content": "kept"}\n'
        b'{"role": "_usage", "token_count": 3890}\n'
    )
    path.write_bytes(compacted)
    assert read_context_stats(path) == ContextStats(messages=2, tokens=3890)
    path.write_bytes(
        compacted + b'{"role": "_checkpoint", "id": 1}\n'
        b'{"role": "user", "content": "next"}\n'
        b'{"role": "_usage", "token_count": 4100}\n'
    )
    assert read_context_stats(path) == ContextStats(messages=3, tokens=4100)


# --- Help ---------------------------------------------------------------------------------------


class Prompt(Input):
    HELP = """
    ## Prompt
    Type a message; **Enter** sends it.
    """
    BINDING_GROUP_TITLE = "Prompt"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+j", "newline", "Newline", id="prompt.newline"),
        Binding("ctrl+x", "internal", id="prompt.internal"),
    ]

    def action_newline(self) -> None:
        pass

    def action_internal(self) -> None:
        pass


class HelpHostApp(App[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f1", "help", "Help", id="app.help"),
        Binding("ctrl+q,f10", "quit", "Quit", id="app.quit"),
        Binding("ctrl+t", "noop", "Timeline", id="app.timeline", group=Binding.Group("Panes")),
    ]
    COMMANDS_HELP: ClassVar[list[tuple[str, str]]] = [
        ("/help", "Show this help"),
        ("/theme [name]", "Switch the theme"),
    ]

    def compose(self) -> ComposeResult:
        yield Prompt()

    def action_noop(self) -> None:
        pass

    def action_help(self) -> None:
        screen = HelpScreen(collect_bindings(self), focused_help(self), self.COMMANDS_HELP)
        self.push_screen(screen)


async def test_collect_bindings_lists_described_keys_with_their_group() -> None:
    app = HelpHostApp()
    async with app.run_test() as pilot:
        await pilot.pause()
        keys = collect_bindings(app)
        help_text = focused_help(app)

    # Keys as the footer shows them (^ is Ctrl); Input's own editing keys come along.
    assert ("^j", "Newline", "Prompt") in keys
    assert ("^a", "Go to start", "Prompt") not in keys
    assert ("home ^a", "Go to start", "Prompt") in keys
    assert ("f1", "Help", "App") in keys
    assert ("^t", "Timeline", "Panes") in keys
    assert ("^q f10", "Quit", "App") in keys
    assert all(description for _, description, _ in keys)
    assert not any(key == "^x" for key, _, _ in keys)
    assert keys.index(("^j", "Newline", "Prompt")) < keys.index(("f1", "Help", "App"))
    assert help_text == "## Prompt\nType a message; **Enter** sends it."


async def test_the_help_screen_shows_keys_focused_help_and_commands_and_f1_closes_it() -> None:
    app = HelpHostApp()
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        await pilot.press("f1")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, HelpScreen)

        keys = screen.query_one("#help-keys", DataTable)
        shown = [[str(cell) for cell in keys.get_row_at(n)] for n in range(keys.row_count)]
        assert ["^j", "Newline", "Prompt"] in shown
        assert ["^q f10", "Quit", "App"] in shown
        commands = screen.query_one("#help-commands", DataTable)
        assert [str(cell) for cell in commands.get_row_at(1)] == [
            "/theme [name]",
            "Switch the theme",
        ]
        assert "Type a message" in screen.query_one("#help-focused", Markdown).source

        await pilot.press("f1")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)

        for key in ("escape", "q"):
            await pilot.press("f1")
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen)
            await pilot.press(key)
            await pilot.pause()
            assert not isinstance(app.screen, HelpScreen)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("", "x\ny\n"),  # a new file
        ("a\nb\n", ""),  # emptied
        ("a\nb\nc\n", "a\nB\nc\n"),
        ("one\n", "two\n"),  # single-line ranges are written without ",1"
        ("a\n" * 10, "a\n" * 5 + "z\n" + "a\n" * 5),
    ],
)
def test_diff_hunk_headers_are_those_of_diff_u(old: str, new: str) -> None:
    # The approval panel and the diff screens must number hunks as the conversation does.
    import difflib

    from kode_tui.ui.widgets.display_blocks import diff_lines

    ours = [line.text for line in diff_lines(old, new) if line.kind == "hunk"]
    reference = [
        line.strip()
        for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="")
        if line.startswith("@@")
    ]
    assert ours == reference


def test_the_conversation_form_of_a_diff_is_the_full_views_with_the_panels_styles() -> None:
    """One renderer: the lines the conversation shows for an edit are the full view's (hunks,
    line numbers, signs, as `diff -u` writes them), styled as the approval panel styles them."""
    import difflib

    from kode_tui.ui.widgets.display_blocks import diff_block_rows, diff_lines, diff_rows
    from kode_tui.ui.widgets.excerpt import excerpt
    from kode_tui.ui.widgets.rows import lay_out
    from kode_tui.wire.events import ApprovalRequest, DiffBlock

    old, new = "a\nb\nc\n" * 3, "a\nB\nc\n" + "a\nb\nc\n" * 2 + "d\n"
    block = DiffBlock(path="src/x.py", old_text=old, new_text=new)
    shown = lay_out(diff_block_rows(block), 80)
    assert [line.plain for line in shown] == [
        line.plain for line in lay_out(diff_rows(list(diff_lines(old, new))), 80)
    ]
    # Behind the gutter (`old new │`), the lines of `diff -u`.
    reference = difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="")
    assert [line.plain.partition("│")[2] for line in shown] == list(reference)[2:]
    # The approval panel shows the same rows, with one line of context, from the first change.
    request = ApprovalRequest(
        id="r", tool_call_id="c", action="edit", description="x", display=[block]
    )
    panel = [line.plain for line in lay_out(diff_rows(list(diff_lines(old, new, context=1))), 80)]
    assert panel[:2] == ["      │@@ -1,3 +1,3 @@", " 1  1 │ a"]
    assert excerpt(request, 40, 80).plain.splitlines() == panel[2:]
    added = next(line for line in shown if line.plain.endswith("+B"))
    assert "$text-success on $success 15%" in [str(span.style) for span in added.spans]
    assert lay_out(diff_block_rows(block, heading=True), 80)[0].plain == "src/x.py"
    assert diff_block_rows(DiffBlock(path="same.txt", old_text="x\n", new_text="x\n")) == []
