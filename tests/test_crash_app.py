"""`kill -9` of the real app at random moments loses nothing, and the session opens again.

kode-tui runs in a pseudo-terminal against a loopback LLM server, and is killed with SIGKILL
while it streams a reply, while it runs tool calls, while it compacts, and while it reverts to
a checkpoint, after a random delay each time. While it runs, a thread reads every `*.jsonl` of
the session every few milliseconds and keeps each complete line it sees; after the kill the
union of the session's files must still hold every one of them, every line must be JSON (a torn
last line is allowed, and only there), every `_file_edit` must have its blobs, and the session
must open again: in the library (the next round's turns run in it) and at the end in the app.

`KODE_TUI_CRASH_ROUNDS` sets the rounds per kind (default 2: CI's suite has a time budget; set
more for a longer hunt) and `KODE_TUI_CRASH_SEED` the random seed, which a failure prints.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kode_tui.config import Config, resolve_model
from kode_tui.session import Context, Session
from kode_tui.soul.agent import open_agent
from kode_tui.soul.llm.scripted import ScriptedProvider
from tests.llm_server import LLMServer
from tests.pty_app import KODE, PtyApp


def _has_pty() -> bool:
    try:
        leader, follower = os.openpty()
    except OSError:
        return False
    os.close(leader)
    os.close(follower)
    return True


pytestmark = [
    pytest.mark.skipif(not KODE.exists(), reason="kode-tui is not installed"),
    pytest.mark.skipif(not _has_pty(), reason="no pseudo-terminal can be opened here"),
]

ROUNDS = int(os.environ.get("KODE_TUI_CRASH_ROUNDS", "2"))
SEED = int(os.environ.get("KODE_TUI_CRASH_SEED", str(time.time_ns() % 1_000_000)))


class Watcher:
    """Every complete line that any `*.jsonl` of `folder` held at any moment it looked."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.seen: set[bytes] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Watcher:
        self.look()
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.look()
            time.sleep(0.002)

    def look(self) -> None:
        for path in self.folder.glob("*.jsonl"):
            try:
                data = path.read_bytes()
            except FileNotFoundError:  # rotated away between the glob and the read
                continue
            self.seen.update(complete_lines(data))


def complete_lines(data: bytes) -> list[bytes]:
    """The lines that end with a newline; a torn last line is not a record yet."""
    return [line for line in data[: data.rfind(b"\n") + 1].splitlines() if line.strip()]


def check_after_kill(folder: Path, seen: set[bytes]) -> None:
    union: set[bytes] = set()
    for path in folder.glob("*.jsonl"):
        data = path.read_bytes()
        lines = complete_lines(data)
        for line in lines:
            json.loads(line)  # no half-written record in the middle of a file
        union.update(lines)
    lost = seen - union
    assert not lost, f"{len(lost)} records written before the kill are gone: {sorted(lost)[:3]}"
    for line in union:
        record = json.loads(line)
        if isinstance(record, dict) and record.get("role") == "_file_edit":
            for digest in (record["before"], record["after"]):
                assert digest is None or (folder / "blobs" / digest).is_file(), record


@dataclass
class Rig:
    """A project, a session in it, a loopback model, and the app's environment."""

    project: Path
    home: Path
    server: LLMServer
    session_id: str = ""
    folder: Path = field(default_factory=Path)
    rng: random.Random = field(default_factory=lambda: random.Random(SEED))
    outcomes: Counter[str] = field(default_factory=Counter)

    @property
    def env(self) -> dict[str, str]:
        return {
            "KODE_TUI_HOME": str(self.home),
            "HOME": str(self.home.parent / "user-home"),
            "CRASH_KEY": "dummy",
            "KODE_TUI_OLLAMA_URL": "",
            "TERM": "xterm-256color",
            "PATH": os.environ.get("PATH", ""),
            # A checkout run with PYTHONPATH (a worktree) tests its own code, not the installed.
            **({"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}),
        }

    async def turns(self, tag: str, count: int = 2) -> None:
        """Open the session in the library and run `count` turns that each write a file."""
        session = await Session.find(self.project, self.session_id) if self.session_id else None
        if session is None:
            assert not self.session_id, "the session does not open after the kill"
            session = await Session.create(self.project)
            self.session_id, self.folder = session.id, session.dir
        script: list[dict[str, object]] = []
        for number in range(count):
            path, content = f"{tag}-{number}.txt", f"{tag} {number}\n" * 20
            write = {"name": "WriteFile", "arguments": {"path": path, "content": content}}
            script += [{"text": f"Writing {path}.", "tool_calls": [write]}, {"text": "Done."}]
        agent = await open_agent(
            session,
            Config(),
            resolve_model(Config()),
            provider=ScriptedProvider(script),
            approval_override="yolo",
            watch_project=False,
        )
        try:
            for number in range(count):
                result = await agent.soul.run(f"{tag}: write file {number}")
                assert result.stop_reason == "done", result
        finally:
            await agent.close()

    def app(self, *args: str) -> PtyApp:
        app = PtyApp(["-S", self.session_id, *args, str(self.project)], self.env)
        app.wait_for("Checkpoints")  # the session is open and on screen
        time.sleep(0.3)
        return app

    def kill_during(self, action: Callable[[PtyApp], float], *args: str) -> None:
        """Start the app, let `action` start something and say how long it may take, then kill
        the app at a random moment of that time and check the session's files."""
        with Watcher(self.folder) as watcher:
            app = self.app(*args)
            try:
                window = action(app)
                time.sleep(self.rng.uniform(0, window))
                app.kill()
            finally:
                app.close()
        watcher.look()
        check_after_kill(self.folder, watcher.seen)

    def all_text(self) -> str:
        return "".join(path.read_text() for path in self.folder.glob("*.jsonl"))

    def requested(self, before: int) -> Callable[[], bool]:
        return lambda: len(self.server.requests) > before


@pytest.fixture
def rig(tmp_path: Path, home: Path) -> Iterator[Rig]:
    project = tmp_path / "project"
    project.mkdir()
    (project / "README.md").write_text("# Crash test\n")
    with LLMServer() as server:
        home.mkdir(parents=True, exist_ok=True)
        (home / "config.toml").write_text(
            'default_model = "local"\n[models.local]\nmodel = "openai/test-model"\n'
            f'api_base = "{server.url}"\napi_key_env = "CRASH_KEY"\n'
        )
        rig = Rig(project, home, server)
        yield rig
        print(f"\nseed {SEED}: {dict(rig.outcomes)}")


async def reopens_in_the_app(rig: Rig) -> None:
    """After the last kill: the library opens the session, and so does the app, which quits
    cleanly."""
    await rig.turns("after")
    app = rig.app()
    try:
        app.type("\x11")  # Ctrl+Q
        assert app.wait_exit() == 0
    finally:
        app.close()
    async with Context(rig.folder / "context.jsonl") as context:
        await context.restore()
        assert context.history


def words(count: int, tag: str) -> str:
    return " ".join(f"{tag}{number}" for number in range(count))


async def test_kill_while_streaming(rig: Rig) -> None:
    for round_ in range(ROUNDS):
        await rig.turns(f"s{round_}")
        reply = words(60, f"r{round_}w")

        def stream(app: PtyApp, round_: int = round_, reply: str = reply) -> float:
            rig.server.reply_text(reply, delay=0.02)  # 60 words: about 1.2 s
            before = len(rig.server.requests)
            app.type(f"stream {round_}\r")
            app.wait_for(rig.requested(before))
            return 1.6

        rig.kill_during(stream)
        assert f"stream {round_}" in rig.all_text(), "the message sent before the kill is gone"
        written = f"r{round_}w59" in (rig.folder / "context.jsonl").read_text()
        rig.outcomes["streaming: reply written" if written else "streaming: mid-reply"] += 1
    await reopens_in_the_app(rig)


async def test_kill_during_tool_calls(rig: Rig) -> None:
    for round_ in range(ROUNDS):
        await rig.turns(f"t{round_}")

        def tools(app: PtyApp, round_: int = round_) -> float:
            calls = [
                (
                    f"w{n}",
                    "WriteFile",
                    json.dumps({"path": f"tool{round_}-{n}.txt", "content": "x\n" * 50}),
                )
                for n in range(3)
            ]
            calls.append(("sh", "Shell", json.dumps({"command": "sleep 0.3; echo slept"})))
            calls.append(
                (
                    "ed",
                    "StrReplaceFile",
                    json.dumps(
                        {
                            "path": f"tool{round_}-0.txt",
                            "edit": {"old": "x\n", "new": "y\n", "replace_all": True},
                        }
                    ),
                )
            )
            rig.server.reply_tool_calls(calls, text="Running tools.")
            rig.server.reply_text("All done.")
            before = len(rig.server.requests)
            app.type(f"tools {round_}\r")
            app.wait_for(rig.requested(before))
            return 1.2

        rig.kill_during(tools, "--yolo")
        assert f"tools {round_}" in rig.all_text(), "the message sent before the kill is gone"
        edits = (rig.folder / "context.jsonl").read_text().count(f'"tool{round_}-')
        rig.outcomes[f"tool calls: {edits} journal mentions"] += 1
        rig.server.drop_pending()  # the killed app never asked for the rest
    await reopens_in_the_app(rig)


async def test_kill_while_compacting(rig: Rig) -> None:
    for round_ in range(ROUNDS):
        await rig.turns(f"c{round_}", count=4)
        rotations = len(list(rig.folder.glob("context_*.jsonl")))

        def compact(app: PtyApp, round_: int = round_) -> float:
            rig.server.reply_text(words(40, f"summary{round_}-"), delay=0.01)  # about 0.4 s
            before = len(rig.server.requests)
            app.type("/compact\r")
            app.wait_for(rig.requested(before))
            app.wait_for("Review the compaction")  # the summary is shown before it applies
            app.type("\x13")  # ctrl+s: accept it, so the kill can fall in the swap
            return 0.3

        rig.kill_during(compact)
        rotated = len(list(rig.folder.glob("context_*.jsonl"))) > rotations
        rig.outcomes["compaction: rotated" if rotated else "compaction: before the swap"] += 1
        rig.server.drop_pending()
    await reopens_in_the_app(rig)


async def test_kill_while_reverting(rig: Rig) -> None:
    for round_ in range(ROUNDS):
        await rig.turns(f"v{round_}", count=3)
        async with Context(rig.folder / "context.jsonl") as context:
            await context.restore()
            checkpoints = context.n_checkpoints
        target = rig.rng.randint(1, checkpoints - 1)
        rotations = len(list(rig.folder.glob("context_*.jsonl")))

        def revert(app: PtyApp, target: int = target) -> float:
            app.type(f"/revert {target}\r")
            app.wait_for(f"Revert to checkpoint {target}")
            time.sleep(0.2)
            app.type("f")
            return 0.06

        rig.kill_during(revert)
        rotated = len(list(rig.folder.glob("context_*.jsonl"))) > rotations
        rig.outcomes["revert: done" if rotated else "revert: before the swap"] += 1
    await reopens_in_the_app(rig)
