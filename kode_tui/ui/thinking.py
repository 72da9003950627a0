"""The thinking effort in the UI: `/think [off|low|medium|high]` and Alt+T, which cycles it."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kode_tui.ui.app import KodeApp

LEVELS = ("off", "low", "medium", "high")
USAGE = f"/think {'|'.join(LEVELS)}"


def describe(app: KodeApp) -> str:
    """One line: the level now, and whether the model takes one."""
    opened = app.agent_session
    if opened is None:
        return "No agent is running."
    model = app.choice.name
    if not opened.thinking.supported:
        return (
            f"{model} has no thinking-effort setting (thinking: {opened.thinking.level}, unsent)."
        )
    return f"Thinking: {opened.thinking.level} ({model} takes {', '.join(LEVELS)}; Alt+T cycles)."


async def think_command(app: KodeApp, argument: str) -> None:
    """`/think` shows the level, `/think LEVEL` sets it (for a model that takes one)."""
    opened = app.agent_session
    if opened is None or not argument.strip():
        app.notify(describe(app), timeout=6)
        return
    level = opened.thinking.parse(argument)
    if level is None:
        app.notify(f"{USAGE}: no level “{argument.strip()}”.", severity="warning")
        return
    if not opened.thinking.supported:
        app.notify(
            f"Thinking unchanged: {app.choice.name} has no thinking-effort setting.",
            severity="warning",
            timeout=6,
        )
        return
    await opened.thinking.set(level)
    app.update_header()
    app.notify(f"Thinking: {level}", timeout=3)


async def cycle_thinking(app: KodeApp) -> None:
    """Alt+T: the next level (off → low → medium → high → off), for a model that takes one."""
    opened = app.agent_session
    if opened is None:
        return
    if not opened.thinking.supported:
        app.notify(describe(app), severity="warning", timeout=6)
        return
    await think_command(app, opened.thinking.following())
