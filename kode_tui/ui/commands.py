"""Slash commands in the TUI: typed in the prompt (`/compact keep the API`) or picked in the
palette, and what the side panes' intents become (a checkpoint's revert is `/revert N`).

The built-in commands are the domain's (`COMMANDS` of the facade): they run with the TUI as
their `Asker` (the revert dialog, the compaction's review, the model picker...), and `render`
shows their report: a notification, a screen for its data, the conversation read again. The
TUI's own commands, of the screen rather than the session (`/help`, `/new`, `/sessions`,
`/theme`, `/quit`), are here; no built-in has their names. The custom commands (Markdown
prompts in `.kode/commands`, `.claude/commands`, `$KODE_TUI_HOME/commands`) come after both; F1
says which custom command a built-in hides.

What this needs of the app is `CommandHost`, not the App class: the app imports this module.
The facade is imported when a command runs, not with the app's first frame.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.fuzzy import Matcher
from textual.markup import escape
from textual.notifications import SeverityLevel

if TYPE_CHECKING:
    from textual.app import App
    from textual.screen import Screen
    from textual.theme import Theme

    from kode_tui.config import ModelChoice
    from kode_tui.soul.facade import (
        AgentSession,
        CommandListing,
        CommandPrompt,
        CommandReport,
        CompactionPlan,
        CustomCommand,
        DropPlan,
        Match,
        ModelOption,
        RevertChoice,
        RevertPlan,
        RewindPoint,
        RotationPreview,
        Session,
    )

T = TypeVar("T")


class CommandHost(Protocol):
    """What the commands need of the app."""

    agent_session: AgentSession | None
    work_dir: Path
    theme: str

    @property
    def available_themes(self) -> dict[str, Theme]: ...

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None: ...

    async def show(self, screen: Screen[Any]) -> None:
        """Put `screen` up (a report's screen)."""

    async def ask(self, screen: Screen[T]) -> T:
        """Put `screen` up and wait for what it is dismissed with."""

    async def agent_ready(self) -> None:
        """Wait while the session's agent is starting."""

    def send(self, text: str | CommandPrompt) -> None:
        """Send a message (or a custom command's) to the agent."""

    def run_command(self, name: str, argument: str, *, match: Match | None = None) -> None: ...

    async def new_session(self, session: Session | None = None) -> None: ...

    def action_help(self) -> None: ...

    async def action_quit(self) -> None: ...

    def action_change_theme(self) -> None: ...

    def update_header(self) -> None: ...

    def set_choice(self, choice: ModelChoice) -> None: ...

    async def reload_conversation(self, prompt: str | None = None) -> None:
        """Show the conversation again, then focus the prompt (holding `prompt` if given)."""

    async def open_match(self, match: Match) -> None: ...

    async def review_compaction(
        self, plan: CompactionPlan, instruction: str | None = None
    ) -> CompactionPlan | None: ...

    async def marked_messages(self) -> list[int]:
        """The messages of the blocks marked with x, as indexes of the history."""

    def fill_prompt(self, text: str, *, append: bool = False) -> None:
        """Put `text` in the prompt (with `append`, after what it holds)."""


# --- the TUI's own commands ----------------------------------------------------------------------

Handler = Callable[[CommandHost, str], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class ScreenCommand:
    """A command of the screen, the TUI's own."""

    name: str
    usage: str
    help: str
    run: Handler


async def _help(host: CommandHost, argument: str) -> None:
    host.action_help()


async def _new(host: CommandHost, argument: str) -> None:
    await host.new_session()
    host.notify("New session.", timeout=2)


async def _sessions(host: CommandHost, argument: str) -> None:
    from kode_tui.ui.screens.sessions import SessionPicker

    opened = host.agent_session
    current = opened.session if opened is not None else None
    chosen = await host.ask(
        SessionPicker(host.work_dir, current.id if current is not None else None)
    )
    if chosen is None or (current is not None and chosen.dir == current.dir):
        return
    await host.new_session(chosen)


async def _theme(host: CommandHost, argument: str) -> None:
    if not argument:
        host.action_change_theme()
    elif argument not in host.available_themes:
        host.notify(f"No theme {argument}.", severity="warning")
    else:
        host.theme = argument


async def _quit(host: CommandHost, argument: str) -> None:
    await host.action_quit()


SCREEN_COMMANDS: dict[str, ScreenCommand] = {
    command.name: command
    for command in (
        ScreenCommand("/help", "", "Keys, commands and what the focused pane does", _help),
        ScreenCommand("/new", "", "Start a new session in this work dir", _new),
        ScreenCommand("/sessions", "", "Open another session", _sessions),
        ScreenCommand(
            "/theme", "[name]", "Pick a theme (live preview), or set one by name", _theme
        ),
        ScreenCommand("/quit", "", "Quit kode-tui", _quit),
    )
}
"""The TUI's own commands: of the screen, not of the session."""


# --- running a line ------------------------------------------------------------------------------


async def run(host: CommandHost, name: str, argument: str, match: Match | None = None) -> None:
    """Run `/name argument`: the TUI's own command, a built-in one (its report rendered), or a
    custom one (its prompt sent); say so when no command has that name. `match`: the search
    match a `/restore`'s preview opens at."""
    from kode_tui.soul.facade import COMMANDS, CommandPrompt, CommandReport

    own = SCREEN_COMMANDS.get(name)
    if own is not None:
        await own.run(host, argument)
        return
    opened = host.agent_session
    if opened is None:
        host.notify("No session is open.", severity="warning")
        return
    found = COMMANDS.find(opened, name, argument, SCREEN_COMMANDS)
    if found is None:
        host.notify(f"Unknown command {name}. /help lists them.", severity="warning")
        return
    if isinstance(found, CommandPrompt):
        host.send(found)
        return
    if isinstance(found, CommandReport):  # a custom command whose file was refused
        await render(host, name, argument, found)
        return
    # Typed the moment the session appeared: wait for the agent, as a message would.
    await host.agent_ready()
    opened = host.agent_session
    if opened is not None:
        done = await COMMANDS.run(opened, found, argument, Asking(host, match))
        await render(host, found.name, argument, done)


SEVERITY: dict[str, SeverityLevel] = {
    "done": "information",
    "warning": "warning",
    "refused": "warning",
    "failed": "error",
}


async def render(host: CommandHost, name: str, argument: str, done: CommandReport) -> None:
    """Show what a built-in command did: a screen for its data, or a notification; the
    conversation, the header or the session again where it changed them."""
    if done.outcome == "blocked":
        return  # the hook's run is in the conversation, with why
    if not done.ok:
        host.notify(done.text, severity=SEVERITY[done.outcome], timeout=8)
        return
    view = VIEWS.get(name)
    if view is not None and await view(host, argument, done):
        return
    if "conversation" in done.changed:
        await host.reload_conversation()
    if done.changed & {"model", "mode", "thinking", "title"}:
        host.update_header()
    if done.text:
        long = "\n" in done.text or done.outcome != "done"
        host.notify(done.text, severity=SEVERITY[done.outcome], timeout=8 if long else 4)


# --- the reports the TUI shows its own way -------------------------------------------------------

View = Callable[[CommandHost, str, "CommandReport"], Awaitable[bool]]
"""Shows a report its own way; whether that was all (else it is notified as usual)."""


async def _context_view(host: CommandHost, argument: str, done: CommandReport) -> bool:
    from kode_tui.soul.facade import ContextReport
    from kode_tui.ui.screens.dialogs import ContextScreen

    if argument == "refresh":
        host.notify("Project context collected again.", timeout=3)
    await host.show(ContextScreen(cast(ContextReport, done.data)))
    return True


async def _cost_view(host: CommandHost, argument: str, done: CommandReport) -> bool:
    from kode_tui.soul.facade import CostReport
    from kode_tui.ui.screens.cost import CostScreen

    await host.show(CostScreen(cast(CostReport, done.data)))
    return True


async def _diff_view(host: CommandHost, argument: str, done: CommandReport) -> bool:
    from kode_tui.soul.facade import Compared
    from kode_tui.ui.screens.compare import CompareScreen

    compared = cast(Compared, done.data)
    await host.show(CompareScreen(compared.title, compared.diff))
    return True


async def _search_view(host: CommandHost, argument: str, done: CommandReport) -> bool:
    from kode_tui.soul.facade import Found
    from kode_tui.ui.screens.search import SearchScreen

    found = cast(Found, done.data)
    opened = host.agent_session
    if not found.matches or opened is None:
        return False
    chosen = await host.ask(SearchScreen(found.text, found.matches, opened.id))
    if chosen is not None:
        await host.open_match(chosen)
    return True


async def _session_screen(host: CommandHost, screen: Callable[[AgentSession], Screen[Any]]) -> bool:
    opened = host.agent_session
    if opened is not None:
        await host.show(screen(opened))
    return True


async def _mcp_view(host: CommandHost, argument: str, done: CommandReport) -> bool:
    from kode_tui.ui.screens.mcp import McpScreen

    return await _session_screen(host, McpScreen)


async def _permissions_view(host: CommandHost, argument: str, done: CommandReport) -> bool:
    from kode_tui.ui.screens.permissions import PermissionsScreen

    return await _session_screen(host, PermissionsScreen)


async def _pins_view(host: CommandHost, argument: str, done: CommandReport) -> bool:
    from kode_tui.ui.screens.pins import PinsScreen

    return await _session_screen(host, PinsScreen)


async def _tasks_view(host: CommandHost, argument: str, done: CommandReport) -> bool:
    from kode_tui.ui.screens.tasks import TasksScreen

    return await _session_screen(host, TasksScreen)


async def _fork_view(host: CommandHost, argument: str, done: CommandReport) -> bool:
    from kode_tui.soul.facade import Session

    await host.new_session(cast(Session, done.data))
    host.notify(f"{done.text} /sessions opens the other.", timeout=6)
    return True


async def _revert_view(host: CommandHost, argument: str, done: CommandReport) -> bool:
    from kode_tui.soul.facade import RevertOutcome

    if not isinstance(done.data, RevertOutcome):
        return False  # cancelled, or the checkpoints listed
    # The user's message that followed the checkpoint goes back into the prompt, to edit.
    await host.reload_conversation(done.data.next_user_text)
    host.notify(done.text, severity=SEVERITY[done.outcome], timeout=8)
    return True


async def _model_view(host: CommandHost, argument: str, done: CommandReport) -> bool:
    from kode_tui.config import ModelChoice

    if isinstance(done.data, ModelChoice):
        host.set_choice(done.data)
    return False


VIEWS: dict[str, View] = {
    "/context": _context_view,
    "/cost": _cost_view,
    "/diff": _diff_view,
    "/search": _search_view,
    "/mcp": _mcp_view,
    "/permissions": _permissions_view,
    "/pins": _pins_view,
    "/tasks": _tasks_view,
    "/fork": _fork_view,
    "/revert": _revert_view,
    "/undo": _revert_view,
    "/model": _model_view,
}


# --- what the commands ask the user --------------------------------------------------------------


class Asking:
    """The TUI as a command's `Asker`: dialogs and screens that ask before anything changes.
    `match`: where a `/restore`'s preview opens (a search match), else at its end."""

    def __init__(self, host: CommandHost, match: Match | None = None) -> None:
        self._host = host
        self._match = match

    def note(self, text: str) -> None:
        self._host.notify(text, timeout=3)

    async def review_compaction(
        self, plan: CompactionPlan, instruction: str | None
    ) -> CompactionPlan | None:
        return await self._host.review_compaction(plan, instruction)

    async def pick_rewind(
        self, points: Sequence[RewindPoint], highlighted: int | None
    ) -> int | None:
        from kode_tui.ui.screens.rewind import RewindPicker

        return await self._host.ask(RewindPicker(points, highlighted))

    async def confirm_revert(self, plan: RevertPlan) -> RevertChoice | None:
        from kode_tui.ui.screens.timetravel import RevertDialog

        return await self._host.ask(RevertDialog.from_plan(plan))

    async def confirm_restore(self, preview: RotationPreview) -> RevertChoice | None:
        from kode_tui.ui.screens.timetravel import PreviewScreen

        opened = self._host.agent_session
        match = self._match
        at = None
        if match is not None and opened is not None:
            at = opened.travel.match_index(preview.snapshot.messages, match)
        chosen = await self._host.ask(PreviewScreen.from_preview(preview, at))
        if isinstance(chosen, str) and chosen not in ("conversation", "files", "anyway"):
            self._host.fill_prompt(chosen, append=True)  # what only that context has, quoted
            return None
        if chosen is True or chosen == "conversation":
            return "conversation"
        if chosen == "anyway":
            return "anyway"
        return "files" if chosen == "files" else None

    async def confirm_drop(self, plan: DropPlan, what: str) -> bool:
        from kode_tui.ui.screens.drop import DropDialog

        confirmed: bool = await self._host.ask(DropDialog(plan, what))
        return confirmed

    async def marked(self) -> Sequence[int]:
        return await self._host.marked_messages()

    async def pick_model(self, options: Sequence[ModelOption], current: str) -> str | None:
        from kode_tui.ui.screens.models import ModelPicker

        return await self._host.ask(ModelPicker(list(options), current))


# --- lists: completion, F1, the palette ----------------------------------------------------------


def completions(host: CommandHost | None = None) -> list[tuple[str, str]]:
    """(name, help) for the prompt's `/` completion: the TUI's commands, the built-in ones,
    then the custom ones of the work dir that none of them hides."""
    from kode_tui.soul.facade import COMMANDS

    rows = [(c.name, _help_text(c.usage, c.help)) for c in SCREEN_COMMANDS.values()]
    rows += [(c.name, _help_text(c.hint, c.description)) for c in COMMANDS]
    return rows + [(custom.name, _custom_help(custom)) for custom in _custom(host)]


def help_screen(app: App[Any]) -> Screen[None]:
    """F1: the app's own keys first (a text area's or a list's keys are every one's, folded),
    then the commands (`help_rows`)."""
    from kode_tui.ui.screens.help import HelpScreen, collect_bindings, focused_help

    rows = collect_bindings(app, generic=False)
    rows.sort(key=lambda row: row[2] != "App")
    generic = collect_bindings(app, generic=True)
    return HelpScreen(rows, focused_help(app), help_rows(cast("CommandHost", app)), generic)


def help_rows(host: CommandHost) -> list[tuple[str, str]]:
    """F1's commands: the completion's, each custom one with its file, then the custom
    commands that are not used (hidden by another of that name, or refused) and why."""
    from kode_tui.soul.facade import COMMANDS

    rows = completions()
    rows += [(c.name, f"{_custom_help(c)}  ({c.shown_path})") for c in _custom(host)]
    listing = _listing(host)
    if listing is None:
        return rows
    built_in = COMMANDS.names | set(SCREEN_COMMANDS)
    hidden = [c for c in listing.commands if c.name in built_in]
    for custom in [*hidden, *listing.shadowed]:
        winner = "the built-in" if custom.name in built_in else "another file's"
        rows.append(
            (custom.name, f"not used: {winner} {custom.name} has its name ({custom.shown_path})")
        )
    rows += [(problem.name or "", f"not read: {problem.message}") for problem in listing.problems]
    return rows


def _listing(host: CommandHost | None) -> CommandListing | None:
    opened = host.agent_session if host is not None else None
    return opened.custom.listing() if opened is not None else None


def _custom(host: CommandHost | None) -> list[CustomCommand]:
    from kode_tui.soul.facade import COMMANDS

    opened = host.agent_session if host is not None else None
    if opened is None:
        return []
    entries = COMMANDS.entries(opened, SCREEN_COMMANDS)
    return [entry.custom for entry in entries if entry.custom is not None]


def _help_text(usage: str, help_: str) -> str:
    return f"{usage}  {help_}" if usage else help_


def _custom_help(custom: CustomCommand) -> str:
    return _help_text(custom.argument_hint, custom.description)


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
    def _host(self) -> CommandHost:
        # The palette is the app's (`KodeApp.COMMANDS`), and the app is a CommandHost.
        return cast(CommandHost, self.app)

    def _runner(self, name: str) -> Callable[[], object]:
        return partial(self._host.run_command, name, "")

    def _entries(self) -> list[tuple[str, str, Callable[[], object]]]:
        """(name, help, what picking it does) of each command, built-in then custom. A command
        that needs an argument is put in the prompt, to be completed there."""
        from kode_tui.soul.facade import COMMANDS

        entries = [(c.name, c.help, self._runner(c.name)) for c in SCREEN_COMMANDS.values()]
        entries += [(c.name, escape(c.description), self._runner(c.name)) for c in COMMANDS]
        for custom in _custom(self._host):
            runner = (
                partial(self._host.fill_prompt, f"{custom.name} ")
                if custom.argument_hint
                else self._runner(custom.name)
            )
            # The palette reads help as markup: a hint's `[file]` would be taken for a tag.
            entries.append((custom.name, escape(_custom_help(custom)), runner))
        return entries

    async def discover(self) -> Hits:
        for name, help_, runner in self._entries():
            yield DiscoveryHit(name, runner, help=help_)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, help_, runner in self._entries():
            score = palette_score(matcher, query, name, help_)
            if score > 0:
                yield Hit(score, matcher.highlight(name), runner, help=help_)


def palette_score(matcher: Matcher, query: str, name: str, help_: str) -> float:
    """How well a command matches what is typed in the palette: Textual's fuzzy score of its
    name and help, raised above every other hit's when its name starts with the query (`rev`
    is `/revert`, whatever the letters of some other command's help)."""
    score = matcher.match(f"{name} {help_}")
    typed = query.strip().lstrip("/").lower()
    if score > 0 and typed and name.lstrip("/").lower().startswith(typed):
        # The matcher gives a letter at most 4 (2 at a word's start, doubled in one run), so
        # this puts a prefix match above any score the query can reach otherwise.
        score += 4 * len(query)
    return score
