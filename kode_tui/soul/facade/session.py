"""`AgentSession`: one session as a front end sees it (DESIGN.md §1, §9).

The TUI, print mode and ACP open an `AgentSession` and call it; they render the wire events it
and the soul send on `bus`, and hold plain data objects, never the `Context`, the session's
files or the tools. The session itself does little: open, start, a turn (`run`, `run_shell`,
`interrupt`), the status, the model and the approval mode, the title, `clear`. The rest is in
its parts, each with the one holder of the live state (`Live`) they share:

- `travel`: the timeline and the rotated contexts with their lineage, plans and their
  application for a revert and for a restore, the diff between checkpoints, a preview;
- `lineage`: search and fork;  `pins`: pinned notes;  `drops`: dropping messages;
- `compaction`: compacting at once, or planned and applied once reviewed;
- `mcp`: the MCP servers;  `thinking`: the thinking effort;  `permissions`: the session's
  approvals and the sandbox;
- `custom`: the custom slash commands (the built-in ones run over a session:
  `kode_tui.soul.facade.commands`).

Opening comes in two moves, so a screen can show the conversation before the agent (tools,
project context, the model's library) is ready: `open()` restores the context, `start()`
builds the agent.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import logging
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kode_tui.config import ApprovalMode, Config, ConfigError, ModelChoice, check_model
from kode_tui.message import Message
from kode_tui.session import Context, Session, SessionLocked
from kode_tui.session.context import restore_or_view
from kode_tui.session.rotation import ROTATIONS_LOG
from kode_tui.session.session import CONTEXT_FILE_NAME
from kode_tui.soul import vision
from kode_tui.soul.attachments import ImageAttachment, prompt_content
from kode_tui.soul.context_report import ContextReport
from kode_tui.soul.cost import CostLedger, CostReport
from kode_tui.soul.facade.compaction import Compaction
from kode_tui.soul.facade.config_watch import what_changed
from kode_tui.soul.facade.custom import Custom
from kode_tui.soul.facade.drops import Drops
from kode_tui.soul.facade.lineage import Lineage
from kode_tui.soul.facade.live import Live, ReadOnly
from kode_tui.soul.facade.mcp import Mcp
from kode_tui.soul.facade.permissions import Permissions
from kode_tui.soul.facade.pins import Pins
from kode_tui.soul.facade.tasks import Tasks
from kode_tui.soul.facade.thinking import Thinking
from kode_tui.soul.llm import ChatProvider
from kode_tui.soul.llm.model_map import ModelOption
from kode_tui.soul.soul import TurnResult
from kode_tui.soul.storage_notes import damaged_notice
from kode_tui.soul.transcript import PastResults
from kode_tui.wire import events as ev
from kode_tui.wire.bus import WireBus

if TYPE_CHECKING:
    from kode_tui.session.earlier import EarlierContexts
    from kode_tui.soul.facade.travel import TimeTravel

__all__ = ["MODES", "AgentSession"]

log = logging.getLogger(__name__)


MODES: tuple[ApprovalMode, ...] = ("ask", "auto-edit", "plan", "sandbox", "yolo")
"""Every approval mode; `AgentSession.modes` gives those offered (no sandbox: no `sandbox`)."""


class AgentSession:
    """One session as a front end sees it: its conversation, its agent and its parts."""

    def __init__(
        self,
        session: Session,
        context: Context,
        *,
        work_dir: Path | None = None,
        read_only: ReadOnly | None = None,
        copy_dir: tempfile.TemporaryDirectory[str] | None = None,
    ) -> None:
        live = Live(
            session, context, WireBus(), session.work_dir or work_dir or Path.cwd(), read_only
        )
        self._live = live
        self._copy_dir = copy_dir
        self._closed = False
        self._measuring: asyncio.Future[None] | None = None
        self.keep_if_empty = False
        """Keep the session at `close()` though nobody talked in it: a front end whose client
        holds its id (ACP: `session/new`, then `session/load` by a later process) sets it."""
        self.lineage = Lineage(live, lambda: self.travel)
        """Search and fork."""
        self.pins = Pins(live)
        """The pinned notes."""
        self.drops = Drops(live)
        """Dropping messages from the context."""
        self.compaction = Compaction(live)
        """Compacting, at once or reviewed."""
        self.mcp = Mcp(live)
        """The MCP servers."""
        self.thinking = Thinking(live)
        """The thinking effort."""
        self.permissions = Permissions(live)
        """The session's approvals and the sandbox."""
        self.tasks = Tasks(live)
        """The background tasks (`/tasks`)."""
        self.custom = Custom(live, self.run)
        """The custom slash commands (the built-in ones: `kode_tui.soul.facade.commands`)."""

    @functools.cached_property
    def travel(self) -> TimeTravel:
        """Time travel: the timeline, rotated contexts, revert, restore, diff, preview."""
        # Loaded when a front end first asks (its timeline pane, a command), not before the
        # agent's first request (~8 ms with the time machine's modules).
        from kode_tui.soul.facade.travel import TimeTravel

        return TimeTravel(self._live)

    # --- opening and closing ---------------------------------------------------------------------

    @classmethod
    async def open(cls, work_dir: Path, session: Session | None = None) -> AgentSession:
        """`session` (a new one in `work_dir` when None) with its context restored.

        A session whose folder cannot be written opens read-only; SessionLocked when another
        kode-tui is writing it (`view()` shows it then).
        """
        if session is None:
            session = await Session.create(work_dir)
        context = await restore_or_view(session.context_file)
        if session.work_dir is not None and not context.read_only:
            session.mark_last()
        return cls(
            session,
            context,
            work_dir=work_dir,
            read_only="unwritable" if context.read_only else None,
        )

    @classmethod
    async def view(cls, session: Session) -> AgentSession:
        """A read-only view of a session another kode-tui is writing; `follow()` keeps it
        up to date. It reads copies of the files, so the writer's lock and files are untouched."""
        copy_dir = tempfile.TemporaryDirectory(prefix="kode-tui-read-only-")
        context = await asyncio.to_thread(_copy_context, session.dir, Path(copy_dir.name))
        await context.restore()
        return cls(session, context, read_only="locked", copy_dir=copy_dir)

    @staticmethod
    async def named(work_dir: Path, name: str) -> Session:
        """The session `name` names for `work_dir`: a kode-tui session's id, else a Kimi CLI
        session's id (in Kimi's own store), or a session folder's absolute path (ACP's
        `session/load`). LookupError when there is none; ValueError, FileNotFoundError for a
        path that is no session folder (the message says why)."""
        if Path(name).is_absolute():
            return await Session.from_dir(Path(name), work_dir)
        found = await Session.find(work_dir, name) or await Session.find_kimi(work_dir, name)
        if found is None:
            raise LookupError(f"there is no session {name} in {work_dir}.")
        return found

    async def follow(self, stop: asyncio.Event) -> None:
        """For a view of a session another kode-tui writes: read its files again whenever they
        change, and send ContextReloaded, until `stop` is set. Returns at once otherwise."""
        if self.read_only != "locked":
            return
        from kode_tui import watching
        from kode_tui.soul.facade.travel import WATCH_DEBOUNCE_MS

        def is_context_file(change: object, path: str) -> bool:
            name = os.path.basename(path)
            return name == CONTEXT_FILE_NAME or self.travel.is_rotation_file(name)

        async for _changes in watching.changes(
            self.session.dir,
            watch_filter=is_context_file,
            debounce=WATCH_DEBOUNCE_MS,
            step=50,
            stop_event=stop,
            recursive=False,
        ):
            await self._reload()

    async def _reload(self) -> None:
        # A fresh copy each time: the old one may still be mapped by the context being replaced.
        live = self._live
        copy_dir = tempfile.TemporaryDirectory(prefix="kode-tui-read-only-")
        try:
            context = await asyncio.to_thread(_copy_context, live.session.dir, Path(copy_dir.name))
            await context.restore()
        except (OSError, SessionLocked) as error:
            copy_dir.cleanup()
            log.warning("could not read %s again: %s", live.session.dir, error)
            return
        old, old_dir = live.context, self._copy_dir
        live.context, self._copy_dir = context, copy_dir
        self.travel.forget_summaries()
        await old.close()
        if old_dir is not None:
            old_dir.cleanup()
        await live.session.refresh()
        live.bus.send(ev.ContextReloaded())

    @staticmethod
    def load_agent() -> None:
        """Import what `start()` builds the agent with (~35 ms), ahead of it: a front end may,
        in a thread, while its screen comes up. The sandbox's check (bubblewrap run once, ~10
        ms of waiting) starts first, in a thread of its own, and runs meanwhile."""
        from kode_tui.tools import sandbox

        sandbox.check_in_background()
        importlib.import_module("kode_tui.soul.agent")

    async def start(
        self,
        config: Config,
        choice: ModelChoice,
        *,
        provider: ChatProvider | None = None,
        yolo: bool = False,
        mode: ApprovalMode | None = None,
        announce: bool = True,
    ) -> None:
        """Build the agent: tools, approvals, project context, the model `choice` names
        (`provider` answers instead, in tests). A read-only session gets no agent. `mode`
        (`--permission-mode`; `yolo` is `mode="yolo"`) holds for this run, unsaved. Without
        `announce`, the caller calls `announce()` once its views are subscribed."""
        live = self._live
        live.config, live.choice = config, choice
        if live.read_only is not None or live.agent is not None:
            return
        from kode_tui.soul.agent import open_agent

        agent = live.agent = await open_agent(
            live.session,
            config,
            choice,
            context=live.context,
            bus=live.bus,
            provider=provider,
            approval_override="yolo" if yolo else mode,
            work_dir=live.work_dir,
        )
        self.thinking.apply()
        self.compaction.install(agent.soul)
        if announce:
            self.announce()

    def announce(self) -> None:
        """Tell the views subscribed to the wire what the agent is at start: the session's
        notices, the approval mode, the SessionStart hooks, the prompt's size (measured in the
        background). Once, after `start()`; a front end that builds the agent before its views
        subscribe (the TUI, so the first message does not wait for the panes) calls it then."""
        agent = self._live.agent
        if agent is None or self._measuring is not None:
            return
        live = self._live
        # What the user should know of the opened session (damaged lines skipped) shows at
        # once, not with the first answer.
        agent.soul.send_notices()
        agent.soul.approval.announce()
        agent.soul.hooks.start_session("resume" if live.context.history else "startup")
        # The gauge shows the prompt's size before the first request, once the project context
        # is collected (in the background: the agent is ready without it).
        self._measuring = asyncio.ensure_future(agent.soul.announce_prompt())

    async def close(self) -> None:
        """Stop the turn, make everything durable, let go of the session (once); a session
        nobody talked in is removed (`Session.remove_if_empty`)."""
        if self._closed:
            return
        self._closed = True
        live = self._live
        self.interrupt()
        if self._measuring is not None:
            self._measuring.cancel()
            with contextlib.suppress(BaseException):
                await self._measuring
        turn = live.turn
        if turn is not None:
            with contextlib.suppress(BaseException):
                await turn
        agent, live.agent = live.agent, None
        if agent is not None:
            await agent.close()
        else:
            await live.context.close()
        if self._copy_dir is not None:
            self._copy_dir.cleanup()
            self._copy_dir = None
        elif (
            live.read_only is None
            and not self.keep_if_empty
            and await asyncio.to_thread(live.session.remove_if_empty)
        ):
            # Opened and left without a word (or a print run that sent nothing): no session
            # to list, as Kimi CLI does.
            log.info("removed the empty session %s", live.session.dir)

    # --- what front ends show ------------------------------------------------------------------

    @property
    def session(self) -> Session:
        """The session's handle: id, folder, title (front ends read it, never its files)."""
        return self._live.session

    @property
    def bus(self) -> WireBus:
        """Where the session's events are sent."""
        return self._live.bus

    @property
    def read_only(self) -> ReadOnly | None:
        """Why nothing can be sent: another kode-tui writes it, or its folder is read-only."""
        return self._live.read_only

    @property
    def choice(self) -> ModelChoice | None:
        """The model chosen (`start()`, `set_model`)."""
        return self._live.choice

    @property
    def started(self) -> bool:
        """Whether the agent is up (a turn can run)."""
        return self._live.agent is not None

    @property
    def id(self) -> str:
        return self.session.id

    @property
    def title(self) -> str:
        return self.session.title

    @property
    def work_dir(self) -> Path:
        """Where the tools run."""
        return self._live.work_dir

    def status(self) -> ev.StatusUpdate | None:
        """The gauge's numbers now (None before the agent is up)."""
        soul = self._live.running
        return soul.status() if soul is not None else None

    def notices(self) -> list[str]:
        """What a view should say of the opened context (damaged lines skipped); the agent
        sends them as warnings itself."""
        return damaged_notice(self._live.context)

    def resume_command(self) -> str:
        return self.session.resume_command()

    def has_records(self) -> bool:
        try:
            return self.session.context_file.stat().st_size > 0
        except OSError:
            return False

    async def messages(self) -> tuple[Sequence[Message], PastResults | None]:
        """The conversation so far, with what its tool calls showed (read from wire.jsonl)."""
        results = await asyncio.to_thread(PastResults.read, self.session.wire_file)
        return self._live.context.history, results

    async def earlier(self) -> EarlierContexts:
        """The rotated contexts the conversation was compacted from, newest first: history a
        front end may show above it, read-only (`read_earlier` reads one). Reads the rotation
        notes (and a Kimi CLI rotation's files, which have none)."""
        # Loaded for a session that has earlier contexts to show, not with every session.
        from kode_tui.session.earlier import compacted_from
        from kode_tui.session.generations import infer_rotations

        context = self._live.context
        return await asyncio.to_thread(
            lambda: compacted_from(infer_rotations(context.rotations(), context.path))
        )

    async def context_report(self, *, refresh: bool = False) -> ContextReport | None:
        """What the model is given (`/context`); with `refresh` the project context is
        collected again first. None before the agent is up."""
        soul = self._live.running
        if soul is None:
            return None
        if refresh and soul.project is not None:
            await soul.project.refresh()
        return await soul.context_report()

    def cost(self) -> CostReport:
        """What the session's model calls cost, per model and per turn (`/cost`)."""
        return CostLedger(self.session.state).report()

    async def set_title(self, title: str) -> None:
        self.session.state.custom_title = title
        await asyncio.to_thread(self.session.save_state)

    # --- a turn ----------------------------------------------------------------------------------

    async def run(self, text: str, images: Sequence[ImageAttachment] = ()) -> TurnResult:
        """One turn for the user's message and the images attached to it. `interrupt()` (or
        cancelling the caller) stops it with CancelledError after the soul sent
        StepInterrupted and TurnEnd. Images for a model that takes none: nothing is sent, a
        Warning says why in one line, and the result is `blocked` (the prompt is kept)."""
        soul = self._live.soul()
        if images and not vision.takes_images(soul.provider):
            why = (
                f"{soul.provider.model_name} does not take images: remove them, or switch with "
                "/model to one that does (`vision = true` on a model's alias says it does)."
            )
            self.bus.send(ev.Warning(message=why))  # every front end says it, as a hook's block
            return TurnResult("blocked", 0, why)
        try:
            return await self._live.as_turn(soul.run(prompt_content(text, images)))
        except asyncio.CancelledError:
            raise
        except Exception as error:  # a bug must not take the front end down with it
            log.exception("the turn failed")
            self.bus.send(ev.Error(message=f"The turn failed: {error}"))
            return TurnResult("error", 0, str(error))

    def next_request(self) -> asyncio.Future[None]:
        """Done once the agent's next request is handed to the model: a front end can hold its
        screen's update until then (`RequestsWatched.next`)."""
        return self._live.soul().requests.next()

    async def run_shell(self, command: str) -> bool:
        """Run `command` (what followed the `!`) in the work dir as the user's own, unasked and
        outside the sandbox, and add it with its output to the context; no model turn starts.
        Whether it ran. `interrupt()` stops it (and its processes), adding nothing."""
        soul = self._live.soul()
        try:
            return await self._live.as_turn(soul.shell_escape.run(command))
        except asyncio.CancelledError:
            raise
        except Exception as error:  # a bug must not take the front end down with it
            log.exception("the shell command failed")
            self.bus.send(ev.Error(message=f"The command failed: {error}"))
            return False

    def interrupt(self) -> bool:
        """Stop the running turn; whether one was running."""
        turn = self._live.turn
        if turn is None or turn.done():
            return False
        turn.cancel()
        return True

    @property
    def turn_running(self) -> bool:
        return self._live.turn_running

    async def clear(self) -> str | None:
        """Start the conversation afresh; the name of the file that keeps the old one."""
        soul = self._live.soul()
        rotated = await soul.context.clear()
        await soul.context_swapped()
        if rotated is not None:
            self.bus.send(ev.ContextCleared(rotated_file=rotated.name))
        self.bus.send(soul.status())
        soul.hooks.start_session("clear")
        return rotated.name if rotated is not None else None

    # --- the model and the approval mode -------------------------------------------------------

    @property
    def model_name(self) -> str:
        """The model the requests go to."""
        soul = self._live.running
        if soul is not None:
            return soul.provider.model_name
        choice = self._live.choice
        return choice.model if choice is not None else ""

    async def set_model(self, name: str) -> ModelChoice:
        """Switch to the model `name` names (an alias, `demo` or a `provider/model` string);
        ConfigError, the model unchanged, when it is unknown or its key is not set. The next
        request uses it."""
        from kode_tui.soul.agent import make_provider

        live = self._live
        config = live.config or Config()
        choice = check_model(config, name)
        live.choice = choice
        soul = live.running
        if soul is not None:
            soul.provider = make_provider(choice, config.loop_control)
            self.thinking.apply()
            self.bus.send(soul.status())
        return choice

    async def use_config(self, config: Config) -> str:
        """Take the config read again (config.toml changed); what changed, in a line for the
        user (`model two added; hooks: from the next session`; "" when nothing did).

        `[models]` (`/model`'s list, and the settings of the model in use, from its next
        request), `[loop_control]` and `[compaction] review` apply at once; what the agent is
        built from applies to the next session opened (`config_watch.NEXT_SESSION`), and
        `default_model` at the next start.
        """
        from kode_tui.soul.agent import loop_settings

        live = self._live
        old, live.config = live.config or Config(), config
        soul, choice = live.running, live.choice
        said = what_changed(old, config)
        if soul is not None:
            soul.settings = loop_settings(config.loop_control)
        if soul is not None and choice is not None and not choice.is_demo:
            timeouts = ("request_timeout", "first_token_timeout")
            if old.models.get(choice.name) != config.models.get(choice.name) or any(
                getattr(old.loop_control, key) != getattr(config.loop_control, key)
                for key in timeouts
            ):
                try:
                    await self.set_model(choice.name)
                except ConfigError as error:
                    said.append(f"the model in use stays as it was: {error}")
        return "; ".join(said)

    def model_options(self) -> list[ModelOption]:
        """What `/model` offers: the configured aliases, `demo`, then known models of each
        provider whose key is set, with the context size and price of litellm's model map."""
        from kode_tui.soul.llm.model_map import model_options

        return model_options(self._live.config or Config())

    @property
    def mode(self) -> ApprovalMode | None:
        """The approval mode, once the agent is up."""
        soul = self._live.running
        return soul.approval.mode if soul is not None else None

    @property
    def modes(self) -> tuple[ApprovalMode, ...]:
        """The approval modes offered: `sandbox` only where the Shell sandbox works."""
        soul = self._live.running
        if soul is None:
            return tuple(mode for mode in MODES if mode != "sandbox")
        return soul.approval.modes

    async def set_mode(self, mode: ApprovalMode) -> None:
        """ValueError when `mode` is not offered (`modes`)."""
        await self._live.soul().approval.set_mode(mode)

    async def cycle_mode(self) -> ApprovalMode:
        return await self._live.soul().approval.cycle_mode()


# --- helpers -------------------------------------------------------------------------------------


def _copy_context(session_dir: Path, copy: Path) -> Context:
    for path in session_dir.glob("context*.jsonl"):
        shutil.copy2(path, copy / path.name)
    if (session_dir / ROTATIONS_LOG).exists():
        shutil.copy2(session_dir / ROTATIONS_LOG, copy / ROTATIONS_LOG)
    return Context(copy / CONTEXT_FILE_NAME)
