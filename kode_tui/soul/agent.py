"""Putting one session's agent together: model, tools, approvals, wire recording.

`open_agent()` is what the TUI and print mode call; tests call it too, with a ScriptedProvider.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from kode_tui import masking
from kode_tui.config import Config, LoopControl, ModelChoice, WebConfig, resolve_model
from kode_tui.message import is_checkpoint_note
from kode_tui.paths import canonical
from kode_tui.paths import home as kode_home
from kode_tui.session import Context, Session
from kode_tui.session.journal import FileJournal
from kode_tui.session.metadata import kimi_share_dir
from kode_tui.session.snapshot import WorkSnapshot
from kode_tui.session.state import ApprovalMode
from kode_tui.soul import prompts, vision
from kode_tui.soul.approval import Approval
from kode_tui.soul.compaction import load_strategy
from kode_tui.soul.hooks import Hooks
from kode_tui.soul.llm import ChatProvider
from kode_tui.soul.project import ProjectContextSource
from kode_tui.soul.reminders import Reminders
from kode_tui.soul.skills import Skills
from kode_tui.soul.soul import KodeSoul, LoopSettings
from kode_tui.soul.subagents.definitions import list_agents
from kode_tui.soul.subagents.store import SubagentStore
from kode_tui.soul.subagents.tool import AgentTool
from kode_tui.tools.ask_user import AskUserQuestion
from kode_tui.tools.background import BackgroundTasks
from kode_tui.tools.base import Tool, ToolEnv
from kode_tui.tools.dmail import DenwaRenji, SendDMail
from kode_tui.tools.files import ReadFile, StrReplaceFile, WriteFile
from kode_tui.tools.glob import Glob
from kode_tui.tools.grep import Grep
from kode_tui.tools.media import ReadMediaFile
from kode_tui.tools.plan import EnterPlanMode, ExitPlanMode
from kode_tui.tools.sandbox import Sandbox
from kode_tui.tools.sandbox import Settings as SandboxSettings
from kode_tui.tools.sandbox import support as sandbox_support
from kode_tui.tools.shell import Shell
from kode_tui.tools.tasks import TaskList, TaskOutput, TaskStop
from kode_tui.tools.todo import SetTodoList
from kode_tui.tools.toolset import Toolset
from kode_tui.tools.web import FetchURL
from kode_tui.wire import WireBus
from kode_tui.wire import events as ev
from kode_tui.wire.recorder import WireRecorder

if TYPE_CHECKING:
    from kode_tui.tools.mcp_client import McpServer, McpServers


async def had_dmail(context: Context) -> bool:
    """Whether the agent that wrote `context` had D-Mail: then every checkpoint is followed by
    its `CHECKPOINT n` note (Kimi CLI's okabe agent, kode-tui with `tools.dmail`). A session
    whose checkpoints have none (Kimi CLI's default agent) goes on without SendDMail, so no
    note is ever added to it (compaction and /clear included). A context with no checkpoint
    followed by a message (just cleared) is judged by its newest rotation that has one; a
    session with none at all takes the configured agent's."""
    found = _checkpoint_notes(context)
    for rotated in reversed(context.rotations() if found is None else []):
        old = Context(rotated.path, read_only=True)
        await old.restore()
        found = _checkpoint_notes(old)
        await old.close()
        if found is not None:
            break
    return True if found is None else found


def _checkpoint_notes(context: Context) -> bool | None:
    """Whether the last checkpoint followed by a message is followed by its note; None when
    no checkpoint is followed by a message."""
    history = context.history
    for entry in reversed(context.checkpoints):
        if entry.message_index < len(history):
            first = history[entry.message_index]
            return first.role == "user" and is_checkpoint_note(first.text)
    return None


def make_provider(choice: ModelChoice, loop: LoopControl | None = None) -> ChatProvider:
    """The provider for a chosen model; litellm runs in the model process, never in this one
    (it is started here, so it imports litellm while the rest starts up)."""
    if choice.is_demo:
        # The tour's script (and the scripted provider under it) loads for the demo alone.
        from kode_tui.soul.llm.demo import DemoProvider

        return DemoProvider()
    masking.watch_env([choice.api_key_env or ""])
    from kode_tui.soul.llm import process

    process.start(choice.model)
    return process.ProcessProvider(
        choice.model,
        api_base=choice.api_base,
        api_key_env=choice.api_key_env,
        max_context_size=choice.max_context_size,
        timeout=(loop or LoopControl()).request_timeout,
        first_token_timeout=(loop or LoopControl()).first_token_timeout,
        images=vision.supports_images(choice),
    )


def loop_settings(loop: LoopControl) -> LoopSettings:
    """The soul's limits from the config's `[loop_control]`."""
    return LoopSettings(
        max_steps_per_run=loop.max_steps_per_run,
        max_retries_per_step=loop.max_retries_per_step,
        reserved_context_size=loop.reserved_context_size,
        compaction_trigger_ratio=loop.compaction_trigger_ratio,
        max_retry_wait=loop.max_retry_wait,
        max_total_retry_wait=loop.max_total_retry_wait,
    )


def make_toolset(
    denwa_renji: DenwaRenji | None,
    *,
    sandboxed: bool = False,
    subagents: AgentTool | None = None,
    web: WebConfig | None = None,
    environ: Mapping[str, str] | None = None,
) -> Toolset:
    """Kimi's tool set: files (images too), search, shell and its background tasks, todos,
    questions to the user, plan mode, FetchURL, `Agent` (`subagents`, when given), SendDMail
    when D-Mail is on, and SearchWeb when `web` names a search provider whose key is in
    `environ`.
    `sandboxed`: the model's commands run in the sandbox (its description says so)."""
    tools: list[Tool[Any]] = [
        ReadFile(),
        ReadMediaFile(),
        WriteFile(),
        StrReplaceFile(),
        Glob(),
        Grep(),
        Shell(sandboxed=sandboxed),
        TaskList(),
        TaskOutput(),
        TaskStop(),
        SetTodoList(),
        AskUserQuestion(),
        EnterPlanMode(),
        ExitPlanMode(),
        FetchURL(web),
    ]
    if web is not None and web.search is not None:
        # SearchWeb's module loads for a config that names a search provider (~2 ms).
        from kode_tui.tools.web_search import search_tool

        search = search_tool(web, os.environ if environ is None else environ)
        if search is not None:
            tools.append(search)
    if subagents is not None:
        tools.append(subagents)
    if denwa_renji is not None:
        tools.append(SendDMail(denwa_renji))
    return Toolset(tools)


class Agent(msgspec.Struct):
    """A session's running agent; `close()` makes everything durable."""

    session: Session
    context: Context
    bus: WireBus
    soul: KodeSoul
    recorder: WireRecorder
    mcp: McpServers | None = None
    """The configured MCP servers (None when there are none)."""

    async def close(self) -> None:
        await self.soul.hooks.close()
        if self.mcp is not None and isinstance(self.mcp.on_change, _McpWatch):
            self.mcp.on_change.cancel()
        if self.soul.env.tasks is not None:
            await self.soul.env.tasks.close()  # first: its commands end as "killed"
        await self.soul.toolset.close()
        if self.soul.sandbox is not None:
            await self.soul.sandbox.close()
        if self.soul.env.snapshots is not None:
            await self.soul.env.snapshots.close()
        if self.soul.project is not None:
            await self.soul.project.close()
        await self.recorder.close()
        await self.context.close()


async def open_agent(
    session: Session,
    config: Config,
    choice: ModelChoice,
    *,
    context: Context | None = None,
    provider: ChatProvider | None = None,
    bus: WireBus | None = None,
    approval_override: ApprovalMode | None = None,
    tools: Sequence[Tool[Any]] | None = None,
    watch_project: bool = True,
    work_dir: Path | None = None,
) -> Agent:
    """The agent of `session`, its context restored and wire.jsonl being recorded.

    `provider` replaces the one `choice` names (tests); `tools` replaces the usual set.
    The project context starts collecting in the background; with `watch_project` a change to
    one of its files makes the next turn collect it again. Raises ConfigError when the
    configured compaction strategy cannot be loaded.

    Tools run in the session's work dir; for a folder opened by path whose work dir nobody
    recorded, in `work_dir` (default: the current directory), never in the session folder.
    """
    work_dir = session.work_dir or canonical(work_dir or Path.cwd())
    if context is None:
        context = Context(session.context_file)
        await context.restore()
    bus = bus or WireBus()
    if not session.state_file.exists():
        session.state.approval_mode = config.approval_mode

    async def save_state() -> None:
        await asyncio.to_thread(session.save_state)

    denwa_renji = DenwaRenji() if config.tools.dmail and await had_dmail(context) else None
    sandbox = await open_sandbox(session, config, work_dir)
    # The subagent types are read now: their problems are told at open, with the other notices.
    agents = await asyncio.to_thread(list_agents, work_dir)

    def model_of(alias: str) -> ChatProvider | None:
        """A subagent's model: only an alias of the config's models (as Kimi's `model`)."""
        if alias not in config.models:
            return None
        return make_provider(resolve_model(config, alias), config.loop_control)

    subagents = AgentTool(SubagentStore(session.dir), lambda: list_agents(work_dir), model_of)
    toolset = (
        Toolset(tools)
        if tools is not None
        else make_toolset(
            denwa_renji, sandboxed=sandbox is not None, subagents=subagents, web=config.web
        )
    )
    mcp: McpServers | None = None
    if config.mcp.servers:
        # The MCP client loads for a config that names servers, not with every agent.
        from kode_tui.tools.mcp_client import McpServers, mcp_variables

        mcp = McpServers(config.mcp, work_dir=work_dir, log_dir=session.dir)
        toolset.sources.append(mcp)
        # A token an MCP server is given from the environment is as secret as a model's key.
        masking.watch_env(mcp_variables(config))
    # Every configured model's key is masked, not only the chosen one's: /model may switch.
    masking.watch_env(
        [choice.api_key_env or "", *(m.api_key_env or "" for m in config.models.values())]
    )
    journal = FileJournal(context)
    snapshots = WorkSnapshot(
        work_dir,
        context,
        journal,
        max_file_bytes=config.tools.snapshot_max_bytes,
        max_files=config.tools.snapshot_max_files,
    )
    env = ToolEnv(
        work_dir=work_dir,
        journal=journal,
        state=session.state,
        save_state=save_state,
        snapshots=snapshots,
        bus=bus,
        tasks=BackgroundTasks(session.dir / "tasks", bus=bus, session_id=session.id),
    )
    skills = Skills(work_dir)
    env.skill_file = skills.covers  # ReadFile reads what the prompt lists without asking
    provider = provider or make_provider(choice, config.loop_control)
    compaction = load_strategy(
        config.compaction.strategy, {ChatProvider: provider, Config: config, Path: work_dir}
    )
    project = ProjectContextSource(
        work_dir, custom=config.context.custom, watch=watch_project, skills=skills
    )
    project.start()
    soul = KodeSoul(
        context=context,
        provider=provider,
        bus=bus,
        toolset=toolset,
        env=env,
        approval=Approval(
            bus,
            session.state,
            save_state,
            override=approval_override,
            sandbox=sandbox is not None,
            sandbox_network=sandbox is not None and sandbox.settings.network,
        ),
        denwa_renji=denwa_renji,
        settings=loop_settings(config.loop_control),
        system_prompt=prompts.system_prompt(work_dir),
        compaction=compaction,
        project=project,
        reminders=Reminders(work_dir, config.context.max_reminders_per_session),
        hooks=Hooks(
            config.hooks,
            bus=bus,
            work_dir=work_dir,
            session_id=session.id,
            transcript=session.context_file,
        ),
        sandbox=sandbox,
    )
    if sandbox is None:
        soul.sandbox_off = (
            sandbox_support().problem
            if config.sandbox.enabled
            else "the Shell sandbox is off ([sandbox] enabled = false in config.toml)"
        )
        if config.sandbox.enabled:
            soul.add_notice(soul.sandbox_off)
    env.takes_images = lambda: vision.takes_images(soul.provider)  # follows /model
    toolset.takes_images = env.takes_images
    subagents.attach(soul)
    for problem in agents.problems:
        soul.add_notice(problem.message)
    # Read now so the skills' problems are told at open with the other notices; each request
    # reads them again (an edited SKILL.md counts from the next one).
    for skill_problem in (await asyncio.to_thread(skills.listing)).problems:
        soul.add_notice(skill_problem.message)
    if session.ignored_grants:
        soul.add_notice(
            f"{session.dir} is not in your session stores, so what it saved as approvals "
            f"({', '.join(session.ignored_grants)}) grants nothing here; approval mode: "
            f"{soul.approval.mode}"
        )
    if not session.work_dir_recorded:
        soul.add_notice(f"no work dir is recorded for {session.dir}; tools run in {work_dir}")
    recorder = WireRecorder(bus, session.wire_file)
    recorder.start()
    snapshots.start()  # the baseline reads the work dir while the user types
    if sandbox is not None:
        sandbox.start()
    if mcp is not None:
        mcp.on_change = _McpWatch(soul)
        mcp.start()  # in the background: the first request waits for them
    return Agent(session, context, bus, soul, recorder, mcp)


async def open_sandbox(session: Session, config: Config, work_dir: Path) -> Sandbox | None:
    """The sandbox of the session's Shell commands; None where bubblewrap cannot run one, or
    where the config turns it off."""
    if not config.sandbox.enabled:
        return None
    support = await asyncio.to_thread(sandbox_support)
    if support.program is None:
        return None
    settings = config.sandbox
    return Sandbox(
        support.program,
        work_dir,
        refused_dir=session.dir / "refused",
        settings=SandboxSettings(
            network=settings.network, hide=tuple(settings.hide), writable=tuple(settings.writable)
        ),
        private_homes=[kode_home(), kimi_share_dir()],
    )


class _McpWatch:
    """Tells the user once of each MCP server that failed or died, and has the gauge count the
    tool definitions a server brought or took away."""

    def __init__(self, soul: KodeSoul) -> None:
        self._soul = soul
        self._measuring: set[asyncio.Task[None]] = set()
        self._closed = False

    def __call__(self, server: McpServer, error: str | None) -> None:
        if self._closed:
            return
        if error is not None:
            self._soul.bus.send(
                ev.Warning(
                    message=f"MCP server {server.name}: {error}; going on without its tools "
                    "(/mcp reconnects it)"
                )
            )
        task = asyncio.ensure_future(self._soul.announce_prompt())
        self._measuring.add(task)
        task.add_done_callback(self._measuring.discard)

    def cancel(self) -> None:
        """The agent closes: nothing more is said or measured."""
        self._closed = True
        for task in self._measuring:
            task.cancel()
