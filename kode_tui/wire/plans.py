"""What ExitPlanMode's approval request offers (`PlanAsk`) and how the user answers it
(`PlanVerdict`): Kimi CLI 1.52 asks this as a question (kimi_cli/tools/plan/__init__.py); here
it rides on the approval request and its answer, so every front end that answers approvals
answers it, and the records stay Kimi's `ApprovalRequest` / `ApprovalResponse`."""

# Annotations are evaluated as the module loads, not postponed: pydantic compiles and evaluates
# each field's annotation from its string otherwise (issue 31: ~6 ms for the models a session
# loads before its first request).

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from kode_tui.config import ApprovalMode


class PlanApproach(BaseModel):
    """One of the approaches a plan offers (ExitPlanMode's `options`, as Kimi 1.52 has them)."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    label: str
    description: str = ""


class PlanAsk(BaseModel):
    """What ExitPlanMode's approval request offers besides yes and no (Kimi 1.52 asks it as a
    question: Approve or one of the plan's options, Reject, Reject and Exit, Revise)."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    file_path: str
    options: list[PlanApproach] = Field(default_factory=list)
    """The approaches to choose from when approving (two or three), or none."""
    modes: list[ApprovalMode] = Field(default_factory=list)
    """The modes the session may continue in once the plan is approved."""
    mode: ApprovalMode = "ask"
    """The one offered first: the mode plan mode was entered from."""


PlanChoice = Literal["approve", "revise", "reject", "reject_and_exit"]


class PlanVerdict(BaseModel):
    """The user's answer to ExitPlanMode's request: approve (into `mode`, with the approach
    `option`), revise (stay in plan mode; the model reads `feedback` and the turn goes on),
    reject (stay in plan mode) or reject and exit plan mode: both end the turn. `plan`: the plan
    as the user edited it (written to the plan file), None when unchanged."""

    model_config = ConfigDict(frozen=True, defer_build=True)
    choice: PlanChoice
    mode: ApprovalMode | None = None
    option: str = ""
    feedback: str = ""
    plan: str | None = None

    @property
    def ends_turn(self) -> bool:
        return self.choice in ("reject", "reject_and_exit")
