"""ExitPlanMode's permission request over ACP: the choices the TUI's plan dialog offers, as
permission options (ACP has no question request): approve into each mode the session may
continue in (or, when the plan offers approaches, approve each approach), reject and stay in
plan mode, reject and leave it. A revision with feedback needs typed text, which a permission
option cannot carry: the user rejects and says what to change in the next prompt."""

from __future__ import annotations

from acp.schema import PermissionOption

from kode_tui.safetext import visible
from kode_tui.wire import events as ev

_REJECT = "plan:reject"
_REJECT_AND_EXIT = "plan:reject_and_exit"


def plan_options(ask: ev.PlanAsk) -> list[PermissionOption]:
    """The options of the plan's request, approving first (into the mode before plan)."""
    options: list[PermissionOption] = []
    if ask.options:
        for index, option in enumerate(ask.options):
            label = visible(option.label, multiline=False)
            options.append(
                PermissionOption(
                    option_id=f"plan:option:{index}",
                    name=f"Approve “{label}” (continue in {ask.mode})",
                    kind="allow_once",
                )
            )
    else:
        modes = [ask.mode, *(mode for mode in ask.modes if mode != ask.mode)]
        for mode in modes:
            options.append(
                PermissionOption(
                    option_id=f"plan:approve:{mode}",
                    name=f"Approve, continue in {mode} mode",
                    kind="allow_once",
                )
            )
    options.append(
        PermissionOption(option_id=_REJECT, name="Reject, stay in plan mode", kind="reject_once")
    )
    options.append(
        PermissionOption(
            option_id=_REJECT_AND_EXIT, name="Reject and exit plan mode", kind="reject_once"
        )
    )
    return options


def plan_answer(ask: ev.PlanAsk, option_id: str) -> ev.PlanVerdict:
    """The verdict the client's choice `option_id` stands for (anything unknown rejects)."""
    kind, _, value = option_id.removeprefix("plan:").partition(":")
    if kind == "approve":
        mode = next((mode for mode in ask.modes if mode == value), ask.mode)
        return ev.PlanVerdict(choice="approve", mode=mode)
    if kind == "option" and value.isdigit() and int(value) < len(ask.options):
        return ev.PlanVerdict(choice="approve", mode=ask.mode, option=ask.options[int(value)].label)
    if option_id == _REJECT_AND_EXIT:
        return ev.PlanVerdict(choice="reject_and_exit")
    return ev.PlanVerdict(choice="reject")
