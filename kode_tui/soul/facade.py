"""The one way in for front ends: a session, its agent and its time travel (DESIGN.md §1, §9).

The TUI, print mode and the front ends to come (stream-JSON, ACP) open an `AgentSession` and
call its methods; they render the wire events it and the soul send on `bus`, and hold plain
data objects, never the `Context`, the session's files or the tools. Whatever a front end may
do is here, once, so it behaves alike in each of them:

- open: a new session, one found by id or path, or a read-only view of one another kode-tui is
  writing (it follows the writer's new turns, checkpoints and rotations) or that cannot be
  written;
- a shell command the user typed after `!` (`run_shell`: approved as a Shell call, its output
  added to the context, no model turn);
- a turn (`run`, `interrupt`), approvals (`ev.ApprovalRequest.resolve`), `clear`, `compact`
  (or reviewed: `plan_compaction`, then `apply_compaction` with the edited summary),
  the model and approval mode, the session's approvals and their revoking, the title, the
  context report;
- the MCP servers (`mcp_status`, `mcp_reconnect`, `mcp_set_enabled`, `mcp_ready`);
- time travel: the timeline and the rotated contexts with their lineage, plans and their
  application for a revert and for a restore (conversation only, or with the files), the diff
  between checkpoints and a rotated context's preview.

Opening comes in two moves, so a screen can show the conversation before the agent (tools,
project context, the model's library) is ready: `open()` restores the context, `start()`
builds the agent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from kode_tui.config import ApprovalMode, Config, ModelChoice, check_model
from kode_tui.message import Message
from kode_tui.session import Checkpoint, Context, FileEdit, Rotation, Session, SessionLocked
from kode_tui.session.catalog import ContextStats, SessionCatalog, SessionRow
from kode_tui.session.compare import CheckpointDiff, FileChange, diff_snapshot
from kode_tui.session.context import restore_or_view
from kode_tui.session.rotation import ROTATIONS_LOG, list_rotations
from kode_tui.session.session import CONTEXT_FILE_NAME
from kode_tui.session.state import ThinkingLevel
from kode_tui.session.timetravel import (
    Comparison,
    ContextSnapshot,
    FileAction,
    FilePlan,
    compare,
    read_snapshot,
)
from kode_tui.soul import thinking
from kode_tui.soul.approval import SessionPermission
from kode_tui.soul.compacting import CompactionPlan, Reviewer
from kode_tui.soul.compaction import COMPACTION_OUTPUT_PREFIX
from kode_tui.soul.context_report import ContextReport, ContextRow, row_lines
from kode_tui.soul.cost import CostLedger, CostReport, ModelCost, TurnCost, cost_lines
from kode_tui.soul.custom_commands import CommandListing, CommandProblem, CustomCommand
from kode_tui.soul.facade_commands import CommandPrompt, Commands
from kode_tui.soul.facade_drop import DropPlan, Drops
from kode_tui.soul.facade_lineage import Lineage, LineageNote, Match, lineage_note
from kode_tui.soul.facade_mcp import Mcp, McpServerInfo, McpToolInfo
from kode_tui.soul.facade_pins import Pins
from kode_tui.soul.facade_travel import (
    WATCH_DEBOUNCE_MS,
    RestorePlan,
    RevertPlan,
    RotationEntry,
    RotationPreview,
    TimelineState,
    TimeTravel,
)
from kode_tui.soul.hooks import CompactionBlocked
from kode_tui.soul.llm import ChatProvider, LLMError
from kode_tui.soul.llm.demo import DemoProvider
from kode_tui.soul.llm.model_map import ModelOption
from kode_tui.soul.shell_escape import ShellRecord, read_record, typed_text
from kode_tui.soul.soul import (
    KodeSoul,
    RestoreOutcome,
    RestorePreview,
    RevertOutcome,
    TurnResult,
    damaged_notice,
)
from kode_tui.soul.stream_json import StreamJson, TurnTally
from kode_tui.soul.thinking import LEVELS as THINKING_LEVELS
from kode_tui.soul.thinking import next_level as next_thinking_level
from kode_tui.soul.thinking import parse_level as parse_thinking_level
from kode_tui.soul.transcript import PastResults, stored_result
from kode_tui.wire import events as ev
from kode_tui.wire.bus import Subscription, WireBus

if TYPE_CHECKING:
    from kode_tui.soul.agent import Agent

__all__ = [
    "COMPACTION_OUTPUT_PREFIX",
    "MODES",
    "THINKING_LEVELS",
    "AgentSession",
    "ChatProvider",
    "Checkpoint",
    "CheckpointDiff",
    "CommandListing",
    "CommandProblem",
    "CommandPrompt",
    "CompactionBlocked",
    "CompactionPlan",
    "Comparison",
    "ContextReport",
    "ContextRow",
    "ContextSnapshot",
    "ContextStats",
    "CostReport",
    "CustomCommand",
    "DemoProvider",
    "DropPlan",
    "FileAction",
    "FileChange",
    "FileEdit",
    "FilePlan",
    "LLMError",
    "LineageNote",
    "Match",
    "McpServerInfo",
    "McpToolInfo",
    "Message",
    "ModelCost",
    "ModelOption",
    "PastResults",
    "RestoreOutcome",
    "RestorePlan",
    "RestorePreview",
    "RevertOutcome",
    "RevertPlan",
    "Rotation",
    "RotationEntry",
    "RotationPreview",
    "Session",
    "SessionCatalog",
    "SessionLocked",
    "SessionPermission",
    "SessionRow",
    "ShellRecord",
    "StreamJson",
    "Subscription",
    "ThinkingLevel",
    "TimelineState",
    "TurnCost",
    "TurnResult",
    "TurnTally",
    "WireBus",
    "compare",
    "cost_lines",
    "diff_snapshot",
    "lineage_note",
    "list_rotations",
    "next_thinking_level",
    "parse_thinking_level",
    "read_record",
    "read_snapshot",
    "row_lines",
    "stored_result",
    "typed_text",
]

log = logging.getLogger(__name__)

MODES: tuple[ApprovalMode, ...] = ("ask", "auto-edit", "sandbox", "yolo")
"""Every approval mode; `AgentSession.modes` gives those offered (no sandbox: no `sandbox`)."""


# --- the facade ----------------------------------------------------------------------------------


class AgentSession(TimeTravel, Lineage, Pins, Drops, Commands, Mcp):
    """One session as a front end sees it: its conversation, its agent and its history."""

    def __init__(
        self,
        session: Session,
        context: Context,
        *,
        work_dir: Path | None = None,
        read_only: Literal["locked", "unwritable"] | None = None,
        copy_dir: tempfile.TemporaryDirectory[str] | None = None,
    ) -> None:
        self.session = session
        self._work_dir = session.work_dir or work_dir or Path.cwd()
        """The session's handle: id, folder, title (front ends read it, never its files)."""
        self.bus = WireBus()
        self.read_only = read_only
        """Why nothing can be sent: another kode-tui writes it, or its folder is read-only."""
        self.config: Config | None = None
        self.choice: ModelChoice | None = None
        """The model, once `start()` was given it."""
        self._context = context
        self._copy_dir = copy_dir
        self._agent: Agent | None = None
        self._turn: asyncio.Task[object] | None = None
        self._summaries: dict[tuple[str, int, float], tuple[int, int] | None] = {}
        self._closed = False
        self._compaction_reviewer: Reviewer | None = None
        self._measuring: asyncio.Future[None] | None = None

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

    async def follow(self, stop: asyncio.Event) -> None:
        """For a view of a session another kode-tui writes: read its files again whenever they
        change, and send ContextReloaded, until `stop` is set. Returns at once otherwise."""
        if self.read_only != "locked":
            return
        from watchfiles import awatch

        def is_context_file(change: object, path: str) -> bool:
            name = os.path.basename(path)
            return name == CONTEXT_FILE_NAME or self.is_rotation_file(name)

        async for _changes in awatch(
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
        copy_dir = tempfile.TemporaryDirectory(prefix="kode-tui-read-only-")
        try:
            context = await asyncio.to_thread(_copy_context, self.session.dir, Path(copy_dir.name))
            await context.restore()
        except (OSError, SessionLocked) as error:
            copy_dir.cleanup()
            log.warning("could not read %s again: %s", self.session.dir, error)
            return
        old, old_dir = self._context, self._copy_dir
        self._context, self._copy_dir = context, copy_dir
        self._summaries.clear()
        await old.close()
        if old_dir is not None:
            old_dir.cleanup()
        await self.session.refresh()
        self.bus.send(ev.ContextReloaded())

    async def start(
        self,
        config: Config,
        choice: ModelChoice,
        *,
        provider: ChatProvider | None = None,
        yolo: bool = False,
    ) -> None:
        """Build the agent: tools, approvals, project context, the model `choice` names
        (`provider` answers instead, in tests). A read-only session gets no agent."""
        self.config, self.choice = config, choice
        if self.read_only is not None or self._agent is not None:
            return
        from kode_tui.soul.agent import open_agent

        self._agent = await open_agent(
            self.session,
            config,
            choice,
            context=self._context,
            bus=self.bus,
            provider=provider,
            approval_override="yolo" if yolo else None,
            work_dir=self._work_dir,
        )
        thinking.apply(self._agent.soul.provider, choice, self.thinking)
        self._install_reviewer(self._agent.soul)
        # The views are subscribed by now: what the user should know of the opened session
        # (damaged lines skipped) shows at once, not with the first answer.
        self._agent.soul.send_notices()
        self._agent.soul.approval.announce()
        self._agent.soul.hooks.start_session("resume" if self._context.history else "startup")
        # The gauge shows the prompt's size before the first request, once the project context
        # is collected (in the background: the agent is ready without it).
        self._measuring = asyncio.ensure_future(self._agent.soul.announce_prompt())

    async def close(self) -> None:
        """Stop the turn, make everything durable, let go of the session (once)."""
        if self._closed:
            return
        self._closed = True
        self.interrupt()
        if self._measuring is not None:
            self._measuring.cancel()
            with contextlib.suppress(BaseException):
                await self._measuring
        turn = self._turn
        if turn is not None:
            with contextlib.suppress(BaseException):
                await turn
        agent, self._agent = self._agent, None
        if agent is not None:
            await agent.close()
        else:
            await self._context.close()
        if self._copy_dir is not None:
            self._copy_dir.cleanup()
            self._copy_dir = None

    # --- what front ends show ------------------------------------------------------------------

    @property
    def started(self) -> bool:
        """Whether the agent is up (a turn can run)."""
        return self._agent is not None

    @property
    def id(self) -> str:
        return self.session.id

    @property
    def title(self) -> str:
        return self.session.title

    @property
    def work_dir(self) -> Path:
        """Where the tools run."""
        return self._work_dir

    @property
    def mode(self) -> ApprovalMode | None:
        """The approval mode, once the agent is up."""
        return self._agent.soul.approval.mode if self._agent is not None else None

    @property
    def model_name(self) -> str:
        """The model the requests go to."""
        if self._agent is not None:
            return self._agent.soul.provider.model_name
        return self.choice.model if self.choice is not None else ""

    def status(self) -> ev.StatusUpdate | None:
        """The gauge's numbers now (None before the agent is up)."""
        return self._agent.soul.status() if self._agent is not None else None

    def notices(self) -> list[str]:
        """What a view should say of the opened context (damaged lines skipped); the agent
        sends them as warnings itself."""
        return damaged_notice(self._context)

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
        return self._context.history, results

    async def context_report(self, *, refresh: bool = False) -> ContextReport | None:
        """What the model is given (`/context`); with `refresh` the project context is
        collected again first. None before the agent is up."""
        agent = self._agent
        if agent is None:
            return None
        if refresh and agent.soul.project is not None:
            await agent.soul.project.refresh()
        return await agent.soul.context_report()

    # --- a turn ----------------------------------------------------------------------------------

    async def run(self, text: str) -> TurnResult:
        """One turn for the user's message. `interrupt()` (or cancelling the caller) stops it
        with CancelledError after the soul sent StepInterrupted and TurnEnd."""
        soul = self._soul()
        self._turn = asyncio.current_task()
        try:
            try:
                return await soul.run(text)
            except asyncio.CancelledError:
                raise
            except Exception as error:  # a bug must not take the front end down with it
                log.exception("the turn failed")
                self.bus.send(ev.Error(message=f"The turn failed: {error}"))
                return TurnResult("error", 0, str(error))
        finally:
            self._turn = None
            await self.session.refresh()

    async def run_shell(self, command: str) -> bool:
        """Run `command` (what followed the `!`) in the work dir as the user's own, approved
        as a Shell call is, and add it with its output to the context; no model turn starts.
        Whether it ran. `interrupt()` stops it (and its processes), adding nothing."""
        soul = self._soul()
        self._turn = asyncio.current_task()
        try:
            try:
                return await soul.shell_escape.run(command)
            except asyncio.CancelledError:
                raise
            except Exception as error:  # a bug must not take the front end down with it
                log.exception("the shell command failed")
                self.bus.send(ev.Error(message=f"The command failed: {error}"))
                return False
        finally:
            self._turn = None
            await self.session.refresh()

    def interrupt(self) -> bool:
        """Stop the running turn; whether one was running."""
        turn = self._turn
        if turn is None or turn.done():
            return False
        turn.cancel()
        return True

    @property
    def turn_running(self) -> bool:
        return self._turn is not None and not self._turn.done()

    # --- commands ----------------------------------------------------------------------------

    async def clear(self) -> str | None:
        """Start the conversation afresh; the name of the file that keeps the old one."""
        soul = self._soul()
        rotated = await soul.context.clear()
        if rotated is not None:
            self.bus.send(ev.ContextCleared(rotated_file=rotated.name))
        self.bus.send(soul.status())
        soul.hooks.start_session("clear")
        return rotated.name if rotated is not None else None

    async def compact(self, instruction: str | None = None) -> bool:
        """Shrink the context; whether anything changed. A failure (the model's, the disk's)
        is sent as an Error event and raised; CompactionBlocked (its hook's run was sent) when
        a PreCompact hook blocked it."""
        soul = self._soul()
        try:
            return await soul.compact(instruction or None)
        except CompactionBlocked:
            raise
        except Exception as error:
            self.bus.send(ev.Error(message=f"Compaction failed: {error}"))
            raise

    # --- reviewable compaction (soul/compacting.py) -------------------------------------------

    async def plan_compaction(
        self, instruction: str | None = None, strategy: str | None = None
    ) -> CompactionPlan | None:
        """Work out a compaction (the configured strategy, or the built-in one `strategy`
        names) without changing anything; None when there is nothing to compact. A failure (the
        model's) is sent as an Error event and raised; ValueError for an unknown strategy;
        CompactionBlocked (its hook's run was sent) when a PreCompact hook blocked it."""
        soul = self._soul()
        if not self.turn_running:
            soul.cost.begin_turn()  # the summary's call is a line of its own in `/cost`
        try:
            return await soul.compactor.plan(instruction or None, strategy)
        except CompactionBlocked:
            raise
        except Exception as error:
            self.bus.send(ev.Error(message=f"Compaction failed: {error}"))
            raise

    async def apply_compaction(self, plan: CompactionPlan, summary: str | None = None) -> None:
        """Make `plan` the live context (rotation as `compact` does), with `summary` (edited in
        a review) as what the model reads. ValueError, nothing changed, when the context moved
        on since it was planned or the summary is empty."""
        await self._soul().compactor.apply(plan if summary is None else plan.with_summary(summary))

    def set_compaction_reviewer(self, reviewer: Reviewer | None) -> None:
        """A front end that can ask the user (the TUI) shows automatic compactions through
        `reviewer` when `[compaction] review = true`; without one (print mode) they apply
        unreviewed, as nobody could answer. Takes effect at `start()` or at once if started."""
        self._compaction_reviewer = reviewer
        if self._agent is not None:
            self._install_reviewer(self._agent.soul)

    def _install_reviewer(self, soul: KodeSoul) -> None:
        review = self.config is not None and self.config.compaction.review
        soul.compactor.reviewer = self._compaction_reviewer if review else None

    def token_count(self) -> int:
        return self._context.token_count_with_pending

    def model_aliases(self) -> list[str]:
        return list(self.config.models) if self.config is not None else []

    async def set_model(self, name: str) -> ModelChoice:
        """Switch to the model `name` names (an alias, `demo` or a `provider/model` string);
        ConfigError, the model unchanged, when it is unknown or its key is not set. The next
        request uses it."""
        from kode_tui.soul.agent import make_provider

        choice = check_model(self.config or Config(), name)
        self.choice = choice
        if self._agent is not None:
            self._agent.soul.provider = make_provider(
                choice, (self.config or Config()).loop_control
            )
            thinking.apply(self._agent.soul.provider, choice, self.thinking)
            self.bus.send(self._agent.soul.status())
        return choice

    def model_options(self) -> list[ModelOption]:
        """What `/model` offers: the configured aliases, `demo`, then known models of each
        provider whose key is set, with the context size and price of litellm's model map."""
        from kode_tui.soul.llm.model_map import model_options

        return model_options(self.config or Config())

    async def preload_model(self) -> None:
        """Start the model process (it imports the model's library, never this process), so
        the first request does not wait for it."""
        if self.choice is None or self.choice.is_demo:
            return
        from kode_tui.soul.llm.process import ProcessProvider, preload

        if self._agent is not None and not isinstance(self._agent.soul.provider, ProcessProvider):
            # The agent answers with a provider of its own (tests): a model process would
            # import litellm (seconds of CPU, 270 MB) for a model nobody asks.
            return
        await preload(self.choice.model)

    @property
    def modes(self) -> tuple[ApprovalMode, ...]:
        """The approval modes offered: `sandbox` only where the Shell sandbox works."""
        if self._agent is None:
            return tuple(mode for mode in MODES if mode != "sandbox")
        return self._agent.soul.approval.modes

    @property
    def sandbox(self) -> str:
        """How the model's Shell commands run, in a line: in the sandbox (and how), or why
        there is none (`/permissions`)."""
        if self._agent is None:
            return ""
        soul = self._agent.soul
        if soul.sandbox is None:
            return soul.sandbox_off
        return soul.sandbox.describe(soul.approval.profile)

    async def set_mode(self, mode: ApprovalMode) -> None:
        """ValueError when `mode` is not offered (`modes`)."""
        await self._soul().approval.set_mode(mode)

    async def cycle_mode(self) -> ApprovalMode:
        return await self._soul().approval.cycle_mode()

    def permissions(self) -> list[SessionPermission]:
        """What is approved for the rest of the session, oldest first (none without agent)."""
        return self._agent.soul.approval.grants() if self._agent is not None else []

    async def revoke_permission(self, scope: str) -> bool:
        """Forget a session approval, saved at once; whether it was there."""
        return await self._soul().approval.revoke(scope)

    async def set_title(self, title: str) -> None:
        self.session.state.custom_title = title
        await asyncio.to_thread(self.session.save_state)

    # --- cost and thinking effort (soul/cost.py, soul/thinking.py) -----------------------------

    def cost(self) -> CostReport:
        """What the session's model calls cost, per model and per turn (`/cost`)."""
        return CostLedger(self.session.state).report()

    @property
    def thinking(self) -> ThinkingLevel:
        """The session's thinking effort (sent only to a model that takes one)."""
        return self.session.state.thinking

    @property
    def thinking_supported(self) -> bool:
        """Whether the current model takes a thinking effort."""
        return self.choice is not None and thinking.supports_thinking(self.choice)

    async def set_thinking(self, level: ThinkingLevel) -> None:
        """Make `level` the session's thinking effort, saved at once; the next request of a
        model that supports it carries it."""
        self.session.state.thinking = level
        if self._agent is not None:
            thinking.apply(self._agent.soul.provider, self.choice, level)
        await asyncio.to_thread(self.session.save_state)


# --- helpers -------------------------------------------------------------------------------------


def _copy_context(session_dir: Path, copy: Path) -> Context:
    for path in session_dir.glob("context*.jsonl"):
        shutil.copy2(path, copy / path.name)
    if (session_dir / ROTATIONS_LOG).exists():
        shutil.copy2(session_dir / ROTATIONS_LOG, copy / ROTATIONS_LOG)
    return Context(copy / CONTEXT_FILE_NAME)
