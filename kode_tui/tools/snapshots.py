"""Snapshots around Shell calls and at checkpoints: what a command (or anyone else) did to the
work dir's files becomes `_file_edit` records a revert can undo (`session.snapshot`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable

from kode_tui.tools.base import ToolEnv, ToolOutput

log = logging.getLogger(__name__)

SHELL = "Shell"


async def capture(env: ToolEnv, tool_call_id: str | None = None) -> None:
    """Record what changed in the work dir's files since the last snapshot, as done by
    `tool_call_id` (None: by someone else). A session folder that cannot be written is logged:
    the command still runs, but a revert cannot undo what it did."""
    if env.snapshots is None:
        return
    try:
        await env.snapshots.capture(tool_call_id)
    except OSError as error:
        log.warning("could not snapshot %s: %s", env.work_dir, error)


async def around(env: ToolEnv, tool_call_id: str, run: Awaitable[ToolOutput]) -> ToolOutput:
    """`run` (a Shell call) between two snapshots: the changes before it are someone else's,
    those after it the command's, even when it is interrupted."""
    if env.snapshots is None:
        return await run
    await capture(env)
    try:
        return await run
    finally:
        await asyncio.shield(capture(env, tool_call_id))
