"""The facade's custom slash commands (`AgentSession.custom`): listed, expanded (`/NAME ARGS`)
and run as a turn; with them the skills' `/skill:NAME [request]`, which sends the skill's
`SKILL.md` and the request as Kimi 1.52 does (`kode_tui.soul.skills.command_text`).

The files are read by `kode_tui.soul.custom_commands`. Every front end (the TUI, print mode,
ACP) finds them through the command registry (`kode_tui.soul.facade.commands`), after the
built-in commands: a built-in wins on a name.

`model:` in a command's front matter runs that one prompt on the model it names, when the name is
one of the user's aliases (`[models.NAME]` in config.toml) or `demo`, and its key is set; the
session's model is back for the next message. Any other name (a `provider/model` string from a
cloned repo could run up a bill on a model the user never chose) gives one warning, and the
prompt runs on the session's model.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import msgspec

from kode_tui.config import Config, ConfigError, ModelChoice, check_model
from kode_tui.safetext import visible
from kode_tui.soul import thinking
from kode_tui.soul.facade.live import Live
from kode_tui.soul.markdown_files import NotRead
from kode_tui.soul.skills import SKILL_COMMAND, Skill, Skills, command_text
from kode_tui.soul.soul import TurnResult
from kode_tui.wire import events as ev

if TYPE_CHECKING:
    from kode_tui.soul.custom_commands import (
        CommandListing,
        CommandProblem,
        CustomCommand,
        CustomCommands,
    )

# kode_tui.soul.custom_commands loads when the commands are first listed or run, not before a
# new session's first request.

__all__ = ["CommandPrompt", "Custom"]


class CommandPrompt(msgspec.Struct, frozen=True):
    """`/NAME ARGS` made into the message it sends."""

    command: CustomCommand
    arguments: str
    text: str
    """The command's body, its placeholders replaced: what the model is sent."""

    @property
    def typed(self) -> str:
        """What the user typed: `/review src/`."""
        return f"{self.command.name} {self.arguments}".strip()


class Custom:
    """List, expand and run the custom commands of the session's work dir; `run` is the
    session's turn (`AgentSession.run`), which a command's prompt goes through."""

    def __init__(self, live: Live, run: Callable[[str], Awaitable[TurnResult]]) -> None:
        self._live = live
        self._run = run
        self._custom_commands: CustomCommands | None = None
        self._skills: Skills | None = None

    def listing(self) -> CommandListing:
        """The custom commands now (files changed since the last listing are read again)."""
        if self._custom_commands is None:
            from kode_tui.soul.custom_commands import CustomCommands

            self._custom_commands = CustomCommands(self._live.work_dir)
        return self._custom_commands.listing()

    def skill_commands(self) -> list[CustomCommand]:
        """A `/skill:NAME` command for each skill listed now, as a list shows it."""
        return [_skill_command(skill) for skill in self._skill_listing()]

    def prompt(self, name: str, arguments: str) -> CommandPrompt | CommandProblem | None:
        """The message `/name arguments` sends (a skill's `/skill:NAME` first, as it hides a
        custom command of its name); the problem when its file was refused; None when no
        command has that name."""
        from kode_tui.soul.custom_commands import CommandProblem, expand

        if name.lower().startswith(SKILL_COMMAND):
            wanted = name[len(SKILL_COMMAND) :].casefold()
            skill = next((s for s in self._skill_listing() if s.name.casefold() == wanted), None)
            if skill is not None:
                invoked = _skill_command(skill)
                try:
                    text = command_text(skill, arguments)
                except NotRead as error:
                    return CommandProblem(invoked.name, f"skill {skill.shown_path} {error}.")
                return CommandPrompt(invoked, arguments.strip(), text)
        listing = self.listing()
        command = listing.get(name)
        if command is None:
            return listing.problem(name)
        return CommandPrompt(command, arguments.strip(), expand(command, arguments))

    async def run(self, prompt: CommandPrompt) -> TurnResult:
        """One turn for the command's message, as `AgentSession.run` does, on the model its
        `model:` names (see the module's docstring); a CommandSent event comes before the
        turn's."""
        live = self._live
        soul = live.soul()
        choice = self._command_model(prompt.command)
        live.bus.send(
            ev.CommandSent(
                command=prompt.command.name,
                arguments=prompt.arguments,
                file=prompt.command.shown_path,
                model=choice.name if choice is not None else None,
            )
        )
        if choice is None:
            return await self._run(prompt.text)
        from kode_tui.soul.agent import make_provider

        config = live.config or Config()
        session_provider = soul.provider
        soul.provider = make_provider(choice, config.loop_control)
        thinking.apply(soul.provider, choice, live.session.state.thinking)
        try:
            return await self._run(prompt.text)
        finally:
            soul.provider = session_provider
            live.bus.send(soul.status())

    def _skill_listing(self) -> tuple[Skill, ...]:
        if self._skills is None:
            self._skills = Skills(self._live.work_dir)
        return self._skills.listing().skills

    def _command_model(self, command: CustomCommand) -> ModelChoice | None:
        """The model `command` asks for when it may switch to it (None: the session's)."""
        name = command.model
        if name is None:
            return None
        live = self._live
        config = live.config or Config()
        model_name = live.soul().provider.model_name
        aliases = [*config.models, "demo"]
        why: str | None = None
        if name not in aliases:
            why = f"that is not one of your model aliases ({', '.join(aliases)})"
        else:
            try:
                choice = check_model(config, name)
            except ConfigError as error:
                why = str(error)
            else:
                return None if choice.model == model_name else choice
        live.bus.send(
            ev.Warning(
                message=f"{command.name} asks for model {visible(name, multiline=False)}: {why}; "
                f"it runs on {model_name}."
            )
        )
        return None


def _skill_command(skill: Skill) -> CustomCommand:
    """The skill's `/skill:NAME`, as lists show it (its `SKILL.md` is read when it runs)."""
    from kode_tui.soul.custom_commands import CustomCommand

    return CustomCommand(
        name=f"{SKILL_COMMAND}{skill.name.lower()}",
        body="",
        description=skill.description,
        argument_hint="[request]",
        model=None,
        path=skill.path,
        shown_path=skill.shown_path,
        source="skill",
    )
