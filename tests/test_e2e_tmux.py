"""kode-tui in a real terminal (tmux, 120x36) against a loopback LLM server: ask, approve an edit
with `y`, then revert it from the timeline with `f`, as a user would."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.llm_server import LLMServer

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]

KODE = Path(sys.executable).parent / "kode-tui"


class Terminal:
    def __init__(self, name: str) -> None:
        self.name = name

    def keys(self, *keys: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", self.name, *keys], check=True)

    def screen(self) -> str:
        done = subprocess.run(
            ["tmux", "capture-pane", "-p", "-t", self.name], capture_output=True, text=True
        )
        return done.stdout

    def wait_for(self, what: str | Callable[[], bool], timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if (what in screen) if isinstance(what, str) else what():
                return screen
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what!r}; the screen:\n{self.screen()}")


@pytest.fixture
def terminal(tmp_path: Path, home: Path) -> Iterator[tuple[Terminal, Path, LLMServer]]:
    project = tmp_path / "project"
    project.mkdir()
    (project / "README.md").write_text("# Greeter\n")
    with LLMServer() as server:
        home.mkdir(parents=True, exist_ok=True)
        (home / "config.toml").write_text(
            'default_model = "local"\n[models.local]\nmodel = "openai/test-model"\n'
            f'api_base = "{server.url}"\napi_key_env = "E2E_KEY"\n'
        )
        name = f"kode-e2e-{os.getpid()}"
        env = {
            "KODE_TUI_HOME": str(home),
            "HOME": str(tmp_path),
            "E2E_KEY": "dummy",
            "KODE_TUI_OLLAMA_URL": "",
            "TERM": "xterm-256color",
            "PATH": os.environ.get("PATH", ""),
        }
        command = " ".join(f"{k}={v!r}" for k, v in env.items())
        command = f"env -i {command} {KODE} {project}; echo EXITED=$?; sleep 30"
        subprocess.run(
            ["tmux", "new-session", "-d", "-s", name, "-x", "120", "-y", "36", command],
            check=True,
        )
        try:
            yield Terminal(name), project, server
        finally:
            subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)


def test_ask_approve_and_revert_in_a_real_terminal(
    terminal: tuple[Terminal, Path, LLMServer],
) -> None:
    term, project, server = terminal
    hello = json.dumps({"path": "hello.py", "content": "print('hello')\n"})
    server.reply_tool_calls([("call_1", "WriteFile", hello)], text="Writing it.")
    server.reply_text("Created hello.py.")

    term.wait_for("Ask anything")
    term.wait_for(lambda: "local" in term.screen() and "Checkpoints" in term.screen())
    term.keys("Create hello.py")
    term.wait_for("Create hello.py")
    term.keys("Enter")
    term.wait_for("Approve WriteFile hello.py?")
    time.sleep(0.7)  # the panel ignores keys for 0.5 s, so a word being typed cannot answer it
    term.keys("y")
    term.wait_for("Created hello.py.")
    time.sleep(0.5)  # the turn's last events (status, timeline) settle
    assert (project / "hello.py").read_text() == "print('hello')\n"
    assert "✎" in term.screen()

    # To the timeline: the conversation, then the checkpoints; up from the newest to the
    # checkpoint of the step that wrote the file.
    for key in ("Tab", "Tab", "Up", "Enter"):
        time.sleep(0.4)  # a person's pace: each key lands after the last one's focus change
        term.keys(key)
    screen = term.wait_for("Revert to checkpoint 1")
    assert "hello.py — the agent created it, so it will be deleted" in screen
    term.keys("f")
    term.wait_for("Reverted to checkpoint 1")
    assert not (project / "hello.py").exists()
    session_dirs = list(Path(os.environ["KODE_TUI_HOME"]).glob("sessions/*/*"))
    [session] = [d for d in session_dirs if (d / "context_1.jsonl").exists()]
    assert '"Writing it."' in (session / "context_1.jsonl").read_text()
    note = json.loads((session / "rotations.jsonl").read_text().splitlines()[-1])
    assert note["reason"] == "revert"

    term.keys("C-q")
    screen = term.wait_for("EXITED=")
    assert "EXITED=0" in screen and f"kode-tui -S {session.name}" in screen
