"""Slash commands: typed in the prompt (`/compact keep the API`) or picked in the palette.

The built-in ones are registered here with `@command`; the custom ones (Markdown prompts in
`.kode/commands`, `.claude/commands`, `$KODE_TUI_HOME/commands`) come from the facade each time
they are listed. A built-in wins on a name; F1 says which custom command it hides.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.markup import escape

if TYPE_CHECKING:
    from kode_tui.soul.facade import AgentSession, CommandListing, CustomCommand
    from kode_tui.ui.app import KodeApp


Handler = Callable[["KodeApp", str], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class SlashCommand:
    name: str
    """With its slash, e.g. `/compact`."""
    usage: str
    """The argument, e.g. `[instruction]`; empty when it takes none."""
    help: str
    run: Handler
    """Carries it out in the app, given the argument (empty when none was typed)."""


COMMANDS: list[SlashCommand] = []
"""Every slash command, in the order /help and completion list them."""


def command(name: str, usage: str, help: str) -> Callable[[Handler], Handler]:
    """Register the decorated coroutine as the handler of the slash command `name`."""

    def register(handler: Handler) -> Handler:
        COMMANDS.append(SlashCommand(name, usage, help, handler))
        BY_NAME[name] = COMMANDS[-1]
        return handler

    return register


BY_NAME: dict[str, SlashCommand] = {}


@command("/help", "", "Keys, commands and what the focused pane does")
async def _help(app: KodeApp, argument: str) -> None:
    app.action_help()


@command("/new", "", "Start a new session in this work dir")
async def _new(app: KodeApp, argument: str) -> None:
    await app.new_session()
    app.notify("New session.", timeout=2)


@command("/sessions", "", "Open another session")
async def _sessions(app: KodeApp, argument: str) -> None:
    from kode_tui.ui.screens.sessions import SessionPicker

    current = app.session
    chosen = await app.push_screen_wait(
        SessionPicker(app.work_dir, current.id if current is not None else None)
    )
    if chosen is None or (current is not None and chosen.dir == current.dir):
        return
    await app.new_session(chosen)


@command("/clear", "", "Start an empty context (the old one is kept in History)")
async def _clear(app: KodeApp, argument: str) -> None:
    if app.busy() or app.agent_session is None:
        return
    await app.agent_session.clear()
    app.notify("Cleared: the old context is kept in History.", timeout=3)


@command("/compact", "[instruction]", "Compact the context, after you review and edit the summary")
async def _compact(app: KodeApp, argument: str) -> None:
    if app.busy() or app.agent_session is None:
        return
    app.compact_with_review(argument or None)


@command("/model", "[name]", "Pick a model, or switch to an alias or provider/model")
async def _model(app: KodeApp, argument: str) -> None:
    from kode_tui.errors import ConfigError
    from kode_tui.ui.screens.main import MainScreen
    from kode_tui.ui.screens.models import ModelPicker

    opened = app.agent_session
    if opened is None:
        return
    name = argument.strip()
    if not name:
        picked = await app.push_screen_wait(ModelPicker(opened.model_options(), app.choice.name))
        if picked is None:
            return
        name = picked
    try:
        choice = await opened.set_model(name)
    except ConfigError as error:
        app.notify(f"Model unchanged: {error}.", severity="error", timeout=8)
        return
    app.set_choice(choice)
    if not choice.is_demo:
        # A real model: the offline-demo notice no longer applies (it stays away if `demo`
        # is chosen again, which the user does knowingly).
        for screen in app.screen_stack:
            if isinstance(screen, MainScreen):
                await screen.query("#banner").remove()
    app.notify(f"Model: {choice.name}", timeout=3)


@command("/mode", "[ask|auto-edit|sandbox|yolo]", "Cycle or set the approval mode")
async def _mode(app: KodeApp, argument: str) -> None:
    opened = app.agent_session
    if opened is None or not opened.started:
        return
    if not argument:
        await app.action_cycle_mode()
        return
    modes = opened.modes
    mode = next((m for m in modes if m == argument), None)
    if mode is None:
        why = f" ({opened.permissions.sandbox})" if argument == "sandbox" else ""
        app.notify(f"Modes are {', '.join(modes)}.{why}", severity="warning")
        return
    await opened.set_mode(mode)
    app.update_header()
    app.notify(f"Approval mode: {mode}", timeout=3)


def _running_agent(app: KodeApp) -> AgentSession | None:
    """The session's agent when one runs; else None, and one line says why."""
    opened = app.agent_session
    if opened is None or not opened.started:
        message = "This session is read-only." if app.read_only else "No agent is running."
        app.notify(message, severity="warning")
        return None
    return opened


@command("/permissions", "", "List what is allowed for this session, and revoke it")
async def _permissions(app: KodeApp, argument: str) -> None:
    from kode_tui.ui.screens.permissions import PermissionsScreen

    opened = _running_agent(app)
    if opened is not None:
        await app.push_screen(PermissionsScreen(opened))


@command("/mcp", "", "MCP servers: their tools and tokens; switch off, reconnect")
async def _mcp(app: KodeApp, argument: str) -> None:
    from kode_tui.ui.screens.mcp import McpScreen

    opened = _running_agent(app)
    if opened is not None:
        await app.push_screen(McpScreen(opened))


@command("/theme", "[name]", "Pick a theme (live preview), or set one by name")
async def _theme(app: KodeApp, argument: str) -> None:
    if not argument:
        app.action_change_theme()
    elif argument not in app.available_themes:
        app.notify(f"No theme {argument}.", severity="warning")
    else:
        app.theme = argument


@command("/context", "[refresh]", "Show what the model is given")
async def _context(app: KodeApp, argument: str) -> None:
    from kode_tui.ui.screens.dialogs import ContextScreen

    opened = app.agent_session
    if opened is None:
        return
    report = await opened.context_report(refresh=argument == "refresh")
    if report is None:
        return
    if argument == "refresh":
        app.notify("Project context collected again.", timeout=3)
    await app.push_screen(ContextScreen(report))


@command("/revert", "N", "Take the conversation (and files) back to checkpoint N")
async def _revert(app: KodeApp, argument: str) -> None:
    if not argument.isdigit():
        app.notify("/revert N: N is a checkpoint of the timeline.", severity="warning")
        return
    app.revert(int(argument))


@command("/restore", "N", "Preview context_N.jsonl and make it live again")
async def _restore(app: KodeApp, argument: str) -> None:
    opened = app.agent_session
    if opened is None:
        return
    name = opened.travel.rotated_file(argument) if argument else None
    if name is None:
        app.notify("/restore N: N is a rotated context of the History pane.", severity="warning")
        return
    app.preview(name)


@command("/diff", "A [B]", "What changed from checkpoint A to B (or to now)")
async def _diff(app: KodeApp, argument: str) -> None:
    numbers = argument.split()
    if not numbers or len(numbers) > 2 or not all(n.isdigit() for n in numbers):
        app.notify("/diff A [B]: checkpoints of the timeline (B: now).", severity="warning")
        return
    app.diff(int(numbers[0]), int(numbers[1]) if len(numbers) == 2 else None)


@command("/title", "[text]", "Show or set the session title")
async def _title(app: KodeApp, argument: str) -> None:
    opened = app.agent_session
    if opened is None:
        return
    if not argument:
        app.notify(f"Title: {opened.title}", timeout=4)
        return
    await opened.set_title(argument)
    app.update_header()


@command("/pin", "TEXT", "Pin a note: sent with every request, whatever is compacted")
async def _pin(app: KodeApp, argument: str) -> None:
    await app.pin_note(argument)


@command("/pins", "", "List, edit and unpin the pinned notes")
async def _pins(app: KodeApp, argument: str) -> None:
    await app.show_pins()


@command(
    "/drop", "[N..M]", "Drop the blocks marked with x, or checkpoints N to M, from the context"
)
async def _drop(app: KodeApp, argument: str) -> None:
    app.drop_command(argument)


@command("/cost", "", "What this session's model calls cost, per model and turn")
async def _cost(app: KodeApp, argument: str) -> None:
    from kode_tui.ui.screens.cost import CostScreen

    opened = app.agent_session
    if opened is not None:
        await app.push_screen(CostScreen(opened.cost()))


@command("/think", "[off|low|medium|high]", "Show or set the model's thinking effort (Alt+T)")
async def _think(app: KodeApp, argument: str) -> None:
    from kode_tui.ui.thinking import think_command

    await think_command(app, argument)


@command("/quit", "", "Quit kode-tui")
async def _quit(app: KodeApp, argument: str) -> None:
    await app.action_quit()


def completions(app: KodeApp | None = None) -> list[tuple[str, str]]:
    """(name, help) for the prompt's `/` completion: the built-in commands, then the custom
    ones of `app`'s work dir that no built-in hides."""
    rows = [
        (command.name, f"{command.usage}  {command.help}" if command.usage else command.help)
        for command in COMMANDS
    ]
    return rows + [(custom.name, _custom_help(custom)) for custom in _custom(app)]


def help_rows(app: KodeApp) -> list[tuple[str, str]]:
    """F1's commands: the completion's, each custom one with its file, then the custom
    commands that are not used (hidden by another of that name, or refused) and why."""
    rows = completions()
    rows += [(c.name, f"{_custom_help(c)}  ({c.shown_path})") for c in _custom(app)]
    listing = _listing(app)
    if listing is None:
        return rows
    hidden = [c for c in listing.commands if c.name in BY_NAME]
    for custom in [*hidden, *listing.shadowed]:
        winner = "the built-in" if custom.name in BY_NAME else "another file's"
        rows.append(
            (custom.name, f"not used: {winner} {custom.name} has its name ({custom.shown_path})")
        )
    rows += [(problem.name or "", f"not read: {problem.message}") for problem in listing.problems]
    return rows


def _listing(app: KodeApp | None) -> CommandListing | None:
    opened = app.agent_session if app is not None else None
    return opened.commands.custom() if opened is not None else None


def _custom(app: KodeApp | None) -> list[CustomCommand]:
    listing = _listing(app)
    return list(listing.usable(BY_NAME)) if listing is not None else []


def _custom_help(custom: CustomCommand) -> str:
    hint = custom.argument_hint
    return f"{hint}  {custom.description}" if hint else custom.description


async def run_custom(app: KodeApp, name: str, argument: str) -> bool:
    """Send the prompt of the custom command `name` for `argument` (or say why its file was
    not read); whether one has that name."""
    from kode_tui.soul.facade import CommandProblem

    opened = app.agent_session
    found = opened.commands.prompt(name, argument) if opened is not None else None
    if isinstance(found, CommandProblem):
        app.notify(found.message, severity="warning", timeout=8)
    elif found is not None:
        app.send(found)
    return found is not None


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

    def _entries(self) -> list[tuple[str, str, Callable[[], object]]]:
        """(name, help, what picking it does) of each command, built-in then custom. A custom
        command that takes arguments is put in the prompt, to be completed there."""
        entries = [(c.name, c.help, self._runner(c.name)) for c in COMMANDS]
        for custom in _custom(self._app):
            runner = (
                partial(_fill_prompt, self._app, f"{custom.name} ")
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
            score = matcher.match(f"{name} {help_}")
            if score > 0:
                yield Hit(score, matcher.highlight(name), runner, help=help_)


def _fill_prompt(app: KodeApp, text: str) -> None:
    from kode_tui.ui.widgets.prompt import PromptInput

    for prompt in app.screen.query(PromptInput):
        prompt.text = text
        prompt.move_cursor(prompt.document.end)
        prompt.focus()
