"""The kode-tui command as a user types it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kode_tui import __version__, model_launch
from kode_tui.cli import main
from kode_tui.cli_args import runs_the_app
from kode_tui.paths import program
from kode_tui.session import Context, Session
from kode_tui.session.fork import fork_session
from tests.conftest import KIMI_FIXTURE
from tests.session_helpers import session_with_turns, write_turns


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kode_tui", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={**os.environ},
    )


def test_version_and_paths(home: Path) -> None:
    assert run("--version").stdout.strip() == f"kode-tui {__version__}"
    paths = dict(line.split(maxsplit=1) for line in run("--paths").stdout.splitlines())
    assert paths["home"] == str(home)
    assert paths["sessions"] == str(home / "sessions")
    assert paths["config"] == str(home / "config.toml")
    assert Path(paths["prompts"]).is_dir()
    assert Path(paths["themes"]).is_dir()


async def test_list_sessions_shows_titles_newest_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    ids = []
    for title in ("first", "second"):
        session = await Session.create(project)
        async with Context(session.context_file) as context:
            await write_turns(context, 1)
        session.state.custom_title = title
        session.save_state()
        ids.append(session.id)
    os.utime(_context(ids[0]), (1, 1))  # the first one was last written long ago
    assert await _main("--list-sessions", str(project)) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == [ids[1], ids[0]]
    assert lines[0].endswith("second")


async def test_list_sessions_shows_a_hostile_title_visibly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project, session = await session_with_turns(tmp_path, 1)
    session.state.custom_title = "fix \x1b]0;pwned\x07 the \x1b[8mhidden\x9b bug\nline"
    session.save_state()

    assert await _main("--list-sessions", str(project)) == 0

    out = capsys.readouterr().out
    assert not any(ch in out for ch in "\x1b\x07\x9b"), out
    [line] = out.splitlines()
    assert line.endswith("fix ␛]0;pwned␇ the ␛[8mhidden\\x9b bug↵line")


async def test_list_sessions_gives_a_piped_title_whole_and_says_which_is_a_fork(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project, session = await session_with_turns(tmp_path, 1)
    long_title = "Refactor the session catalog so that listing sessions stays fast and readable"
    session.state.custom_title = long_title
    session.save_state()
    forked = await fork_session(session, session.context_file, None, session.title)

    assert await _main("--list-sessions", str(project)) == 0

    lines = capsys.readouterr().out.splitlines()
    fork_line, original_line = sorted(lines, key=lambda line: "⑂" not in line)
    assert fork_line.startswith(forked.id) and original_line.startswith(session.id)
    assert fork_line.endswith(f"{long_title} (fork)  ⑂ forked from {session.id[:8]}")
    assert original_line.endswith(long_title)


async def test_a_print_run_without_the_models_key_says_so_and_leaves_no_session(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "project"
    project.mkdir()

    assert await _main("-p", "hi", "-m", "openai/gpt-4o", str(project)) == 2

    assert capsys.readouterr().err.strip() == (
        "kode-tui: no API key for openai/gpt-4o: set OPENAI_API_KEY"
    )
    assert await Session.list(project) == []
    assert not list(Path(os.environ["KODE_TUI_HOME"]).glob("sessions/*/*"))


def _context(session_id: str) -> Path:
    (found,) = Path(os.environ["KODE_TUI_HOME"]).glob(f"sessions/*/{session_id}/context.jsonl")
    return found


async def _main(*args: str) -> int:
    import asyncio

    return await asyncio.to_thread(main, list(args))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-S", "no-such-id"], "there is no session no-such-id"),
        (["-C"], "no earlier session"),
        (["--session-dir", "/no/such/folder"], "no session folder"),
        (["/no/such/dir"], "is not a directory"),
        (["acp", "--bogus"], "kode-tui acp: unrecognized arguments: --bogus"),
    ],
)
def test_mistakes_are_one_sentence_and_exit_2(
    tmp_path: Path, args: list[str], message: str
) -> None:
    work = tmp_path / "work"  # tmp_path holds the tests' home folder: no work dir
    work.mkdir()
    done = run(*args, cwd=work)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


async def test_session_opens_by_an_id_prefix_and_an_ambiguous_one_lists_the_matches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    for session_id in ("abc-1", "abd-2"):
        session = await Session.create(project, session_id)
        async with Context(session.context_file) as context:
            await write_turns(context, 1)

    assert await _main("-S", "abc", "-p", "again", "--print", "--yolo", str(project)) == 0
    assert "again" in _context("abc-1").read_text()
    assert "again" not in _context("abd-2").read_text()
    capsys.readouterr()

    assert await _main("-S", "ab", "-p", "again", "--print", str(project)) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line == "kode-tui: ab could be any of 2 sessions: abc-1, abd-2; give more of the id."
    assert await _main("-S", "x", "-p", "again", "--print", str(project)) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("kode-tui: there is no session x in ")


def test_the_resume_hint_is_a_command_that_runs_where_kode_tui_is_not_on_path(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    env = {**os.environ, "PATH": "/usr/bin:/bin"}  # no kode-tui
    first = subprocess.run(
        [sys.executable, "-m", "kode_tui", "-p", "hi", "--print", "--yolo", str(project)],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    hint = first.stderr.splitlines()[-1].removeprefix("kode-tui: resume this session with: ")
    assert not hint.startswith("kode-tui ")
    again = subprocess.run(
        ["/bin/sh", "-c", f"{hint} -p /context --print"],
        capture_output=True, text=True, timeout=60, env=env, cwd=project,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("Context: ")


def test_the_program_is_kode_tui_when_that_is_on_path_else_its_quoted_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "my venv" / "bin"
    bin_dir.mkdir(parents=True)
    script = bin_dir / "kode-tui"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    monkeypatch.setattr(sys, "argv", [str(script)])
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert program() == f"'{script}'"
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    assert program() == "kode-tui"
    monkeypatch.setattr(sys, "argv", ["/somewhere/kode_tui/__main__.py"])
    monkeypatch.setattr(sys, "executable", str(tmp_path / "py 3" / "python"))
    assert program() == f"'{tmp_path}/py 3/python' -m kode_tui"


def test_a_home_that_cannot_be_created_is_one_sentence(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    done = subprocess.run(
        [sys.executable, "-m", "kode_tui", "--list-sessions", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "KODE_TUI_HOME": str(blocker / "home")},
    )
    assert done.returncode == 1
    assert done.stderr.strip() == f"kode-tui: Not a directory: {blocker / 'home'}"


def test_print_mode_refuses_a_session_in_use_with_the_pid(tmp_path: Path) -> None:
    folder = tmp_path / "kimi-session"
    shutil.copytree(KIMI_FIXTURE, folder)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import asyncio, sys\n"
            "from kode_tui.session import Context\n"
            "async def main():\n"
            f"    await Context({str(folder / 'context.jsonl')!r}).restore()\n"
            "    print('ready', flush=True)\n"
            "    sys.stdin.readline()\n"
            "asyncio.run(main())\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        # Print mode refuses at once; the TUI offers read-only or a new session instead
        # (tests/ui/test_app.py).
        done = run("-p", "hi", "--print", "--session-dir", str(folder))
        assert done.returncode == 2
        assert f"in use by process {holder.pid}" in done.stderr
    finally:
        holder.communicate("\n", timeout=30)


def test_the_command_flushes_what_it_wrote_and_leaves_without_the_interpreters_teardown(
    tmp_path: Path,
) -> None:
    """`kode-tui` ends with os._exit once its output is flushed: the exit handlers and the heap
    teardown of the libraries it loaded (litellm's take about a second) do not run."""
    marker = tmp_path / "teardown-ran"
    code = (
        "import atexit, pathlib, sys\n"
        f"atexit.register(pathlib.Path({str(marker)!r}).write_text, 'ran')\n"
        "sys.argv = ['kode-tui', '--paths']\n"
        "from kode_tui.cli import run\n"
        "run()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)

    assert done.returncode == 0, done.stderr
    assert "sessions" in done.stdout  # written to a pipe (block-buffered) and still all there
    assert not marker.exists()


def test_the_root_or_home_folder_is_no_work_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import pwd

    user_home = tmp_path / "user-home"  # $HOME in tests
    user_home.mkdir()
    (tmp_path / "link").symlink_to(user_home)
    cases = [
        (["/"], "/ is the root folder"),
        ([str(user_home)], f"{user_home} is your home folder"),
        ([str(tmp_path / "link"), "-p", "hi", "--print"], f"{tmp_path}/link is your home"),
        ([str(tmp_path), "-p", "hi"], f"{tmp_path} holds your home folder"),
    ]
    for argv, said in cases:
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"kode-tui: {said}") and err.count("\n") == 1
        assert err.endswith(": start kode-tui in a project folder.\n")

    # Without $HOME, the home folder the system records for the user.
    monkeypatch.delenv("HOME")
    recorded = pwd.getpwuid(os.getuid()).pw_dir
    if Path(recorded).is_dir():
        assert main([recorded, "-p", "hi", "--print"]) == 2
        assert "is your home folder" in capsys.readouterr().err


_WATCH_SPAWN = """
import os, sys
def watch(event, args):
    if event == "subprocess.Popen" and any("kode_tui.soul.llm.worker" in a for a in args[1]):
        late = ("asyncio", "textual", "kode_tui.cli", "logging", "pathlib", "typing")
        loaded = [name for name in late if name in sys.modules]
        print("model process started; loaded:", *loaded, flush=True)
        os._exit(0)
sys.addaudithook(watch)
from kode_tui.launch import run
run()
"""


def test_the_model_process_starts_before_asyncio_and_textual_load_and_only_for_the_tui(
    project: Path,
) -> None:
    """The early model process imports its library on the other core while this one loads
    the rest: it is started as soon as the command is read (before even logging, pathlib and
    typing load: ~10 ms), and only when the TUI will run."""

    def spawned(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-c", _WATCH_SPAWN, *args],
            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        return done.stdout

    # `kode-tui` (kode_tui.launch) starts it before the command's own modules load.
    assert spawned(str(project)).splitlines() == ["model process started; loaded:"]
    assert spawned("-m", "demo", "--theme", "nord").splitlines() == [
        "model process started; loaded:"
    ]
    others = (
        ["--version"],
        ["--help"],
        ["--vers"],
        ["--list-sessions", str(project)],
        ["-p", "hi", str(project)],
        ["--print", str(project)],
        ["--search", "x", str(project)],
        ["--output-format", "json", str(project)],
        ["--no-such-option", str(project)],
        ["-m"],
    )
    for args in others:
        assert "model process started" not in spawned(*args), args
    assert runs_the_app(["acp"]) is None  # an ACP agent starts its own, when a session wants it

    # A session that cannot open: the process started for the TUI does not outlive the command.
    assert main(["-S", "no-such-session", str(project)]) == 2
    assert model_launch.early_pid() is None
