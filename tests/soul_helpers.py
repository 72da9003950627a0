"""A soul wired to a ScriptedProvider, a few test tools and a recording of its wire events."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TextIO

from pydantic import BaseModel

from kode_tui.config import Config
from kode_tui.session import Context, Session
from kode_tui.session.journal import FileJournal
from kode_tui.session.state import SessionState
from kode_tui.soul.approval import Approval
from kode_tui.soul.llm import ChatProvider
from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.soul.soul import KodeSoul, LoopSettings
from kode_tui.tools.background import BackgroundTasks
from kode_tui.tools.base import Permission, Tool, ToolEnv, ToolOutput
from kode_tui.tools.dmail import DenwaRenji, SendDMail
from kode_tui.tools.todo import SetTodoList
from kode_tui.tools.toolset import Toolset
from kode_tui.wire import WireBus
from kode_tui.wire import events as ev
from kode_tui.wire.events import ApprovalResponse

if TYPE_CHECKING:
    from kode_tui.print_mode import OutputFormat


class EchoParams(BaseModel):
    text: str
    times: int = 1


class Echo(Tool[EchoParams]):
    """Needs no approval; repeats its text."""

    name: ClassVar[str] = "Echo"
    description: ClassVar[str] = "Repeat text."
    params = EchoParams

    async def run(self, params: EchoParams, env: ToolEnv, tool_call_id: str) -> ToolOutput:
        return ToolOutput(output=params.text * params.times, message="Echoed.")


class TouchParams(BaseModel):
    path: str


class Touch(Tool[TouchParams]):
    """An edit that needs approval: writes `touched` to a file and journals it."""

    name: ClassVar[str] = "Touch"
    description: ClassVar[str] = "Write 'touched' to a file."
    params = TouchParams

    async def permission(self, params: TouchParams, env: ToolEnv) -> Permission | None:
        path = env.resolve(params.path)
        inside = env.is_inside(path)
        return Permission(
            kind="edit",
            action="edit file",
            description=f"Touch {params.path}",
            scope="edit" if inside else f"edit:{path}",
            scope_label="all edits in the work dir",
            outside_work_dir=not inside,
        )

    async def run(self, params: TouchParams, env: ToolEnv, tool_call_id: str) -> ToolOutput:
        path = env.resolve(params.path)
        before = path.read_bytes() if path.exists() else None
        path.write_bytes(b"touched")
        if env.journal is not None:
            await env.journal.record(env.display_path(path), before, b"touched", tool_call_id)
        return ToolOutput(message="Touched.")


class Sleep(Tool[EchoParams]):
    """Runs until cancelled; notes that it started."""

    name: ClassVar[str] = "Sleep"
    description: ClassVar[str] = "Sleep."
    params = EchoParams
    started: asyncio.Event

    def __init__(self) -> None:
        self.started = asyncio.Event()

    async def run(self, params: EchoParams, env: ToolEnv, tool_call_id: str) -> ToolOutput:
        self.started.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


@dataclass
class Rig:
    soul: KodeSoul
    context: Context
    bus: WireBus
    provider: ScriptedProvider
    state: SessionState
    work_dir: Path
    events: list[ev.Event] = field(default_factory=list)
    answers: list[ApprovalResponse] = field(default_factory=list)
    """Answers to approval requests, in order; `approve` once they run out."""
    slept: list[float] = field(default_factory=list)
    """The waits of the soul's retries, in order (taken at once)."""

    def of(self, kind: type[ev.Event]) -> list[Any]:
        return [event for event in self.events if isinstance(event, kind)]

    def lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.context.path.read_text().splitlines()]

    async def settle(self) -> None:
        """Let the subscribers take every event sent so far."""
        for _ in range(5):
            await asyncio.sleep(0)


async def make_rig(
    tmp_path: Path,
    script: list[dict[str, Any]],
    *,
    tools: Sequence[Tool[Any]] = (),
    dmail: bool = False,
    settings: LoopSettings | None = None,
    max_context_size: int = 100_000,
    answer: Callable[[ev.ApprovalRequest], ApprovalResponse] | None = None,
    tasks: bool = False,
) -> Rig:
    work_dir = tmp_path / "work"
    work_dir.mkdir(exist_ok=True)
    slept: list[float] = []

    async def rig_sleep(seconds: float) -> None:
        slept.append(seconds)  # the retry's wait, taken at once: tests never sleep

    context = Context(tmp_path / "session" / "context.jsonl")
    await context.restore()
    bus = WireBus()
    provider = ScriptedProvider(script, max_context_size=max_context_size)
    state = SessionState()
    denwa_renji = DenwaRenji() if dmail else None
    all_tools: list[Tool[Any]] = [Echo(), Touch(), SetTodoList(), *tools]
    if denwa_renji is not None:
        all_tools.append(SendDMail(denwa_renji))
    env = ToolEnv(work_dir=work_dir, journal=FileJournal(context), state=state, bus=bus)
    if tasks:
        env.tasks = BackgroundTasks(tmp_path / "session" / "tasks", bus=bus)
    soul = KodeSoul(
        context=context,
        provider=provider,
        bus=bus,
        toolset=Toolset(all_tools),
        env=env,
        approval=Approval(bus, state),
        denwa_renji=denwa_renji,
        settings=settings or LoopSettings(reserved_context_size=1_000),
        system_prompt="You are a test.",
        retry_sleep=rig_sleep,
    )
    rig = Rig(soul, context, bus, provider, state, work_dir, slept=slept)

    def record(event: ev.Event) -> None:
        rig.events.append(event)
        if isinstance(event, ev.ApprovalRequest):
            if answer is not None:
                event.resolve(answer(event))
            else:
                event.resolve(rig.answers.pop(0) if rig.answers else "approve")

    bus.subscribe(callback=record)
    return rig


def record_events(bus: WireBus, answer: ApprovalResponse = "approve") -> list[ev.Event]:
    """Every event `bus` sends from now on, in order; each approval request is answered
    with `answer`."""
    events: list[ev.Event] = []

    def record(event: ev.Event) -> None:
        events.append(event)
        if isinstance(event, ev.ApprovalRequest):
            event.resolve(answer)

    bus.subscribe(callback=record)
    return events


@dataclass
class Printed:
    """What a print-mode run returned and wrote."""

    status: int
    out: str
    err: str


async def print_turn(
    work_dir: Path,
    provider: ChatProvider,
    prompt: str = "hi",
    session: Session | None = None,
    config: Config | None = None,
    *,
    output_format: OutputFormat = "text",
    messages: TextIO | None = None,
    yolo: bool = False,
) -> Printed:
    """`kode-tui -p PROMPT --print` in `work_dir` (a new session unless `session`), with
    `provider` answering; `--output-format`, stream-json input (`messages`) and `--yolo` as
    given."""
    import io

    from kode_tui.config import ModelChoice
    from kode_tui.print_mode import run_print
    from kode_tui.soul.facade import AgentSession

    out, err = io.StringIO(), io.StringIO()
    choice = ModelChoice(name="scripted", model="scripted", source="flag")
    opened = await AgentSession.open(work_dir, session)
    config = config or Config()
    status = await run_print(
        opened,
        config,
        choice,
        prompt,
        out=out,
        err=err,
        provider=provider,
        output_format=output_format,
        messages=messages,
        yolo=yolo,
    )
    return Printed(status, out.getvalue(), err.getvalue())
