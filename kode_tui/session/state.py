"""`state.json` of a session: custom title, approval mode and session approvals, todos.

Kimi CLI writes the same file with keys of its own (`approval`, `plan_mode`, `archived`, ...);
they are kept as read and written back unchanged, so either tool can open the other's sessions.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kode_tui.fsutil import atomic_write_json

logger = logging.getLogger(__name__)

STATE_FILE_NAME = "state.json"

ApprovalMode = Literal["ask", "auto-edit", "yolo"]
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


def load_state(path: Path) -> SessionState:
    """Read a state.json; a missing or unreadable file gives the defaults, never an error.

    A key holding a value of the wrong type falls back to its default alone; the rest is kept.
    """
    try:
        data: Any = json.loads(path.read_bytes())
    except FileNotFoundError:
        return SessionState()
    except (OSError, ValueError, RecursionError) as exc:  # RecursionError: nested too deeply
        logger.warning("Ignoring unreadable %s; using defaults: %s", path, exc)
        return SessionState()
    if not isinstance(data, dict):
        logger.warning("Ignoring %s: not a JSON object; using defaults", path)
        return SessionState()
    try:
        return SessionState.model_validate(data)
    except ValidationError as exc:
        invalid = {str(error["loc"][0]) for error in exc.errors() if error["loc"]}
        logger.warning("Using defaults for invalid keys %s of %s: %s", sorted(invalid), path, exc)
        return SessionState.model_validate({k: v for k, v in data.items() if k not in invalid})


def save_state(state: SessionState, path: Path) -> None:
    """Replace the state.json at `path` atomically (0600)."""
    atomic_write_json(path, state.model_dump(mode="json"))
