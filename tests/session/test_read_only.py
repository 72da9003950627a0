"""A session folder that cannot be written (read-only media, no write permission) can still be
looked at: opened without the lock or any new file, shown read-only; print mode refuses it in one
sentence."""

from __future__ import annotations

import argparse
import asyncio
import errno
import logging
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kode_tui import cli
from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.ui.widgets.prompt import PromptInput
from tests.conftest import KIMI_FIXTURE
from tests.session_helpers import session_with_turns
from tests.ui_helpers import make_app, ready, screen_text, started

WRITING = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    copy = tmp_path / "kimi-session"
    shutil.copytree(KIMI_FIXTURE, copy)
    return copy


def mount_read_only(folder: Path, monkeypatch: pytest.MonkeyPatch, code: int = errno.EROFS) -> None:
    """`folder` as on a read-only file system (EROFS), or without write permission (EACCES):
    opening anything in it to write fails. (Works as root too, where chmod stops nothing.)"""
    real_open = os.open

    def guarded(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if flags & WRITING and Path(os.fspath(path)).absolute().is_relative_to(folder):
            raise OSError(code, os.strerror(code), os.fspath(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", guarded)


@pytest.fixture
def read_only_mount(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    mount_read_only(folder, monkeypatch)
    yield folder


@pytest.fixture
def no_write_permission(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    mount_read_only(folder, monkeypatch, errno.EACCES)
    yield folder


@pytest.fixture
def chmodded(folder: Path) -> Iterator[Path]:
    """The folder 0500 with its files 0400 (a real permission check: not as root)."""
    if os.geteuid() == 0:
        pytest.skip("root writes through any permission bits; see the read_only_mount variant")
    for path in folder.iterdir():
        path.chmod(stat.S_IRUSR)
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    yield folder
    folder.chmod(stat.S_IRWXU)
    for path in folder.iterdir():
        path.chmod(stat.S_IRUSR | stat.S_IWUSR)


def work_dir(tmp_path: Path) -> Path:
    """A work dir for the folder (tmp_path holds the tests' home folder: it is none)."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return work


def args_for(folder: Path, *extra: str) -> argparse.Namespace:
    return cli.build_parser().parse_args(["--session-dir", str(folder), *extra])


@pytest.mark.parametrize("variant", ["read_only_mount", "no_write_permission", "chmodded"])
async def test_a_session_folder_that_cannot_be_written_opens_for_viewing(
    request: pytest.FixtureRequest, variant: str, tmp_path: Path
) -> None:
    folder: Path = request.getfixturevalue(variant)
    before = snapshot(folder)

    opened = await cli._open(args_for(folder), work_dir(tmp_path))

    assert opened.session is not None and opened.session.read_only == "unwritable"
    assert any("hello.py" in m.text for m in opened.session.travel.timeline().history)
    await opened.session.close()
    assert snapshot(folder) == before  # no lock, no state.json, no wire.jsonl, nothing cut


@pytest.mark.parametrize("variant", ["read_only_mount", "no_write_permission", "chmodded"])
def test_print_mode_refuses_a_read_only_session_in_one_sentence(
    request: pytest.FixtureRequest,
    variant: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder: Path = request.getfixturevalue(variant)

    status = cli.main(["--session-dir", str(folder), "-p", "hi", "--model", "demo"])

    err = capsys.readouterr().err
    assert status == 2
    assert "cannot be written" in err and "--session-dir" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


async def test_the_tui_shows_a_read_only_session_without_an_agent(
    read_only_mount: Path, tmp_path: Path
) -> None:
    opened = await cli._open(args_for(read_only_mount), work_dir(tmp_path))
    app = make_app(work_dir(tmp_path), ScriptedProvider([]), opened=opened.session)
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        assert app.read_only and not started(app)
        assert "We created hello.py" in screen_text(app)
        prompt = app.screen.query_one(PromptInput)
        assert "cannot be written" in prompt.read_only_reason
        # Typing is not swallowed: a message stays in the prompt, and says why it cannot go.
        await pilot.press(*"hello", "enter")
        await pilot.pause()
        assert prompt.text == "hello"
    assert opened.session is not None
    await opened.session.close()


async def test_a_read_only_session_found_by_id_opens_for_viewing_and_print_mode_refuses_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project, session = await session_with_turns(tmp_path, 2)
    mount_read_only(session.dir, monkeypatch)
    before = snapshot(session.dir)

    args = cli.build_parser().parse_args(["-S", session.id, str(project)])
    opened = await cli._open(args, project)
    assert opened.session is not None and opened.session.read_only == "unwritable"
    assert len(opened.session.travel.timeline().history) == 6
    await opened.session.close()

    status = await asyncio.to_thread(
        cli.main, ["-S", session.id, "-p", "hi", "--model", "demo", str(project)]
    )
    err = capsys.readouterr().err
    assert status == 2 and "cannot be written" in err and f"-S {session.id}" in err
    assert snapshot(session.dir) == before


@pytest.mark.parametrize("code", [errno.EROFS, errno.EACCES])
async def test_a_home_on_read_only_media_still_lists_and_shows_its_sessions(
    home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    code: int,
) -> None:
    # The whole home read-only (a backup mounted to look at): the log file could not be
    # opened, and every command, --list-sessions included, stopped at that.
    project, session = await session_with_turns(tmp_path, 1)
    mount_read_only(home, monkeypatch, code)
    logger = logging.getLogger("kode_tui")
    monkeypatch.setattr(logger, "handlers", list(logger.handlers))  # main() adds its own

    listed = await asyncio.to_thread(cli.main, ["--list-sessions", str(project)])
    out, err = capsys.readouterr()
    assert listed == 0 and session.id in out and err == ""

    status = await asyncio.to_thread(
        cli.main, ["-S", session.id, "-p", "hi", "--model", "demo", str(project)]
    )
    err = capsys.readouterr().err
    assert status == 2 and "cannot be written" in err and "Traceback" not in err
