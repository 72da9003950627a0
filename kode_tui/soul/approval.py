"""Approvals (DESIGN.md §6): whether a tool call may run, by mode, session scope or the user.

The user is asked with an `ApprovalRequest` on the wire; whoever shows it (the UI, or print mode)
calls `resolve()`. Modes: `ask` asks for every edit and command; `auto-edit` lets edits in the work
dir through; `sandbox` lets edits in the work dir and Shell commands through, the commands
running in the sandbox (`kode_tui.tools.sandbox`; offered only where it works), and a FetchURL
of a public host when the sandbox's commands reach the network too (`[sandbox] network = true`:
the user let the agent reach the network unasked there); `yolo` lets
everything through. A call outside the work dir, or a FetchURL of a private address, asks every
time unless in yolo, and "approve for session" does not cover it. A call whose permission says
`always_ask` (a write that can make tools run code, see `kode_tui.tools.protected`) asks every
time in every mode, yolo included, and is never remembered for the session.

Where the sandbox works, the model's Shell commands run in it in every mode: with the profile
`open` in yolo (writable and networked, protected paths read-only), `workspace` otherwise.

Each change of the mode or of the session scopes is sent as `PermissionsChanged`, so the views
showing them (the prompt's badge) follow; a scope remembers how the panel named it and when it
was granted, for `/permissions`, which can revoke it.

A mode switched while calls wait for the user applies to them: each the new mode lets through
is approved (once) at that moment, exactly as if it were asked for now (`allows`). What asks
in every mode (a protected path, a command the sandbox stopped) keeps waiting for the user's
own answer: a switch of mode is not one. A mode reached by cycling (Ctrl+T) applies to waiting
calls only once it has been kept for `CYCLE_SETTLE_S`: cycling from sandbox back to ask passes
yolo on the way, and a mode passed by is not a mode chosen.

`plan` (Kimi's plan mode, `kode_tui.tools.plan`): only read-only calls run; any other edit or
command is refused with a message for the model (`plan_verdict`), except the plan file, which
the model reads and edits without asking. `ExitPlanMode` asks every time, yolo included.
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Literal, get_args

import msgspec

from kode_tui.session.state import ApprovalGrant, ApprovalMode, SessionState
from kode_tui.tools import plan
from kode_tui.tools.base import Permission, ToolOutput
from kode_tui.tools.sandbox import Profile
from kode_tui.wire import WireBus
from kode_tui.wire.events import (
    ApprovalRequest,
    ApprovalResolved,
    ApprovalResponse,
    PermissionsChanged,
)

log = logging.getLogger(__name__)

MODES: tuple[ApprovalMode, ...] = get_args(ApprovalMode)
CYCLE_SETTLE_S = 0.8
"""How long a mode reached by cycling must be kept before it approves waiting calls: longer
than the gap between two presses of a key held or tapped, short enough to feel immediate."""
_ids = itertools.count(1)


ApprovalSourceKind = Literal["foreground_turn", "background_agent"]
"""Kimi 1.52's kinds of subagent asking: one its parent's turn waits for, or a background task."""


class ApprovalSource(msgspec.Struct, frozen=True):
    """A subagent whose calls are asking (Kimi 1.52's `ApprovalSource`)."""

    agent_id: str
    subagent_type: str
    description: str
    kind: ApprovalSourceKind = "foreground_turn"


approval_source: contextvars.ContextVar[ApprovalSource | None] = contextvars.ContextVar(
    "approval_source", default=None
)
"""Set by the `Agent` tool around a subagent's run: the subagent shares its parent's `Approval`,
and the tasks its soul starts inherit the value, so its requests say whose they are."""


class SessionPermission(msgspec.Struct, frozen=True):
    """A scope approved for the rest of the session, as `/permissions` lists it."""

    scope: str
    """The key the policy matches, e.g. `edit`, `shell:git status`."""
    label: str
    """The scope in the approval panel's words (the key, for a grant recorded without them)."""
    granted_at: float | None
    """Unix time; None when it was recorded without one."""


class Approval:
    """The approval policy of one session; its mode and session scopes live in state.json."""

    def __init__(
        self,
        bus: WireBus,
        state: SessionState,
        save_state: Callable[[], Awaitable[None]] | None = None,
        *,
        override: ApprovalMode | None = None,
        sandbox: bool = False,
        sandbox_network: bool = False,
    ) -> None:
        """`override` (`--yolo`, `--permission-mode`) holds for this run only and is not saved
        to state.json. `sandbox`: whether Shell commands run in the sandbox here (the `sandbox`
        mode is offered only then); `sandbox_network`: whether they reach the network there."""
        self._bus = bus
        self._state = state
        self._save_state = save_state
        self._override = override
        self.sandbox = sandbox
        self.sandbox_network = sandbox and sandbox_network
        if override == "plan" and state.approval_mode != "plan":
            state.mode_before_plan = state.approval_mode  # `--permission-mode plan`, this run
        if (override or state.approval_mode) == "plan":
            # Opened in plan mode (that flag, the config's default, a Kimi session's plan_mode
            # without a slug): it needs its plan file, as entering plan mode gives one.
            plan.name_plan(state)
        self._waiting: dict[str, tuple[ApprovalRequest, Permission]] = {}
        """The requests waiting for the user, by id."""
        self.cycle_settle_s = CYCLE_SETTLE_S
        self._settling: asyncio.TimerHandle | None = None

    @property
    def modes(self) -> tuple[ApprovalMode, ...]:
        """The modes offered here, in the order Ctrl+T cycles them."""
        return MODES if self.sandbox else tuple(mode for mode in MODES if mode != "sandbox")

    @property
    def mode(self) -> ApprovalMode:
        mode = self._override or self._state.approval_mode
        # A session saved in sandbox mode, opened where there is no sandbox: it asks.
        return mode if mode in self.modes else "ask"

    @property
    def profile(self) -> Profile:
        """The sandbox profile of the model's Shell commands in the current mode."""
        return "open" if self.mode == "yolo" else "workspace"

    async def set_mode(self, mode: ApprovalMode, *, settle: bool = True) -> None:
        """Switch to `mode`; ValueError when it is not offered here (no sandbox). With `settle`,
        the waiting calls the mode lets through are approved now; without, after
        `cycle_settle_s` unless the mode is switched again meanwhile."""
        if mode not in self.modes:
            raise ValueError(f"the {mode} mode needs the Shell sandbox, which is off here")
        if mode == "plan" and self.mode != "plan":
            # A mode for this run only (`--yolo`, `--permission-mode`) is not the session's:
            # leaving plan mode returns to the session's own, never saves the run's.
            self._state.mode_before_plan = (
                self._state.approval_mode if self._override is not None else self.mode
            )
            plan.name_plan(self._state)
        elif mode != "plan" and self.mode == "plan":
            self._state.mode_before_plan = None
            self._state.plan_session_id = None  # as Kimi: the next plan gets a file of its own
            self._state.plan_slug = None
        self._override = None
        self._state.approval_mode = mode
        if self._settling is not None:
            self._settling.cancel()
            self._settling = None
        await self._save()
        if settle:
            self.settle()
        elif self._waiting:
            loop = asyncio.get_running_loop()
            self._settling = loop.call_later(self.cycle_settle_s, self.settle)

    def settle(self) -> None:
        """Approve each waiting call the current mode lets through."""
        self._settling = None
        for request, permission in list(self._waiting.values()):
            if self.allows(permission):
                request.resolve("approve")

    async def enter_plan(self) -> Path:
        """Switch to plan mode (remembering the mode it left); the plan file."""
        await self.set_mode("plan")
        return plan.name_plan(self._state)

    async def leave_plan(self, mode: ApprovalMode | None = None) -> ApprovalMode:
        """Switch from plan mode to `mode` (default: the one plan mode was entered from)."""
        mode = mode or self._state.mode_before_plan or "ask"
        if mode == "plan" or mode not in self.modes:
            mode = "ask"
        await self.set_mode(mode)
        return mode

    def plan_verdict(
        self, tool_name: str, permission: Permission, target: Path | None
    ) -> ToolOutput | bool | None:
        """In plan mode, what becomes of a call that needs `permission`: True (it runs without
        asking: the plan file), a refusal for the model (an edit, a command, anything not
        read-only), or None (asked as usual: a read outside the work dir, the plan tools).
        Always None outside plan mode."""
        if self.mode != "plan" or tool_name in plan.PLAN_TOOLS:
            return None
        path = plan.plan_file(self._state)
        if target is not None and path is not None and target == path:
            return None if permission.always_ask else True
        if permission.kind == "read":
            return None
        return plan.refusal(permission)

    async def cycle_mode(self) -> ApprovalMode:
        """Switch to the next mode (ask → auto-edit → plan → sandbox → yolo → ask) and return it; it
        applies to waiting calls once kept for `cycle_settle_s` (see the module's docstring)."""
        modes = self.modes
        await self.set_mode(modes[(modes.index(self.mode) + 1) % len(modes)], settle=False)
        return self.mode

    @property
    def session_scopes(self) -> list[str]:
        return list(self._state.session_approvals)

    def grants(self) -> list[SessionPermission]:
        """The session scopes, in the order they were granted, with how and when."""
        found = self._state.session_approval_grants
        return [
            SessionPermission(
                scope,
                found[scope].label if scope in found and found[scope].label else scope,
                found[scope].granted_at if scope in found else None,
            )
            for scope in self._state.session_approvals
        ]

    async def revoke(self, scope: str) -> bool:
        """Forget a session scope (saved at once): its calls ask again. Whether it was there."""
        if scope not in self._state.session_approvals:
            return False
        self._state.session_approvals.remove(scope)
        self._state.session_approval_grants.pop(scope, None)
        await self._save()
        return True

    def announce(self) -> None:
        """Send the mode and the number of session scopes as they are now."""
        self._bus.send(
            PermissionsChanged(
                mode=self.mode,
                session_approvals=len(self._state.session_approvals),
                sandbox=self.sandbox,
            )
        )

    def allows(self, permission: Permission) -> bool:
        """Whether the call may run without asking."""
        if permission.always_ask:
            return False
        if self.mode == "plan":
            return permission.scope in self._state.session_approvals and permission.kind == "read"
        if self.mode == "yolo":
            return True
        if permission.outside_work_dir or permission.private_address:
            return False
        if self.mode in ("auto-edit", "sandbox") and permission.kind == "edit":
            return True
        if self.mode == "sandbox" and permission.kind == "shell":
            return True  # in the sandbox
        if self.mode == "sandbox" and permission.network and self.sandbox_network:
            return True  # as a networked command in the sandbox would
        return permission.scope in self._state.session_approvals

    async def request(
        self, tool_name: str, tool_call_id: str, permission: Permission
    ) -> ApprovalResponse:
        """The answer for one call: at once when the policy allows it, else the user's."""
        if self.allows(permission):
            return "approve"
        request = ApprovalRequest(
            id=f"approval-{next(_ids)}",
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            action=permission.action,
            description=permission.description,
            display=list(permission.display),
            scope_label="" if permission.asks_every_time else permission.scope_label,
            outside_work_dir=permission.outside_work_dir,
            always_ask=permission.always_ask,
            plan=permission.plan,
        )
        if (source := approval_source.get()) is not None:
            request = request.model_copy(
                update={
                    "source_kind": source.kind,
                    "agent_id": source.agent_id,
                    "subagent_type": source.subagent_type,
                    "source_description": source.description,
                }
            )
        response: ApprovalResponse = "reject"
        self._waiting[request.id] = (request, permission)
        try:
            self._bus.send(request)
            response = await request.wait()
        finally:
            del self._waiting[request.id]
            # Also when the step is cancelled meanwhile, so the UI closes the question.
            self._bus.send(ApprovalResolved(id=request.id, response=response))
        remember = response == "approve_for_session" and not permission.asks_every_time
        if remember and permission.scope not in self._state.session_approvals:
            self._state.session_approvals.append(permission.scope)
            self._state.session_approval_grants[permission.scope] = ApprovalGrant(
                label=permission.scope_label, granted_at=time.time()
            )
            await self._save()
        return response

    def asker(self, tool_name: str, tool_call_id: str) -> Callable[[Permission], Awaitable[bool]]:
        """How a running call asks for more than its own permission covered (a FetchURL
        redirect to another host, `ToolEnv.ask`): as a call of its own would; True if allowed."""

        async def ask(permission: Permission) -> bool:
            response = await self.request(tool_name, tool_call_id, permission)
            return response in ("approve", "approve_for_session")

        return ask

    async def _save(self) -> None:
        """Save the state (mode and scopes), and tell the views of it."""
        self.announce()
        if self._save_state is not None:
            await self._save_state()
