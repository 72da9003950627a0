"""How the calls of one step are scheduled: one after the other, except neighbouring calls of
tools that may run together (`Tool.concurrent`: several `Agent` calls), which run at once."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterable, Sequence
from typing import TypeVar

from kode_tui.tools.toolset import PreparedCall

T = TypeVar("T")


def batches(prepared: Sequence[PreparedCall]) -> list[list[PreparedCall]]:
    """The calls in the groups the step runs: each neighbouring run of calls of `concurrent`
    tools together, every other call alone."""
    groups: list[list[PreparedCall]] = []
    for call in prepared:
        if _concurrent(call) and groups and _concurrent(groups[-1][0]):
            groups[-1].append(call)
        else:
            groups.append([call])
    return groups


def _concurrent(prepared: PreparedCall) -> bool:
    return prepared.error is None and prepared.tool is not None and prepared.tool.concurrent


async def run_all(runs: Iterable[Coroutine[object, object, T]]) -> list[T]:
    """Each run's value, in order; one run alone in the caller's task. When one fails or the
    step is cancelled, the others are cancelled and waited for before it goes on."""
    coroutines = list(runs)
    if len(coroutines) == 1:
        return [await coroutines[0]]
    tasks = [asyncio.ensure_future(c) for c in coroutines]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
