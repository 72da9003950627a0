"""A crash at any step of a rewrite loses no record, and the session opens again afterwards.

Three ways to crash: an exception between two steps (the process lives on), SIGKILL of a child
process exactly between two steps (no cleanup runs), and SIGKILL at random moments of a child
doing random work.
"""

from __future__ import annotations

import contextlib
import json
import random
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from kode_tui.session import context as context_module
from kode_tui.session import rotation
from kode_tui.session.context import Context
from tests.session_helpers import dumps, records_on_disk, user, write_turns

# The steps of a rewrite, in order, by the name each is called through.
STEPS = [
    ("context_module", "copy_range"),  # (1) writing the new content to context.jsonl.tmp
    ("rotation", "sync_data"),  # (1) its fsync
    ("rotation", "fsync"),  # the live file's fsync before it is rotated
    ("rotation", "link"),  # (2) context.jsonl -> context_N.jsonl
    ("rotation", "replace"),  # (3) tmp -> context.jsonl
    ("rotation", "fsync_dir"),  # (4)
    ("rotation", "append_line"),  # (5) rotations.jsonl
]
MODULES = {"context_module": context_module, "rotation": rotation}

Operation = Callable[[Context, Path], Awaitable[Any]]


async def revert(context: Context, directory: Path) -> Any:
    return await context.revert_to(4)


async def clear(context: Context, directory: Path) -> Any:
    return await context.clear()


async def restore_from(context: Context, directory: Path) -> Any:
    return await context.restore_from(directory / "context_1.jsonl")


OPERATIONS: dict[str, Operation] = {
    "revert": revert,
    "clear": clear,
    "restore_from": restore_from,
}


class Crash(Exception):
    pass


async def prepare(directory: Path) -> None:
    """A session with history, a rotation to restore from, and more history after it."""
    async with Context(directory / "context.jsonl") as context:
        await context.write_system_prompt("prompt")
        await write_turns(context, 4)
        await context.revert_to(6)
        await write_turns(context, 2, start=10)


async def check_after_crash(directory: Path, before: set[bytes], old: bytes) -> Context:
    """Every record is somewhere, and the session opens (with the old or the new content)."""
    assert before <= records_on_disk(directory)
    context = Context(directory / "context.jsonl")
    await context.restore()
    assert context.warnings == []
    return context


@pytest.mark.parametrize("operation", list(OPERATIONS))
@pytest.mark.parametrize("step", STEPS, ids=lambda step: step[1])
async def test_an_exception_between_steps_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, operation: str, step: tuple[str, str]
) -> None:
    directory = tmp_path / "session"
    await prepare(directory)
    live = directory / "context.jsonl"
    before = records_on_disk(directory)
    old = live.read_bytes()

    crashed = []

    def crash(*args: Any, **kwargs: Any) -> None:
        crashed.append(step[1])
        raise Crash(step[1])

    context = Context(live)
    await context.restore()
    monkeypatch.setattr(MODULES[step[0]], step[1], crash)
    with contextlib.suppress(Crash):
        await OPERATIONS[operation](context, directory)
    monkeypatch.undo()
    # Clearing writes no new content, so it is the one rewrite that never copies.
    assert crashed or (operation, step[1]) == ("clear", "copy_range")
    # The context that saw the crash still matches its file, and goes on working.
    in_memory = dumps(context.history)
    await context.append_message(user("after the crash"))
    await context.close()
    reopened = await check_after_crash(directory, before, old)
    assert dumps(reopened.history) == [*in_memory, user("after the crash").to_json()]


CHILD = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from pathlib import Path
    from kode_tui.session import context as context_module, rotation
    from kode_tui.session.context import Context

    directory, operation, module, name = Path(sys.argv[1]), *sys.argv[2:]
    if name != "-":
        def die(*args, **kwargs):
            os.kill(os.getpid(), signal.SIGKILL)
        target = {"context_module": context_module, "rotation": rotation}[module]
        setattr(target, name, die)

    async def main():
        context = Context(directory / "context.jsonl")
        await context.restore()
        if operation == "revert":
            await context.revert_to(4)
        elif operation == "clear":
            await context.clear()
        elif operation == "restore_from":
            await context.restore_from(directory / "context_1.jsonl")
        os.kill(os.getpid(), signal.SIGKILL)  # after the last step: still no cleanup

    asyncio.run(main())
    """
)


@pytest.mark.parametrize("operation", list(OPERATIONS))
async def test_sigkill_between_any_two_steps_loses_nothing(tmp_path: Path, operation: str) -> None:
    for module, name in [*STEPS, ("-", "-")]:
        directory = tmp_path / f"{operation}-{name}"
        await prepare(directory)
        before = records_on_disk(directory)
        old = (directory / "context.jsonl").read_bytes()
        child = subprocess.run(
            [sys.executable, "-c", CHILD, str(directory), operation, module, name],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert child.returncode == -signal.SIGKILL, child.stderr
        context = await check_after_crash(directory, before, old)
        await context.append_message(user("goes on"))
        await context.close()


WORKER = textwrap.dedent(
    """
    import asyncio, os, random, sys
    from pathlib import Path
    from kode_tui.message import Message
    from kode_tui.session.context import Context

    directory, seed = Path(sys.argv[1]), int(sys.argv[2])
    rng = random.Random(seed)
    log = os.open(directory.parent / "written.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT)

    async def main():
        context = Context(directory / "context.jsonl")
        await context.restore()
        print("ready", flush=True)
        n = 0
        while True:
            roll = rng.random()
            if roll < 0.55:
                text = f"seed {seed} message {n}"
                n += 1
                await context.append_message(Message(role="user", content=text))
                os.write(log, (text + "\\n").encode())
            elif roll < 0.75:
                await context.checkpoint(add_user_message=rng.random() < 0.3)
            elif roll < 0.85:
                await context.update_token_count(rng.randrange(100000))
            elif roll < 0.93 and context.n_checkpoints:
                await context.revert_to(rng.randrange(context.n_checkpoints))
            elif roll < 0.96:
                await context.clear()
            else:
                rotations = context.rotations()
                if rotations:
                    await context.restore_from(rng.choice(rotations).path)

    asyncio.run(main())
    """
)


def test_sigkill_at_random_moments_loses_nothing(tmp_path: Path) -> None:
    """kill -9 a process doing random appends, checkpoints, reverts, clears and restores."""
    import asyncio

    directory = tmp_path / "session"
    directory.mkdir(mode=0o700)
    rng = random.Random(1234)
    seen: set[bytes] = set()
    for iteration in range(12):
        worker = subprocess.Popen(
            [sys.executable, "-c", WORKER, str(directory), str(iteration)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert worker.stdout is not None
        ready = worker.stdout.readline().strip()
        assert ready == "ready", worker.stderr.read() if worker.stderr else ""
        time.sleep(rng.uniform(0.005, 0.25))
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=30)
        assert worker.returncode == -signal.SIGKILL, worker.stderr.read() if worker.stderr else ""

        on_disk = records_on_disk(directory)
        assert seen <= on_disk, "a record seen before the crash is gone"
        written = (tmp_path / "written.log").read_text().splitlines()
        texts = {
            json.loads(line).get("content")
            for line in on_disk
            if line.startswith(b'{"role":"user"')
        }
        missing = [text for text in written if text not in texts]
        assert not missing, f"appended but lost: {missing[:3]}"

        async def reopen() -> None:
            context = Context(directory / "context.jsonl")
            await context.restore()
            assert context.warnings == [] or all("cut short" in w for w in context.warnings)
            await context.close()

        asyncio.run(reopen())
        seen = records_on_disk(directory)  # after a torn tail (if any) was cut
    assert len((tmp_path / "written.log").read_text().splitlines()) > 100
    assert len(list(directory.glob("context_*.jsonl"))) > 3
