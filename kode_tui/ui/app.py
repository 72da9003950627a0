"""The kode-tui app: one session's agent on the main screen.

The App owns the session and its agent. Widgets render wire events and post intents (a message
to send, a slash command, an approval answer); the App turns them into soul and session calls.
Turns run in a worker, so the screen stays live; Esc cancels the running turn, and a message
typed meanwhile is sent when the turn ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rich.segment import Segment, Segments
from textual import on, work
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from kode_tui import masking
from kode_tui.errors import ConfigError
from kode_tui.paths import Paths, tilde
from kode_tui.safetext import visible
from kode_tui.ui import commands
from kode_tui.ui.commands import SlashCommandProvider
from kode_tui.ui.screens.main import MainScreen
from kode_tui.ui.themes import configured_theme, register_themes, watch_user_themes
from kode_tui.ui.widgets.prompt import PromptInput

if TYPE_CHECKING:
    # The config, the session engine, the wire, the panes and the agent (tools, compaction,
    # project context) load after the first frame.
    from collections.abc import Sequence

    from kode_tui.config import ApprovalMode, Config, ModelChoice
    from kode_tui.session import Context, Session, SessionLocked
    from kode_tui.session.journal import FileJournal
    from kode_tui.session.timetravel import FilePlan
    from kode_tui.soul.agent import Agent
    from kode_tui.soul.llm import ChatProvider
    from kode_tui.ui.screens.dialogs import LockedChoice
    from kode_tui.ui.widgets.history import HistoryPane
    from kode_tui.ui.widgets.timeline import CheckpointTimeline
    from kode_tui.wire import WireBus
    from kode_tui.wire.events import DiffBlock

log = logging.getLogger(__name__)

MODES: tuple[ApprovalMode, ...] = ("ask", "auto-edit", "yolo")
CTRL_C_WINDOW_S = 2.0
"""A second Ctrl+C within this time quits."""

DEMO_BANNER = (
    "[b]Offline demo.[/b] No model is configured, so kode-tui runs [b]demo[/b]: a scripted "
    "agent, not an LLM. For a real model set [b]ANTHROPIC_API_KEY[/b], [b]OPENAI_API_KEY[/b] "
    "(or another key) before starting, or add a [b]\\[models][/b] entry to {config}."
)


class KodeApp(App[None]):
    """kode-tui's terminal UI."""

    TITLE = "kode-tui"
    # The conversation brings its own stylesheet (DEFAULT_CSS). The side panes share one,
    # parsed once here rather than once per pane class.
    CSS_PATH = ["app.tcss", "widgets/context.tcss", "widgets/prompt.tcss"]  # noqa: RUF012
    COMMANDS = App.COMMANDS | {SlashCommandProvider}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+q", "quit", "Quit", id="quit", priority=True),
        # In place of Textual's "press Ctrl+Q to quit" (a selection in the prompt still copies).
        Binding("ctrl+c", "interrupt_or_quit", "Interrupt, clear the prompt, or quit", show=False),
        Binding("f1", "help", "Help", id="help"),
        Binding("escape", "interrupt", "Interrupt", id="interrupt"),
        Binding("ctrl+t", "cycle_mode", "Approval mode", id="cycle_mode"),
    ]

    def __init__(
        self,
        work_dir: Path,
        config: Config | None = None,
        choice: ModelChoice | None = None,
        *,
        model: str | None = None,
        session: Session | None = None,
        context: Context | None = None,
        locked: SessionLocked | None = None,
        provider: ChatProvider | None = None,
        theme: str | None = None,
        yolo: bool = False,
        pick_session: bool = False,
        config_file: Path | None = None,
    ) -> None:
        super().__init__()
        self.work_dir = work_dir
        self._config = config
        self._choice = choice
        self._model_flag = model
        self.config_error: ConfigError | None = None
        """Why the app stopped at start, when the config was wrong (the command shows it)."""
        self.session = session
        self.agent: Agent | None = None
        self.read_only = False
        self._opened_context = context
        self._locked = locked
        self._provider = provider
        self._theme_name = theme or (config.theme if config else configured_theme(config_file))
        self._yolo = yolo
        self._config_file = config_file
        self._pick_session = pick_session
        self._turn: Worker[None] | None = None
        self._queue: list[str] = []
        self._ctrl_c_at = -CTRL_C_WINDOW_S
        self._agent_starting = False
        """Between the session being on screen and its agent being ready (or failing)."""
        self._history: list[str] = []
        self._read_only_dir: tempfile.TemporaryDirectory[str] | None = None

    @property
    def config(self) -> Config:
        assert self._config is not None, "the config is read after the first frame"
        return self._config

    @property
    def choice(self) -> ModelChoice:
        assert self._choice is not None, "the model is chosen after the first frame"
        return self._choice

    async def _load_settings(self) -> bool:
        """Read the config and choose the model, unless given; False (and exit 2) when wrong."""
        from kode_tui.config import load_config, resolve_model

        try:
            if self._config is None:
                self._config = await asyncio.to_thread(load_config, self._config_file)
            if self._choice is None:
                self._choice = await asyncio.to_thread(
                    resolve_model, self._config, self._model_flag
                )
        except ConfigError as error:
            self.config_error = error
            self.exit(return_code=2)
            return False
        return True

    # --- start and stop ------------------------------------------------------------------------

    async def on_mount(self) -> None:
        register_themes(self)
        watch_user_themes(self)
        if self._theme_name in self.available_themes:
            self.theme = self._theme_name
        # Subscribed after the start-up theme is set, so only a theme the user picks is saved.
        self.call_after_refresh(self.theme_changed_signal.subscribe, self, self._save_theme)
        if self._locked is not None:
            self._ask_locked()
        elif self._opened_context is not None and self._opened_context.read_only:
            self._view_read_only()
        elif self._pick_session:
            self._pick_first_session()
        else:
            await self._frame()
            self.call_after_refresh(self._open_after_frame)

    @work(exclusive=True, group="open")
    async def _open_after_frame(self) -> None:
        if await self._load_settings():
            await self._open(self.session, self._opened_context)

    @work(exclusive=True, group="open")
    async def _view_read_only(self) -> None:
        """The session's folder cannot be written: show it, with no agent."""
        assert self.session is not None and self._opened_context is not None
        if await self._load_settings():
            await self._open_read_only(self.session, self._opened_context)

    @work(exclusive=True, group="pick")
    async def _pick_first_session(self) -> None:
        from kode_tui.session import SessionLocked
        from kode_tui.session.context import restore_or_view
        from kode_tui.ui.screens.sessions import SessionPicker

        if not await self._load_settings():
            return
        chosen = await self.push_screen_wait(SessionPicker(self.work_dir))
        if chosen is None:
            self.exit()
            return
        try:
            context = await restore_or_view(chosen.context_file)
        except SessionLocked as locked:
            self.session, self._locked = chosen, locked
            self._ask_locked()
            return
        if context.read_only:
            self.session = chosen
            await self._open_read_only(chosen, context)
            return
        await self._open(chosen, context)

    @work(exclusive=True, group="locked")
    async def _ask_locked(self) -> None:
        from kode_tui.ui.screens.dialogs import LockedScreen

        assert self.session is not None and self._locked is not None
        if not await self._load_settings():
            return
        choice: LockedChoice = await self.push_screen_wait(
            LockedScreen(self.session.title, self._locked.pid)
        )
        if choice == "quit":
            self.exit()
        elif choice == "new":
            await self._open(None, None)
        else:
            await self._open_read_only(self.session)

    async def _open(self, session: Session | None, context: Context | None) -> None:
        """Open `session` (a new one when None) and show it.

        The screen is up before the agent is: a new session's first frame waits for nothing.
        """
        from kode_tui.session import Context, Session, SessionLocked
        from kode_tui.wire import WireBus

        if session is None:
            session = await Session.create(self.work_dir)
        self.session = session
        self.work_dir = session.work_dir or self.work_dir
        if context is None:
            context = Context(session.context_file)
            try:
                await context.restore()
            except SessionLocked as locked:
                self._locked = locked
                self._ask_locked()
                return
        bus = WireBus()
        await self._show(context, bus)
        self._agent_starting = True
        self._start_agent(session, context, bus)

    @work(exclusive=True, group="agent")
    async def _start_agent(self, session: Session, context: Context, bus: WireBus) -> None:
        from kode_tui.soul.agent import open_agent

        try:
            self.agent = await open_agent(
                session,
                self.config,
                self.choice,
                context=context,
                bus=bus,
                provider=self._provider,
                approval_override="yolo" if self._yolo else None,
            )
        finally:
            self._agent_starting = False
        if self._attached():
            from kode_tui.ui.widgets.gauge import TokenGauge

            self.screen.query_one(TokenGauge).set_status(self.agent.soul.status())
        self._update_header()
        self.refresh_bindings()
        # The views are subscribed by now: what the user should know of the opened session
        # (damaged lines skipped) shows at once, not with the first answer.
        self.agent.soul.send_notices()
        self._preload_model()
        # What start-up made lives as long as the app: keep the collector from walking it
        # again and again while answers stream (its pauses were the longest stalls).
        gc.freeze()
        if self._queue:  # typed while the agent was starting
            self.send(self._queue.pop(0))

    async def _open_read_only(self, session: Session, context: Context | None = None) -> None:
        """Show a copy of a session another kode-tui is writing, or `context` opened read-only
        (its folder cannot be written); nothing can be sent."""
        from kode_tui.session import Context
        from kode_tui.wire import WireBus

        self.read_only = True
        if context is not None:
            self._opened_context = context
            await self._show(context, WireBus())
            self.notify("Read-only: this session's folder cannot be written.", timeout=6)
            return
        self._read_only_dir = tempfile.TemporaryDirectory(prefix="kode-tui-read-only-")
        copy = Path(self._read_only_dir.name)
        for path in session.dir.glob("context*.jsonl"):
            shutil.copy2(path, copy / path.name)
        if (session.dir / "rotations.jsonl").exists():
            shutil.copy2(session.dir / "rotations.jsonl", copy / "rotations.jsonl")
        context = Context(copy / "context.jsonl")
        await context.restore()
        self._opened_context = context
        await self._show(context, WireBus())
        self.notify("Read-only: another kode-tui is writing this session.", timeout=6)

    async def _frame(self) -> MainScreen:
        """A fresh main screen, its panes not attached yet (see MainScreen)."""
        screen = MainScreen(
            self.work_dir, commands.completions(), self._history, read_only=self.read_only
        )
        if self._has_main():
            await self.switch_screen(screen)
        else:
            await self.push_screen(screen)
        self._update_header()
        return screen

    async def _show(self, context: Context, bus: WireBus) -> None:
        """Attach the panes of `context` to the main screen (a fresh one if it has panes)."""
        from kode_tui.soul.transcript import PastResults
        from kode_tui.ui.widgets.conversation import Conversation

        session = self.session
        assert session is not None
        current = self.screen
        if isinstance(current, MainScreen) and not current.attached:
            screen = current
        else:
            screen = await self._frame()
        banner = None
        if self.choice.is_demo and not self.read_only:
            config_path = self._config_file or Paths.current().config_file
            banner = DEMO_BANNER.format(config=tilde(config_path))
        await screen.attach(bus, context, banner)
        results = await asyncio.to_thread(PastResults.read, session.wire_file)
        await screen.query_one(Conversation).load_history(context.history, results)
        self._update_header()
        if self.read_only:  # with an agent, the soul says it (send_notices)
            from kode_tui.soul.soul import damaged_notice

            for notice in damaged_notice(context):
                self.notify(notice, severity="warning", timeout=8)

    def _has_main(self) -> bool:
        return any(isinstance(screen, MainScreen) for screen in self.screen_stack)

    def _attached(self) -> bool:
        screen = self.screen
        return isinstance(screen, MainScreen) and screen.attached

    def _preload_model(self) -> None:
        """Import litellm off the UI thread once the first frame is up."""
        if not self.choice.is_demo:
            self._preload()

    @work(group="preload", exit_on_error=False)
    async def _preload(self) -> None:
        from kode_tui.soul.llm.litellm_provider import preload

        await preload()

    async def action_quit(self) -> None:
        await self._close_agent()
        self.exit()

    async def _close_agent(self) -> None:
        turn = self._turn
        if turn is not None and turn.is_running:
            self._queue.clear()
            turn.cancel()
            with contextlib.suppress(Exception):
                await turn.wait()
        agent, self.agent = self.agent, None
        if agent is not None:
            await agent.close()
        if self._read_only_dir is not None:
            self._read_only_dir.cleanup()
            self._read_only_dir = None

    async def on_unmount(self) -> None:
        await self._close_agent()

    # --- the header and notifications ----------------------------------------------------------

    def format_title(self, title: str, sub_title: str) -> Content:
        # Session titles come from the first message, and work dirs from the file system.
        return super().format_title(
            visible(title, multiline=False), visible(sub_title, multiline=False)
        )

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Every notification, the screens' and widgets' too: its text is never markup (errors
        and file names hold `[`) and shows control characters visibly."""
        super().notify(
            visible(message),
            title=visible(title, multiline=False),
            severity=severity,
            timeout=timeout,
            markup=False,
        )

    def _print_error_renderables(self) -> None:
        # A crash report quotes exception messages and, Textual's traceback showing locals, the
        # values of variables: text from a model or a file (escape sequences) and API keys.
        # Only the report's own styling reaches the terminal; its text is made visible and
        # masked, segment by segment (a string local is one segment).
        console = self.error_console
        self._exit_renderables[:] = [
            Segments(
                segment
                if segment.control
                else Segment(visible(masking.mask(segment.text)), segment.style)
                for segment in console.render(renderable, console.options)
            )
            for renderable in self._exit_renderables
        ]
        super()._print_error_renderables()

    def _update_header(self) -> None:
        session = self.session
        where = tilde(self.work_dir)
        parts = [where]
        if session is not None:
            parts.append(f"“{session.title}”")
        if self._choice is not None:
            parts.append(self._choice.name)
        if self.read_only:
            parts.append("read-only")
        elif self.agent is not None:
            parts.append(self.agent.soul.approval.mode)
        self.sub_title = " · ".join(parts)

    # --- messages and turns --------------------------------------------------------------------

    @on(PromptInput.Submitted)
    def _submitted(self, event: PromptInput.Submitted) -> None:
        text = event.text
        self._history.append(text)
        parsed = commands.parse(text)
        if parsed is not None:
            self.run_command(*parsed)
            return
        self.send(text)

    def send(self, text: str) -> None:
        """Send a message to the agent: now, or when the running turn ends."""
        if self.read_only:
            self.notify("This session is read-only.", severity="warning")
            return
        if self.agent is None:
            self._queue.append(text)
            self.notify("The agent is starting: your message goes as soon as it is ready.")
            return
        if self._turn is not None and self._turn.is_running:
            self._queue.append(text)
            self.notify("Queued: it is sent when this turn ends (Esc interrupts).", timeout=3)
            return
        self._turn = self.run_worker(self._run_turn(text), group="turn", exit_on_error=False)
        self.refresh_bindings()

    async def _run_turn(self, text: str) -> None:
        agent = self.agent
        assert agent is not None
        prompt = self.screen.query_one(PromptInput) if self._attached() else None
        if prompt is not None:
            prompt.busy = True
        try:
            await agent.soul.run(text)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # a bug must not take the app down with it
            log.exception("the turn failed")
            from kode_tui.wire.events import Error

            agent.bus.send(Error(message=f"The turn failed: {error}"))
        finally:
            if prompt is not None:
                prompt.busy = False
            await self._after_turn()

    async def _after_turn(self) -> None:
        if self.session is not None:
            await self.session.refresh()
        self._update_header()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker is self._turn and event.state in (
            WorkerState.SUCCESS,
            WorkerState.CANCELLED,
            WorkerState.ERROR,
        ):
            self.refresh_bindings()
            if self._queue:
                self.send(self._queue.pop(0))

    def action_interrupt(self) -> None:
        if self._turn is not None and self._turn.is_running:
            self._turn.cancel()
            self.notify("Interrupted.", timeout=2)

    async def action_interrupt_or_quit(self) -> None:
        """Ctrl+C as in other terminal agents: interrupt the turn, else clear the prompt, else
        quit when it is pressed again within two seconds."""
        if self._turn is not None and self._turn.is_running:
            self.action_interrupt()
            return
        prompt = self.focused if isinstance(self.focused, PromptInput) else None
        if prompt is not None and prompt.text:
            prompt.clear()
            return
        now = time.monotonic()
        if now - self._ctrl_c_at < CTRL_C_WINDOW_S:
            await self.action_quit()
            return
        self._ctrl_c_at = now
        self.notify("Press Ctrl+C again to quit.", timeout=CTRL_C_WINDOW_S)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "interrupt":
            return self._turn is not None and self._turn.is_running
        if action == "cycle_mode":
            return self.agent is not None
        return True

    async def action_cycle_mode(self) -> None:
        if self.agent is None:
            return
        mode = await self.agent.soul.approval.cycle_mode()
        self._update_header()
        self.notify(f"Approval mode: {mode}", timeout=3)

    def action_help(self) -> None:
        from kode_tui.ui.screens.help import HelpScreen, collect_bindings, focused_help

        # The app's own keys first; the text editor's cursor keys are every editor's.
        rows = [row for row in collect_bindings(self) if row[2] != "Prompt input"]
        rows.sort(key=lambda row: row[2] != "App")
        self.push_screen(HelpScreen(rows, focused_help(self), commands.completions()))

    def get_system_commands(self, screen: Screen[object]):  # type: ignore[no-untyped-def]
        yield from super().get_system_commands(screen)
        yield SystemCommand("Approval mode", "Cycle ask / auto-edit / yolo", self.action_cycle_mode)

    # --- slash commands ------------------------------------------------------------------------

    def run_command(self, name: str, argument: str) -> None:
        """Run a slash command (from the prompt or the palette)."""
        self._command(name, argument)

    @work(group="command", exit_on_error=False)
    async def _command(self, name: str, argument: str) -> None:
        handler = getattr(self, f"_cmd_{name.lstrip('/').replace('-', '_')}", None)
        if name not in commands.BY_NAME or handler is None:
            self.notify(f"Unknown command {name}. /help lists them.", severity="warning")
            return
        # Typed the moment the session appeared: wait for the agent, as a message would.
        while self.agent is None and self._agent_starting:
            await asyncio.sleep(0.02)
        try:
            await handler(argument)
        except ConfigError as error:
            self.notify(str(error), severity="error", timeout=8)

    async def _cmd_help(self, argument: str) -> None:
        self.action_help()

    async def _cmd_quit(self, argument: str) -> None:
        await self.action_quit()

    async def _cmd_new(self, argument: str) -> None:
        await self._close_agent()
        self.read_only = False
        await self._open(None, None)
        self.notify("New session.", timeout=2)

    async def _cmd_sessions(self, argument: str) -> None:
        from kode_tui.ui.screens.sessions import SessionPicker

        current = self.session.id if self.session is not None else None
        chosen = await self.push_screen_wait(SessionPicker(self.work_dir, current))
        if chosen is None or (self.session is not None and chosen.dir == self.session.dir):
            return
        await self._close_agent()
        self.read_only = False
        await self._open(chosen, None)

    def _busy(self) -> bool:
        if self._turn is not None and self._turn.is_running:
            self.notify("Wait for the turn to end, or press Esc.", severity="warning")
            return True
        if self.agent is None:
            message = "This session is read-only." if self.read_only else "No agent is running."
            self.notify(message, severity="warning")
            return True
        return False

    async def _cmd_clear(self, argument: str) -> None:
        if self._busy():
            return
        assert self.agent is not None
        rotated = await self.agent.context.clear()
        if rotated is not None:
            from kode_tui.wire.events import ContextCleared

            self.agent.bus.send(ContextCleared(rotated_file=rotated.name))
        self.agent.bus.send(self.agent.soul.status())
        from kode_tui.ui.widgets.conversation import Conversation

        await self.screen.query_one(Conversation).clear()
        self.notify("Cleared: the old context is kept in History.", timeout=3)

    async def _cmd_compact(self, argument: str) -> None:
        if self._busy():
            return
        assert self.agent is not None
        try:
            changed = await self.agent.soul.compact(argument or None)
        except Exception as error:  # an LLM failure is shown, the app goes on
            from kode_tui.wire.events import Error

            self.agent.bus.send(Error(message=f"Compaction failed: {error}"))
            return
        if not changed:
            self.notify("Nothing to compact.", timeout=3)

    async def _cmd_model(self, argument: str) -> None:
        if not argument:
            aliases = ", ".join(self.config.models) or "none"
            self.notify(
                f"Model: {self.choice.name} ({self.choice.model}). Aliases: {aliases}. "
                "/model NAME switches.",
                timeout=6,
            )
            return
        from kode_tui.config import resolve_model
        from kode_tui.soul.agent import make_provider

        choice = await asyncio.to_thread(resolve_model, self.config, argument)
        self._choice = choice
        if self.agent is not None:
            self.agent.soul.provider = make_provider(choice)
            self.agent.bus.send(self.agent.soul.status())
        self._preload_model()
        self._update_header()
        self.notify(f"Model: {choice.name}", timeout=3)

    async def _cmd_mode(self, argument: str) -> None:
        if self.agent is None:
            return
        if not argument:
            await self.action_cycle_mode()
            return
        mode = next((m for m in MODES if m == argument), None)
        if mode is None:
            self.notify(f"Modes are {', '.join(MODES)}.", severity="warning")
            return
        await self.agent.soul.approval.set_mode(mode)
        self._update_header()
        self.notify(f"Approval mode: {mode}", timeout=3)

    async def _cmd_theme(self, argument: str) -> None:
        if not argument:
            self.action_change_theme()
            return
        if argument not in self.available_themes:
            self.notify(f"No theme {argument}.", severity="warning")
            return
        self.theme = argument

    def _save_theme(self, theme: object) -> None:
        from kode_tui.config import save_setting

        name = self.theme
        try:
            save_setting("theme", name, self._config_file)
        except (OSError, ValueError, ConfigError) as error:
            log.warning("could not save the theme: %s", error)

    async def _cmd_context(self, argument: str) -> None:
        from kode_tui.ui.screens.dialogs import ContextScreen

        if self.agent is None:
            return
        soul = self.agent.soul
        if argument == "refresh" and soul.project is not None:
            await soul.project.refresh()
            self.notify("Project context collected again.", timeout=3)
        await self.push_screen(ContextScreen(await soul.context_report()))

    async def _cmd_title(self, argument: str) -> None:
        session = self.session
        if session is None:
            return
        if not argument:
            self.notify(f"Title: {session.title}", timeout=4)
            return
        session.state.custom_title = argument
        await asyncio.to_thread(session.save_state)
        self._update_header()

    # --- intents of the side panes ---------------------------------------------------------

    def on_checkpoint_timeline_revert_requested(
        self, event: CheckpointTimeline.RevertRequested
    ) -> None:
        self._revert(event.checkpoint_id)

    def on_history_pane_preview_requested(self, event: HistoryPane.PreviewRequested) -> None:
        self._preview(event.path)

    def on_checkpoint_timeline_diff_requested(
        self, event: CheckpointTimeline.DiffRequested
    ) -> None:
        self._diff(event.checkpoint_id, None)

    @work(exclusive=True, group="time-travel", exit_on_error=False)
    async def _diff(self, first: int, second: int | None) -> None:
        """What changed between two checkpoints (or from one to now): messages and files."""
        from kode_tui.session.compare import diff_checkpoints
        from kode_tui.ui.screens.compare import CompareScreen

        agent = self.agent
        if agent is None or agent.soul.env.journal is None:
            return
        try:
            diff = await asyncio.to_thread(
                diff_checkpoints, agent.context, first, second, agent.soul.env.journal
            )
        except ValueError as error:
            self.notify(f"{error}.", severity="warning")
            return
        to = f"checkpoint {second}" if second is not None else "now"
        await self.push_screen(CompareScreen(f"From checkpoint {first} to {to}", diff))

    async def _cmd_diff(self, argument: str) -> None:
        numbers = argument.split()
        if not numbers or len(numbers) > 2 or not all(n.isdigit() for n in numbers):
            self.notify("/diff A [B]: checkpoints of the timeline (B: now).", severity="warning")
            return
        self._diff(int(numbers[0]), int(numbers[1]) if len(numbers) == 2 else None)

    # --- time travel ---------------------------------------------------------------------------

    @work(exclusive=True, group="time-travel", exit_on_error=False)
    async def _revert(self, checkpoint_id: int) -> None:
        """Ask what reverting to `checkpoint_id` should take back, then do it."""
        from kode_tui.ui.screens.timetravel import RevertDialog
        from kode_tui.ui.widgets.prompt import PromptInput

        if self._busy():
            return
        assert self.agent is not None
        soul = self.agent.soul
        try:
            preview = soul.revert_preview(checkpoint_id)
        except ValueError as error:
            self.notify(f"{error}.", severity="warning")
            return
        label = _checkpoint_label(soul.context, checkpoint_id, preview.next_user_text)
        choice = await self.push_screen_wait(
            RevertDialog(
                checkpoint_id,
                label,
                preview.messages_leaving,
                preview.tokens_freed,
                preview.files,
                preview.next_user_text,
                await asyncio.to_thread(_conflict_diffs, preview.files, soul.env.journal),
            )
        )
        if choice is None:
            return
        outcome = await soul.revert(checkpoint_id, files=choice == "files")
        await self._reload_conversation()
        prompt = self.screen.query_one(PromptInput)
        prompt.text = outcome.next_user_text
        prompt.focus()
        parts = [
            f"Reverted to checkpoint {checkpoint_id}; {outcome.rotated_file.name} keeps the rest."
        ]
        if outcome.files_restored:
            parts.append(f"Restored {len(outcome.files_restored)} file(s).")
        if choice == "files" and outcome.conflicts:
            parts.append(f"Left alone (changed since): {', '.join(outcome.conflicts)}.")
        self.notify(
            " ".join(parts), timeout=8, severity="warning" if outcome.conflicts else "information"
        )

    @work(exclusive=True, group="time-travel", exit_on_error=False)
    async def _preview(self, path: Path) -> None:
        """Show a rotated context read-only; restore it when the user says so."""
        from kode_tui.session.timetravel import read_snapshot
        from kode_tui.ui.screens.timetravel import PreviewScreen

        if self.agent is None:
            return
        context = self.agent.context
        try:
            snapshot = await asyncio.to_thread(read_snapshot, path)
        except OSError as error:
            self.notify(f"Cannot read {path.name}: {error.strerror or error}", severity="error")
            return
        rotation = next((r for r in context.rotations() if r.path.name == path.name), None)
        wire_file = self.session.wire_file if self.session is not None else None
        restore = await self.push_screen_wait(
            PreviewScreen(snapshot, rotation, list(context.history), wire_file=wire_file)
        )
        if isinstance(restore, str):
            from kode_tui.ui.widgets.prompt import PromptInput

            prompt = self.screen.query_one(PromptInput)
            prompt.text = restore if not prompt.text else f"{prompt.text}\n\n{restore}"
            prompt.focus()
            return
        if not restore or self._busy():
            return
        rotated = await self.agent.soul.restore(path)
        await self._reload_conversation()
        kept = f"; the previous one is kept as {rotated.name}" if rotated is not None else ""
        self.notify(f"Restored {path.name}{kept}.", timeout=6)

    async def _reload_conversation(self) -> None:
        from kode_tui.soul.transcript import PastResults
        from kode_tui.ui.widgets.conversation import Conversation

        if self.agent is None or not self._attached():
            return
        conversation = self.screen.query_one(Conversation)
        await conversation.clear()
        session = self.session
        results = None
        if session is not None:
            results = await asyncio.to_thread(PastResults.read, session.wire_file)
        await conversation.load_history(self.agent.context.history, results)

    async def _cmd_revert(self, argument: str) -> None:
        if not argument.isdigit():
            self.notify("/revert N: N is a checkpoint of the timeline.", severity="warning")
            return
        self._revert(int(argument))

    async def _cmd_restore(self, argument: str) -> None:
        if self.agent is None:
            return
        name = argument if argument.endswith(".jsonl") else f"context_{argument}.jsonl"
        path = self.agent.context.path.with_name(name)
        if not argument or not path.is_file():
            self.notify(
                "/restore N: N is a rotated context of the History pane.", severity="warning"
            )
            return
        self._preview(path)


def _checkpoint_label(context: Context, checkpoint_id: int, user_text: str) -> str:
    """A checkpoint in a few words: the user's message there, else what the agent did next."""
    if user_text.strip():
        return user_text.strip().splitlines()[0]
    checkpoint = next(c for c in context.checkpoints if c.id == checkpoint_id)
    for message in context.history[checkpoint.message_index : checkpoint.message_index + 5]:
        if message.role != "assistant":
            continue
        if message.tool_calls:
            return ", ".join(call.function.name for call in message.tool_calls)
        if message.text.strip():
            return message.text.strip().splitlines()[0]
    return ""


def _conflict_diffs(plans: Sequence[FilePlan], journal: FileJournal | None) -> list[DiffBlock]:
    """For each conflicting file: what the agent left in it against what it holds now."""
    from kode_tui.wire.events import DiffBlock

    diffs = []
    for plan in plans:
        if plan.action != "conflict" or journal is None:
            continue
        agent = journal.blob(plan.expected) if plan.expected is not None else b""
        try:
            now = plan.target.read_bytes()
        except OSError:
            now = b""
        diffs.append(
            DiffBlock(
                path=plan.path,
                old_text=(agent or b"").decode("utf-8", "replace"),
                new_text=now.decode("utf-8", "replace"),
            )
        )
    return diffs
