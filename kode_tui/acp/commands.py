"""The slash commands an ACP client can send as a prompt: the domain's built-in commands
(`kode_tui.soul.facade.COMMANDS`), then the work dir's custom ones no built-in has the name of.

A built-in command runs through the facade instead of a model turn and answers with one
message, its report's text. One that changed the conversation (a revert, a restore, a clear, a
compaction, a drop) has the agent replay it afterwards.
"""

from __future__ import annotations

import re

from acp.schema import AvailableCommand, AvailableCommandInput, UnstructuredCommandInput

from kode_tui.soul.facade import COMMANDS, AgentSession, CommandReport

__all__ = ["advertised", "message"]


def advertised(opened: AgentSession) -> list[AvailableCommand]:
    """What `available_commands_update` lists: every command the session runs, each name once,
    the built-in ones first (a custom command of a built-in's name is neither run nor
    listed)."""
    return [
        AvailableCommand(
            name=entry.name.removeprefix("/"),
            description=entry.description,
            input=AvailableCommandInput(UnstructuredCommandInput(hint=entry.hint))
            if entry.hint
            else None,
        )
        for entry in COMMANDS.entries(opened)
    ]


def message(done: CommandReport) -> str:
    """The report as the agent's message; a text laid out in columns (`/context`, `/cost`) in
    a fence, so a client shows it in a fixed-width font."""
    text = done.text
    if not done.aligned:
        return text
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
    return f"{fence}\n{text}\n{fence}"
