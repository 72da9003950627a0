"""The `Agent` tool, with Kimi 1.52's name, parameters and result text (`tools/agent/`).

A run is a soul of its own: its context is `subagents/<agent_id>/context.jsonl` (kept as Kimi
keeps it, `store.py`), its tools the parent's narrowed to its type's, its model the parent's
provider. It shares the parent's tool environment (work dir, file journal, snapshots, sandbox)
so its edits are recorded where the parent's time travel finds them, and the parent's approval,
so what it asks comes to the same panel, and the parent's cost ledger, so its calls add to
the session's figures in the line of the parent's turn. Its events go to its own wire.jsonl and
are re-sent on the parent's bus wrapped in `SubagentEvent`s marked with the `Agent` call's id
(its approval requests reach the parent's bus through the shared approval already).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import msgspec
from pydantic import BaseModel, Field

from kode_tui.humanize import format_tokens, format_usd
from kode_tui.message import TextPart
from kode_tui.session import Context
from kode_tui.soul.approval import ApprovalSource, ApprovalSourceKind, approval_source
from kode_tui.soul.llm.pricing import price_of, usage_cost
from kode_tui.soul.skills import prompt_block
from kode_tui.soul.subagents.definitions import BUILT_IN, AgentDefinition, AgentListing
from kode_tui.soul.subagents.store import InstanceRecord, Status, SubagentStore, valid_agent_id
from kode_tui.tools.background import BackgroundTasks, JobEnd, TaskLog
from kode_tui.tools.base import Tool, ToolEnv, ToolError, ToolOutput
from kode_tui.tools.toolset import Toolset
from kode_tui.wire import WireBus, WireRecorder
from kode_tui.wire import events as ev
from kode_tui.wire.readings import seconds

if TYPE_CHECKING:
    from kode_tui.soul.llm import ChatProvider
    from kode_tui.soul.soul import KodeSoul

__all__ = ["AgentParams", "AgentTool"]

BACKGROUND_TIMEOUT_S = 900
"""How long a background run may take when the call names no `timeout` (Kimi's
`background.agent_task_timeout_s` default)."""

SUMMARY_MIN_LENGTH = 200
SUMMARY_CONTINUATION_PROMPT = """\
Your previous response was too brief. Please provide a more comprehensive summary that includes:

1. Specific technical details and implementations
2. Detailed findings and analysis
3. All important information that the parent agent should know"""
"""Kimi's (`subagents/runner.py`): one more turn when the summary is shorter than the minimum."""

ROOT_ONLY = frozenset(
    {"Agent", "AskUserQuestion", "SetTodoList", "EnterPlanMode", "ExitPlanMode", "SendDMail"}
)
"""Tools no subagent gets, whatever its type lists (Kimi's `exclude_tools`; and SendDMail,
whose D-Mail would take the parent's context back, not the subagent's)."""


class AgentParams(BaseModel):
    description: str = Field(description="A short (3-5 word) description of the task")
    prompt: str = Field(description="The task for the agent to perform")
    subagent_type: str = Field(
        default="coder", description="The built-in agent type to use. Defaults to `coder`."
    )
    model: str | None = Field(
        default=None,
        description=(
            "Optional model override. Selection priority is: this parameter, then the built-in "
            "type default model, then the parent agent's current model."
        ),
    )
    resume: str | None = Field(
        default=None,
        description="Optional agent ID to resume instead of creating a new instance.",
    )
    run_in_background: bool = Field(
        default=False,
        description=(
            "Whether to run the agent in the background. Prefer false unless the task can "
            "continue independently and there is a clear benefit to returning control before "
            "the result is needed."
        ),
    )
    timeout: int | None = Field(
        default=None,
        ge=30,
        le=3600,
        description=(
            "Timeout in seconds for the agent task. Foreground: no default timeout (runs until "
            "completion), max 3600s (1hr). The agent is stopped if it exceeds this limit."
        ),
    )


def _type_line(agent: AgentDefinition) -> str:
    tools = ", ".join(agent.tools) if agent.tools is not None else "*"
    when = f" When to use: {agent.when_to_use}" if agent.when_to_use else ""
    return f"- `{agent.name}`: {agent.description} (Tools: {tools}, Model: inherit).{when}"


def describe(agents: Sequence[AgentDefinition]) -> str:
    """Kimi's description of the tool (`tools/agent/description.md`), listing `agents`."""
    return (
        "Start a subagent instance to work on a focused task.\n\n"
        "The Agent tool can either create a new subagent instance or resume an existing one by "
        "`agent_id`. Each instance keeps its own context history under the current session.\n\n"
        "**Available Agent Types**\n\n"
        + "\n".join(_type_line(a) for a in agents)
        + "\n\nAlways provide a short `description` (3-5 words). Provide a complete prompt: a "
        "new subagent does not see your context. The subagent result is only visible to you."
    )


class _Spending(msgspec.Struct):
    """What one run took: its model calls' tokens and dollars, from its StatusUpdates."""

    model: str
    started: float = msgspec.field(default_factory=time.monotonic)
    tokens: int = 0
    usd: float = 0.0
    priced: bool = True

    def add(self, usage: ev.TokenUsage) -> None:
        self.tokens += usage.input + usage.output
        price = price_of(self.model)
        if price is None:
            self.priced = False
        else:
            self.usd += usage_cost(usage, price)

    def line(self) -> str:
        """`12.3k tokens · 8 s · $0.012`: the result's brief, the line its call folds to."""
        parts = [f"{format_tokens(self.tokens)} tokens", seconds(time.monotonic() - self.started)]
        if self.priced and self.tokens:
            parts.append(format_usd(self.usd))
        return " · ".join(parts)


class _Launch(msgspec.Struct, frozen=True):
    """One run of a subagent: whose, on what model and type, which instance, for which call."""

    parent: KodeSoul
    provider: ChatProvider
    definition: AgentDefinition
    record: InstanceRecord
    params: AgentParams
    tool_call_id: str


class AgentTool(Tool[AgentParams]):
    """Starts (or resumes) a subagent and returns its summary."""

    name = "Agent"
    description = describe(BUILT_IN)
    """The built-ins only; `schema()` offers the work dir's types too."""
    params = AgentParams
    concurrent = True  # several Agent calls of one step run at once, as in Kimi

    def __init__(
        self,
        store: SubagentStore,
        listing: Callable[[], AgentListing],
        models: Callable[[str], ChatProvider | None] = lambda alias: None,
    ) -> None:
        """`models`: the provider of a config model alias, None for a name that is none."""
        self._store = store
        self._listing = listing
        self._models = models
        self._parent: KodeSoul | None = None
        self._offered: str | None = None

    def schema(self) -> dict[str, Any]:
        """The tool with every type of the listing in its description. Read once: a description
        that changed between requests would spoil the provider's prompt cache (a file added
        later can still be named, `run` reads the listing again)."""
        if self._offered is None:
            self._offered = describe(self._listing().agents)
        schema = super().schema()
        schema["function"]["description"] = self._offered
        return schema

    def attach(self, parent: KodeSoul) -> None:
        """The soul whose provider, tools, environment and approval the runs use."""
        self._parent = parent

    async def run(self, params: AgentParams, env: ToolEnv, tool_call_id: str) -> ToolOutput:
        parent = self._parent
        if parent is None:
            raise ToolError("Subagents cannot launch other subagents.", brief="Agent unavailable")
        if params.run_in_background and env.tasks is None:
            raise ToolError(
                "Background tasks are not available here.", brief="Background start failed"
            )
        provider = parent.provider
        if params.model is not None:
            provider = self._model(params.model)
        if params.resume is not None:
            record, definition = self._resumable(params.resume)
            if params.model is None and record.launch_spec.effective_model is not None:
                provider = self._model(record.launch_spec.effective_model)
        else:
            record, definition = self._new(params)
            typed = None if params.model or not definition.model else self._models(definition.model)
            # A type's model that is no alias of the config (Claude Code's `sonnet`): inherited.
            provider = typed or provider
        # Taken before the first await: a second call resuming it at once is refused.
        running: Status = "running_background" if params.run_in_background else "running_foreground"
        record = self._store.update(record, status=running, description=params.description.strip())
        launch = _Launch(parent, provider, definition, record, params, tool_call_id)
        if params.run_in_background:
            assert env.tasks is not None
            return self._start_background(launch, env.tasks)
        agent_id = record.agent_id
        spending = _Spending(provider.model_name)
        try:
            summary = await self._supervised(launch, spending, params.timeout)
        except TimeoutError:
            raise ToolError(
                f"Agent timed out after {params.timeout}s.",
                brief=f"Agent timed out ({params.timeout}s)",
            ) from None
        lines = [f"agent_id: {agent_id}", f"resumed: {'true' if params.resume else 'false'}"]
        if params.resume and params.subagent_type and params.subagent_type != definition.name:
            lines.append(f"requested_subagent_type: {params.subagent_type}")
        lines += [
            f"actual_subagent_type: {definition.name}",
            "status: completed",
            "",
            "[summary]",
            summary,
        ]
        return ToolOutput(output="\n".join(lines), brief=spending.line())

    def _start_background(self, launch: _Launch, tasks: BackgroundTasks) -> ToolOutput:
        """Start the run as a background task of kind `agent` and answer at once (Kimi's
        lines). As in Kimi, its steps go to its own files and the task's `output.log`, not to
        the parent's wire; its approvals still come to the panel, marked `background_agent`;
        the model is told when it ends, with the summary in the output's tail."""
        record, definition = launch.record, launch.definition
        agent_id = record.agent_id
        timeout = launch.params.timeout or BACKGROUND_TIMEOUT_S

        async def job(log: TaskLog) -> JobEnd:
            spending = _Spending(launch.provider.model_name)
            try:
                await self._supervised(launch, spending, timeout, log)
            except TimeoutError:
                return JobEnd(failure_reason=f"Agent task timed out after {timeout}s.")
            except ToolError as error:
                return JobEnd(failure_reason=error.message)
            return JobEnd(exit_code=0)

        try:
            view = tasks.start(
                "agent",
                record.description,
                job,
                tool_call_id=launch.tool_call_id,
                timeout_s=timeout,
            )
        except RuntimeError as error:
            self._store.update(record, status="idle")
            raise ToolError(str(error), brief="Background start failed") from None
        lines = [
            f"task_id: {view.id}",
            f"kind: {view.kind}",
            f"status: {view.status}",
            f"description: {view.description}",
            f"agent_id: {agent_id}",
            f"actual_subagent_type: {definition.name}",
            "automatic_notification: true",
            "next_step: You will be automatically notified when it completes.",
            "next_step: Use TaskOutput with this task_id for a non-blocking status/output "
            "snapshot. Only set block=true when you intentionally want to wait.",
            f'resume_hint: Use Agent(resume="{agent_id}", prompt="...") to continue this '
            "instance later.",
        ]
        return ToolOutput(
            output="\n".join(lines), message="Background task started.", brief=f"Started {view.id}"
        )

    async def _supervised(
        self,
        launch: _Launch,
        spending: _Spending,
        timeout: float | None,
        log: TaskLog | None = None,
    ) -> str:
        """The run's summary, its instance's status kept as Kimi keeps it: idle when it ended,
        killed when it timed out (TimeoutError) or was cancelled, failed otherwise. Its approval
        requests say whose they are (`approval_source`). `log`: a background run's task log."""
        record, definition = launch.record, launch.definition
        agent_id = record.agent_id
        kind: ApprovalSourceKind = "foreground_turn" if log is None else "background_agent"
        source = ApprovalSource(agent_id, definition.name, record.description, kind)
        self._output(agent_id, "[stage] runner_started", log)
        token = approval_source.set(source)
        try:
            summary = await asyncio.wait_for(self._run(launch, spending, log), timeout=timeout)
        except TimeoutError:
            self._store.update(record, status="killed")
            raise
        except asyncio.CancelledError:
            self._store.update(record, status="killed")
            self._output(agent_id, "[stage] cancelled", log)
            raise
        except BaseException:
            self._store.update(record, status="failed")
            raise
        finally:
            approval_source.reset(token)
        self._store.update(record, status="idle")
        self._output(agent_id, f"\n[summary]\n{summary}", log)
        return summary

    def _output(self, agent_id: str, text: str, log: TaskLog | None) -> None:
        """A line of the instance's `output` (and of its background task's log)."""
        self._store.output(agent_id, text)
        if log is not None:
            log.write(text.removesuffix("\n") + "\n")

    def _model(self, alias: str) -> ChatProvider:
        """The provider of the config's model `alias` (Kimi takes only aliases)."""
        provider = self._models(alias)
        if provider is None:
            raise ToolError(f"Unknown model alias: {alias}", brief="Invalid model alias")
        return provider

    def _type(self, name: str) -> AgentDefinition:
        definition = self._listing().get(name)
        if definition is None:
            raise ToolError(
                f"Builtin subagent type not found: {name}", brief="Invalid subagent type"
            )
        return definition

    def _new(self, params: AgentParams) -> tuple[InstanceRecord, AgentDefinition]:
        definition = self._type(params.subagent_type or "coder")
        record = self._store.create(
            agent_id=f"a{uuid.uuid4().hex[:8]}",
            subagent_type=definition.name,
            description=params.description.strip(),
            model=params.model,
        )
        return record, definition

    def _resumable(self, agent_id: str) -> tuple[InstanceRecord, AgentDefinition]:
        """The instance `agent_id` and its type, as Kimi refuses them: one that does not
        exist, or that is running (a second run would write its context twice)."""
        record = self._store.get(agent_id) if valid_agent_id(agent_id) else None
        if record is None:
            raise ToolError(
                f"Failed to run agent: Subagent instance not found: {agent_id}",
                brief="Agent failed",
            )
        if record.status in ("running_foreground", "running_background"):
            raise ToolError(
                f"Failed to run agent: Agent instance {record.agent_id} is still "
                f"{record.status} and cannot be resumed concurrently.",
                brief="Agent failed",
            )
        return record, self._type(record.subagent_type)

    async def _run(self, launch: _Launch, spending: _Spending, log: TaskLog | None) -> str:
        """The run's summary. `log`: a background run's task log, which gets its `output`
        lines; its events then stay off the parent's wire (the call answered long ago)."""
        from kode_tui.soul.soul import KodeSoul  # the loop that runs the tool runs this one too

        parent, provider, definition = launch.parent, launch.provider, launch.definition
        record, params = launch.record, launch.params
        agent_id = record.agent_id
        context = Context(self._store.context_path(agent_id))
        await context.restore()
        if context.system_prompt is not None:  # resumed: its own prompt, as Kimi keeps it
            self._output(agent_id, "[stage] context_restored", log)
        else:
            if definition.system_prompt is not None:
                prompt = definition.system_prompt
            else:
                roles = (parent.system_prompt, definition.role)
                prompt = "\n\n".join(p for p in roles if p)
            # The skills as the parent's prompt lists them (Kimi's subagents render the same
            # block): the shared ToolEnv reads their folders without asking for it too.
            skills = parent.project.skills if parent.project is not None else None
            if skills is not None:
                prompt += prompt_block(await asyncio.to_thread(skills.listing))
            await context.write_system_prompt(prompt)
        self._output(agent_id, "[stage] context_ready", log)
        allowed = [
            tool
            for tool in parent.toolset.tools()
            if tool.name not in ROOT_ONLY
            and (definition.tools is None or tool.name in definition.tools)
        ]
        bus = WireBus()
        recorder = WireRecorder(bus, self._store.instance_dir(agent_id) / "wire.jsonl")
        recorder.start()
        forward = self._forwarder(parent, record, launch.tool_call_id, spending, log)
        bus.subscribe(callback=forward, direct=True)
        child = KodeSoul(
            context=context,
            provider=provider,
            bus=bus,
            toolset=Toolset(allowed, takes_images=parent.env.takes_images),
            env=parent.env,
            approval=parent.approval,
            settings=parent.settings,
            hooks=parent.hooks.for_subagent(bus, context.path),
            sandbox=parent.sandbox,
            retry_sleep=parent.retry_sleep,
            cost=parent.cost,  # its calls add to the session's, in the parent's turn
        )
        self._store.write_prompt(agent_id, params.prompt)
        await parent.hooks.subagent_start(definition.name, params.prompt)
        self._output(agent_id, "[stage] run_soul_start", log)
        try:
            summary = await self._turn(child, params.prompt)
            if len(summary) < SUMMARY_MIN_LENGTH:
                summary = await self._turn(child, SUMMARY_CONTINUATION_PROMPT)
        finally:
            await recorder.close()
            await bus.close()
            await context.close()
        self._output(agent_id, "[stage] run_soul_finished", log)
        await parent.hooks.subagent_stop(definition.name, summary)
        return summary

    def _forwarder(
        self,
        parent: KodeSoul,
        record: InstanceRecord,
        tool_call_id: str,
        spending: _Spending,
        log: TaskLog | None,
    ) -> Callable[[ev.Event], None]:
        """What the subagent's bus calls with each event: re-send it on the parent's bus,
        marked with the `Agent` call, note its calls and results in `output` (Kimi's
        `SubagentOutputWriter`) and count its model calls in `spending`."""

        said: list[str] = []
        """The text of the answer being streamed: one `output` line once it ends."""

        def forward(event: ev.Event) -> None:
            if isinstance(event, ev.ApprovalRequest | ev.ApprovalResolved):
                return  # the shared approval sent them on the parent's bus already
            if isinstance(event, ev.ContentPart) and isinstance(event.part, TextPart):
                said.append(event.part.text)
            elif said:
                text = "".join(said).strip()
                said.clear()
                if text:
                    self._output(record.agent_id, text, log)
            if isinstance(event, ev.StatusUpdate) and event.usage is not None:
                spending.add(event.usage)
            if isinstance(event, ev.ToolCall):
                self._output(record.agent_id, f"[tool] {event.function.name}", log)
            elif isinstance(event, ev.ToolResult):
                status = "error" if event.is_error else "success"
                brief = f": {event.message}" if event.is_error and event.message else ""
                self._output(record.agent_id, f"[tool_result] {status}{brief}", log)
            if log is not None:
                return  # a background run: its wire.jsonl and output have it (as Kimi's)
            parent.bus.send(
                ev.SubagentEvent(
                    parent_tool_call_id=tool_call_id,
                    agent_id=record.agent_id,
                    subagent_type=record.subagent_type,
                    event=event,
                )
            )

        return forward

    @staticmethod
    async def _turn(child: KodeSoul, prompt: str) -> str:
        result = await child.run(prompt)
        history = child.context.history
        if result.stop_reason != "done" or not history or history[-1].role != "assistant":
            why = result.error or "The agent did not produce a valid assistant response."
            raise ToolError(why, brief="Invalid agent result")
        return history[-1].text
