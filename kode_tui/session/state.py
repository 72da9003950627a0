"""`state.json` of a session: custom title, approval mode and session approvals, todos, what
the model calls cost and the thinking effort.

Kimi CLI writes the same file with keys of its own (`approval`, `plan_mode`, `archived`, ...);
they are kept as read and written back unchanged, so either tool can open the other's sessions.
Kimi's writer drops the keys it does not know (pins, the fork origin, cost, approvals...), so
those (`KODE_KEYS`) are also written to a sidecar, `state.kode.json`, which Kimi never opens;
a state.json without them (Kimi rewrote it) takes them from there. The approval mode is shared
with Kimi's `approval.yolo` and `plan_mode`: we write them from our mode; after Kimi rewrote
the file, the sidecar's mode holds while it agrees with them (so `auto-edit`, which Kimi has
no word for, survives), and Kimi's keys decide when the user switched there.

The approval mode and session approvals hold only in the user's own session stores: a folder
opened from elsewhere (a repo's `docs/transcript/`) came with whoever put it there, and
`drop_grants` takes them out of its state (`Session` does, on opening it).
"""

# Annotations are evaluated as the module loads, not postponed: pydantic compiles and evaluates
# each field's annotation from its string otherwise (issue 31: ~6 ms for the models a session
# loads before its first request).

import json
import logging
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kode_tui.fsutil import atomic_write_json

logger = logging.getLogger(__name__)

STATE_FILE_NAME = "state.json"
SIDECAR_NAME = "state.kode.json"

ApprovalMode = Literal["ask", "auto-edit", "plan", "sandbox", "yolo"]
# Kimi CLI's statuses: it rejects a whole state.json holding any other.
TodoStatus = Literal["pending", "in_progress", "done"]


class TodoItem(BaseModel):
    """One entry of the session's todo list."""

    model_config = ConfigDict(extra="allow", validate_assignment=True, defer_build=True)

    title: str
    status: TodoStatus


class ApprovalGrant(BaseModel):
    """How a session approval was granted: the scope in the approval panel's words, and when.

    Kept beside `session_approvals` (not in it), so the list stays plain strings: a file with
    grants still loads in an older kode-tui, and an older file (no grants) here.
    """

    model_config = ConfigDict(extra="allow", defer_build=True)

    label: str = ""
    """E.g. `all edits in the work dir`; empty when the panel gave none."""
    granted_at: float | None = None
    """Unix time; None for a grant recorded without one."""


ThinkingLevel = Literal["off", "low", "medium", "high"]


class Pin(BaseModel):
    """A note the user pinned (`/pin`): sent with every request, whatever is compacted."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    text: str
    pinned_at: float | None = None
    """Unix time; None for a pin recorded without one."""


class ModelSpend(BaseModel):
    """What one model's calls of a session used, and cost."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    calls: int = 0
    input: int = 0
    """Prompt tokens, cached ones included."""
    output: int = 0
    cache_read: int = 0
    cache_creation: int = 0
    usd: float | None = 0.0
    """None when litellm's map has no price for the model."""


class TurnSpend(BaseModel):
    """What one turn's calls used, and cost."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    started_at: float
    """Unix time of the turn's first call."""
    calls: int = 0
    input: int = 0
    output: int = 0
    cache_read: int = 0
    usd: float = 0.0
    """Of the calls whose price is known."""
    unpriced: bool = False
    """Some call of the turn had no known price."""


class SessionSpend(BaseModel):
    """The session's running cost: kept here, so a picker reads it without the wire file."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    models: dict[str, ModelSpend] = Field(default_factory=dict)
    turns: list[TurnSpend] = Field(default_factory=list)
    """The latest turns with calls, oldest first (the ledger keeps the last few dozen)."""
    complete: bool = True
    """False when counting began in a session that had calls already (from before kode-tui
    counted cost): the total leaves those out."""

    @property
    def usd(self) -> float:
        """Dollars of the calls whose price is known."""
        return sum(spend.usd or 0.0 for spend in self.models.values())

    @property
    def unpriced(self) -> bool:
        """Whether some call had no known price (the total leaves it out)."""
        return any(spend.usd is None for spend in self.models.values())

    @property
    def exact(self) -> bool:
        """Whether `usd` is every call's cost: all priced, all counted."""
        return self.complete and not self.unpriced


class ForkOrigin(BaseModel):
    """Where a forked session's context came from (`/fork`, `F` on a History row)."""

    session: str
    """The id of the session it was forked from."""
    file: str
    """The context file copied: `context.jsonl` or a rotated `context_N.jsonl`."""
    checkpoint: int | None = None
    """The copy stops before this checkpoint; None when the whole file was copied."""
    time: float | None = None


class SessionState(BaseModel):
    """What a session remembers besides its context; unknown keys survive a load/save."""

    model_config = ConfigDict(extra="allow", validate_assignment=True, defer_build=True)

    version: int = 1
    custom_title: str | None = None
    approval_mode: ApprovalMode = "ask"
    session_approvals: list[str] = Field(default_factory=list)
    """Scopes approved for the rest of the session, e.g. `edit`, `shell:git status`."""
    session_approval_grants: dict[str, ApprovalGrant] = Field(default_factory=dict)
    """How each of `session_approvals` was granted, by scope (those granted before this key
    existed have none)."""
    todos: list[TodoItem] = Field(default_factory=list)
    spend: SessionSpend | None = None
    """None for a session from before kode-tui counted cost (its cost is unknown)."""
    forked_from: ForkOrigin | None = None
    """Set in a session made by a fork: where its context came from."""
    thinking: ThinkingLevel = "off"
    """The reasoning effort asked of a model that supports it (`/think`)."""
    pins: list[Pin] = Field(default_factory=list)
    """Notes pinned by the user, oldest first."""
    plan_session_id: str | None = None
    """Kimi CLI's key: set while plan mode is on (a new one each time it is entered)."""
    plan_slug: str | None = None
    """Kimi CLI's key: the plan file's name, without `.md` (`kode_tui.tools.plan`)."""
    mode_before_plan: ApprovalMode | None = None
    """The mode plan mode was entered from: where approving the plan returns by default."""


KODE_KEYS = (
    "approval_mode",
    "session_approvals",
    "session_approval_grants",
    "spend",
    "forked_from",
    "thinking",
    "pins",
    "mode_before_plan",
)
"""Our keys that Kimi CLI's state.json writer drops: kept in the sidecar as well."""


def load_state(path: Path) -> SessionState:
    """Read a state.json (and its sidecar); a missing or unreadable file gives the defaults,
    never an error.

    A key holding a value of the wrong type falls back to its default alone; the rest is kept.
    """
    data = _read_object(path)
    sidecar = _read_object(path.with_name(SIDECAR_NAME))
    if data is None and sidecar is None:
        return SessionState()
    data = _with_sidecar(data or {}, sidecar or {})
    data = _from_kimi_approval(data)
    try:
        return SessionState.model_validate(data)
    except ValidationError as exc:
        invalid = {str(error["loc"][0]) for error in exc.errors() if error["loc"]}
        logger.warning("Using defaults for invalid keys %s of %s: %s", sorted(invalid), path, exc)
        return SessionState.model_validate({k: v for k, v in data.items() if k not in invalid})


def drop_grants(state: SessionState) -> list[str]:
    """Take from `state` what it grants (its approval mode and session approvals), as for a
    state read from a folder outside the user's session stores; what was taken, in words
    (`approval mode yolo`, `2 session approvals`)."""
    dropped: list[str] = []
    if state.approval_mode != "ask":
        dropped.append(f"approval mode {state.approval_mode}")
        state.approval_mode = "ask"
    if state.session_approvals:
        count = len(state.session_approvals)
        dropped.append(f"{count} session approval{'' if count == 1 else 's'}")
        state.session_approvals = []
    state.session_approval_grants = {}
    return dropped


def save_state(state: SessionState, path: Path) -> None:
    """Replace the state.json at `path` atomically (a new one 0600; an old one keeps its mode),
    with Kimi CLI's `approval.yolo` set from our mode, then its sidecar (`KODE_KEYS`)."""
    data = state.model_dump(mode="json")
    approval = data.get("approval")
    data["approval"] = {
        **(approval if isinstance(approval, dict) else {}),
        "yolo": state.approval_mode == "yolo",
    }
    data["plan_mode"] = state.approval_mode == "plan"
    atomic_write_json(path, data)
    # After state.json: a crash in between leaves a state.json that has them all, and it wins.
    atomic_write_json(path.with_name(SIDECAR_NAME), {key: data[key] for key in KODE_KEYS})


def _read_object(path: Path) -> dict[str, Any] | None:
    """The JSON object in `path`; None when there is none (missing, unreadable: logged)."""
    try:
        data: Any = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError, RecursionError) as exc:  # RecursionError: nested too deeply
        logger.warning("Ignoring unreadable %s; using defaults: %s", path, exc)
        return None
    if not isinstance(data, dict):
        logger.warning("Ignoring %s: not a JSON object; using defaults", path)
        return None
    return data


def _with_sidecar(data: dict[str, Any], sidecar: dict[str, Any]) -> dict[str, Any]:
    """`data` (a state.json) with the sidecar's keys it lacks because Kimi rewrote it."""
    missing = {key: sidecar[key] for key in KODE_KEYS if key in sidecar and key not in data}
    mode = missing.pop("approval_mode", None)
    if mode is not None:
        approval = data.get("approval")
        kimi_yolo = isinstance(approval, dict) and approval.get("yolo") is True
        kimi_plan = data.get("plan_mode") is True
        if (mode == "yolo") == kimi_yolo and (mode == "plan") == kimi_plan:
            missing["approval_mode"] = mode  # else the user switched in Kimi: it decides
    return {**data, **missing}


def _from_kimi_approval(data: dict[str, Any]) -> dict[str, Any]:
    """`data` with Kimi CLI's `approval.yolo` and `plan_mode` taken out (`save_state` writes
    them from our mode) and made our mode when there is none (Kimi rewrote the file)."""
    data = dict(data)
    if data.pop("plan_mode", None) is True and "approval_mode" not in data:
        data["approval_mode"] = "plan"
    approval = data.get("approval")
    if not isinstance(approval, dict):
        return data
    rest = {key: value for key, value in approval.items() if key != "yolo"}
    if rest:
        data["approval"] = rest  # Kimi's afk and auto_approve_actions, kept as they are
    else:
        del data["approval"]
    if "approval_mode" not in data and approval.get("yolo") is True:
        data["approval_mode"] = "yolo"
    return data
