"""`kode-tui acp` driven by acpx, a third-party ACP client (npm), against the loopback model.

acpx 0.19 needs node >= 22.13. Install both into a scratch prefix, without touching the system:

    npm install --prefix /tmp/acpx-prefix node@22 acpx@0.19.1
    KODE_TUI_ACPX_PREFIX=/tmp/acpx-prefix pytest tests/acp/test_acpx.py

Without KODE_TUI_ACPX_PREFIX the test looks in tests/.node (where `.ci/run` installs them),
then on PATH, and skips (saying why) when they are missing or node is too old.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kode_tui.paths import Paths
from tests.llm_server import KEY_ENV, LLMServer, write_loopback_config

NODE_AT_LEAST = (22, 13)


LOCAL_PREFIX = Path(__file__).parents[1] / ".node"
"""Where `.ci/run` installs node 22 and acpx (with the MCP test's server)."""


def _search_path() -> str:
    prefix = os.environ.get("KODE_TUI_ACPX_PREFIX") or (
        str(LOCAL_PREFIX) if LOCAL_PREFIX.is_dir() else None
    )
    path = os.environ.get("PATH", "")
    return f"{Path(prefix) / 'node_modules' / '.bin'}{os.pathsep}{path}" if prefix else path


def _acpx_or_skip() -> str:
    path = _search_path()
    acpx, node = shutil.which("acpx", path=path), shutil.which("node", path=path)
    if acpx is None or node is None:
        pytest.skip("acpx and node >= 22.13 are not installed (see KODE_TUI_ACPX_PREFIX)")
    shown = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30)
    version = tuple(int(n) for n in shown.stdout.strip().lstrip("v").split(".")[:2])
    if version < NODE_AT_LEAST:
        pytest.skip(f"acpx needs node >= 22.13; this node is {shown.stdout.strip()}")
    return acpx


def test_acpx_drives_a_turn_with_a_permission_request_then_loads_the_session_and_fails_a_turn(
    project: Path, server: LLMServer, home: Path, tmp_path: Path
) -> None:
    acpx = _acpx_or_skip()
    write_loopback_config(home, server, KEY_ENV)
    server.reply_tool_calls(
        [("call_w", "WriteFile", json.dumps({"path": "notes.txt", "content": "hi\n"}))]
    )
    server.reply_text("Wrote notes.txt.")
    server.reply_status(400, "the request is malformed")
    # acpx takes the agent as one command line: a script spares quoting the interpreter's path.
    agent = tmp_path / "kode-tui-acp"
    agent.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m kode_tui acp "$@"\n')
    agent.chmod(0o755)
    Path(os.environ["HOME"]).mkdir(parents=True, exist_ok=True)  # acpx keeps its records there
    env = {**os.environ, "PATH": _search_path()}
    base = [acpx, "--agent", str(agent), "--cwd", str(project), "--ttl", "1"]

    def run(*args: str, status: int = 0) -> list[dict[str, Any]]:
        done = subprocess.run(
            [*base, "--format", "json", "--approve-all", *args],
            capture_output=True, text=True, timeout=90, env=env, cwd=project,
        )  # fmt: skip
        assert done.returncode == status, done.stderr
        return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]

    made = run("sessions", "new")
    session_id = next(str(m["acpxSessionId"]) for m in made if "acpxSessionId" in m)
    # A prompt starts a new agent process: it loads the session, then runs the turn.
    turn = run("prompt", "Write notes")

    methods = [m.get("method") for m in turn]
    assert "session/load" in methods and "session/request_permission" in methods
    assert {"stopReason": "end_turn"} in [m.get("result") for m in turn]
    assert (project / "notes.txt").read_text() == "hi\n"
    stored = Paths.current().work_dir_sessions(project) / session_id / "context.jsonl"
    assert "Wrote notes.txt." in stored.read_text()
    # The call reads as every front end shows it, runs in progress, and ends with an object.
    calls = [
        m["params"]["update"]
        for m in turn
        if m.get("method") == "session/update"
        and m["params"]["update"]["sessionUpdate"] in ("tool_call", "tool_call_update")
    ]
    assert [c.get("status") for c in calls] == ["pending", None, "in_progress", "completed"]
    assert calls[-1]["rawOutput"]["is_error"] is False
    assert {c.get("title") for c in calls} == {"WriteFile", "WriteFile notes.txt", None}
    titles = [
        m["params"]["update"]["title"]
        for m in turn
        if m.get("method") == "session/update"
        and m["params"]["update"]["sessionUpdate"] == "session_info_update"
    ]
    assert titles == ["Write notes"]

    # A turn the model fails is an error for the client: acpx exits non-zero.
    failed = run("prompt", "fail", status=1)
    [error] = [m["error"] for m in failed if "error" in m]
    assert error["code"] == -32603 and "malformed" in error["message"]
