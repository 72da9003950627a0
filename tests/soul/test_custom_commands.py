"""Custom slash commands: Markdown prompts in .kode/commands, .claude/commands and the home."""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path

import pytest

from kode_tui.config import Config, ModelChoice
from kode_tui.soul.custom_commands import MAX_BYTES, CustomCommands, expand
from kode_tui.soul.facade import AgentSession, CommandPrompt
from kode_tui.soul.llm.demo import INTRO
from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.wire import events as ev
from tests.soul_helpers import print_turn, record_events


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def sent(provider: ScriptedProvider) -> str:
    """The user's message of the first request (reminders and markers aside)."""
    [message] = [
        m for m in provider.requests[0].history if m.role == "user" and "<system" not in m.text
    ]
    return message.text


REVIEW = """\
---
description: Review a file
argument-hint: [file] [focus]
model: haiku
---
Review $1, looking for $2.
Everything typed: $ARGUMENTS
"""


# --- where they come from ------------------------------------------------------------------------


def test_the_work_dirs_kode_folder_wins_over_claudes_and_the_users(
    project: Path, home: Path
) -> None:
    write(project / ".kode/commands/review.md", "kode's review")
    write(project / ".claude/commands/review.md", "claude's review")
    write(home / "commands/review.md", "the user's review")
    write(project / ".claude/commands/ship.md", "claude's ship")
    write(home / "commands/ship.md", "the user's ship")
    write(home / "commands/mine.md", "only the user's")

    listing = CustomCommands(project).listing()

    bodies = {command.name: command.body for command in listing.commands}
    assert bodies == {
        "/review": "kode's review",
        "/ship": "claude's ship",
        "/mine": "only the user's",
    }
    assert sorted(c.shown_path for c in listing.shadowed) == [
        ".claude/commands/review.md",
        str(home / "commands/review.md"),
        str(home / "commands/ship.md"),
    ]


def test_claude_subfolders_are_namespaces_and_names_are_lower_case(project: Path) -> None:
    write(project / ".claude/commands/frontend/Test.md", "Run the frontend tests")

    [command] = CustomCommands(project).listing().commands

    assert command.name == "/frontend:test"
    assert command.description == "Run the frontend tests"  # no front matter: the first line


def test_an_edited_command_is_read_again_without_a_restart(project: Path) -> None:
    path = write(project / ".kode/commands/hi.md", "first")
    commands = CustomCommands(project)
    assert commands.listing().commands[0].body == "first"

    path.write_text("second, longer")
    write(project / ".kode/commands/new.md", "new")

    assert [c.body for c in commands.listing().commands] == ["second, longer", "new"]


# --- what a file holds ---------------------------------------------------------------------------


def test_front_matter_is_read_and_never_part_of_the_prompt(project: Path) -> None:
    write(project / ".kode/commands/review.md", REVIEW)

    [command] = CustomCommands(project).listing().commands

    assert (command.description, command.argument_hint, command.model) == (
        "Review a file",
        "[file] [focus]",  # YAML's list, shown with the brackets the author meant
        "haiku",
    )
    assert "---" not in command.body and "description" not in command.body
    assert expand(command, '"src/a b.py" bugs') == (
        'Review src/a b.py, looking for bugs.\nEverything typed: "src/a b.py" bugs'
    )


def test_claudes_unquoted_hints_are_read_although_they_are_not_yaml(project: Path) -> None:
    write(
        project / ".claude/commands/fix.md",
        "\ufeff---\r\nargument-hint: [pr-number] [priority]\r\ndescription: Fix a PR\r\n---\r\n"
        "Fix #$1 ($2)\r\n",
    )

    [command] = CustomCommands(project).listing().commands

    assert command.argument_hint == "[pr-number] [priority]"
    assert command.description == "Fix a PR"


def test_arguments_fill_the_placeholders_and_a_missing_one_is_empty(project: Path) -> None:
    write(project / ".kode/commands/two.md", "A=$1 B=$2 C=$3.")
    write(project / ".kode/commands/plain.md", "Tidy up.\n")
    listing = CustomCommands(project).listing()
    two, plain = listing.get("/two"), listing.get("/plain")
    assert two is not None and plain is not None

    assert expand(two, "x y") == "A=x B=y C=."
    assert expand(two, "don't stop") == "A=don't B=stop C=."  # unbalanced quote: whitespace
    assert expand(plain, "") == "Tidy up."
    # Nothing typed is lost when the body has no placeholder.
    assert expand(plain, "the tests too") == "Tidy up.\n\nARGUMENTS: the tests too"


def test_descriptions_show_escape_sequences_visibly(project: Path) -> None:
    write(
        project / ".kode/commands/x.md",
        "---\ndescription: hi \x1b]0;pwned\x07 there\nargument-hint: \x1b[8m[f]\n---\nbody",
    )

    [command] = CustomCommands(project).listing().commands

    assert command.description == "hi ␛]0;pwned␇ there"
    assert command.argument_hint == "␛[8m[f]"


# --- what is refused -----------------------------------------------------------------------------


def test_a_symlink_out_of_the_work_dir_is_refused_with_one_line(
    project: Path, tmp_path: Path
) -> None:
    secret = write(tmp_path / "user-home/.ssh/id_rsa", "PRIVATE KEY")
    (project / ".kode/commands").mkdir(parents=True)
    (project / ".kode/commands/review.md").symlink_to(secret)
    write(project / "docs/inside.md", "a prompt kept elsewhere in the repo")
    (project / ".kode/commands/inside.md").symlink_to(project / "docs/inside.md")

    listing = CustomCommands(project).listing()

    assert [c.name for c in listing.commands] == ["/inside"]
    problem = listing.problem("/review")
    assert problem is not None
    assert problem.message == (
        "/review: .kode/commands/review.md leads outside the work dir: not read."
    )
    assert "PRIVATE" not in repr(listing)


def test_a_users_command_must_stay_in_its_folder(home: Path, tmp_path: Path) -> None:
    write(tmp_path / "elsewhere.md", "outside")
    (home / "commands").mkdir(parents=True)
    (home / "commands/out.md").symlink_to(tmp_path / "elsewhere.md")

    listing = CustomCommands(tmp_path / "work").listing()

    assert listing.commands == ()
    problem = listing.problem("/out")
    assert problem is not None and "leads outside" in problem.message


def test_big_binary_broken_and_oddly_named_files_each_give_one_line(project: Path) -> None:
    folder = project / ".kode/commands"
    write(folder / "big.md", "x" * (MAX_BYTES + 1))
    write(folder / "latin1.md", "caf\xe9".encode("latin-1"))
    write(folder / "broken.md", "---\ndescription: ok\n  - : [\n---\nbody")
    write(folder / "bomb.md", "---\na: &a [x, x]\nb: &b [*a, *a]\ndescription: *b\n---\nbody")
    write(folder / "list.md", "---\ndescription: [a, b]\n---\nbody")
    write(folder / "number.md", "---\ndescription: " + "9" * 5000 + "\n---\nbody")
    write(folder / "hex.md", "---\nmodel: 0x" + "f" * 5000 + "\n---\nbody")
    write(folder / "we ird.md", "body")
    os.mkfifo(folder / "pipe.md")
    write(folder / "fine.md", "body")

    listing = CustomCommands(project).listing()

    assert [c.name for c in listing.commands] == ["/fine"]
    messages = sorted(problem.message for problem in listing.problems)
    assert messages == [
        ".kode/commands/we ird.md is not read: a command name is letters, digits, - and _.",
        "/big: .kode/commands/big.md is over 256 KiB: not read.",
        "/bomb: .kode/commands/bomb.md has front matter that uses YAML aliases: not read.",
        "/broken: .kode/commands/broken.md has front matter that is not valid YAML (line 3): "
        "not read.",
        "/hex: .kode/commands/hex.md has a `model:` that is not text: not read.",
        "/latin1: .kode/commands/latin1.md is not UTF-8 text: not read.",
        "/list: .kode/commands/list.md has a `description:` that is not text: not read.",
        "/number: .kode/commands/number.md has front matter that holds a number too long to "
        "read: not read.",
        "/pipe: .kode/commands/pipe.md is not a regular file: not read.",
    ]


DEEP = "---\ndescription: " + "[" * 5000 + "\n---\nbody"
"""Front matter nested 5,000 deep: PyYAML's Python parser raises RecursionError on it."""


@pytest.mark.parametrize(
    "front_matter",
    [
        DEEP,
        "---\n" + "".join("  " * i + "k:\n" for i in range(100)) + "---\nbody",
        "---\ndescription: " + "[" * 70 + "]" * 70 + "\n---\nbody",
    ],
    ids=["flow, past libyaml's cap", "blocks", "flow, under it"],
)
def test_front_matter_nested_at_any_depth_is_one_line_and_the_rest_is_listed(
    project: Path, front_matter: str
) -> None:
    write(project / ".kode/commands/deep.md", front_matter)
    write(project / ".kode/commands/fine.md", "body")

    listing = CustomCommands(project).listing()

    assert [c.name for c in listing.commands] == ["/fine"]
    assert [p.message for p in listing.problems] == [
        "/deep: .kode/commands/deep.md has front matter that is nested deeper than 64 levels: "
        "not read."
    ]


# --- running them --------------------------------------------------------------------------------


async def test_a_command_sends_its_prompt_and_says_so_before_the_turn(project: Path) -> None:
    write(project / ".kode/commands/review.md", REVIEW)
    provider = ScriptedProvider([{"text": "Looks fine."}])
    opened = await AgentSession.open(project)
    events = record_events(opened.bus)
    choice = ModelChoice(name="scripted", model="scripted", source="flag")
    await opened.start(Config(), choice, provider=provider)
    try:
        prompt = opened.custom.prompt("/Review", "app.py naming")
        assert isinstance(prompt, CommandPrompt)
        result = await opened.custom.run(prompt)
    finally:
        await opened.close()

    assert result.stop_reason == "done"
    assert sent(provider) == "Review app.py, looking for naming.\nEverything typed: app.py naming"
    [command] = [e for e in events if isinstance(e, ev.CommandSent)]
    assert command.command == "/review" and command.arguments == "app.py naming"
    assert events.index(command) < next(
        i for i, e in enumerate(events) if isinstance(e, ev.TurnBegin)
    )
    # `model: haiku` is no alias of this user's: one warning, the session's model answers.
    [warning] = [e.message for e in events if isinstance(e, ev.Warning)]
    assert warning.startswith("/review asks for model haiku: that is not one of your model")
    assert warning.endswith("; it runs on scripted.")


async def test_print_mode_runs_a_custom_command(project: Path, home: Path) -> None:
    write(home / "commands/greet.md", "---\ndescription: Greet\n---\nSay hello to $ARGUMENTS.")
    provider = ScriptedProvider([{"text": "Hello, Ada and Bob!"}])

    printed = await print_turn(project, provider, "/greet Ada and Bob")

    assert printed.status == 0, printed.err
    assert printed.out == "Hello, Ada and Bob!\n"
    assert sent(provider) == "Say hello to Ada and Bob."


async def test_print_mode_names_a_refused_command_file_and_knows_the_others(
    project: Path, tmp_path: Path
) -> None:
    write(project / ".kode/commands/ok.md", "fine")
    (project / ".kode/commands/leak.md").symlink_to(write(tmp_path / "secret", "s"))

    refused = await print_turn(project, ScriptedProvider([]), "/leak")
    unknown = await print_turn(project, ScriptedProvider([]), "/nope")

    assert refused.status == 2
    assert "kode-tui: /leak: .kode/commands/leak.md leads outside the work dir" in refused.err
    assert unknown.status == 2
    assert "unknown command /nope; print mode knows /compact" in unknown.err
    assert "and the custom /ok." in unknown.err


async def test_print_mode_refuses_a_deeply_nested_command_in_one_line_and_runs_the_rest(
    project: Path,
) -> None:
    write(project / ".kode/commands/deep.md", DEEP)
    write(project / ".kode/commands/greet.md", "Say hello.")
    provider = ScriptedProvider([{"text": "Hello!"}])

    deep = await print_turn(project, ScriptedProvider([]), "/deep")
    greet = await print_turn(project, provider, "/greet")
    cost = await print_turn(project, ScriptedProvider([]), "/cost")

    assert deep.status == 2 and deep.out == ""
    assert deep.err == (
        "kode-tui: /deep: .kode/commands/deep.md has front matter that is nested deeper than "
        "64 levels: not read.\n"
    )
    assert greet.status == 0 and greet.out == "Hello!\n" and sent(provider) == "Say hello."
    assert cost.status == 0, cost.err


@pytest.mark.parametrize("line", ["/compact", "/context", "/cost"])
async def test_print_modes_built_in_commands_win_over_custom_ones(project: Path, line: str) -> None:
    write(project / ".kode/commands" / f"{line[1:]}.md", "custom")
    provider = ScriptedProvider([])

    printed = await print_turn(project, provider, line)

    assert printed.status == 0, printed.err
    assert provider.requests == []


async def test_a_commands_model_alias_answers_that_prompt_only(project: Path) -> None:
    write(project / ".kode/commands/tour.md", "---\nmodel: demo\n---\nShow me around.")
    scripted = ScriptedProvider([{"text": "The session's model again."}])
    opened = await AgentSession.open(project)
    events = record_events(opened.bus)
    choice = ModelChoice(name="scripted", model="scripted", source="flag")
    await opened.start(Config(), choice, provider=scripted)
    try:
        prompt = opened.custom.prompt("/tour", "")
        assert isinstance(prompt, CommandPrompt)
        parts = opened.bus.subscribe(ev.ContentPart)
        turn = asyncio.ensure_future(opened.custom.run(prompt))
        first = await asyncio.wait_for(anext(parts), 10)
        opened.interrupt()  # the demo's tour is long: its first words are enough
        with contextlib.suppress(asyncio.CancelledError):
            await turn
        after = await opened.run("and now?")
    finally:
        await opened.close()

    assert INTRO.startswith(getattr(first.part, "text", "").strip())
    [command] = [e for e in events if isinstance(e, ev.CommandSent)]
    assert command.model == "demo"
    # The next message goes to the session's model.
    assert after.stop_reason == "done" and len(scripted.requests) == 1
