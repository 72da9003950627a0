"""Slash commands as the domain runs them, once for every front end (DESIGN.md §1).

A built-in command (`/compact`, `/revert N`, `/pin TEXT`...) is a `DomainCommand` of the
registry (`kode_tui.soul.facade.builtins.COMMANDS`): it runs over an `AgentSession` and returns a
`CommandReport`, with the text any front end can show, the data a richer one renders (the TUI
opens a screen with it) and what changed. The TUI, print mode and ACP only parse the line and
render the report; the wording and the checks are here.

A front end that can ask the user (the TUI) passes an `Asker`: a command then shows what it
would do first (the revert dialog, the compaction's review...). Without one (print mode, ACP)
a command does what its words say.

`CommandRegistry.find` is the one order of lookup: the built-in commands, then the skills'
`/skill:NAME` and the custom ones of the work dir (`AgentSession.custom`) that no built-in (nor a
front end's own command, `reserved`) has the name of (`CommandListing.usable`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from kode_tui.masking import mask
from kode_tui.soul.custom_commands import CommandProblem, CustomCommand
from kode_tui.soul.facade.custom import CommandPrompt

if TYPE_CHECKING:
    from kode_tui.session.drop import DropPlan
    from kode_tui.soul.compacting import CompactionPlan
    from kode_tui.soul.facade.session import AgentSession
    from kode_tui.soul.facade.travel import RevertPlan, RotationPreview
    from kode_tui.soul.llm.model_map import ModelOption
    from kode_tui.soul.timetravel import RewindPoint

__all__ = [
    "Asker",
    "Change",
    "CommandEntry",
    "CommandRegistry",
    "CommandReport",
    "DomainCommand",
    "Outcome",
    "RevertChoice",
]

Change = Literal["conversation", "context", "model", "mode", "thinking", "title", "pins", "session"]
"""What a command changed, for a front end to show again: `conversation`, the conversation is
another one (a revert, a restore, a drop: read it again, replay it); `context`, what the model
is given changed and the bus said how (a clear, a compaction); the model, the approval mode,
the thinking effort, the title, the pins; or `session`, the session itself (a fork: the
report's data is the new `Session`)."""

Outcome = Literal["done", "warning", "refused", "failed", "blocked"]
"""`done`; `warning`: done, with something to heed (files left alone); `refused`: not done, the
line or the moment was wrong (print mode exits 2); `failed`: tried, and it failed (exit 1);
`blocked`: a hook said no, and its run (an event on the bus) says why."""

RevertChoice = Literal["conversation", "files", "anyway"]
"""What a revert or a restore takes back: the conversation, with it the files, or (`anyway`)
the files changed by hand since too, whose versions the rotated context keeps."""


@dataclass(frozen=True, slots=True)
class CommandReport:
    """What a command did, for any front end to render."""

    text: str
    """What to tell the user, plain text (maybe several lines); empty when there is nothing."""
    outcome: Outcome = "done"
    data: object = None
    """What a richer front end renders (a `ContextReport`, a `CostReport`, matches...)."""
    changed: frozenset[Change] = frozenset()
    aligned: bool = False
    """Its lines are laid out in columns: a front end shows it in a fixed-width font."""

    @property
    def ok(self) -> bool:
        return self.outcome in ("done", "warning")


def report(
    text: str,
    outcome: Outcome = "done",
    *,
    data: object = None,
    changed: Collection[Change] = (),
    aligned: bool = False,
) -> CommandReport:
    """A `CommandReport` (`changed` as any collection)."""
    return CommandReport(text, outcome, data, frozenset(changed), aligned)


def refused(text: str) -> CommandReport:
    """A command not done: the line or the moment was wrong; `text` says why."""
    return CommandReport(text, "refused")


class Asker(Protocol):
    """A front end that can ask the user, as a command needs it (the TUI)."""

    def note(self, text: str) -> None:
        """Say what a command is doing while it works (a compaction's summary, say)."""

    async def review_compaction(
        self, plan: CompactionPlan, instruction: str | None
    ) -> CompactionPlan | None:
        """The plan to apply (its summary maybe edited), or None to cancel."""

    async def pick_rewind(
        self, points: Sequence[RewindPoint], highlighted: int | None
    ) -> int | None:
        """The checkpoint before the message of the user's to take back, chosen among
        `points` (newest first; `highlighted`: the checkpoint to start at), or None."""

    async def confirm_revert(self, plan: RevertPlan) -> RevertChoice | None:
        """What to take back to the checkpoint, or None to cancel."""

    async def confirm_restore(self, preview: RotationPreview) -> RevertChoice | None:
        """Show a rotated context; what of it to make live again, or None."""

    async def confirm_drop(self, plan: DropPlan, what: str) -> bool:
        """Whether to drop what `plan` takes out (`what`: `checkpoints 2 to 4`)."""

    async def marked(self) -> Sequence[int]:
        """The messages the user marked to drop (`/drop` alone), as indexes of the history."""

    async def pick_model(self, options: Sequence[ModelOption], current: str) -> str | None:
        """The model chosen among `options`, or None."""


CommandRun = Callable[["AgentSession", str, "Asker | None"], Awaitable[CommandReport]]
"""A built-in command's body: the session, the argument (stripped), the front end's Asker."""


@dataclass(frozen=True, slots=True)
class DomainCommand:
    """A built-in slash command."""

    name: str
    """With its slash: `/compact`."""
    hint: str
    """Its argument, e.g. `[instruction]`; empty when it takes none."""
    description: str
    run: CommandRun
    needs_agent: bool = True
    """It needs the running agent (a read-only view has none)."""
    between_turns: bool = False
    """It changes the context: never while a turn runs."""


@dataclass(frozen=True, slots=True)
class CommandEntry:
    """A command as a list shows it: a built-in one, or a custom one (`custom`)."""

    name: str
    hint: str
    description: str
    custom: CustomCommand | None = None


class CommandRegistry:
    """The built-in commands, in the order lists show them, and the dispatch of a line."""

    def __init__(self) -> None:
        self._commands: dict[str, DomainCommand] = {}

    def command(
        self,
        name: str,
        hint: str,
        description: str,
        *,
        needs_agent: bool = True,
        between_turns: bool = False,
    ) -> Callable[[CommandRun], CommandRun]:
        """Register the decorated coroutine as the built-in command `name` (`/compact`)."""

        def register(run: CommandRun) -> CommandRun:
            if name in self._commands:
                raise ValueError(f"{name} is registered twice")
            self._commands[name] = DomainCommand(
                name, hint, description, run, needs_agent, between_turns
            )
            return run

        return register

    def __iter__(self) -> Iterator[DomainCommand]:
        return iter(self._commands.values())

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self._commands)

    def get(self, name: str) -> DomainCommand | None:
        """The built-in command `name` (any case), or None."""
        return self._commands.get(name.lower())

    def entries(self, opened: AgentSession, reserved: Collection[str] = ()) -> list[CommandEntry]:
        """Every command a user can run in `opened`, each name once: the built-in ones, then
        the custom ones that no built-in nor a front end's own command (`reserved`) hides."""
        entries = [CommandEntry(c.name, c.hint, c.description) for c in self]
        hidden = self.names | set(reserved)
        skills = [skill for skill in opened.custom.skill_commands() if skill.name not in hidden]
        hidden |= {skill.name for skill in skills}
        for custom in [*skills, *opened.custom.listing().usable(hidden)]:
            entries.append(
                CommandEntry(custom.name, custom.argument_hint, custom.description, custom)
            )
        return entries

    async def run(
        self,
        opened: AgentSession,
        command: DomainCommand,
        argument: str,
        asker: Asker | None = None,
    ) -> CommandReport:
        """Run the built-in `command` with `argument`; its report (its text masked, as every
        text a front end shows)."""
        if command.needs_agent and not opened.started:
            return refused(_no_agent(opened))
        if command.between_turns and opened.turn_running:
            return refused("A turn is running: wait for it to end, or interrupt it.")
        done = await command.run(opened, argument.strip(), asker)
        return dataclasses.replace(done, text=mask(done.text))

    def find(
        self, opened: AgentSession, name: str, argument: str, reserved: Collection[str] = ()
    ) -> DomainCommand | CommandPrompt | CommandReport | None:
        """What `/name argument` is: a built-in command (run it with `run`); the prompt of the
        custom command of that name (the front end runs it as a turn); a report saying why a
        custom command's file was not read; None when no command has that name. `reserved`:
        the front end's own commands, which it looked up first."""
        command = self.get(name)
        if command is not None:
            return command
        if name.lower() in reserved:
            return None
        found = opened.custom.prompt(name, argument)
        if isinstance(found, CommandProblem):
            return refused(found.message)
        return found


def _no_agent(opened: AgentSession) -> str:
    return "This session is read-only." if opened.read_only else "No agent is running."
