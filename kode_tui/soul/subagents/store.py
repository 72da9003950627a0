"""Where a subagent run is kept: `<session dir>/subagents/<agent_id>/`, as Kimi 1.52 keeps it.

Kimi's `subagents/store.py` (SubagentStore) makes, per instance: `context.jsonl` (an ordinary
context, its system prompt first), `wire.jsonl` (its event log), `meta.json` (the instance
record below, rewritten atomically), `prompt.txt` (the prompt as sent) and `output` (a plain
transcript: `[stage] ...` lines, then `[summary]`). Writing the same files the same way lets
Kimi resume our subagents and our reader list Kimi's.
"""

from __future__ import annotations

import functools
import logging
import re
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Literal

from pydantic import TypeAdapter, ValidationError

from kode_tui.fsutil import append_line, atomic_write_json

log = logging.getLogger(__name__)

__all__ = ["InstanceRecord", "LaunchSpec", "SubagentStore"]

Status = Literal[
    "idle", "running_foreground", "running_background", "completed", "failed", "killed"
]


@dataclass(frozen=True, slots=True, kw_only=True)
class LaunchSpec:
    """Kimi's `AgentLaunchSpec`: how the instance was started."""

    agent_id: str
    subagent_type: str
    model_override: str | None
    effective_model: str | None
    created_at: float


@dataclass(frozen=True, slots=True, kw_only=True)
class InstanceRecord:
    """Kimi's `AgentInstanceRecord`, the `meta.json` of an instance (same keys, same order)."""

    agent_id: str
    subagent_type: str
    status: Status
    description: str
    created_at: float
    updated_at: float
    last_task_id: str | None
    launch_spec: LaunchSpec


_AGENT_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


def valid_agent_id(agent_id: str) -> bool:
    """Whether `agent_id` can name an instance folder (a model's `resume` value, a name the
    History pane gives: never a path)."""
    return _AGENT_ID.fullmatch(agent_id) is not None


class SubagentStore:
    """The subagent instances of one session folder."""

    def __init__(self, session_dir: Path) -> None:
        self.root = session_dir / "subagents"

    def instance_dir(self, agent_id: str) -> Path:
        """The folder of instance `agent_id`."""
        return self.root / agent_id

    def context_path(self, agent_id: str) -> Path:
        """Its context (`context.jsonl`)."""
        return self.instance_dir(agent_id) / "context.jsonl"

    def create(
        self, *, agent_id: str, subagent_type: str, description: str, model: str | None
    ) -> InstanceRecord:
        """A new idle instance with its (empty) files, as Kimi's `create_instance` makes it."""
        folder = self.instance_dir(agent_id)
        folder.mkdir(parents=True, exist_ok=True)
        for name in ("context.jsonl", "wire.jsonl", "prompt.txt", "output"):
            (folder / name).touch(exist_ok=True)
        now = time.time()
        record = InstanceRecord(
            agent_id=agent_id,
            subagent_type=subagent_type,
            status="idle",
            description=description,
            created_at=now,
            updated_at=now,
            last_task_id=None,
            launch_spec=LaunchSpec(
                agent_id=agent_id,
                subagent_type=subagent_type,
                model_override=model,
                effective_model=model,
                created_at=now,
            ),
        )
        self._write(record)
        return record

    def update(
        self, record: InstanceRecord, *, status: Status, description: str | None = None
    ) -> InstanceRecord:
        """`record` with `status` (and `description`, a resumed run's), written (its
        `updated_at` now)."""
        described = record.description if description is None else description
        record = replace(record, status=status, description=described, updated_at=time.time())
        self._write(record)
        return record

    def write_prompt(self, agent_id: str, prompt: str) -> None:
        """The prompt as sent (Kimi's `prompt.txt`, a debugging aid)."""
        (self.instance_dir(agent_id) / "prompt.txt").write_text(prompt, encoding="utf-8")

    def output(self, agent_id: str, text: str) -> None:
        """Add `text` to the instance's plain transcript (`output`)."""
        append_line(self.instance_dir(agent_id) / "output", text.removesuffix("\n"))

    def get(self, agent_id: str) -> InstanceRecord | None:
        """The instance `agent_id` as its `meta.json` says; None when it has none or an invalid
        one (logged), as Kimi's `get_instance`."""
        meta = self.instance_dir(agent_id) / "meta.json"
        try:
            return _record_reader().validate_json(meta.read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, ValidationError) as error:
            log.warning("skipping the subagent record %s: %s", meta, error)
            return None

    def list_instances(self) -> list[InstanceRecord]:
        """Every instance with a valid `meta.json` (Kimi's or ours), the latest updated first,
        as Kimi's `list_instances`."""
        if not self.root.is_dir():
            return []
        records = [
            record
            for folder in self.root.iterdir()
            if folder.is_dir() and (record := self.get(folder.name)) is not None
        ]
        return sorted(records, key=lambda record: record.updated_at, reverse=True)

    def _write(self, record: InstanceRecord) -> None:
        atomic_write_json(self.instance_dir(record.agent_id) / "meta.json", asdict(record))


@functools.cache
def _record_reader() -> TypeAdapter[InstanceRecord]:
    """`meta.json` read as Kimi reads it: every key checked, the status one of `Status`. Built
    at the first read (~2 ms of schema), not with every session's agent."""
    return TypeAdapter(InstanceRecord)
