"""Driving kimi-cli 1.52's own code (a Python that has it installed) against a loopback server:
for bench/gen_kimi_fixtures.py, which makes the Kimi fixtures, and for tests in which Kimi CLI
continues a session kode-tui touched."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

# Run by kimi-cli's Python with a JSON plan: {url, work_dir, session_id, agent ("default" or
# "okabe"), turns: [{input, approvals: ["approve" | "reject", ...], cancel: bool}], and
# continue_dir: a session folder to go on with instead of a new session}. It prints
# {"dir": the session folder} last; a turn that fails is one line on stderr.
KIMI_DRIVER = r"""
import asyncio, json, sys
from pathlib import Path

import random, uuid
# Fixed "random" ids (approval requests, subagents), so a re-run writes the same ones.
_ids = random.Random(16)
uuid.uuid4 = lambda: uuid.UUID(int=_ids.getrandbits(128), version=4)

import kimi_cli.telemetry as telemetry
telemetry.disable()

from kaos.path import KaosPath
from kimi_cli.app import KimiCLI
from kimi_cli.config import Config, LLMModel, LLMProvider
from kimi_cli.session import Session
from kimi_cli.wire.types import ApprovalRequest, ContentPart

plan = json.loads(sys.argv[1])


async def main():
    config = Config(
        default_model="loopback",
        providers={"loopback": LLMProvider(
            type="openai_legacy", base_url=plan["url"], api_key="sk-fixture")},
        models={"loopback": LLMModel(
            provider="loopback", model="fixture-model", max_context_size=200_000,
            capabilities={"image_in", "video_in"})},
    )
    config.loop_control.max_retries_per_step = 3
    work_dir = KaosPath(plan["work_dir"]).canonical()
    if plan.get("continue_dir"):
        # A session folder from elsewhere: put it where Kimi keeps the work dir's sessions.
        import shutil
        from kimi_cli.metadata import load_metadata, save_metadata
        metadata = load_metadata()
        meta = metadata.get_work_dir_meta(work_dir) or metadata.new_work_dir_meta(work_dir)
        save_metadata(metadata)
        shutil.copytree(plan["continue_dir"], meta.sessions_dir / plan["session_id"])
        session = await Session.find(work_dir, plan["session_id"])
        assert session is not None, "Kimi did not find the session"
    else:
        session = await Session.create(work_dir, session_id=plan["session_id"])
    agent_file = None
    if plan.get("agent") == "okabe":
        import kimi_cli.agents as agents
        agent_file = Path(agents.__path__[0]) / "okabe" / "agent.yaml"
    cli = await KimiCLI.create(session, config=config, agent_file=agent_file, ui_mode="print")
    for turn in plan["turns"]:
        answers = list(turn.get("approvals", []))
        cancel = asyncio.Event()
        try:
            async for message in cli.run(turn["input"], cancel):
                if isinstance(message, ApprovalRequest):
                    message.resolve(answers.pop(0))
                elif turn.get("cancel") and isinstance(message, ContentPart):
                    cancel.set()
        except Exception as error:
            print(f"turn {turn['input']!r}: {type(error).__name__}: {error}", file=sys.stderr)
    await cli.shutdown_background_tasks()
    print(json.dumps({"dir": str(session.dir)}))


asyncio.run(main())
"""


def run_kimi(
    kimi_python: str, plan: dict[str, Any], scratch: Path
) -> subprocess.CompletedProcess[str]:
    """Run `KIMI_DRIVER` with `plan`; Kimi's HOME and share dir are in `scratch`."""
    env = {
        **os.environ,
        "HOME": str(scratch),
        "KIMI_SHARE_DIR": str(scratch / "share"),
        "NO_COLOR": "1",
    }
    return subprocess.run(
        [kimi_python, "-c", KIMI_DRIVER, json.dumps(plan)],
        cwd=plan["work_dir"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def kimi_session_dir(done: subprocess.CompletedProcess[str]) -> Path:
    """The session folder a `run_kimi` run worked in."""
    return Path(json.loads(done.stdout.strip().splitlines()[-1])["dir"])
