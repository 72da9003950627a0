"""Slash commands: typed in the prompt (`/compact keep the API`) or picked in the palette."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from textual.command import DiscoveryHit, Hit, Hits, Provider

if TYPE_CHECKING:
    from kode_tui.ui.app import KodeApp


@dataclass(frozen=True, slots=True)
class SlashCommand:
    name: str
    """With its slash, e.g. `/compact`."""
    usage: str
    """The argument, e.g. `[instruction]`; empty when it takes none."""
    help: str


COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("/help", "", "Keys, commands and what the focused pane does"),
    SlashCommand("/new", "", "Start a new session in this work dir"),
    SlashCommand("/sessions", "", "Open another session"),
    SlashCommand("/clear", "", "Start an empty context (the old one is kept in History)"),
    SlashCommand("/compact", "[instruction]", "Compact the context now, keeping what you say"),
    SlashCommand("/model", "[name]", "Show the model, or switch to an alias or litellm model"),
    SlashCommand("/mode", "[ask|auto-edit|yolo]", "Cycle or set the approval mode"),
    SlashCommand("/theme", "[name]", "Pick a theme (live preview), or set one by name"),
    SlashCommand("/context", "[refresh]", "Show what the model is given"),
    SlashCommand("/revert", "N", "Take the conversation (and files) back to checkpoint N"),
    SlashCommand("/restore", "N", "Preview context_N.jsonl and make it live again"),
    SlashCommand("/diff", "A [B]", "What changed from checkpoint A to B (or to now)"),
    SlashCommand("/title", "[text]", "Show or set the session title"),
    SlashCommand("/quit", "", "Quit kode-tui"),
)

BY_NAME = {command.name: command for command in COMMANDS}


def completions() -> list[tuple[str, str]]:
    """(name, help) for the prompt's `/` completion."""
    return [
        (command.name, f"{command.usage}  {command.help}" if command.usage else command.help)
        for command in COMMANDS
    ]


def parse(line: str) -> tuple[str, str] | None:
    """`("/compact", "keep the API")` for a slash command line, None for a message."""
    stripped = line.strip()
    if not stripped.startswith("/") or stripped.startswith("//"):
        return None
    name, _, argument = stripped.partition(" ")
    return name.lower(), argument.strip()


class SlashCommandProvider(Provider):
    """The slash commands in the command palette (Ctrl+P)."""

    @property
    def _app(self) -> KodeApp:
        return self.app  # type: ignore[return-value]

    def _runner(self, name: str) -> Callable[[], object]:
        return partial(self._app.run_command, name, "")

    async def discover(self) -> Hits:
        for command in COMMANDS:
            yield DiscoveryHit(command.name, self._runner(command.name), help=command.help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for command in COMMANDS:
            score = matcher.match(f"{command.name} {command.help}")
            if score > 0:
                yield Hit(
                    score,
                    matcher.highlight(command.name),
                    self._runner(command.name),
                    help=command.help,
                )
