"""Generate tests/fixtures/kimi-*/: real session folders written by kimi-cli 1.52's own code.

    PYTHONPATH=. .venv/bin/python bench/gen_kimi_fixtures.py [--kimi-python PY] [--out DIR]

kimi-cli (`../shared/bench/setup_kimi.sh` installs it in /tmp/kimi-ref; KODE_TUI_KIMI_PYTHON or
--kimi-python names another) is driven through its Python API (`KimiCLI.create` / `run`, the
API its print mode uses: its `kimi` command only prints a deprecation notice in 1.52) against
the loopback server of tests/llm_server.py, whose replies are scripted here in the order Kimi
asks for them. Nothing leaves the machine: Kimi's telemetry is disabled, no web tool is called.

Each scenario gets a fixed session id, work dir and share dir, and Kimi's `uuid4` is seeded
(approval and subagent ids), so a re-run writes the same records but for timestamps and retry
waits. Kimi's system prompt (15 KB, in every context file) is cut to its first 300 characters so
the folders stay small; every other byte is Kimi's. GEN_KIMI_DEBUG=1 lists the requests Kimi
made and the files it wrote (when a script and Kimi's requests no longer line up).

Scenarios (each a session folder):
  kimi-default: Kimi's default agent (no SendDMail): a Shell call approved, an image read by
      ReadMediaFile (a tool result whose output is a list with an image part), a video read
      the same way (a video_url part), a Shell call
      rejected, a step interrupted mid-stream, a subagent (Agent tool, `explore`: its folder
      in subagents/), a step retried after a 500 (StepRetry), a /compact, a /clear, a turn,
      another /compact.
  kimi-okabe: Kimi's "okabe" agent (it has SendDMail, so CHECKPOINT n notes are in the
      context): two turns, a D-Mail back to checkpoint 1, a /compact.
  kimi-okabe-compacted: the okabe agent the other way round: a turn, a /compact, then a D-Mail
      back to checkpoint 1 of the compacted context (the context it leaves begins with the
      summary, which the D-Mail copies).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.kimi_helpers import kimi_session_dir, run_kimi
from tests.llm_server import LLMServer

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"
WORK_DIR = Path("/tmp/kode-kimi-fixture-work")
"""Kimi records the work dir's path (kimi.json, its system prompt): fixed, for re-runs."""

# A 1x1 PNG (red), for ReadMediaFile.
DOT_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
)

# An MP4 header (an `ftyp` box): enough for Kimi's ReadMediaFile to read it as a video.
CLIP_MP4 = b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom"


def call(call_id: str, name: str, arguments: dict[str, Any]) -> tuple[str, str, str]:
    return (call_id, name, json.dumps(arguments))


def listing_turn(server: LLMServer) -> dict[str, Any]:
    """Both agents' first turn: a Shell call (`ls`), approved, and the answer after it."""
    server.reply_tool_calls(
        [call("call_ls", "Shell", {"command": "ls"})], text="Listing.", usage=(900, 12)
    )
    server.reply_text("There is dot.png.", usage=(1000, 6))
    return {"input": "What is here?", "approvals": ["approve"]}


def script_default(server: LLMServer) -> list[dict[str, Any]]:
    """Kimi's default agent: the replies in the order Kimi asks, and the turns."""
    turns = [listing_turn(server)]
    # An image in a tool result.
    server.reply_tool_calls(
        [call("call_img", "ReadMediaFile", {"path": "dot.png"})], usage=(1100, 10)
    )
    server.reply_text("A single red pixel.", usage=(1200, 6))
    turns.append({"input": "Look at dot.png"})
    # A video in a tool result (the model has `video_in`).
    server.reply_tool_calls(
        [call("call_clip", "ReadMediaFile", {"path": "clip.mp4"})], usage=(1220, 10)
    )
    server.reply_text("An empty clip.", usage=(1240, 5))
    turns.append({"input": "And clip.mp4?"})
    # A Shell call, rejected: the turn stops at it.
    server.reply_tool_calls(
        [call("call_rm", "Shell", {"command": "rm dot.png"})], text="Removing.", usage=(1300, 9)
    )
    turns.append({"input": "Delete it", "approvals": ["reject"]})
    # A step interrupted mid-stream.
    server.reply_hang("Thinking about a long answer that never ends")
    turns.append({"input": "Tell me a long story", "cancel": True})
    # A subagent (Kimi's Agent tool): its one step runs inside the parent's tool call.
    task = {"description": "Find the image", "prompt": "Which files are images?"}
    server.reply_tool_calls(
        [call("call_agent", "Agent", {**task, "subagent_type": "explore"})], usage=(1350, 15)
    )
    # At least 200 characters, or Kimi asks the subagent for a longer summary.
    found = "Only dot.png is an image: a 1x1 PNG in the work dir. " * 4
    server.reply_text(found.strip(), usage=(400, 60))
    server.reply_text("The explorer found only dot.png.", usage=(1380, 9))
    turns.append({"input": "Ask a helper which files are images", "approvals": ["approve"]})
    # A step retried after a 500 (StepRetry): the OpenAI SDK under Kimi tries each call three
    # times itself (retry-after-ms keeps that quick), so Kimi's step sees the third 500.
    for _ in range(3):
        server.reply_status(500, "scripted overload", headers={"retry-after-ms": "10"})
    server.reply_text("Recovered after one retry.", usage=(1400, 6))
    turns.append({"input": "Try again"})
    # /compact: one summary call.
    server.reply_text("The user looked at dot.png and kept it.", usage=(600, 40))
    turns.append({"input": "/compact"})
    server.reply_text("Still here.", usage=(700, 4))
    turns.append({"input": "Are you there?"})
    turns.append({"input": "/clear"})
    server.reply_text("A fresh start.", usage=(500, 5))
    turns.append({"input": "Hello again"})
    server.reply_text("Two answers so far.", usage=(600, 5))
    turns.append({"input": "Count the answers"})
    server.reply_text("The user said hello twice.", usage=(300, 30))
    turns.append({"input": "/compact keep the greetings"})
    return turns


def script_okabe(server: LLMServer) -> list[dict[str, Any]]:
    """Kimi's okabe agent (SendDMail): two turns, a D-Mail back to checkpoint 1, /compact."""
    turns = [listing_turn(server)]
    # The D-Mail goes back to checkpoint 1; the step after it answers from there.
    dmail = {"message": "Skip the listing: there is only dot.png.", "checkpoint_id": 1}
    server.reply_tool_calls([call("call_dmail", "SendDMail", dmail)], usage=(1100, 20))
    server.reply_text("Knowing that, dot.png is all there is.", usage=(950, 8))
    turns.append({"input": "Say it without listing"})
    server.reply_text("Fine.", usage=(1000, 2))
    turns.append({"input": "Thanks"})
    server.reply_text("The user asked what is in the folder: dot.png.", usage=(500, 30))
    turns.append({"input": "/compact"})
    return turns


def script_okabe_compacted(server: LLMServer) -> list[dict[str, Any]]:
    """Kimi's okabe agent: a turn, /compact, a D-Mail back to checkpoint 1 after it."""
    turns = [listing_turn(server)]
    server.reply_text("The user asked what is in the folder: dot.png.", usage=(500, 30))
    turns.append({"input": "/compact"})
    # Checkpoint 0 holds the summary; 1 is the next turn's, before its message.
    dmail = {"message": "Answer in one word.", "checkpoint_id": 1}
    server.reply_tool_calls([call("call_dmail", "SendDMail", dmail)], usage=(700, 20))
    server.reply_text("dot.png", usage=(720, 3))
    turns.append({"input": "Say it again, shorter"})
    return turns


SCENARIOS: dict[str, tuple[str, Callable[[LLMServer], list[dict[str, Any]]]]] = {
    "kimi-default": ("default", script_default),
    "kimi-okabe": ("okabe", script_okabe),
    "kimi-okabe-compacted": ("okabe", script_okabe_compacted),
}
SESSION_IDS = {
    "kimi-default": "00000000-0000-4000-8000-00000000d0f1",
    "kimi-okabe": "00000000-0000-4000-8000-0000000000ab",
    "kimi-okabe-compacted": "00000000-0000-4000-8000-0000000000ac",
}
KEPT = ("wire.jsonl", "state.json")
PROMPT_KEPT = 300


def trim_system_prompt(data: bytes) -> bytes:
    """The context file with each `_system_prompt` record cut to its first characters."""
    lines = []
    for line in data.splitlines(keepends=True):
        record = json.loads(line) if line.strip() else None
        if isinstance(record, dict) and record.get("role") == "_system_prompt":
            record["content"] = record["content"][:PROMPT_KEPT] + "\n[cut by gen_kimi_fixtures.py]"
            line = (json.dumps(record) + "\n").encode()
        lines.append(line)
    return b"".join(lines)


def generate(name: str, kimi_python: str, out: Path) -> Path:
    """Run scenario `name` with kimi-cli and copy its session folder to `out/name`."""
    agent, script = SCENARIOS[name]
    with tempfile.TemporaryDirectory(prefix="kimi-fixture-") as scratch, LLMServer() as server:
        shutil.rmtree(WORK_DIR, ignore_errors=True)
        WORK_DIR.mkdir(parents=True)
        (WORK_DIR / "dot.png").write_bytes(DOT_PNG)
        (WORK_DIR / "clip.mp4").write_bytes(CLIP_MP4)
        turns = script(server)
        plan = {
            "url": server.url,
            "work_dir": str(WORK_DIR),
            "session_id": SESSION_IDS[name],
            "agent": agent,
            "turns": turns,
        }
        done = run_kimi(kimi_python, plan, Path(scratch))
        if done.returncode != 0:
            raise SystemExit(f"{name}: kimi-cli failed:\n{done.stderr[-4000:]}")
        if done.stderr.strip():
            print(f"{name}: {done.stderr.strip()}", file=sys.stderr)
        if os.environ.get("GEN_KIMI_DEBUG"):
            for number, request in enumerate(server.requests, 1):
                last = request.get("messages", [{}])[-1]
                print(number, last.get("role"), str(last.get("content"))[:80], file=sys.stderr)
        if server.pending:
            raise SystemExit(f"{name}: {server.pending} scripted replies were never asked for")
        source = kimi_session_dir(done)
        target = out / name
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        for path in sorted(source.rglob("*")):
            if os.environ.get("GEN_KIMI_DEBUG"):
                print(path.relative_to(source), file=sys.stderr)
            copy = target / path.relative_to(source)
            kept = path.name in KEPT or path.name.startswith("context")
            if not path.is_file() or not (kept or path.parts[len(source.parts)] == "subagents"):
                continue
            copy.parent.mkdir(parents=True, exist_ok=True)
            if path.name.startswith("context"):
                copy.write_bytes(trim_system_prompt(path.read_bytes()))
            else:
                shutil.copyfile(path, copy)
        shutil.rmtree(WORK_DIR, ignore_errors=True)
        return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--kimi-python",
        default=os.environ.get("KODE_TUI_KIMI_PYTHON", "/tmp/kimi-ref/bin/python"),
        help="a Python that has kimi-cli 1.52 installed",
    )
    parser.add_argument("--out", type=Path, default=FIXTURES)
    parser.add_argument("names", nargs="*", default=list(SCENARIOS))
    args = parser.parse_args()
    for name in args.names:
        target = generate(name, args.kimi_python, args.out)
        files = sorted(p.name for p in target.iterdir())
        size = sum(p.stat().st_size for p in target.iterdir())
        print(f"{target}: {', '.join(files)} ({size:,} bytes)")


if __name__ == "__main__":
    main()
