"""Issue 26, item 2: a session scope covers a later command only when kode-tui can show it runs
nothing the first did not, and every option value's path is checked, in every mode."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.tools.command_paths import PROTECTED_ARGUMENT
from kode_tui.tools.command_scope import scope_of
from tests.soul.test_approval_safety import Asker, run_agent
from tests.soul_helpers import print_turn

FSMONITOR = '[core]\n\tfsmonitor = "touch PWNED"\n'

# --- bundled short options hide no path ----------------------------------------------------------

BUNDLED = [
    "sort -uo.git/config p.txt",
    "sort -uo.npmrc notes.txt",
    "cp -vt.husky pre-commit",
    "curl -sSo.envrc https://example.com/x",
    "wget -qO.envrc https://example.com/x",
    "install -Dt.husky pre-commit",
    "mv -ft.husky pre-commit",
    "tar -czf.npmrc src",
    "gcc -xco.envrc x.c",
    # what bash makes of a word before the program sees it
    "tee .{npmrc,bak}",
    "sort {-o.npmrc,notes.txt}",
    "tee $'.npm\\x72c'",
    "tee $'.npm\\162c'",
    'tee $".npmrc"',
    "tee ${UNSET_IN_KODE_TESTS:-.npmrc}",
    "tee .npmrc$UNSET_IN_KODE_TESTS",
]


@pytest.mark.parametrize("command", BUNDLED)
async def test_a_path_bundled_into_short_options_asks_every_time_even_in_yolo(
    tmp_path: Path, command: str
) -> None:
    assert scope_of(command, tmp_path).reason == PROTECTED_ARGUMENT
    asker = Asker(tmp_path)
    await asker.approval.set_mode("yolo")
    assert await asker.asks(command)
    assert asker.asked[-1].always_ask == PROTECTED_ARGUMENT
    assert asker.asked[-1].scope_label == ""  # never approved for the session


def test_the_grammar_of_a_known_program_reads_which_letter_takes_the_value(
    tmp_path: Path,
) -> None:
    # sort's `-o` takes `src/out.txt`: no suffix of it (`/out.txt`) is a path of its own.
    found = scope_of("sort -uosrc/out.txt notes.txt", tmp_path)
    assert not found.outside and not found.protected
    # For a program kode-tui does not know, any letter may take the rest: every suffix counts.
    assert scope_of("frob -uosrc/out.txt notes.txt", tmp_path).outside


# --- a scope covers nothing the approved command did not run -------------------------------------

WIDENED = [
    ("sort notes.txt", "sort -uo.npmrc notes.txt"),
    ("cp a.txt b.txt", "cp -vt.husky pre-commit"),
    ("npm test", "npm test '--node-options=--import=data:text/javascript,x'"),
    ("python3 -m tarfile -l x.tar", "python3 -m tarfile -e x.tar out"),
    ("make all", "make -sfother.mk all"),
    ("gzip -k f", "gzip -dNf payload.gz"),
    ("rbash -c 'ls'", "rbash -c 'touch pwned'"),
    # the same shapes: other python -m modules, other code-running or config-loading options
    ("python3 -m zipfile -l a.zip", "python3 -m zipfile -e a.zip out"),
    ("python3 -m pydoc json", "python3 -m pydoc -w ./evil"),
    ("python3 -m pickle x.pkl", "python3 -m pickle evil.pkl"),
    ("python3 -m doctest -v notes.txt", "python3 -m doctest evil.py"),
    ("python3 -m json.tool a.json", "python3 -m json.tool a.json b.json"),
    ("python3 -m http.server", "python3 -m http.server --cgi"),
    ("python3 x.py", "python3 x.py --anything"),  # a script's arguments are its own
    ("node x.js", "node x.js --inspect"),
    ("pytest -q", "pytest -q -p evil"),
    ("pytest -q", "pytest @args.txt"),
    ("pytest -q", "pytest -q --basetemp=src"),
    ("pytest -q", "pytest -q -Werror::evil.Warning"),
    ("make test", "make test deploy"),
    ("cargo test", "cargo test -- --logfile out.txt"),
    ("cargo build", "cargo build --manifest-path other/Cargo.toml"),
    ("git log", "git log --output=x"),
    ("git log", "git log --ext-diff -p"),
    ("git branch", "git branch -D main"),
    ("tar -tf a.tar", "tar -tf host:a.tar"),  # a remote archive runs rsh
    ("tar -czf a.tgz src", "tar -czf a.tgz -T list.txt"),
    ("wc -l a", "wc --files0-from=list a"),
    ("file a", "file -m evil.magic a"),
    ("rm -r build", "rm -r --no-preserve-root build"),
    # options that follow symlinks out of the tree they read
    ("grep -r x src", "grep -R x src"),
    ("rg x", "rg -z x"),
    ("ls -l", "ls -lLR"),
    ("du -sh .", "du -L -sh ."),
    ("find . -name x", "find -L . -name x"),
    ("find . -name x", "find . -files0-from list"),
    ("diff -u a b", "diff -ru a b"),
]


@pytest.mark.parametrize(("approved", "attack"), WIDENED)
async def test_a_session_scope_does_not_cover_a_command_that_runs_or_reads_more(
    tmp_path: Path, approved: str, attack: str
) -> None:
    asker = Asker(tmp_path)
    assert await asker.asks(approved)
    assert not await asker.asks(approved)
    assert await asker.asks(attack)


@pytest.mark.parametrize(
    ("approved", "covered"),
    [
        ("make test", "make -j 4 test"),  # make takes `4` as -j's value: the target is `test`
        ("sort notes.txt", "sort -u -k2,2 -o sorted.txt notes.txt"),
        ("npm test", "npm test -- src/app.test.js"),
        ("cargo test", "cargo test parse -- --nocapture --test-threads 1"),
    ],
)
async def test_a_session_scope_covers_the_options_its_grammar_reads(
    tmp_path: Path, approved: str, covered: str
) -> None:
    asker = Asker(tmp_path)
    assert await asker.asks(approved)
    assert not await asker.asks(covered)
    assert await asker.asks(covered.replace(" -", " --no-such-option -", 1))


# --- an approval that always asks says why -------------------------------------------------------


async def test_a_glob_of_too_many_files_says_so_not_that_it_names_a_protected_file(
    tmp_path: Path,
) -> None:
    for index in range(201):
        (tmp_path / f"f{index}.txt").write_text("")
    asker = Asker(tmp_path)
    await asker.approval.set_mode("yolo")
    assert await asker.asks("cat *.txt")
    reason = asker.asked[-1].always_ask
    assert "more than 200 files" in reason
    assert "run code" not in reason


@pytest.mark.parametrize(
    ("command", "says"),
    [
        ("cat ~no-such-user-kode/x", "home folder"),
        ("cat ..*/secret", "can match `..`"),
        ("git config core.fsmonitor 'touch pwned'", "git's config or hooks"),
    ],
)
def test_each_reason_to_always_ask_is_named(tmp_path: Path, command: str, says: str) -> None:
    reason = scope_of(command, tmp_path).reason
    assert says in reason
    assert PROTECTED_ARGUMENT not in reason


# --- end to end, through the soul ----------------------------------------------------------------


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
async def test_print_mode_with_yolo_refuses_the_bundled_write_to_git_config(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    config = (project / ".git" / "config").read_text()
    calls = [
        {"name": "WriteFile", "arguments": {"path": "p.txt", "content": FSMONITOR}},
        {"name": "Shell", "arguments": {"command": "sort -uo.git/config p.txt"}},
        {"name": "Shell", "arguments": {"command": "git status"}},
    ]
    provider = ScriptedProvider([{"tool_calls": [call]} for call in calls] + [{"text": "done"}])
    printed = await print_turn(project, provider, yolo=True)

    assert (project / "p.txt").read_text() == FSMONITOR  # yolo let the plain write through
    assert (project / ".git" / "config").read_text() == config
    assert not (project / "PWNED").exists()
    assert "rejected sort -uo.git/config p.txt: it needs approval" in printed.err
    assert f"{PROTECTED_ARGUMENT}, so it asks even with --yolo" in printed.err


async def test_a_session_approval_of_sort_does_not_cover_a_bundled_write_of_npmrc(
    tmp_path: Path,
) -> None:
    shell = [
        "sort notes.txt",
        "sort -r notes.txt",  # covered by the approval
        "sort -uo.npmrc notes.txt",
    ]
    calls: list[dict[str, object]] = [
        {"name": "WriteFile", "arguments": {"path": "notes.txt", "content": "b\na\n"}},
        *({"name": "Shell", "arguments": {"command": command}} for command in shell),
    ]
    requests, session, _ = await run_agent(tmp_path, calls)
    # (Approved, it runs in the Shell sandbox, if any, which then asks to run it outside.)
    asked = [r for r in requests if r.action != "run command outside the sandbox"]

    assert [r.description for r in asked] == [
        "WriteFile notes.txt",
        "sort notes.txt",
        "sort -uo.npmrc notes.txt",
    ]
    assert asked[-1].always_ask == PROTECTED_ARGUMENT
    assert asked[-1].scope_label == ""
    assert "shell:sort" in session.state.session_approvals


async def test_yolo_asks_before_a_bundled_write_to_git_config(tmp_path: Path) -> None:
    calls: list[dict[str, object]] = [
        {"name": "WriteFile", "arguments": {"path": "p.txt", "content": FSMONITOR}},
        {"name": "Shell", "arguments": {"command": "sort -uo.git/config p.txt"}},
    ]
    requests, _, project = await run_agent(tmp_path, calls, mode="yolo", answer="reject")

    assert [r.description for r in requests] == ["sort -uo.git/config p.txt"]
    assert requests[0].always_ask == PROTECTED_ARGUMENT
    assert not (project / ".git" / "config").exists()
