"""The kode-tui app: one session's agent on the main screen.

The App owns the session and its agent. Widgets render wire events and post intents (a message
to send, a slash command, an approval answer); the App turns them into soul and session calls.
Turns run in a worker, so the screen stays live; Esc cancels the running turn, and a message
typed meanwhile is sent when the turn ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from textual import on, work
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from kode_tui import model_launch, prompt_history
from kode_tui.errors import ConfigError
from kode_tui.humanize import cut
from kode_tui.paths import Paths, tilde
from kode_tui.safetext import visible
from kode_tui.ui import collector, commands, preload
from kode_tui.ui.commands import SlashCommandProvider
from kode_tui.ui.compaction import CompactionActions
from kode_tui.ui.drop import DropActions
from kode_tui.ui.lineage import LineageActions
from kode_tui.ui.notify import Notifier
from kode_tui.ui.pins import PinActions
from kode_tui.ui.safe_output import SafeOutput
from kode_tui.ui.screen_hold import ScreenHold
from kode_tui.ui.screens.main import MainScreen
from kode_tui.ui.screenshot import Screenshots
from kode_tui.ui.shell import ShellActions
from kode_tui.ui.terminal_writes import TerminalWrites
from kode_tui.ui.themes import configured_theme, start_theme, watch_user_themes
from kode_tui.ui.travel import TimeTravelActions
from kode_tui.ui.widgets.prompt import PromptInput
from kode_tui.ui.widgets.prompt_habits import shell_command
from kode_tui.ui.widgets.prompt_images import Images, queued_line

if TYPE_CHECKING:
    # The config, the facade (session engine, agent), the wire, the panes: after the first frame.
    from kode_tui.config import Config, ModelChoice, PictureSetting
    from kode_tui.soul.facade import (
        AgentSession,
        ChatProvider,
        CommandPrompt,
        Match,
        Session,
        SessionLocked,
    )
    from kode_tui.ui.screens.dialogs import LockedChoice

log = logging.getLogger(__name__)

T = TypeVar("T")

CTRL_C_WINDOW_S = 2.0
"""A second Ctrl+C within this time quits."""
HEADER_TITLE = 48
"""Of the session's title, what the header shows (the picker shows the whole)."""

DEMO_BANNER = (
    "[b]Offline demo.[/b] No model is configured, so kode-tui runs [b]demo[/b]: a scripted "
    "agent, not an LLM. For a real model set [b]ANTHROPIC_API_KEY[/b], [b]OPENAI_API_KEY[/b] "
    "(or another key) before starting, or add a [b]\\[models][/b] entry to {config}."
)


class KodeApp(
    SafeOutput,
    TerminalWrites,
    Screenshots,
    TimeTravelActions,
    LineageActions,
    ShellActions,
    CompactionActions,
    PinActions,
    DropActions,
):
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
        # Not in the footer (full at 80 columns): F1 lists it.
        Binding("alt+t", "cycle_thinking", "Thinking effort", id="cycle_thinking", show=False),
    ]

    def __init__(
        self,
        work_dir: Path,
        config: Config | None = None,
        choice: ModelChoice | None = None,
        *,
        model: str | None = None,
        session: Session | None = None,
        opened: AgentSession | None = None,
        locked: SessionLocked | None = None,
        provider: ChatProvider | None = None,
        theme: str | None = None,
        yolo: bool = False,
        pick_session: bool = False,
        config_file: Path | None = None,
    ) -> None:
        """`session` is opened (a new one when None) unless `opened` is: a session the
        command line opened already; `locked` says another kode-tui writes `session`."""
        super().__init__()
        self.work_dir = work_dir
        self._config = config
        self._choice = choice
        self._model_flag = model
        self.config_error: ConfigError | None = None
        """Why the app stopped at start, when the config was wrong (the command shows it)."""
        self.agent_session: AgentSession | None = opened
        """The session on screen, through the one facade to the domain."""
        self._session_to_open = session
        self._locked = locked
        self._provider = provider
        start_theme(self, theme or (config.theme if config else configured_theme(config_file)))
        self._yolo = yolo
        self._config_file = config_file
        self._pick_session = pick_session
        self._turn: Worker[None] | None = None
        self._queue: list[tuple[str | CommandPrompt, Images]] = []  # each with its images
        self._screen_hold: ScreenHold | None = None  # while the first typed message goes
        self._ctrl_c_at = -CTRL_C_WINDOW_S
        self._agent_starting = False
        """Between the session being on screen and its agent being ready (or failing)."""
        self._history_file = prompt_history.history_file(work_dir)
        self._history: list[str] = prompt_history.load(self._history_file)
        self._stop_following = asyncio.Event()
        self._last_session: Session | None = None
        self.resume_command: str | None = None
        """How to open the last session shown again (None: nothing to go back to)."""

    @property
    def config(self) -> Config:
        assert self._config is not None, "the config is read after the first frame"
        return self._config

    @property
    def pictures(self) -> PictureSetting:
        """How the conversation draws images (the config's `pictures`; `auto` before it is read)."""
        return self._config.pictures if self._config is not None else "auto"

    @property
    def choice(self) -> ModelChoice:
        assert self._choice is not None, "the model is chosen after the first frame"
        return self._choice

    @property
    def session(self) -> Session | None:
        """The handle of the session on screen (its id, folder and title), or of the last one."""
        if self.agent_session is not None:
            return self.agent_session.session
        return self._last_session

    @property
    def agent_up(self) -> bool:
        """Whether the session on screen has its agent, and its panes show what it says."""
        opened = self.agent_session
        return opened is not None and opened.started and not self._agent_starting

    @property
    def read_only(self) -> bool:
        return self.agent_session is not None and self.agent_session.read_only is not None

    async def _load_settings(self) -> bool:
        """Load the agent's modules, read the config and choose the model, unless given, in one
        thread (keys still show meanwhile); False (and exit 2) when the config is wrong."""
        fresh = self._config is None
        try:
            config, choice = await asyncio.to_thread(
                preload.settings_after_first_frame,
                self._config_file,
                self._model_flag,
                self._config,
                self._choice,
            )
        except ConfigError as error:
            self.config_error = error
            self.exit(return_code=2)
            return False
        finally:
            collector.young_only()  # after start-up's imports (cli._run_app held it)
        self._config, self._choice = config, choice
        if fresh:
            self._watch_config()
        if choice.is_demo:
            model_launch.stop_early()  # the demo needs no model process
        return True

    @work(exclusive=True, group="config", exit_on_error=False)
    async def _watch_config(self) -> None:
        """Read the config file again whenever it changes (the facade's `watch_config`)."""
        from kode_tui.soul.facade import watch_config

        def say(line: str, error: bool) -> None:
            severity: SeverityLevel = "error" if error else "information"
            self.notify(visible(line), severity=severity, timeout=10 if error else 5, markup=False)

        await watch_config(self._config_file, self._use_config, say)

    async def _use_config(self, config: Config) -> str | None:
        """The config read again: its theme here, the rest through the session; what changed
        (None when only the theme did: a theme picked here and saved)."""
        old, self._config = self.config, config
        if config.theme != old.theme and config.theme in self.available_themes:
            self.theme = config.theme
        if config.model_copy(update={"theme": old.theme}) == old:
            return None
        if self.agent_session is None:
            return ""
        return await self.agent_session.use_config(config)

    # --- start and stop ------------------------------------------------------------------------

    async def on_mount(self) -> None:
        if self._provider is None and not (self._choice and self._choice.is_demo):
            # Before the first frame (the command line, before Textual loaded): the first
            # message typed must not wait for the model's library to import.
            chosen = self._choice.model if self._choice else self._model_flag
            model_launch.start_early(self._config_file, chosen)
        watch_user_themes(self)
        self.theme_changed_signal.subscribe(self, self._save_theme)  # a theme the user picks
        if self._locked is not None:
            self._ask_locked()
        elif self._pick_session:
            self._pick_first_session()
        else:
            new = self.agent_session is None and self._session_to_open is None
            await self._frame(new=new)  # a new session's side panes in the first frame
            self.call_after_refresh(self._open_after_frame)

    @work(exclusive=True, group="open")
    async def _open_after_frame(self) -> None:
        if not await self._load_settings():
            return
        opened = self.agent_session
        if opened is not None:
            self.agent_session = None
            await self._show(opened)
        else:
            await self._open(self._session_to_open)

    @work(exclusive=True, group="pick")
    async def _pick_first_session(self) -> None:
        from kode_tui.ui.screens.sessions import SessionPicker

        if not await self._load_settings():
            return
        chosen = await self.push_screen_wait(SessionPicker(self.work_dir))
        if chosen is None:
            self.exit()
            return
        await self._open(chosen)

    @work(exclusive=True, group="locked")
    async def _ask_locked(self) -> None:
        from kode_tui.soul.facade import AgentSession
        from kode_tui.ui.screens.dialogs import LockedScreen

        session, locked = self._session_to_open, self._locked
        assert session is not None and locked is not None
        self._locked = None
        if not await self._load_settings():
            return
        choice: LockedChoice = await self.push_screen_wait(LockedScreen(session.title, locked.pid))
        if choice == "quit":
            self.exit()
        elif choice == "new":
            await self._open(None)
        else:
            await self._show(await AgentSession.view(session))

    async def _open(self, session: Session | None) -> None:
        """Open `session` (a new one when None) and show it (the screen is up before it)."""
        from kode_tui.soul.facade import AgentSession, SessionLocked

        try:
            opened = await AgentSession.open(self.work_dir, session)
        except SessionLocked as locked:
            self._session_to_open, self._locked = session, locked
            self._ask_locked()
            return
        await self._show(opened)

    async def _show(self, opened: AgentSession) -> None:
        """Show `opened` on a main screen (a new one if the current has panes), and start it."""
        await self._close_session()
        self.agent_session = opened
        self.work_dir = opened.work_dir
        current = self.screen
        if isinstance(current, MainScreen) and not current.attached:
            screen = current
        else:
            screen = await self._frame()
        hold = None
        if opened.read_only is None:  # before the panes: they show its figures when first drawn
            await self._build_agent(opened)
            if self._queue:  # typed meanwhile: its request first, then the paint (ScreenHold)
                hold = self._screen_hold = ScreenHold(self)
        # A new session's panes show no history: they can come after that request too.
        later = hold is not None and screen.new_session
        banner = None
        if self.choice.is_demo and not self.read_only:
            config_path = self._config_file or Paths.current().config_file
            banner = DEMO_BANNER.format(config=tilde(config_path))
        await screen.attach(opened, banner, later=later)
        if not later:
            from kode_tui.ui.widgets.conversation import Conversation

            conversation = screen.query_one(Conversation)
            await conversation.load_history(*await opened.messages())
            conversation.load_earlier(opened.earlier)  # what came before a compaction, lazily
        self._update_header()
        collector.release()  # start-up's objects frozen, full collections back
        if opened.read_only is None:
            requested = self._agent_shown(opened)
            if hold is not None:  # keys typed meanwhile show while the conversation loads
                await hold.release_after(requested)
            if later:
                await screen.attach_later(opened)
            return
        for notice in opened.notices():  # with an agent, the soul says it (send_notices)
            self.notify(notice, severity="warning", timeout=8)
        if opened.read_only == "locked":
            self.notify("Read-only: another kode-tui is writing this session.", timeout=6)
            self._follow(opened)
        else:
            self.notify("Read-only: this session's folder cannot be written.", timeout=6)

    async def _build_agent(self, opened: AgentSession) -> None:
        self._agent_starting = True  # until its panes are up (`_agent_shown`): messages wait
        # With `[compaction] review = true` an automatic compaction waits for the review screen.
        opened.compaction.set_reviewer(self.review_automatic_compaction)
        try:
            await opened.start(
                self.config, self.choice, provider=self._provider, yolo=self._yolo, announce=False
            )
        except BaseException:
            self._agent_starting = False
            raise

    def _agent_shown(self, opened: AgentSession) -> asyncio.Future[None] | None:
        """The panes are up: the agent tells them what it is; what was typed meanwhile goes
        (done once its request is out)."""
        self._agent_starting = False
        opened.announce()
        requested = None
        if self._queue:  # typed while the agent was starting: its request before the footer's
            requested = opened.next_request()
            self.send(*self._queue.pop(0))
            self._queue_changed()
        self.refresh_bindings()
        return requested

    @work(exclusive=True, group="follow", exit_on_error=False)
    async def _follow(self, opened: AgentSession) -> None:
        """Keep a read-only view in step with the kode-tui writing the session."""
        from kode_tui.wire.events import ContextReloaded

        self._stop_following = asyncio.Event()
        reloads = opened.bus.subscribe(ContextReloaded)
        watcher = asyncio.ensure_future(opened.follow(self._stop_following))
        try:
            async for _event in reloads:
                await self._reload_conversation()
                self._update_header()
        finally:
            self._stop_following.set()
            reloads.close()
            await watcher

    async def _frame(self, *, new: bool = False) -> MainScreen:
        """A fresh main screen (for a new session if `new`), not attached yet (MainScreen)."""
        screen = MainScreen(
            self.work_dir, lambda: commands.completions(self), self._history, new_session=new
        )
        if self._has_main():
            await self.switch_screen(screen)
        else:
            await self.push_screen(screen)
        self._update_header()
        return screen

    def _has_main(self) -> bool:
        return any(isinstance(screen, MainScreen) for screen in self.screen_stack)

    def _attached(self) -> bool:
        screen = self.screen
        return isinstance(screen, MainScreen) and screen.attached

    async def action_quit(self) -> None:
        await self._close_session()
        self.exit()

    async def _close_session(self) -> None:
        """Stop the turn and close the session on screen, if any."""
        turn = self._turn
        if turn is not None and turn.is_running:
            self._queue.clear()
            self._queue_changed()
            turn.cancel()
            with contextlib.suppress(Exception):
                await turn.wait()
        self._stop_following.set()
        opened, self.agent_session = self.agent_session, None
        if opened is not None:
            await opened.close()
            self._last_session = opened.session
            writable = opened.read_only is None and opened.has_records()
            self.resume_command = opened.resume_command() if writable else None

    async def on_unmount(self) -> None:
        await self._close_session()

    # --- the header ----------------------------------------------------------------------------

    def _update_header(self) -> None:
        session = self.session
        where = tilde(self.work_dir)
        parts = [where]
        if session is not None:
            # The model and the mode after it must stay in sight.
            parts.append(f"“{cut(session.title, HEADER_TITLE)}”")
        if self._choice is not None:
            parts.append(self._choice.name)
            opened = self.agent_session
            if opened is not None and opened.thinking.supported and opened.thinking.level != "off":
                parts.append(f"think {opened.thinking.level}")
        if self.read_only:
            parts.append("read-only")
        elif self.agent_session is not None and self.agent_session.mode is not None:
            parts.append(self.agent_session.mode)
        self.sub_title = " · ".join(parts)

    # --- messages and turns --------------------------------------------------------------------

    @on(PromptInput.Submitted)
    def _submitted(self, event: PromptInput.Submitted) -> None:
        text, images = event.text, event.images
        if text:
            self._history.append(text)
            prompt_history.append(self._history_file, text)
        command = shell_command(text)
        if (command is not None or commands.parse(text) or self.read_only) and images:
            event.prompt.image_chips.put_back(images)  # only a message to the model takes them
        if command is not None:
            self.run_shell(command, event.prompt)
            return
        parsed = commands.parse(text)
        if parsed is not None:
            self.run_command(*parsed)
            return
        if self.read_only:
            # The text stays in the prompt: nothing typed is lost.
            event.prompt.text = text
            self.notify("This session is read-only: /new starts one you can write.")
            return
        self.send(text, images)

    def send(self, text: str | CommandPrompt, images: Images = ()) -> None:
        """Send a message (or a custom command's) to the agent, with the images attached to it:
        now, or when the turn ends."""
        opened = self.agent_session
        if opened is not None and opened.read_only is not None:
            self.notify("This session is read-only.", severity="warning")
            return
        if opened is None or not self.agent_up:
            self._queue.append((text, images))
            self._queue_changed()  # under the prompt: it waits for the agent
            return
        if self._turn is not None and self._turn.is_running:
            # Shown under the prompt until it goes (↑ takes it back, Ctrl+X drops it).
            self._queue.append((text, images))
            self._queue_changed()
            return
        self._turn = self.run_worker(
            self._run_turn(opened, text, images), group="turn", exit_on_error=False
        )
        self.refresh_bindings()

    async def _run_turn(
        self, opened: AgentSession, text: str | CommandPrompt, images: Images
    ) -> None:
        prompt = self.screen.query_one(PromptInput) if self._attached() else None
        if prompt is not None:
            prompt.busy = True
        try:
            with self._notifier().turn(opened.bus) as turn:
                if isinstance(text, str):
                    result = await opened.run(text, images)
                else:
                    result = await opened.custom.run(text)
                turn.failed = result.stop_reason == "error"
            unsent = turn.failed or result.stop_reason == "blocked"  # a hook's, or no vision
            if unsent and result.steps <= 1 and prompt is not None and not prompt.text:
                # The model never answered it: ready to send again, as it was typed.
                prompt.text = text if isinstance(text, str) else text.typed
                prompt.image_chips.put_back(images)
                self.notify("Your message is back in the prompt: fix that, then Enter.")
        finally:
            if prompt is not None:
                prompt.busy = False
            self._update_header()

    def _notifier(self) -> Notifier:
        def write(sequence: str) -> None:
            if not self.is_headless and self._driver is not None:
                self._driver.write(sequence)  # as Textual writes its own (the bell, OSC 52)

        return Notifier(self.config.notifications, write, lambda: self.app_focus)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker is self._turn and event.state in (
            WorkerState.SUCCESS,
            WorkerState.CANCELLED,
            WorkerState.ERROR,
        ):
            if not self.screen_stack:
                return  # the app is closing: its turn was cancelled after the last screen went
            self.refresh_bindings()
            if self._queue:
                self.send(*self._queue.pop(0))
                self._queue_changed()

    def _queue_changed(self) -> None:
        """Show the queue as it is now under the prompt."""
        shown = [queued_line(text, images) for text, images in self._queue]
        for screen in self.screen_stack:
            if isinstance(screen, MainScreen):
                screen.show_queue(shown, starting=not self.agent_up)

    @on(MainScreen.QueuedTaken)
    def _take_queued(self, event: MainScreen.QueuedTaken) -> None:
        if not self._queue:
            return
        text, images = self._queue.pop()
        self._queue_changed()
        if event.edit:
            prompt = self.screen.query_one(PromptInput)
            prompt.text = text if isinstance(text, str) else text.typed
            prompt.image_chips.put_back(images)
            prompt.move_cursor(prompt.document.end)
        else:
            self.notify("Not sent: dropped from the queue (↑ history still has it).", timeout=3)

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
        if prompt is not None and (prompt.text or prompt.image_chips.images):
            prompt.clear()
            prompt.image_chips.take()
            return
        now = time.monotonic()
        if now - self._ctrl_c_at < CTRL_C_WINDOW_S:
            await self.action_quit()
            return
        self._ctrl_c_at = now
        self.notify("Press Ctrl+C again to quit.", timeout=CTRL_C_WINDOW_S)

    def refresh_bindings(self) -> None:
        hold = self._screen_hold
        if hold is None or not hold.defer_bindings():
            super().refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "interrupt":
            return self._turn is not None and self._turn.is_running
        if action == "cycle_mode":
            return self.agent_up
        return True

    def action_cycle_mode(self) -> None:
        if self.agent_up:
            self.run_command("/mode", "")

    def action_cycle_thinking(self) -> None:
        """Alt+T: the next level (off → low → medium → high → off)."""
        opened = self.agent_session
        if opened is not None:
            self.run_command("/think", opened.thinking.following())

    def action_help(self) -> None:
        self.push_screen(commands.help_screen(self))

    def get_system_commands(self, screen: Screen[object]):  # type: ignore[no-untyped-def]
        yield from super().get_system_commands(screen)
        # The modes this session offers (plan; sandbox only where it works), not a fixed list.
        modes = self.agent_session.modes if self.agent_session is not None else ()
        said = f"Cycle {' / '.join(modes)}" if modes else "Cycle the approval mode"
        yield SystemCommand("Approval mode", said, self.action_cycle_mode)

    def _save_theme(self, theme: object) -> None:
        from kode_tui.config_save import save_setting

        name = self.theme
        try:
            save_setting("theme", name, self._config_file)
        except (OSError, ValueError, ConfigError) as error:
            log.warning("could not save the theme: %s", error)

    # --- slash commands (ui/commands.py runs them; the app is their CommandHost) --------------

    def run_command(self, name: str, argument: str, *, match: Match | None = None) -> None:
        """Run a slash command (from the prompt, the palette or a pane's intent); `match`: the
        search match a `/restore`'s preview opens at."""
        self._command(name, argument, match)

    @work(group="command", exit_on_error=False)
    async def _command(self, name: str, argument: str, match: Match | None) -> None:
        try:
            await commands.run(self, name, argument, match)
        except ConfigError as error:
            self.notify(str(error), severity="error", timeout=8)

    async def agent_ready(self) -> None:
        """Wait while the agent starts (a command typed the moment the session appeared)."""
        while self._agent_starting:
            await asyncio.sleep(0.02)

    async def show(self, screen: Screen[Any]) -> None:
        await self.push_screen(screen)

    async def ask(self, screen: Screen[T]) -> T:
        return await self.push_screen_wait(screen)

    def fill_prompt(self, text: str, *, append: bool = False) -> None:
        """Put `text` in the prompt, to be completed or sent (the palette's custom command);
        with `append`, after what it holds (a preview's quoted messages)."""
        for prompt in self.screen.query(PromptInput):
            prompt.text = f"{prompt.text}\n\n{text}" if append and prompt.text else text
            prompt.move_cursor(prompt.document.end)
            prompt.focus()

    async def new_session(self, session: Session | None = None) -> None:
        """Open `session` (a new one when None) in place of the one on screen."""
        await self._close_session()
        await self._open(session)

    def update_header(self) -> None:
        self._update_header()

    def set_choice(self, choice: ModelChoice) -> None:
        """The model switched (/model, which started its model process): show it. A real
        model puts the offline-demo notice away (it stays away if `demo` is chosen again,
        which the user does knowingly)."""
        self._choice = choice
        self._update_header()
        if not choice.is_demo:
            for screen in self.screen_stack:
                if isinstance(screen, MainScreen):
                    screen.query("#banner").remove()
