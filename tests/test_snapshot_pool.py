"""The snapshots' pool (`session.snapshot_pool`): contents shared with the session folders,
files that look like secrets kept only when a command changes them."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

from kode_tui.paths import Paths
from kode_tui.session import Context
from kode_tui.session.journal import FileJournal
from kode_tui.session.snapshot import WorkSnapshot
from kode_tui.session.snapshot_pool import looks_secret

from .test_shell_snapshots import settle, shell_turns
from .test_timetravel import user_checkpoint


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

    outcome = await agent.soul.revert(user_checkpoint(agent, "turn 0"), files=True)
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
