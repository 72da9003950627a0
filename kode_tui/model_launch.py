"""Starting the model process (soul/llm/worker.py), as early as kode-tui starts.

The model process imports the OpenAI SDK or litellm: half a second to seconds of CPU. Started
when the agent was (after the first frame, the session and the panes), a message typed at the
first prompt waited for it: Enter -> request took 0.5-0.9 s. `start_early()` spawns it as soon
as `cli.main` has read the command (before asyncio and Textual load), on the other core, so it
imports its library while the screen comes up; it reads the config itself to know which library
and which client the first request will use (the UI process reads it after its first frame).
`soul/llm/process.py` adopts it (`take_early()`) for its first request, or spawns one of its own
when there is none. This module imports nothing but `subprocess` before the spawn (`launch.run`
calls it before anything else loads): logging, pathlib and typing cost ~10 ms, which the
model process's start, and so the first request, waited for.
"""

from __future__ import annotations

import os
import subprocess
import sys

import kode_tui

TYPE_CHECKING = False  # not `typing`'s: its import is ~3 ms before the model process starts

if TYPE_CHECKING:
    from pathlib import Path

WORKER = "kode_tui.soul.llm.worker"
_RUN_WORKER = f"import gc; gc.disable(); from {WORKER} import main; main()"
"""How the model process runs: the collector off from its first import (its ~80k objects live
as long as it; the worker freezes them once its library is in, `worker.main`), not from
`main()`, after pydantic's and the messages' imports had run collections (~8 ms)."""
FROM_CONFIG = "from-config"
"""The worker's first argument when it reads the config to know which library to import; then
`--config FILE` (else the default file) and `--model NAME` (the `--model` flag) may follow."""

_early: subprocess.Popen[bytes] | None = None


def spawn(*arguments: str) -> subprocess.Popen[bytes]:
    """Start a model process with `arguments` (its library, or `FROM_CONFIG ...`); OSError
    when it cannot start."""
    return subprocess.Popen(
        [sys.executable, "-P", "-c", _RUN_WORKER, *arguments],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_child_environment(),
        # Its own session: a Ctrl+C at the terminal is the parent's to handle.
        start_new_session=True,
    )


def start_early(config_file: Path | None, model: str | None) -> None:
    """Start the model process now, unless one was started early already: it reads the config
    (`config_file`, else the default) and imports what the model (`model`, else the configured
    one) needs; nothing for the demo. A failure is logged: the first request tries again."""
    global _early
    if _early is not None:
        return
    arguments = [FROM_CONFIG]
    if config_file is not None:
        arguments += ["--config", str(config_file)]
    if model is not None:
        arguments += ["--model", model]
    try:
        _early = spawn(*arguments)
    except OSError as error:
        import logging

        logging.getLogger(__name__).warning("could not start the model process: %s", error)


def take_early() -> subprocess.Popen[bytes] | None:
    """The process `start_early()` started, if it still runs; it is the caller's from now on."""
    global _early
    process, _early = _early, None
    if process is not None and process.poll() is not None:
        return None
    return process


def stop_early() -> None:
    """End the early process nobody took (the model turned out to be the demo): closing its
    stdin makes it leave."""
    process = take_early()
    if process is not None and process.stdin is not None:
        process.stdin.close()


def early_pid() -> int | None:
    """The early process's id while nobody has taken it (for tests and diagnostics)."""
    return _early.pid if _early is not None and _early.poll() is None else None


def _child_environment() -> dict[str, str]:
    """This environment, with the directory this kode_tui was imported from first on the
    path: the child runs the same code as the parent, whatever the working directory holds.
    Pydantic's plugins are off there (unless the variable says otherwise): the process checks
    only its own messages, and looking for plugins read every installed package's entry points
    at its first model (~8 ms of its start)."""
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.realpath(kode_tui.__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    env.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    return env
