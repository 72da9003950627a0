"""A session opened with `--session-dir` works in its own work dir, never in its folder."""

from __future__ import annotations

import asyncio
import json
import shutil
from hashlib import md5
from pathlib import Path

import pytest

from kode_tui.cli import main
from kode_tui.session import Session
from kode_tui.soul.llm.demo import NOTES_FILE
from tests.conftest import KIMI_FIXTURE


@pytest.fixture
def kimi_share(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Kimi CLI's share dir, in tmp: no test reads the real ~/.kimi."""
    share = tmp_path / "kimi-share"
    share.mkdir()
    monkeypatch.setenv("KIMI_SHARE_DIR", str(share))
    return share


def one_turn_in(session_dir: Path, *work_dir: str) -> None:
    """Run the offline demo's turn (a step of it writes NOTES_FILE into the work dir) in the
    session at `session_dir`, as `kode-tui -p … --session-dir DIR [WORK_DIR]` does."""
    argv = ["-p", "take a look", "--print", "--yolo", "--session-dir", str(session_dir)]
    assert main([*argv, *work_dir]) == 0


def test_a_kode_tui_session_opened_by_its_folder_works_in_its_work_dir(
    tmp_path: Path, kimi_share: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "project"
    elsewhere = tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    session = asyncio.run(Session.create(project))

    one_turn_in(session.dir, str(elsewhere))

    assert (project / NOTES_FILE).is_file()
    assert not (session.dir / NOTES_FILE).exists()
    assert not (elsewhere / NOTES_FILE).exists()
    assert "no work dir is recorded" not in capsys.readouterr().err


def test_a_kimi_session_opened_by_its_folder_works_in_the_work_dir_kimi_recorded(
    tmp_path: Path, kimi_share: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "kimi-project"
    project.mkdir()
    session_dir = kimi_share / "sessions" / md5(str(project).encode()).hexdigest() / "s-1"
    shutil.copytree(KIMI_FIXTURE, session_dir)
    other = {"path": str(tmp_path / "other"), "kaos": "local", "last_session_id": None}
    entry = {"path": str(project), "kaos": "local", "last_session_id": "s-1"}
    (kimi_share / "kimi.json").write_text(json.dumps({"work_dirs": [other, entry]}))

    one_turn_in(session_dir)

    assert (project / NOTES_FILE).is_file()
    assert not (session_dir / NOTES_FILE).exists()
    assert "no work dir is recorded" not in capsys.readouterr().err


def test_a_folder_nobody_recorded_works_in_the_current_dir_and_says_so(
    tmp_path: Path,
    kimi_share: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    here = tmp_path / "here"
    here.mkdir()
    session_dir = tmp_path / "copied" / "session"
    shutil.copytree(KIMI_FIXTURE, session_dir)
    monkeypatch.chdir(here)

    one_turn_in(session_dir)

    assert (here / NOTES_FILE).is_file()
    assert not (session_dir / NOTES_FILE).exists()
    notice = [line for line in capsys.readouterr().err.splitlines() if "work dir" in line]
    assert len(notice) == 1
    assert f"no work dir is recorded for {session_dir}; tools run in {here}" in notice[0]


async def test_an_agent_never_works_in_the_session_folder(
    tmp_path: Path, kimi_share: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kode_tui.config import Config, resolve_model
    from kode_tui.soul.agent import open_agent
    from kode_tui.soul.llm.scripted import ScriptedProvider

    here, project = tmp_path / "here", tmp_path / "project"
    here.mkdir()
    project.mkdir()
    folder = tmp_path / "copied" / "session"
    shutil.copytree(KIMI_FIXTURE, folder)
    monkeypatch.chdir(here)
    session = await Session.from_dir(folder)
    assert session.work_dir is None
    choice = resolve_model(Config())

    for given, expected in ((None, here), (project, project)):
        agent = await open_agent(
            session, Config(), choice, provider=ScriptedProvider([]), work_dir=given
        )
        await agent.close()
        assert agent.soul.env.work_dir == expected
