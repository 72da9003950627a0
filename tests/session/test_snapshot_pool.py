"""The snapshots' pool (`session.snapshot_pool`) and its collection (`session.pool_gc`):
contents shared with the session folders, files that look like secrets kept only when a command
changes them, and `kode-tui --gc`."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from kode_tui.cli import main
from kode_tui.paths import Paths
from kode_tui.session import Context
from kode_tui.session.journal import FileJournal
from kode_tui.session.pool_gc import GROWTH_SLACK, collect_all
from kode_tui.session.snapshot import WorkSnapshot
from kode_tui.session.snapshot_pool import looks_secret
from tests.session.test_shell_snapshots import settle, shell_turns
from tests.session.test_timetravel import user_checkpoint


def sha(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def pool_of(project: Path) -> Path:
    return Paths.current().snapshot_pool(project)


def old_project(tmp_path: Path, files: dict[str, str]) -> Path:
    """A work dir holding `files`, written long before any scan (none "racily clean")."""
    project = tmp_path / "project"
    for name, text in files.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
        os.utime(project / name, (1_600_000_000, 1_600_000_000))
    settle(project)
    return project


async def test_a_recorded_shell_change_shares_the_pools_bytes_with_the_session(
    tmp_path: Path,
) -> None:
    project = old_project(tmp_path, {"change.txt": "before\n"})
    agent = await shell_turns(project, "echo after > change.txt")
    [edit] = agent.soul.context.file_edits
    session_blobs = agent.soul.env.journal.blobs_dir
    await agent.close()

    for content in (b"before\n", b"after\n"):
        mine, pooled = session_blobs / sha(content), pool_of(project) / "blobs" / sha(content)
        # One file on the disk under two names: a hard link, 0600, its bytes intact.
        assert os.stat(mine).st_ino == os.stat(pooled).st_ino
        assert stat.S_IMODE(os.stat(mine).st_mode) == 0o600
        assert mine.read_bytes() == content
    assert (edit.record.before, edit.record.after) == (sha(b"before\n"), sha(b"after\n"))


async def test_an_env_file_stays_out_of_the_pool_and_a_shell_change_to_it_is_reverted(
    tmp_path: Path,
) -> None:
    secret = "API_KEY=sk-live-1234\n"
    project = old_project(tmp_path, {".env": secret, "config/id_ed25519": "KEY\n", "a.py": "x\n"})
    agent = await shell_turns(
        project, "echo API_KEY=other > .env", "rm .env && echo 'print(1)' > a.py"
    )
    pool_blobs = {path.name for path in (pool_of(project) / "blobs").iterdir()}
    pool_index = json.loads((pool_of(project) / "index.json").read_text())["files"]
    # The secret-looking files were never stored in the pool, nor named in its index.
    assert sha(secret.encode()) not in pool_blobs
    assert sha(b"KEY\n") not in pool_blobs
    assert sha(b"API_KEY=other\n") not in pool_blobs
    assert sorted(pool_index) == ["a.py"]
    assert sha(b"x\n") in pool_blobs

    outcome = await agent.soul.travel.revert(user_checkpoint(agent, "turn 0"), files=True)
    await agent.close()
    # The commands' changes were recorded (their contents in the session's own blobs), so
    # the revert put the old .env back.
    assert sorted(outcome.files_restored) == [".env", "a.py"]
    assert (project / ".env").read_text() == secret
    assert (project / "a.py").read_text() == "x\n"


async def test_a_secrets_change_nobody_in_the_session_made_is_kept_nowhere(
    tmp_path: Path,
) -> None:
    project = old_project(tmp_path, {".env.local": "TOKEN=one\n"})
    async with Context(tmp_path / "session" / "context.jsonl") as context:
        await context.restore()
        journal = FileJournal(context)
        snapshots = WorkSnapshot(project, context, journal)
        await snapshots.capture()
        (project / ".env.local").write_text("TOKEN=two\n")  # the user, between turns
        assert await snapshots.capture() == []
        (project / ".env.local").write_text("TOKEN=three\n")  # a Shell command
        [edit] = await snapshots.capture("call_1")
        await snapshots.close()
    assert (edit.before, edit.after) == (sha(b"TOKEN=two\n"), sha(b"TOKEN=three\n"))
    assert sorted(path.name for path in journal.blobs_dir.iterdir()) == sorted(
        [sha(b"TOKEN=two\n"), sha(b"TOKEN=three\n")]
    )


def test_what_looks_like_a_secret() -> None:
    for name in (".env", ".env.production", "deploy/prod.env", ".envrc", "certs/server.PEM",
                 "tls.key", "id_rsa", "id_ed25519.pub", ".netrc", ".npmrc",
                 "aws/credentials", "credentials.json", "store.p12", "prod.tfvars"):  # fmt: skip
        assert looks_secret(name), name
    for name in ("env.py", "src/environment.ts", "keys.py", "README.md", "monkey.txt"):
        assert not looks_secret(name), name


def write_index(path: Path, files: dict[str, bytes], work_dir: Path | None = None) -> None:
    """An index naming `files` (version 1 when `work_dir` is None, as kode-tui wrote it
    before the ctime)."""
    if work_dir is None:
        rows: dict[str, list[object]] = {n: [len(c), 1, 2, sha(c)] for n, c in files.items()}
        data: dict[str, object] = {"version": 1, "files": rows}
    else:
        rows = {n: [len(c), 1, 1, 2, sha(c)] for n, c in files.items()}
        data = {"version": 2, "files": rows, "work_dir": str(work_dir)}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def write_blobs(folder: Path, *contents: bytes) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for content in contents:
        (folder / sha(content)).write_bytes(content)


def test_gc_frees_what_no_index_names_and_an_old_pools_secrets(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    pool = pool_of(project)
    sessions = Paths.current().work_dir_sessions(project)
    # An older kode-tui's pool: its index names a.py and .env, a closed session's index names
    # b.py as it was then; the rest are old contents nobody names.
    write_index(pool / "index.json", {"a.py": b"a", ".env": b"SECRET=1"})
    write_index(sessions / "s1" / "snapshot.json", {"b.py": b"b-then", ".env": b"SECRET=0"})
    write_blobs(pool / "blobs", b"a", b"b-then", b"SECRET=1", b"SECRET=0", b"old" * 1000)
    (pool / "blobs" / ".deadbeef.abc.tmp").write_bytes(b"torn")  # a crash's leftover

    collected = collect_all()

    assert sorted(path.name for path in (pool / "blobs").iterdir()) == sorted(
        [sha(b"a"), sha(b"b-then")]
    )
    assert (collected.files, collected.freed, collected.pools) == (4, 8 + 8 + 3000 + 4, 1)


def test_gc_removes_the_pool_of_a_work_dir_that_is_gone_and_keeps_one_in_use(
    tmp_path: Path,
) -> None:
    from kode_tui.session.snapshot_pool import SnapshotPool

    gone, busy = tmp_path / "gone", tmp_path / "busy"
    busy.mkdir()
    for work_dir in (gone, busy):
        write_index(pool_of(work_dir) / "index.json", {"a.py": b"a"}, work_dir)
        write_blobs(pool_of(work_dir) / "blobs", b"a", b"dead")
    in_use = SnapshotPool(pool_of(busy), busy)
    in_use.hold()  # a session of another kode-tui, say
    try:
        collected = collect_all()
    finally:
        in_use.release()

    assert not pool_of(gone).exists()
    assert sorted(path.name for path in (pool_of(busy) / "blobs").iterdir()) == sorted(
        [sha(b"a"), sha(b"dead")]
    )
    assert (collected.removed, collected.in_use, collected.files) == (1, 1, 2)


async def test_gc_leaves_a_running_sessions_pool_whole_and_collects_it_once_closed(
    tmp_path: Path,
) -> None:
    project = old_project(tmp_path, {"a.py": "one\n"})
    # A session opened by path (its folder is not under sessions/, so no collection sees its
    # index) takes "one" as a.py's content.
    async with Context(tmp_path / "elsewhere" / "context.jsonl") as context:
        await context.restore()
        running = WorkSnapshot(project, context, FileJournal(context))
        await running.capture()
        # The user changes a.py; another session of the work dir opens and closes: the
        # pool's index names "two" now, and no index a collection reads names "one".
        (project / "a.py").write_text("two\n")
        async with Context(
            Paths.current().work_dir_sessions(project) / "other" / "context.jsonl"
        ) as other_context:
            await other_context.restore()
            other = WorkSnapshot(project, other_context, FileJournal(other_context))
            await other.capture()
            await other.close()

        assert collect_all().in_use == 1
        # The running session still finds "one", the old content of the change it records.
        [edit] = await running.capture()
        assert (edit.before, edit.after) == (sha(b"one\n"), sha(b"two\n"))
        await running.close()

    collected = collect_all()
    assert {path.name for path in (pool_of(project) / "blobs").iterdir()} == {sha(b"two\n")}
    # The removed name was the pool's: the session's own link keeps those bytes.
    assert (collected.files, collected.freed, collected.in_use) == (1, 0, 0)


async def test_closing_a_session_collects_a_pool_that_grew_past_twice_its_index(
    tmp_path: Path,
) -> None:
    project = old_project(tmp_path, {"a.py": "a\n", "b.py": "b\n"})
    async with Context(tmp_path / "session" / "context.jsonl") as context:
        await context.restore()
        snapshots = WorkSnapshot(project, context, FileJournal(context))
        await snapshots.capture()
        write_blobs(pool_of(project) / "blobs", *(b"old %d" % n for n in range(GROWTH_SLACK)))
        await snapshots.close()  # 2 named, 1,002 held: under the rule
        assert len(list((pool_of(project) / "blobs").iterdir())) == GROWTH_SLACK + 2

        snapshots = WorkSnapshot(project, context, FileJournal(context))
        await snapshots.capture()
        write_blobs(pool_of(project) / "blobs", *(b"older %d" % n for n in range(3)))
        await snapshots.close()  # 1,005 held: over
    assert {path.name for path in (pool_of(project) / "blobs").iterdir()} == {
        sha(b"a\n"),
        sha(b"b\n"),
    }


def test_kode_tui_gc_prints_one_line(capsys: pytest.CaptureFixture[str], home: Path) -> None:
    project = Path(os.getcwd())
    write_index(pool_of(project) / "index.json", {"a.py": b"a"}, project)
    write_blobs(pool_of(project) / "blobs", b"a", b"x" * (3 << 20))

    assert main(["--gc"]) == 0
    assert capsys.readouterr().out == "kode-tui --gc: freed 1 files, 3.0 MiB\n"
    assert main(["--gc"]) == 0
    assert capsys.readouterr().out == "kode-tui --gc: freed 0 files, 0.0 MiB\n"

    shutil.rmtree(home / "snapshots")
    (home / "snapshots").write_text("not a folder")
    assert main(["--gc"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    [line] = captured.err.splitlines()
    assert line.startswith("kode-tui: --gc stopped: Not a directory: ")
