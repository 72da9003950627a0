"""The prompt: sending, new lines, history, busy queueing, and `/` and `@` completion."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import pytest
from textual import events
from textual._xterm_parser import XTermParser
from textual.app import App
from textual.binding import Binding, BindingType
from textual.pilot import Pilot
from textual.widgets import Static

from kode_tui.ui.widgets import prompt as prompt_module
from kode_tui.ui.widgets import prompt_habits
from kode_tui.ui.widgets.completion import PathIndex, match_commands, match_paths
from kode_tui.ui.widgets.prompt import BUSY_HINT, PromptInput
from tests.ui_helpers import Host, screen_text

COMMANDS = [
    ("/clear", "Start a fresh context"),
    ("/compact", "Summarise the context"),
    ("/context", "Show what is in the context"),
    ("/help", "Show the keys"),
]


class PromptHost(Host):
    # Stands in for the App's Esc, which interrupts a running turn.
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "interrupt", "Interrupt")]
    CSS = "#conversation { height: 1fr; }"

    def __init__(self, work_dir: Path, history: Sequence[str] = ()) -> None:
        super().__init__(
            Static("conversation", id="conversation"),
            PromptInput(work_dir, commands=COMMANDS, history=list(history), id="prompt"),
            css_path=Path(prompt_module.__file__).with_name("prompt.tcss"),
        )
        self.submitted: list[str] = []
        self.interrupts = 0

    def on_mount(self) -> None:
        prompt = self.query_one(PromptInput)
        prompt.cursor_blink = False
        prompt.focus()

    def on_prompt_input_submitted(self, message: PromptInput.Submitted) -> None:
        self.submitted.append(message.text)

    def action_interrupt(self) -> None:
        self.interrupts += 1


async def type_text(pilot: Pilot[None], text: str) -> None:
    await pilot.press(*("space" if char == " " else char for char in text))


def prompt_of(app: App[None]) -> PromptInput:
    return app.query_one(PromptInput)


@pytest.fixture
def work_dir(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.py").write_text("print('hi')\n")
    (root / "src" / "mailbox.py").write_text("")
    (root / "README.md").write_text("# project\n")
    (root / "node_modules" / "left-pad").mkdir(parents=True)
    (root / "node_modules" / "left-pad" / "index.js").write_text("")
    return root


async def test_enter_sends_the_text_and_clears_the_prompt(work_dir: Path) -> None:
    app = PromptHost(work_dir)
    async with app.run_test() as pilot:
        await type_text(pilot, "a b")
        await pilot.press("enter")
        await pilot.pause()
        assert app.submitted == ["a b"]
        assert prompt_of(app).text == ""


async def test_ctrl_j_inserts_a_newline_instead_of_sending(work_dir: Path) -> None:
    app = PromptHost(work_dir)
    async with app.run_test() as pilot:
        await pilot.press("a", "ctrl+j", "b")
        await pilot.pause()
        assert prompt_of(app).text == "a\nb"
        assert app.submitted == []
        await pilot.press("enter")
        await pilot.pause()
        assert app.submitted == ["a\nb"]


async def test_blank_input_is_not_sent(work_dir: Path) -> None:
    app = PromptHost(work_dir)
    async with app.run_test() as pilot:
        await pilot.press("enter", "space", "ctrl+j", "enter")
        await pilot.pause()
        assert app.submitted == []


async def test_up_and_down_walk_the_history_and_bring_the_draft_back(work_dir: Path) -> None:
    app = PromptHost(work_dir, history=["first", "second"])
    async with app.run_test() as pilot:
        prompt = prompt_of(app)
        await type_text(pilot, "wip")
        await pilot.press("up")
        assert prompt.text == "second"
        await pilot.press("up")
        assert prompt.text == "first"
        await pilot.press("up")
        assert prompt.text == "first"
        await pilot.press("down")
        assert prompt.text == "second"
        await pilot.press("down")
        assert prompt.text == "wip"
        assert prompt.cursor_location == (0, len("wip"))


async def test_sent_text_joins_the_history(work_dir: Path) -> None:
    app = PromptHost(work_dir)
    async with app.run_test() as pilot:
        await pilot.press("h", "i", "enter", "up")
        assert prompt_of(app).text == "hi"
        assert prompt_of(app).input_history == ["hi"]


async def test_up_moves_the_cursor_before_it_walks_the_history(work_dir: Path) -> None:
    app = PromptHost(work_dir, history=["older"])
    async with app.run_test() as pilot:
        prompt = prompt_of(app)
        await pilot.press("a", "ctrl+j", "b", "up")
        assert prompt.text == "a\nb"
        assert prompt.cursor_location[0] == 0
        await pilot.press("up")
        assert prompt.text == "older"


async def test_ctrl_r_finds_an_older_entry_and_enter_puts_it_in_the_prompt(
    work_dir: Path,
) -> None:
    history = ["git status", "run the Tests please", "fix the lint", "add a test for x"]
    app = PromptHost(work_dir, history=history)
    async with app.run_test() as pilot:
        prompt = prompt_of(app)
        await type_text(pilot, "draft")
        await pilot.press("ctrl+r")
        await type_text(pilot, "TEST")
        assert prompt.searching and prompt.text == "add a test for x"
        await pilot.press("ctrl+r")
        assert prompt.text == "run the Tests please"
        await pilot.press("ctrl+r")  # nothing older: the match stays, the title says so
        assert prompt.text == "run the Tests please" and "no match" in str(prompt.border_title)
        await pilot.press("enter")
        await pilot.pause()
        assert not prompt.searching and app.submitted == []
        assert prompt.text == "run the Tests please"
        await pilot.press("enter")
        await pilot.pause()
        assert app.submitted == ["run the Tests please"]


async def test_escape_cancels_a_history_search_and_brings_the_draft_back(work_dir: Path) -> None:
    app = PromptHost(work_dir, history=["deploy to prod"])
    async with app.run_test() as pilot:
        prompt = prompt_of(app)
        await type_text(pilot, "draft")
        await pilot.press("ctrl+r", "d", "e", "p")
        assert prompt.text == "deploy to prod"
        await pilot.press("escape")
        await pilot.pause()
        assert not prompt.searching and prompt.text == "draft"
        assert app.interrupts == 0  # Esc ended the search, it did not reach the app
        assert prompt.border_title is None


async def test_leaving_the_prompt_takes_the_match_and_ends_the_search(work_dir: Path) -> None:
    app = PromptHost(work_dir, history=["deploy to prod"])
    async with app.run_test() as pilot:
        prompt = prompt_of(app)
        await pilot.press("ctrl+r", "d", "e")
        prompt.blur()
        await pilot.pause()
        assert not prompt.searching and prompt.text == "deploy to prod"
        assert prompt.border_title is None


async def test_alt_enter_and_a_trailing_backslash_add_a_newline_without_sending(
    work_dir: Path,
) -> None:
    app = PromptHost(work_dir)
    async with app.run_test() as pilot:
        prompt = prompt_of(app)
        await pilot.press("a", "alt+enter", "b", "backslash", "enter", "c")
        await pilot.pause()
        assert prompt.text == "a\nb\nc"
        assert app.submitted == []
        await pilot.press("enter")
        await pilot.pause()
        assert app.submitted == ["a\nb\nc"]


async def test_alt_enter_in_a_burst_breaks_the_line_where_it_was_pressed(work_dir: Path) -> None:
    # tmux send-keys "one" M-Enter "two": the keys arrive together.
    app = PromptHost(work_dir)
    async with app.run_test() as pilot:
        keys = [("o", "o"), ("n", "n"), ("e", "e"), ("alt+enter", None), ("t", "t"), ("w", "w")]
        for key, character in keys:
            app.post_message(events.Key(key, character))
        await pilot.pause()
        await pilot.pause()
        assert prompt_of(app).text == "one\ntw"


async def test_ctrl_r_in_a_burst_searches_for_what_follows_it(work_dir: Path) -> None:
    app = PromptHost(work_dir, history=["one two", "three"])
    async with app.run_test() as pilot:
        for key in ["d", "ctrl+r", "t", "w"]:
            app.post_message(events.Key(key, key if len(key) == 1 else None))
        await pilot.pause()
        await pilot.pause()
        prompt = prompt_of(app)
        assert prompt.searching and prompt.text == "one two"


async def test_backspace_and_arrows_in_a_burst_act_where_they_were_pressed(
    work_dir: Path,
) -> None:
    # tmux send-keys "/rev" BSpace (four times) "/perm": the Backspaces come before "/perm".
    app = PromptHost(work_dir)
    async with app.run_test() as pilot:
        keys = [*"/rev", *["backspace"] * 4, *"/perm", "left", "left", "backspace", "x"]
        for key in keys:
            app.post_message(events.Key(key, key if len(key) == 1 else None))
        await pilot.pause()
        await pilot.pause()
        assert prompt_of(app).text == "/pxrm"


def test_alt_enter_from_a_terminal_without_the_kitty_protocol_is_alt_enter() -> None:
    # tmux and most terminals send ESC CR for Alt+Enter.
    parser = XTermParser()
    keys = [*parser.feed("\x1b\r"), *parser.feed("")]
    assert [getattr(key, "key", None) for key in keys] == ["alt+enter"]


def write_editor(tmp_path: Path, body: str) -> str:
    """A small `$EDITOR`: a shell script running `body` with the file as `$1`."""
    script = tmp_path / "editor.sh"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o700)
    return str(script)


@pytest.mark.skipif(os.name == "nt", reason="the editor is a POSIX shell script")
async def test_ctrl_g_edits_the_prompt_in_the_editor(
    work_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = tmp_path / "seen.txt"
    editor = write_editor(
        tmp_path,
        f'cp "$1" {seen}; ls -l "$1" >> {seen}; printf "rewritten\\nby the editor\\n" > "$1"',
    )
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", editor)
    app = PromptHost(work_dir)
    async with app.run_test() as pilot:
        prompt = prompt_of(app)
        await type_text(pilot, "first draft")
        await pilot.press("ctrl+g")
        await pilot.pause()
        assert prompt.text == "rewritten\nby the editor"
        assert app.submitted == []
    handed, listing = seen.read_text().split("\n", 1)[0], seen.read_text()
    assert handed.startswith("first draft") and "-rw-------" in listing


@pytest.mark.skipif(os.name == "nt", reason="the editor is a POSIX shell script")
async def test_a_failing_editor_leaves_the_prompt_as_it_was_and_says_so(
    work_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VISUAL", write_editor(tmp_path, 'echo lost > "$1"; exit 3'))
    app = PromptHost(work_dir)
    async with app.run_test() as pilot:
        prompt = prompt_of(app)
        await type_text(pilot, "keep me")
        await pilot.press("ctrl+g")
        await pilot.pause()
        assert prompt.text == "keep me"
        notices = [n.message for n in app._notifications]
        assert any("exit status 3" in n and "keeps its text" in n for n in notices)


@pytest.mark.skipif(os.name == "nt", reason="the editor is a POSIX shell script")
async def test_the_editor_gets_a_pasted_chip_as_the_pasted_text(
    work_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VISUAL", write_editor(tmp_path, 'echo "# reviewed" >> "$1"'))
    pasted = "".join(f"line {n}\n" for n in range(30))
    app = PromptHost(work_dir)
    async with app.run_test() as pilot:
        prompt = prompt_of(app)
        app.post_message(events.Paste(pasted))
        await pilot.pause()
        assert prompt.text == "[pasted 30 lines]"
        await pilot.press("ctrl+g")
        await pilot.pause()
        assert prompt.text == pasted + "# reviewed"


async def test_ctrl_g_without_an_editor_says_how_to_set_one(
    work_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)
    app = PromptHost(work_dir)
    async with app.run_test() as pilot:
        await type_text(pilot, "text")
        await pilot.press("ctrl+g")
        await pilot.pause()
        assert prompt_of(app).text == "text"
        assert [n.message for n in app._notifications] == [prompt_habits.NO_EDITOR]


async def test_a_large_paste_shows_as_a_chip_and_is_sent_whole(work_dir: Path) -> None:
    pasted = "".join(f"line {n}\n" for n in range(1, 31))
    app = PromptHost(work_dir)
    async with app.run_test() as pilot:
        prompt = prompt_of(app)
        await type_text(pilot, "see ")
        app.post_message(events.Paste(pasted))
        await pilot.pause()
        await type_text(pilot, " and fix it")
        assert prompt.text == "see [pasted 30 lines] and fix it"
        await pilot.press("enter")
        await pilot.pause()
        assert app.submitted == [f"see {pasted} and fix it"]
        await pilot.press("up")  # the history holds what was sent
        assert prompt.text == f"see {pasted} and fix it"


async def test_ctrl_o_expands_a_pasted_chip_and_a_small_paste_goes_in_as_it_is(
    work_dir: Path,
) -> None:
    pasted = "\n".join(f"row {n}" for n in range(25))
    app = PromptHost(work_dir)
    async with app.run_test() as pilot:
        prompt = prompt_of(app)
        app.post_message(events.Paste("two\nlines"))
        app.post_message(events.Paste(pasted))
        app.post_message(events.Paste(pasted))
        await pilot.pause()
        assert prompt.text == "two\nlines[pasted 25 lines][pasted 25 lines #2]"
        await pilot.press("ctrl+o")
        assert prompt.text == f"two\nlines{pasted}{pasted}"


async def test_a_busy_prompt_still_sends_and_says_it_queues(work_dir: Path) -> None:
    app = PromptHost(work_dir)
    async with app.run_test() as pilot:
        prompt = prompt_of(app)
        prompt.busy = True
        await pilot.pause()
        assert prompt.has_class("-busy")
        assert not prompt.disabled
        assert BUSY_HINT in str(prompt.border_subtitle)
        await pilot.press("o", "k", "enter")
        await pilot.pause()
        assert app.submitted == ["ok"]
        prompt.busy = False
        await pilot.pause()
        assert not prompt.border_subtitle


async def test_slash_lists_matching_commands_and_tab_completes(work_dir: Path) -> None:
    app = PromptHost(work_dir)
    async with app.run_test() as pilot:
        prompt = prompt_of(app)
        await type_text(pilot, "/co")
        await pilot.pause()
        labels = prompt.completion_labels
        assert [label.split()[0] for label in labels] == ["/compact", "/context"]
        assert "Summarise the context" in labels[0]
        await pilot.press("tab")
        await pilot.pause()
        assert prompt.text == "/compact "
        assert not prompt.completions_open
        assert app.submitted == []


async def test_each_completion_takes_one_row_its_help_cut_short(work_dir: Path) -> None:
    app = PromptHost(work_dir)
    async with app.run_test(size=(30, 12)) as pilot:
        await type_text(pilot, "/co")
        await pilot.pause()
        shown = screen_text(app)
    # A help that wrapped would push /context below the list's two rows.
    assert "Summarise the c…" in shown
    assert "/context" in shown


async def test_enter_takes_the_highlighted_completion_without_sending(work_dir: Path) -> None:
    app = PromptHost(work_dir)
    async with app.run_test() as pilot:
        prompt = prompt_of(app)
        await type_text(pilot, "/co")
        await pilot.press("down", "enter")
        await pilot.pause()
        assert prompt.text == "/context "
        assert app.submitted == []
        await pilot.press("enter")
        await pilot.pause()
        assert app.submitted == ["/context"]


async def test_a_burst_of_keys_ending_in_enter_sends_all_of_it(work_dir: Path) -> None:
    # What a paste without bracketed paste, tmux send-keys or expect delivers: the keys arrive
    # together, and Enter must not overtake the characters before it.
    app = PromptHost(work_dir)
    async with app.run_test() as pilot:
        prompt = prompt_of(app)
        for character in "fix the test":
            key = "space" if character == " " else character
            app.post_message(events.Key(key, character))
        app.post_message(events.Key("enter", "\r"))
        await pilot.pause()
        await pilot.pause()
        assert app.submitted == ["fix the test"]
        assert prompt.text == ""


async def test_a_command_typed_in_full_in_a_burst_is_sent(work_dir: Path) -> None:
    # The completion list still shows "/compac" when Enter arrives with the last letter.
    app = PromptHost(work_dir)
    async with app.run_test() as pilot:
        await type_text(pilot, "/compac")
        await pilot.pause()
        assert prompt_of(app).completions_open
        app.post_message(events.Key("t", "t"))
        app.post_message(events.Key("enter", "\r"))
        await pilot.pause()
        await pilot.pause()
        assert app.submitted == ["/compact"]


async def test_enter_sends_a_command_typed_in_full(work_dir: Path) -> None:
    # `/compact` then Enter runs it, as in every other agent; the open list must not eat the key.
    app = PromptHost(work_dir)
    async with app.run_test() as pilot:
        prompt = prompt_of(app)
        await type_text(pilot, "/compact")
        await pilot.pause()
        assert prompt.completions_open
        await pilot.press("enter")
        await pilot.pause()
        assert app.submitted == ["/compact"]
        assert prompt.text == ""
        assert not prompt.completions_open


async def test_at_completes_paths_of_the_work_dir(work_dir: Path) -> None:
    app = PromptHost(work_dir)
    async with app.run_test() as pilot:
        prompt = prompt_of(app)
        await type_text(pilot, "@src/ma")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert prompt.completion_labels == ["src/main.py", "src/mailbox.py"]
        await pilot.press("tab")
        await pilot.pause()
        assert prompt.text == "@src/main.py "


async def test_completing_a_folder_keeps_the_list_open_inside_it(work_dir: Path) -> None:
    app = PromptHost(work_dir)
    async with app.run_test() as pilot:
        prompt = prompt_of(app)
        await type_text(pilot, "@sr")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert prompt.completion_labels[0] == "src/"
        await pilot.press("enter")
        await pilot.pause()
        assert prompt.text == "@src/"
        assert prompt.completion_labels == ["src/main.py", "src/mailbox.py"]
        assert app.submitted == []


async def test_escape_closes_the_list_without_reaching_the_app(work_dir: Path) -> None:
    app = PromptHost(work_dir)
    async with app.run_test() as pilot:
        prompt = prompt_of(app)
        await type_text(pilot, "/c")
        await pilot.pause()
        assert prompt.completions_open
        await pilot.press("escape")
        await pilot.pause()
        assert not prompt.completions_open
        assert app.interrupts == 0
        # Closed, Enter sends and Up walks the history again.
        await pilot.press("escape")
        assert app.interrupts == 1
        await pilot.press("enter")
        await pilot.pause()
        assert app.submitted == ["/c"]


async def test_clicking_a_completion_takes_it(work_dir: Path) -> None:
    app = PromptHost(work_dir)
    async with app.run_test() as pilot:
        prompt = prompt_of(app)
        await type_text(pilot, "/h")
        await pilot.pause()
        assert await pilot.click(prompt_module.CompletionList, offset=(3, 1))
        await pilot.pause()
        assert prompt.text == "/help "
        assert app.focused is prompt


async def test_a_recalled_command_does_not_open_the_list(work_dir: Path) -> None:
    app = PromptHost(work_dir, history=["/compact", "hello"])
    async with app.run_test() as pilot:
        prompt = prompt_of(app)
        await pilot.press("up", "up")
        await pilot.pause()
        assert prompt.text == "/compact"
        assert not prompt.completions_open
        await pilot.press("down")
        assert prompt.text == "hello"


def test_path_index_walk_lists_folders_with_a_slash_and_skips_heavy_ones(work_dir: Path) -> None:
    paths = PathIndex(work_dir).load()
    assert set(paths) == {"README.md", "src/", "src/main.py", "src/mailbox.py"}


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_path_index_uses_git_and_its_ignores(work_dir: Path) -> None:
    subprocess.run(["git", "init", "-q", str(work_dir)], check=True)
    (work_dir / ".gitignore").write_text("build/\n")
    (work_dir / "build").mkdir()
    (work_dir / "build" / "out.bin").write_text("")
    paths = PathIndex(work_dir).load()
    assert "src/main.py" in paths
    assert "src/" in paths
    assert not any(path.startswith(("build", "node_modules")) for path in paths)


def test_path_index_outside_git_honours_gitignore_files(work_dir: Path) -> None:
    (work_dir / ".gitignore").write_text("build/\n")
    (work_dir / "build").mkdir()
    (work_dir / "build" / "out.bin").write_text("")
    paths = PathIndex(work_dir).load()
    assert "src/main.py" in paths and ".gitignore" in paths
    assert not any(path.startswith("build") for path in paths)


def test_path_index_is_stale_until_loaded_and_again_after_its_max_age(work_dir: Path) -> None:
    index = PathIndex(work_dir, max_age_s=0)
    assert index.stale
    index.max_age_s = 60
    index.load()
    assert not index.stale


def test_match_paths_ranks_prefix_then_name_then_substring_then_subsequence() -> None:
    paths = ["docs/main.md", "main.py", "src/domain.py", "src/m_a_i_n.txt", "other.py"]
    assert match_paths(paths, "main") == [
        "main.py",
        "docs/main.md",
        "src/domain.py",
        "src/m_a_i_n.txt",
    ]
    assert "main.py" not in match_paths(paths, "main.py")
    assert len(match_paths([f"f{n}.py" for n in range(50)], "")) == 20


def test_match_paths_puts_word_starts_before_scattered_letters() -> None:
    # Fuzzy scoring (textual.fuzzy): `wp` is the initials of widgets/prompt.py; the letters
    # merely occur in swap.py, which the old ranking put first for being shallower.
    assert match_paths(["swap.py", "widgets/prompt.py", "kode/"], "wp") == [
        "widgets/prompt.py",
        "swap.py",
    ]


def test_match_commands_puts_prefix_matches_first() -> None:
    assert [name for name, _ in match_commands(COMMANDS, "/c")] == [
        "/clear",
        "/compact",
        "/context",
    ]
    assert [name for name, _ in match_commands(COMMANDS, "/text")] == ["/context"]


MARKER = "MARKER-outside-the-work-dir"


@pytest.mark.parametrize("use_git", [False, True], ids=["walk", "git"])
def test_path_index_offers_nothing_a_symlink_leads_to_outside(
    work_dir: Path, tmp_path: Path, use_git: bool
) -> None:
    if use_git and shutil.which("git") is None:
        pytest.skip("needs git")
    outside = tmp_path / "outside"
    (outside / MARKER).mkdir(parents=True)
    (outside / MARKER / "secret.txt").write_text("x")
    (work_dir / "shared").symlink_to(outside)
    (work_dir / "notes.txt").symlink_to(outside / MARKER / "secret.txt")
    (work_dir / "main-link.py").symlink_to("src/main.py")  # stays inside: offered
    (work_dir / "docs").mkdir()
    (work_dir / "docs" / f"{MARKER}.md").write_text("x")
    if use_git:
        subprocess.run(["git", "init", "-q", str(work_dir)], check=True)
        subprocess.run(["git", "-C", str(work_dir), "add", "-A"], check=True)
    # A tracked folder replaced by a link: git still lists the files it had.
    (work_dir / "docs" / f"{MARKER}.md").unlink()
    (work_dir / "docs").rmdir()
    (work_dir / "docs").symlink_to(outside / MARKER)

    paths = PathIndex(work_dir).load()

    assert not any(MARKER in path for path in paths)
    assert not {"shared", "shared/", "notes.txt", "docs", "docs/"} & set(paths)
    assert {"src/main.py", "main-link.py"} <= set(paths)


@pytest.mark.parametrize("use_git", [False, True], ids=["walk", "git"])
def test_path_index_offers_names_that_are_not_utf8_escaped(work_dir: Path, use_git: bool) -> None:
    if use_git and shutil.which("git") is None:
        pytest.skip("needs git")
    with open(os.fsencode(work_dir) + b"/caf\xe9.txt", "wb") as file:
        file.write(b"x")
    if use_git:
        subprocess.run(["git", "init", "-q", str(work_dir)], check=True)

    paths = PathIndex(work_dir).load()

    assert "caf\\xe9.txt" in paths
    "".join(paths).encode("utf-8")
