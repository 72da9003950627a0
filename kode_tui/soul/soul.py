"""KodeSoul: the agent loop, Kimi CLI's state machine (DESIGN.md §4; seeds 000 and 001).

A turn is: checkpoint, the user's message, then steps until the model stops calling tools. A step
is: maybe compact, checkpoint, one streamed LLM call (retried on transient errors), the tool calls
(each approved first), and then the context grows by the assistant message and the tool results
in one shielded move, so a cancel never leaves half a step in context.jsonl. A D-Mail from the
SendDMail tool takes the context back to a checkpoint; a rejected call ends the turn. The user's
hooks (`kode_tui.soul.hooks`) run before the turn, around each tool call and at its end.

The soul only talks to the outside through the WireBus: it never knows who is watching.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from functools import cached_property, partial
from typing import TYPE_CHECKING, Literal, TypeVar

import msgspec.structs

from kode_tui import masking
from kode_tui.message import (
    ContentPart,
    FunctionBody,
    Message,
    TextPart,
    ThinkPart,
    ToolCall,
    UsageRecord,
    estimate_tool_tokens,
    is_checkpoint_note,
    paired,
    system,
)
from kode_tui.session import Context
from kode_tui.soul import context_report, prompts
from kode_tui.soul.approval import Approval
from kode_tui.soul.compacting import Compactor, RetryingProvider
from kode_tui.soul.compaction import CompactionStrategy
from kode_tui.soul.context_report import ContextReport, PromptParts
from kode_tui.soul.cost import CostLedger
from kode_tui.soul.hooks import Hooks
from kode_tui.soul.llm import (
    ChatProvider,
    LLMError,
    ToolCallDelta,
    ToolCallStart,
    ToolSchema,
)
from kode_tui.soul.reminders import Reminder, Reminders, inject
from kode_tui.soul.retrying import RetryPolicy
from kode_tui.soul.shell_escape import ShellEscape
from kode_tui.soul.steps import batches, run_all
from kode_tui.soul.storage_notes import damaged_notice, encodable_input, storage_message
from kode_tui.soul.stream import RequestsWatched, Streamed, encodable_item, masked
from kode_tui.soul.transcript import turn_text
from kode_tui.tools import plan, snapshots
from kode_tui.tools.background import notifications
from kode_tui.tools.base import Permission, ToolEnv, ToolOutput
from kode_tui.tools.dmail import DenwaRenji
from kode_tui.tools.sandbox import Confinement, Sandbox
from kode_tui.tools.todo import todos_in
from kode_tui.tools.toolset import PreparedCall, Toolset, rejected, tool_message
from kode_tui.wire import WireBus
from kode_tui.wire import events as ev
from kode_tui.wire.events import RejectWithFeedback, TokenUsage

__all__ = [
    "BackToTheFuture",
    "ContextReport",
    "KodeSoul",
    "LoopSettings",
    "TurnResult",
]

log = logging.getLogger(__name__)


SKIPPED = ToolOutput(
    message="Not run: an earlier tool call of this step was rejected by the user.",
    brief="skipped",
    is_error=True,
)

if TYPE_CHECKING:
    # Only the agent that builds a soul loads the project-context machinery (git, watchfiles).
    from kode_tui.soul.project import ProjectContextSource
    from kode_tui.soul.timetravel import TimeMachine

T = TypeVar("T")

StopReason = Literal["done", "rejected", "max_steps", "error", "blocked"]


class LoopSettings(msgspec.Struct, frozen=True):
    """The `[loop_control]` of the config (DESIGN.md §8)."""

    max_steps_per_run: int = 100
    max_retries_per_step: int = 10
    reserved_context_size: int = 50_000
    compaction_trigger_ratio: float = 0.85
    max_retry_wait: float = 60
    max_total_retry_wait: float = 300


class TurnResult(msgspec.Struct, frozen=True):
    """How a turn ended; `error` is the sentence shown to the user when it failed."""

    stop_reason: StopReason
    steps: int
    error: str | None = None


class BackToTheFuture(Exception):
    """Raised in a step to take the context back to `checkpoint_id` (a D-Mail)."""

    def __init__(self, checkpoint_id: int, messages: Sequence[Message]) -> None:
        super().__init__(checkpoint_id)
        self.checkpoint_id = checkpoint_id
        self.messages = messages


class KodeSoul:
    """Runs turns of one session's agent; everything it does is sent on `bus`."""

    def __init__(
        self,
        *,
        context: Context,
        provider: ChatProvider,
        bus: WireBus,
        toolset: Toolset,
        env: ToolEnv,
        approval: Approval,
        denwa_renji: DenwaRenji | None = None,
        settings: LoopSettings | None = None,
        system_prompt: str | None = None,
        compaction: CompactionStrategy | None = None,
        project: ProjectContextSource | None = None,
        reminders: Reminders | None = None,
        retry_sleep: Callable[[float], Awaitable[None]] | None = None,
        hooks: Hooks | None = None,
        sandbox: Sandbox | None = None,
        cost: CostLedger | None = None,
    ) -> None:
        """`cost`: the ledger to count in (a subagent's soul: its parent's, so its calls add to
        the session's figures within the parent's turn; its own turns begin no line of
        `/cost`); None: a ledger of its own over `env.state`."""
        self.context = context
        self.provider = provider
        self.bus = bus
        self.toolset = toolset
        self.env = env
        self.approval = approval
        plan.bind_plan(toolset.tools(), approval)
        self.settings = settings or LoopSettings()
        self.project = project
        self.reminders = reminders
        self.hooks = hooks or Hooks()
        """The `[[hooks]]` of the config (`kode_tui.soul.hooks`)."""
        self.sandbox = sandbox
        """Where the model's Shell commands run (None: no sandbox on this machine)."""
        self.sandbox_off = ""
        """Why there is no sandbox, in a line (when `sandbox` is None)."""
        self._own_cost = cost is None
        self.cost = cost or CostLedger(env.state, env.save_state, had_calls=context.token_count > 0)
        """What the model calls cost (`/cost`, the gauge)."""
        self._turn_text = ""
        self._partial: Streamed | None = None  # the running step's answer, until it is kept
        self.requests = RequestsWatched()  # `requests.next()`: when the next one is out
        self._notices: list[str] = damaged_notice(context)
        self._denwa_renji = denwa_renji
        self._system_prompt = system_prompt
        # Until the project context is measured (`measure_prompt`): the base prompt and tools.
        self.prompt_tokens = len(self.system_prompt or "") // 4 + estimate_tool_tokens(
            toolset.schemas()
        )
        """What every request carries besides the messages, estimated as last measured."""
        # The measured prompt the model's last reported count included (None: not known yet,
        # the first measure counts as it): a pin added since is in the gauge before a request.
        self._sent_prompt_tokens: int | None = None
        self.retry_sleep = retry_sleep or asyncio.sleep
        """How a retry waits (a test records the waits instead); a cancel ends it at once."""
        # The model can only name a checkpoint it can see (Kimi does the same).
        self.checkpoint_messages = denwa_renji is not None and "SendDMail" in toolset
        self.compactor = Compactor(
            context,
            bus,
            self.hooks,
            compaction,
            llm=self._compaction_llm,
            reserved=lambda: self.reserved_tokens,
            checkpoint_notes=self.checkpoint_messages,
            swapped=self.sync_dmail_checkpoints,
            status=self.status,
            measure_prompt=self.measure_prompt,
        )
        """Shrinks the context (`compact`), with its strategy and reviewer."""
        self.shell_escape = ShellEscape(
            bus=bus,
            context=context,
            toolset=toolset,
            env=env,
            system_prompt=lambda: self.system_prompt,
            checkpoint=lambda: self.checkpoint(capture=False),
            status=self.status,
        )
        """Runs the user's `!` commands."""

    @cached_property
    def travel(self) -> TimeMachine:
        """Takes the context (and the files) back to a checkpoint or a rotated context."""
        # Loaded at the first revert or restore, not before the first request (~5 ms).
        from kode_tui.soul.timetravel import TimeMachine

        return TimeMachine(
            self.context, self.env, self.bus, moved=self.context_swapped, status=self.status
        )

    # --- status --------------------------------------------------------------------------------

    @property
    def system_prompt(self) -> str | None:
        """The base system prompt: the context's own, else the one this soul was given."""
        return self.context.system_prompt or self._system_prompt

    async def context_report(self) -> ContextReport:
        """What the model is given, in rows that add up to `status()`'s number (`/context`)."""
        parts = await self.measure_prompt()
        reminders = list(self.hooks.turn_reminders)  # the hooks' output goes with each request
        if self.reminders is not None:
            reminders += self.reminders.last
        context = self.context
        return context_report.report(
            parts,
            reminders,
            self.status(),
            context.token_count,
            context.pending_tokens,
            self.prompt_change,
        )

    async def measure_prompt(self) -> PromptParts:
        """The system prompt of the next request and the tools, measured; what `status()`
        counts for them before the model reported a count is kept."""
        pins = [pin.text for pin in self.env.state.pins]
        parts = await context_report.measure(
            self.system_prompt or "", self.project, pins, self.toolset
        )
        self.prompt_tokens = parts.tokens
        if self._sent_prompt_tokens is None:
            self._sent_prompt_tokens = parts.tokens
        return parts

    @property
    def prompt_change(self) -> int:
        """How much the measured prompt grew (a pin added) since the last request."""
        return self.prompt_tokens - (self._sent_prompt_tokens or self.prompt_tokens)

    async def announce_prompt(self) -> None:
        """Measure the prompt (the project context once collected) and send the status: the
        gauge shows the known prompt size before the first request."""
        try:
            await self.measure_prompt()
        except Exception as error:  # the first request measures it again, and says what failed
            log.warning("could not measure the prompt: %s", error)
            return
        self.bus.send(self.status())

    async def request_system_prompt(self) -> str | None:
        """What the model is sent as system prompt: the base one with the project context."""
        parts = await self.measure_prompt()
        self._sent_prompt_tokens = parts.tokens
        return parts.system_prompt or self.system_prompt

    @property
    def reserved_tokens(self) -> int:
        """Room kept free for the next response: the configured size, but never more than half
        of a small model's context (50k reserved of an 8k Ollama model would compact forever)."""
        return min(self.settings.reserved_context_size, self.provider.max_context_size // 2)

    @property
    def trigger_tokens(self) -> int:
        """The context size at which the next step compacts first (DESIGN.md §4)."""
        size = self.provider.max_context_size
        return min(size - self.reserved_tokens, int(size * self.settings.compaction_trigger_ratio))

    def status(self, usage: TokenUsage | None = None) -> ev.StatusUpdate:
        """The gauge's numbers: the count the model reported for the last request and an
        estimate of the messages since; before any report, the known prompt (system prompt,
        project context, tools) estimated and the messages (`kode_tui.soul.context_report`)."""
        prompt = self.prompt_change if self.context.token_count else self.prompt_tokens
        return ev.StatusUpdate(
            context_tokens=self.context.token_count_with_pending + prompt,
            pending_tokens=self.context.pending_tokens + prompt,
            max_context_tokens=self.provider.max_context_size,
            reserved_tokens=self.reserved_tokens,
            trigger_tokens=self.trigger_tokens,
            usage=usage,
            cost=self.cost.status(),
        )

    def send_notices(self) -> None:
        """Send, once, what the user should know about the session as it was opened (damaged
        lines skipped in its context). `run()` sends them after the first TurnBegin; a front end
        whose views are subscribed earlier may call this at open to show them at once."""
        notices, self._notices = self._notices, []
        for notice in notices:
            self.bus.send(ev.Warning(message=notice))

    def add_notice(self, notice: str) -> None:
        """One more line for `send_notices` (the agent's builder knows things the soul does
        not: that no work dir was recorded for the session, say)."""
        self._notices.append(notice)

    # --- a turn --------------------------------------------------------------------------------

    async def run(self, user_input: str | list[ContentPart]) -> TurnResult:
        """One turn for the user's message. Cancelling it (Esc) raises CancelledError after
        StepInterrupted and TurnEnd were sent; the context then holds only whole steps."""
        masking.refresh()  # a key set since the last turn is masked in what this turn writes
        user_input = encodable_input(user_input)
        self._turn_text = turn_text(user_input)
        hooked = await self.hooks.begin_turn(self._turn_text)
        if hooked.blocked:  # nothing is sent or written: the front end keeps the prompt
            message = f"A UserPromptSubmit hook blocked the prompt: {hooked.reason}"
            return TurnResult("blocked", 0, message)
        self.bus.send(ev.TurnBegin(user_input=user_input))
        if self._own_cost:
            self.cost.begin_turn()
        self.send_notices()
        try:
            try:
                if self.context.system_prompt is None and self._system_prompt:
                    await self.context.write_system_prompt(self._system_prompt)
                if not self._unanswered(user_input):  # else: sent again after it failed
                    await self.checkpoint()
                    await self.context.append_message(Message(role="user", content=user_input))
            except OSError as error:
                return self._storage_failed(0, error)
            self.bus.send(self.status())
            result = await self._agent_loop()
            await self.hooks.run("Stop", {"stop_reason": result.stop_reason})
        finally:
            try:
                await asyncio.shield(self._sync())
            finally:
                self.bus.send(ev.TurnEnd())
        return result

    def _unanswered(self, user_input: str | list[ContentPart]) -> bool:
        """Whether the context ends with this message unanswered (its turn failed early)."""
        for message in reversed(self.context.history):  # the tail only: history is lazy
            if message.role != "user" or not is_checkpoint_note(message.text):
                return message.role == "user" and message.content == user_input
        return False

    async def _sync(self) -> None:
        try:
            await self.context.sync()
        except OSError as error:
            # Every record was handed to the OS; only durability against a crash is at stake.
            log.warning("could not fsync %s: %s", self.context.path, error)

    def _storage_failed(self, step: int, error: OSError) -> TurnResult:
        """A session file could not be written: one sentence for the user, the turn ends.

        The context cut the failed write back and kept its memory as it was, so the next turn
        (once there is room again) goes on from the last whole step."""
        message = storage_message(error)
        log.warning("step %d: %s", step, error)
        if step:
            self.bus.send(ev.StepInterrupted(reason=message))
        self.bus.send(ev.Error(message=message))
        return TurnResult("error", step, message)

    async def _agent_loop(self) -> TurnResult:
        step = 1
        while True:
            self.bus.send(ev.StepBegin(n=step))
            try:
                if self.context.token_count_with_pending >= self.trigger_tokens:
                    await self.compact(step=step)
                await self.checkpoint()
                finished = await self._step(step)
            except BackToTheFuture as jump:
                try:
                    await self._travel(jump)
                except OSError as error:
                    return self._storage_failed(step, error)
                continue
            except asyncio.CancelledError:
                self.bus.send(ev.StepInterrupted(reason="interrupted by the user"))
                await self._keep_interrupted()
                raise
            except LLMError as error:
                model = self.provider.model_name
                message = str(error) if model in str(error) else f"{model}: {error}"
                log.warning("step %d failed: %s", step, message)
                self.bus.send(ev.StepInterrupted(reason=message))
                self.bus.send(ev.Error(message=message))
                return TurnResult("error", step, message)
            except OSError as error:
                # Tools report their own OSErrors as results: this is a session file.
                return self._storage_failed(step, error)
            if finished is not None:
                return TurnResult(finished, step)
            step += 1
            if step > self.settings.max_steps_per_run:
                message = (
                    f"Stopped after {self.settings.max_steps_per_run} steps "
                    "(loop_control.max_steps_per_run). Send a message to let the agent go on."
                )
                self.bus.send(ev.Warning(message=message))
                return TurnResult("max_steps", step - 1, message)

    async def checkpoint(self, *, capture: bool = True) -> None:
        """Mark a point the timeline can revert to, and say so on the wire. What changed in the
        files since the last snapshot is recorded first (it belongs to the time before), unless
        the caller records it after (`capture=False`: a `!` command's own changes)."""
        if capture:
            await snapshots.capture(self.env)
        checkpoint_id = await self.context.checkpoint(self.checkpoint_messages)
        self.sync_dmail_checkpoints()
        self.bus.send(ev.CheckpointCreated(id=checkpoint_id))

    def sync_dmail_checkpoints(self) -> None:
        """Tell SendDMail how many checkpoints there are now (it refuses an id past them)."""
        if self._denwa_renji is not None:
            self._denwa_renji.set_n_checkpoints(self.context.n_checkpoints)

    async def context_swapped(self) -> None:
        """The live context was swapped (a revert, a restore, a clear, a drop, a D-Mail):
        SendDMail learns its checkpoints, and the todo list is the one its conversation left
        (the reminders and `SetTodoList` read it), saved when it changed."""
        self.sync_dmail_checkpoints()
        todos = todos_in(self.context.history)
        if todos != self.env.state.todos:
            self.env.state.todos = todos
            if self.env.save_state is not None:
                await self.env.save_state()

    async def _travel(self, jump: BackToTheFuture) -> None:
        rotated = await self.context.revert_to(jump.checkpoint_id, reason="dmail")
        await self.context_swapped()
        self.bus.send(
            ev.ContextReverted(
                checkpoint_id=jump.checkpoint_id, rotated_file=rotated.name, reason="dmail"
            )
        )
        await self.checkpoint()
        await self.context.append_message(jump.messages)
        self.bus.send(self.status())

    # --- a step --------------------------------------------------------------------------------

    async def _step(self, step: int) -> StopReason | None:
        """One LLM call and its tool calls; the stop reason when the turn is over."""
        await self._tell_ended_tasks()
        streamed = await self._call_llm(step)
        if streamed.usage is not None:
            await self.context.update_token_count(streamed.usage.input)
            await self.cost.add(self.provider.model_name, streamed.usage)
        if streamed.is_empty():
            # An empty assistant message is refused by some providers in later requests, and
            # would show as nothing: it is not kept, and the user is told.
            self.bus.send(
                ev.Warning(message="the model returned an empty answer; nothing was added")
            )
            self.bus.send(self.status(streamed.usage))
            return "done"
        message = streamed.message()
        results, any_rejected = await self._run_calls(message.tool_calls or ())
        await asyncio.shield(self._grow_context(message, streamed.usage, results))
        self._partial = None
        self.bus.send(self.status(streamed.usage))
        dmail = self._denwa_renji.fetch() if self._denwa_renji is not None else None
        if any_rejected:
            return "rejected"  # a D-Mail sent in the same step goes with it
        if dmail is not None:
            text = prompts.render("dmail", message=dmail.message.strip())
            raise BackToTheFuture(
                dmail.checkpoint_id, [Message(role="user", content=[system(text)])]
            )
        return None if message.tool_calls else "done"

    async def _run_calls(
        self, calls: Sequence[ToolCall]
    ) -> tuple[list[tuple[str, ToolOutput]], bool]:
        """Each call's result in the model's order, and whether the user rejected one outright
        (the calls after it are skipped). Calls run one after the other, except a run of
        neighbouring calls of `concurrent` tools (several `Agent` calls), which run at once."""
        results: list[tuple[str, ToolOutput]] = []
        any_rejected = False
        for batch in batches([self.toolset.prepare(call) for call in calls]):
            if any_rejected:
                for prepared in batch:
                    results.append((prepared.call.id, SKIPPED))
                    self.bus.send(SKIPPED.event(prepared.call.id))
                continue
            outcomes = await run_all(self._run_and_tell(prepared) for prepared in batch)
            for prepared, (result, was_rejected) in zip(batch, outcomes, strict=True):
                results.append((prepared.call.id, result))
                any_rejected = any_rejected or was_rejected
        return results, any_rejected

    async def _run_and_tell(self, prepared: PreparedCall) -> tuple[ToolOutput, bool]:
        """`_run_tool`, its result sent on the bus as soon as it is there."""
        result, was_rejected = await self._run_tool(prepared)
        self.bus.send(result.event(prepared.call.id))
        return result, was_rejected

    async def _keep_interrupted(self) -> None:
        """Keep what the user saw of an answer they interrupted, marked (as Claude Code does)."""
        partial, self._partial = self._partial, None
        message = partial.interrupted_message() if partial is not None else None
        if message is not None:
            await asyncio.shield(self.context.append_records([message]))

    async def _tell_ended_tasks(self) -> None:
        """Tell the model of each background task that ended since its last step, as Kimi
        does: a `<notification>` user message in the context, with the output's tail."""
        if self.env.tasks is not None and (told := notifications(self.env.tasks)):
            await self.context.append_records(told)

    async def _call_llm(self, step: int) -> Streamed:
        """Stream one response, sending it on the wire, retried as DESIGN.md §7 says."""
        await self.toolset.ready()  # MCP servers still starting: their tools go with it
        system_prompt = await self.request_system_prompt()
        # Every tool call goes with exactly one result, or the provider refuses the request.
        history: Sequence[Message] = paired(self.context.history)
        hooked = self.hooks.turn_reminders  # with every request of the turn, shown once
        chosen = (
            []
            if self.reminders is None
            else self.reminders.generate(
                todos=self.env.state.todos,
                context_tokens=self.context.token_count_with_pending,
                max_context_tokens=self.provider.max_context_size,
                user_text=self._turn_text,
            )
        )
        if self.approval.mode == "plan":  # with every request while planning, as the hooks'
            text = plan.reminder(plan.plan_file(self.env.state))
            hooked = [*hooked, Reminder("plan", "plan", text)]
        history = inject(history, [*hooked, *chosen])
        shown = [*(hooked if step == 1 else ()), *chosen]
        if shown:
            items = [ev.ReminderItem(kind=r.kind, text=r.text) for r in shown]
            self.bus.send(ev.SystemReminders(reminders=items))
        tools = self.toolset.schemas()

        async def attempt() -> Streamed:
            return await self._stream_once(system_prompt, history, tools)

        return await self.retry(step, attempt)

    async def retry(self, step: int, call: Callable[[], Awaitable[T]]) -> T:
        """`call()`, tried again on transient errors with StepRetry events (DESIGN.md §7,
        `kode_tui.soul.retrying`); the error it gives up on says why it stopped trying."""
        settings = self.settings
        policy = RetryPolicy(
            settings.max_retries_per_step, settings.max_retry_wait, settings.max_total_retry_wait
        )
        return await policy.run(call, step=step, bus=self.bus, sleep=self.retry_sleep)

    async def _stream_once(
        self,
        system_prompt: str | None,
        history: Sequence[Message],
        tools: Sequence[ToolSchema],
    ) -> Streamed:
        streamed = self._partial = Streamed()
        system_prompt, history = masked(system_prompt, history)
        self.requests.sent()
        async for received in self.provider.stream(system_prompt, history, tools):
            item = encodable_item(received)
            streamed.add(item)
            if isinstance(item, TextPart | ThinkPart):
                self.bus.send(ev.ContentPart(part=item))
            elif isinstance(item, ToolCallStart):
                self.bus.send(
                    ev.ToolCall(
                        id=streamed.call_id(item),
                        function=FunctionBody(name=item.name, arguments=""),
                    )
                )
            elif isinstance(item, ToolCallDelta):
                self.bus.send(
                    ev.ToolCallPart(id=streamed.call_id(item), arguments_delta=item.arguments_delta)
                )
        return streamed

    async def _run_tool(self, prepared: PreparedCall) -> tuple[ToolOutput, bool]:
        """The call's result, and whether the user rejected it outright (which ends the turn)."""
        env = self._env_of(prepared)
        if prepared.error is None:
            assert prepared.tool is not None
            asker = self.approval.asker(prepared.tool.name, prepared.call.id)
            env = msgspec.structs.replace(env, ask=asker)  # a FetchURL redirect asks with it
            blocked = await self.hooks.before_tool(prepared.call)
            if blocked is not None:  # as a rejection with feedback: the turn goes on
                return blocked, False
            permission = await self.toolset.permission(prepared, self.env)
            target = plan.target(prepared.tool.name, prepared.params, self.env)
            verdict = None
            if permission is not None:
                verdict = self.approval.plan_verdict(prepared.tool.name, permission, target)
            if isinstance(verdict, ToolOutput):
                return verdict, False
            if verdict is True:  # the plan file, outside the work dir: no edit a revert undoes
                env = msgspec.structs.replace(env, journal=None)
            if permission is not None and verdict is None:
                shown = plan.display(self.env.state) if prepared.tool.name == plan.EXIT else None
                if shown is not None:  # the document the user approves (Kimi's PlanDisplay)
                    self.bus.send(shown)
                response = await self.approval.request(
                    prepared.tool.name, prepared.call.id, permission
                )
                if permission.plan is not None:
                    # ExitPlanMode carries out every answer (Kimi's texts); a rejection of
                    # the plan still ends the turn.
                    answer = plan.verdict_of(response)
                    env = msgspec.structs.replace(env, verdict=answer)
                    return await self._run_approved(prepared, env), answer.ends_turn
                if isinstance(response, RejectWithFeedback):
                    return rejected(response.feedback), False
                if response == "reject":
                    return rejected(), True
        return await self._run_approved(prepared, env), False

    async def _run_approved(self, prepared: PreparedCall, env: ToolEnv) -> ToolOutput:
        """Run a call nothing stops (any more), with the hooks after it."""
        self.bus.send(ev.ToolStarted(tool_call_id=prepared.call.id))
        result = await self.toolset.run(prepared, env)
        if result.blocked:
            result = await self._run_outside(prepared, result)
        if prepared.error is None:
            await self.hooks.after_tool(prepared.call, result)
        return result

    def _env_of(self, prepared: PreparedCall) -> ToolEnv:
        """Where the call runs: a model's Shell call in the sandbox, with the mode's profile."""
        if self.sandbox is None or prepared.tool is None or prepared.tool.name != snapshots.SHELL:
            return self.env
        confinement = Confinement(self.sandbox, self.approval.profile)
        return msgspec.structs.replace(self.env, sandbox=confinement)

    async def _run_outside(self, prepared: PreparedCall, result: ToolOutput) -> ToolOutput:
        """A Shell command the sandbox stopped: run it outside only if the user says so, with
        an approval that says exactly that (every time, in every mode)."""
        assert prepared.tool is not None
        command = str(getattr(prepared.params, "command", ""))
        permission = Permission(
            kind="shell",
            action="run command outside the sandbox",
            description=command,
            scope=f"shell-outside:{command}",
            scope_label="",
            display=[ev.ShellBlock(command=command)],
            always_ask=f"the sandbox stopped it: {result.blocked}",
        )
        response = await self.approval.request(prepared.tool.name, prepared.call.id, permission)
        if response == "approve" or response == "approve_for_session":
            outside = await self.toolset.run(prepared, self.env)
            note = f"It failed in the sandbox ({result.blocked}); the user let it run outside:"
            return msgspec.structs.replace(outside, message=f"{note} {outside.message}".strip())
        feedback = response.feedback if isinstance(response, RejectWithFeedback) else ""
        said = f" They said: {feedback}" if feedback else ""
        note = f"The user did not let it run outside the sandbox.{said}"
        return msgspec.structs.replace(result, message=f"{result.message} {note}", blocked="")

    async def _grow_context(
        self, message: Message, usage: TokenUsage | None, results: list[tuple[str, ToolOutput]]
    ) -> None:
        # One write: a kill or a full disk leaves the whole step on disk or none of it.
        records: list[Message | UsageRecord] = [message]
        if usage is not None:
            records.append(UsageRecord(token_count=usage.input + usage.output))
        records.extend(tool_message(i, r) for i, r in results)
        await self.context.append_records(records)

    # --- compaction ----------------------------------------------------------------------------

    async def compact(self, instruction: str | None = None, *, step: int = 0) -> bool:
        """Shrink the context with the configured strategy; whether anything changed.

        The strategy's LLM calls are retried like a step's (StepRetry events carry `step`).
        """
        if not step and self._own_cost:
            self.cost.begin_turn()  # `/compact`'s call is a line of its own in `/cost`
        return await self.compactor.compact(instruction, step)

    def _compaction_llm(self, step: int) -> ChatProvider:
        """The model as a compaction strategy of `step` sees it (`RetryingProvider`)."""
        return RetryingProvider(self.provider, partial(self.retry, step), self.cost)
