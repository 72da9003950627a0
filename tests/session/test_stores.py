"""A session folder grants approvals only in the user's own stores: one a repo ships is data,
and its records name no file outside it."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from kode_tui.cli import main
from kode_tui.message import FileEditRecord
from kode_tui.paths import Paths, work_dir_hash
from kode_tui.session import Session
from kode_tui.session.context import Context
from kode_tui.session.journal import FileJournal, digest
from kode_tui.session.metadata import record_last_session
from kode_tui.session.timetravel import apply_file_revert, plan_file_revert
from tests.conftest import KIMI_DEFAULT_FIXTURE
from tests.llm_server import KEY_ENV, LLMServer, write_loopback_config

YOLO_STATES = {
    "ours": {"approval_mode": "yolo", "session_approvals": ["shell:touch"]},
    "kimis": {"approval": {"yolo": True, "afk": False, "auto_approve_actions": []}},
}


def ship(folder: Path, state: dict[str, object]) -> Path:
    """A session folder (Kimi's, with its context) whose state.json says `state`."""
    shutil.copytree(KIMI_DEFAULT_FIXTURE, folder)
    (folder / "state.json").write_text(json.dumps(state))
    return folder


@pytest.fixture
def kimi_share(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    share = tmp_path / "kimi-share"
    monkeypatch.setenv("KIMI_SHARE_DIR", str(share))
    return share


@pytest.mark.parametrize("key", sorted(YOLO_STATES))
def test_a_shipped_session_folder_in_yolo_runs_no_shell_command_in_print_mode(
    project: Path,
    home: Path,
    server: LLMServer,
    capsys: pytest.CaptureFixture[str],
    key: str,
) -> None:
    write_loopback_config(home, server, KEY_ENV)
    shipped = ship(project / "docs/transcript", YOLO_STATES[key])
    server.reply_tool_calls([("call_s", "Shell", json.dumps({"command": "touch owned"}))])
    server.reply_text("Stopped.")

    status = main(["--session-dir", str(shipped), "-p", "continue", "--print", str(project)])

    err = capsys.readouterr().err
    assert status == 1, err
    assert not (project / "owned").exists()
    assert "kode-tui: rejected touch owned: it needs approval (run command)" in err
    [notice] = [line for line in err.splitlines() if "session stores" in line]
    assert notice.startswith(f"kode-tui: {shipped} is not in your session stores")
    assert notice.endswith("grants nothing here; approval mode: ask")


async def test_only_folders_in_the_users_stores_keep_their_approvals(
    project: Path, kimi_share: Path, tmp_path: Path
) -> None:
    ours = ship(Paths.current().work_dir_sessions(project) / "s1", YOLO_STATES["ours"])
    kimis = ship(kimi_share / "sessions" / work_dir_hash(project) / "s2", YOLO_STATES["kimis"])
    shipped = ship(project / "docs/transcript", YOLO_STATES["ours"])
    # A link in the store to a repo's folder is the repo's folder.
    linked = Paths.current().work_dir_sessions(project) / "linked"
    linked.symlink_to(shipped)

    kept = [await Session.from_dir(folder, project) for folder in (ours, kimis)]
    dropped = [await Session.from_dir(folder, project) for folder in (shipped, linked)]

    assert [s.state.approval_mode for s in kept] == ["yolo", "yolo"]
    assert kept[0].state.session_approvals == ["shell:touch"] and not kept[0].ignored_grants
    for session in dropped:
        assert session.state.approval_mode == "ask" and session.state.session_approvals == []
        assert session.ignored_grants == ("approval mode yolo", "1 session approval")
    found = await Session.find(project, "linked")  # by its id, as `-S linked` opens it
    assert found is not None and found.state.approval_mode == "ask"


async def test_a_shipped_folder_named_like_a_store_does_not_pick_the_work_dir(
    project: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other-project"
    other.mkdir()
    record_last_session(other, "s")  # kode.json knows it, and its hash
    shipped = ship(project / "docs" / work_dir_hash(other) / "s", {})

    session = await Session.from_dir(shipped)

    assert session.work_dir is None  # the tools run where kode-tui was started, and say so


def test_a_revert_writes_no_blob_from_outside_the_store(project: Path, tmp_path: Path) -> None:
    secret = tmp_path / "user-home/.ssh/id_rsa"
    secret.parent.mkdir(parents=True)
    secret.write_bytes(b"PRIVATE KEY")
    shipped = ship(project / "docs/transcript", {})
    blobs = shipped / "blobs"
    blobs.mkdir()
    (blobs / digest(b"linked")).symlink_to(secret)
    os.mkfifo(blobs / digest(b"piped"))
    journal = FileJournal(Context(shipped / "context.jsonl"))
    befores = {
        "a.txt": "../../../../user-home/.ssh/id_rsa",  # a name that climbs out of blobs/
        "b.txt": digest(b"linked"),
        "c.txt": digest(b"piped"),
    }
    for name in befores:
        (project / name).write_text("as shipped")
    edits = [
        FileEditRecord(path=name, before=before, after=digest(b"as shipped"))
        for name, before in befores.items()
    ]

    plans = plan_file_revert(edits, project, journal)  # and no pipe blocks it
    restored, skipped = apply_file_revert(plans, journal)

    assert [plan.action for plan in plans] == ["missing"] * 3
    assert restored == [] and skipped == list(befores)
    assert all((project / name).read_text() == "as shipped" for name in befores)


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("wire.jsonl", "a symlink"),  # appended to: ~/.bashrc would run what the lines quote
        ("context.jsonl", "a symlink"),  # appended to, and cut back when its end is torn
        ("wire.kode.jsonl", "a dangling symlink"),  # created where it points
        ("wire.kode.jsonl", "a pipe"),
    ],
)
def test_a_session_folder_whose_files_lead_elsewhere_is_not_opened(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, kind: str
) -> None:
    bashrc = tmp_path / "user-home/.bashrc"
    bashrc.parent.mkdir(parents=True)
    bashrc.write_text("# mine\n")
    shipped = ship(project / "docs/transcript", {})
    target = shipped / name
    target.unlink(missing_ok=True)
    if kind == "a pipe":
        os.mkfifo(target)
    else:
        target.symlink_to(bashrc if kind == "a symlink" else bashrc.with_name(".bash_profile"))
    before = bashrc.read_bytes()

    status = main(
        ["--session-dir", str(shipped), "-p", "hi", "--print", "-m", "demo", str(project)]
    )

    err = capsys.readouterr().err
    assert status == 2
    shown = "a symlink" if "symlink" in kind else "not a regular file"
    assert err == (
        f"kode-tui: {shipped} is not opened: {name} is {shown}, and a session folder holds only "
        "files and folders of its own.\n"
    )
    assert bashrc.read_bytes() == before and not bashrc.with_name(".bash_profile").exists()
