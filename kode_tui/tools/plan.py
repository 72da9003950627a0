"""Plan mode's tools, `EnterPlanMode` and `ExitPlanMode`, as Kimi CLI 1.52 names them
(kimi_cli/tools/plan/), its plan file and its reminder.

In plan mode the model only reads and plans: the soul refuses any edit or command
(`refusal`), except edits of the plan file, which run without asking. The plan file lives in
`$KODE_TUI_HOME/plans/<slug>.md` (Kimi: `~/.kimi/plans/<slug>.md`); the slug is kept in
state.json under Kimi's key `plan_slug`, so the file outlives a restart.

The tools do not switch the mode themselves: they are bound (`bind`) to the session's
`PlanSwitch` (the approval policy), which announces every change of mode.
"""

# Annotations are evaluated as the module loads, not postponed: pydantic compiles and evaluates
# each field's annotation from its string otherwise (issue 31: ~6 ms for the models a session
# loads before its first request).

import asyncio
import secrets
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar, Protocol

from pydantic import BaseModel, Field

from kode_tui.fsutil import atomic_write_bytes
from kode_tui.paths import home
from kode_tui.session.state import ApprovalMode, SessionState
from kode_tui.tools.base import Permission, Tool, ToolEnv, ToolError, ToolOutput
from kode_tui.wire.events import (
    ApprovalResponse,
    PlanApproach,
    PlanAsk,
    PlanDisplay,
    PlanVerdict,
    RejectWithFeedback,
)

ENTER = "EnterPlanMode"
EXIT = "ExitPlanMode"
PLAN_TOOLS = (ENTER, EXIT)
FILE_TOOLS = ("ReadFile", "WriteFile", "StrReplaceFile")
"""The tools whose `path` parameter names the one file they touch."""


def plans_dir() -> Path:
    return home() / "plans"


def plan_file(state: SessionState) -> Path | None:
    """The session's plan file; None while plan mode has never given it a name."""
    return plans_dir() / f"{state.plan_slug}.md" if state.plan_slug else None


def name_plan(state: SessionState) -> Path:
    """Give the session a plan file when it has none (entering plan mode); its path."""
    if state.plan_session_id is None:
        state.plan_session_id = uuid.uuid4().hex
    if not state.plan_slug:
        state.plan_slug = f"plan-{secrets.token_hex(4)}"
    path = plan_file(state)
    assert path is not None
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def target(tool_name: str, params: BaseModel | None, env: ToolEnv) -> Path | None:
    """The file a file tool's call touches; None for any other call."""
    raw = getattr(params, "path", None)
    if tool_name not in FILE_TOOLS or not isinstance(raw, str):
        return None
    return env.resolve(raw)


def refusal(permission: Permission) -> ToolOutput:
    """What the model reads when plan mode stops a call."""
    what = "command" if permission.kind == "shell" else "change"
    return ToolOutput(
        message=f"Plan mode is active: this {what} was not run ({permission.description}). Only "
        "read-only tools run in plan mode; the plan file is the only file you may edit. "
        "Write your plan there and call ExitPlanMode for the user's approval.",
        brief="Refused in plan mode",
        is_error=True,
    )


def reminder(path: Path | None) -> str:
    """Kimi 1.52's full plan-mode reminder (soul/dynamic_injections/plan_mode.py), shortened;
    as Kimi's, it tells a plan file that exists (a revision, a session reopened in plan mode)
    from one still to write.

    It goes with every request in plan mode, unthrottled: Kimi writes its reminders into the
    context and then sends a sparse one every few turns ("see full instructions earlier"), but
    ours are never written there, so a sparse one would point at instructions the model no
    longer has. Put in front of the turn's user message, it is part of the cached prefix from
    the turn's second request on."""
    lines = [
        "Plan mode is active. You MUST NOT make any edits (with the exception of the plan file "
        "below), run non-readonly tools, or otherwise make changes to the system. This "
        "supersedes any other instructions you have received.",
    ]
    if path is not None:
        how = (
            "exists — read first, then update it with WriteFile or StrReplaceFile"
            if path.exists()
            else "create it with WriteFile; once it exists, you can modify it with WriteFile "
            "or StrReplaceFile"
        )
        lines += [
            "",
            f"Plan file: {path} ({how})",
            "This is the only file you are allowed to edit.",
        ]
    lines += [
        "",
        "Workflow:",
        "1. Understand — explore the codebase with Glob, Grep, ReadFile",
        "2. Design — converge on the best approach",
        "3. Review — re-read key files to verify understanding",
        "4. Write Plan — modify the plan file with WriteFile or StrReplaceFile",
        "5. Exit — call ExitPlanMode for user approval",
    ]
    return "\n".join(lines)


class PlanSwitch(Protocol):
    """What the plan tools need of the session: its mode, and switching it."""

    @property
    def mode(self) -> ApprovalMode: ...

    @property
    def modes(self) -> tuple[ApprovalMode, ...]:
        """The modes offered here."""

    async def enter_plan(self) -> Path:
        """Switch to plan mode; the plan file."""

    async def leave_plan(self, mode: ApprovalMode | None = None) -> ApprovalMode:
        """Switch out of plan mode, to `mode` or the one it was entered from; that mode."""


class _Bound:
    """A tool that needs the session's `PlanSwitch` (given once the policy exists)."""

    def __init__(self) -> None:
        self._switch: PlanSwitch | None = None

    def bind(self, switch: PlanSwitch) -> None:
        self._switch = switch


def bind_plan(tools: Iterable[Tool[Any]], switch: PlanSwitch) -> None:
    """Give the plan tools among `tools` the session's switch."""
    for tool in tools:
        if isinstance(tool, _Bound):
            tool.bind(switch)


class EnterParams(BaseModel):
    pass


class EnterPlanMode(_Bound, Tool[EnterParams]):
    name: ClassVar[str] = ENTER
    description: ClassVar[str] = (
        "Use this tool proactively when you're about to start a non-trivial implementation "
        "task (a new feature, several valid approaches, changes to several files, unclear "
        "requirements): the user signs off on your approach before code is written. In plan "
        "mode you explore read-only, write your plan to the plan file and present it with "
        "ExitPlanMode. Not for small fixes, detailed instructions or pure research."
    )
    params = EnterParams

    async def permission(self, params: EnterParams, env: ToolEnv) -> Permission | None:
        if self._switch is not None and self._switch.mode == "plan":
            return None  # nothing to approve: run() tells the model, as Kimi does
        return Permission(
            kind="other",
            action="enter plan mode",
            description="Enter plan mode to explore and design an approach",
            scope="plan:enter",
            scope_label="entering plan mode",
        )

    async def run(self, params: EnterParams, env: ToolEnv, tool_call_id: str) -> ToolOutput:
        if self._switch is None:
            raise ToolError("EnterPlanMode is not properly initialized.", brief="Not initialized")
        if self._switch.mode == "plan":
            raise ToolError(
                "Already in plan mode. Use ExitPlanMode when your plan is ready.",
                brief="Already in plan mode",
            )
        path = await self._switch.enter_plan()
        return ToolOutput(
            message=(
                "Plan mode activated. You MUST NOT edit code files — only read and plan.\n"
                f"Plan file: {path}\n"
                "Workflow: identify key questions about the codebase → design approach → "
                "modify the plan file with WriteFile or StrReplaceFile (create it with "
                "WriteFile first if it does not exist) → call ExitPlanMode."
            ),
            brief="Plan mode on",
        )


class PlanOption(BaseModel):
    label: str = Field(
        description=(
            "Short name for this option (1-8 words). "
            "Append '(Recommended)' if you recommend this option."
        )
    )
    description: str = Field(
        default="", description="Brief summary of this approach and its trade-offs."
    )


class ExitParams(BaseModel):
    options: list[PlanOption] | None = Field(
        default=None,
        max_length=3,
        description=(
            "When the plan contains multiple alternative approaches, list them here so the "
            "user can choose which one to execute. 2-3 options."
        ),
    )


class ExitPlanMode(_Bound, Tool[ExitParams]):
    name: ClassVar[str] = EXIT
    description: ClassVar[str] = (
        "Use this tool when you are in plan mode and have finished writing your plan to the "
        "plan file and are ready for user approval. It does NOT take the plan as a parameter: "
        "it reads the plan file named in the plan mode reminder, and the user sees its "
        "contents. If the plan has alternative approaches, pass them as `options`."
    )
    params = ExitParams

    async def permission(self, params: ExitParams, env: ToolEnv) -> Permission | None:
        path = plan_file(env.state)
        text = _read(path)
        if self._switch is None or self._switch.mode != "plan" or not text:
            return None  # nothing to approve: `run` says why
        assert path is not None
        modes: list[ApprovalMode] = [m for m in self._switch.modes if m != "plan"]
        before = env.state.mode_before_plan
        ask = PlanAsk(
            file_path=str(path),
            options=_options(params),
            modes=modes,
            mode=before if before in modes else "ask",
        )
        return Permission(
            kind="other",
            action="approve the plan",
            description=text,
            scope="",
            scope_label="",
            always_ask="the user approves each plan",
            plan=ask,
        )

    async def run(self, params: ExitParams, env: ToolEnv, tool_call_id: str) -> ToolOutput:
        if self._switch is None or self._switch.mode != "plan":
            raise ToolError(
                "Not in plan mode. ExitPlanMode is only available during plan mode.",
                brief="Not in plan mode",
            )
        path = plan_file(env.state)
        text = _read(path)
        if path is None or not text:
            raise ToolError(
                f"No plan file found. Write your plan to {path} first, then call ExitPlanMode.",
                brief="No plan file",
            )
        verdict = env.verdict or PlanVerdict(choice="approve")
        edited = verdict.plan is not None and verdict.plan != text and verdict.plan.strip()
        if edited and verdict.choice in ("approve", "revise"):
            assert verdict.plan is not None
            text = verdict.plan
            await asyncio.to_thread(atomic_write_bytes, path, text.encode("utf-8"))
        return await self._conclude(verdict, _options(params), path, text, edited=bool(edited))

    async def _conclude(
        self,
        verdict: PlanVerdict,
        options: list[PlanApproach],
        path: Path,
        text: str,
        *,
        edited: bool,
    ) -> ToolOutput:
        """Kimi 1.52's result texts for each answer (kimi_cli/tools/plan/__init__.py)."""
        assert self._switch is not None
        if verdict.choice == "reject_and_exit":
            await self._switch.leave_plan(verdict.mode)
            return ToolOutput(
                message="Plan rejected by user. Plan mode deactivated. All tools are now "
                "available. Wait for the user's next message.",
                brief="Plan rejected, exited plan mode",
                is_error=True,
            )
        if verdict.choice == "reject":
            return ToolOutput(
                message="Plan rejected by user. Stay in plan mode. The user will provide "
                "feedback via conversation. Wait for the user's next message before revising.",
                brief="Plan rejected",
                is_error=True,
            )
        if verdict.choice == "revise":
            # Ours, not Kimi's: the model must know the file it wrote changed under it.
            note = " The user edited the plan file: read it again." if edited else ""
            if verdict.feedback:
                said = (
                    "User wants to revise the plan. Stay in plan mode. Revise based on the "
                    f"feedback below.{note}\n\nUser feedback: {verdict.feedback}"
                )
            else:
                said = (
                    "User wants to revise the plan. Stay in plan mode. Wait for the user's "
                    f"next message with feedback before revising.{note}"
                )
            return ToolOutput(output=said, message="Plan revision requested", brief="Revise")
        chosen = verdict.option if verdict.option in {o.label for o in options} else ""
        mode = await self._switch.leave_plan(verdict.mode)
        if chosen:
            said = (
                f'Plan approved by user. Selected approach: "{chosen}"\n'
                "Plan mode deactivated. All tools are now available.\n"
                f"Plan saved to: {path}\n\n"
                f'IMPORTANT: Execute ONLY the selected approach "{chosen}". '
                "Ignore other approaches in the plan.\n\n"
                f"## Approved Plan:\n{text}"
            )
            brief = f"Plan approved: {chosen}"
        else:
            said = (
                "Plan approved by user. Plan mode deactivated. All tools are now available.\n"
                f"Plan saved to: {path}\n\n## Approved Plan:\n{text}"
            )
            brief = "Plan approved"
        return ToolOutput(output=said, message=brief, brief=f"{brief} · {mode} mode")


def verdict_of(response: ApprovalResponse) -> PlanVerdict:
    """ExitPlanMode's answer as a verdict, whoever gave it: a front end that only approves or
    rejects (ACP, print mode) approves into the mode before plan, rejects and stays, or, with
    feedback, asks for a revision."""
    if isinstance(response, PlanVerdict):
        return response
    if isinstance(response, RejectWithFeedback):
        return PlanVerdict(choice="revise", feedback=response.feedback)
    return PlanVerdict(choice="reject" if response == "reject" else "approve")


def _options(params: ExitParams) -> list[PlanApproach]:
    """The approaches to choose from: Kimi offers them only when there are two or more."""
    options = params.options or []
    if len(options) < 2:
        return []
    return [PlanApproach(label=o.label, description=o.description) for o in options]


def display(state: SessionState) -> PlanDisplay | None:
    """The plan as the user is shown it before approving it; None when there is none."""
    path = plan_file(state)
    text = _read(path)
    return PlanDisplay(content=text, file_path=str(path)) if path is not None and text else None


def _read(path: Path | None) -> str:
    """The plan file's text; empty when there is none."""
    if path is None:
        return ""
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
