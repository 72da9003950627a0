"""The one way in for front ends (DESIGN.md §1, §9): `AgentSession` and the types it hands out.

The TUI, print mode and ACP import from this module alone (tests/test_layers.py checks it): the
session, its parts (`kode_tui.soul.facade.session` says what each does), and the plain data
they return. A name is here because a front end uses it; the parts' own modules are the
facade's inside, not a second door.

Each name loads on first use (PEP 562 `__getattr__`): `from kode_tui.soul.facade import
AgentSession` loads the session and what its agent needs, not stream-json or the command
registry that only some front ends and commands use, so a front end's agent is up sooner. The
imports under `TYPE_CHECKING` are the same names for type checkers and for tests/test_layers.py's
import graph.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kode_tui.message import COMPACTION_OUTPUT_PREFIX, Message
    from kode_tui.session import Checkpoint, Rotation, Session, SessionLocked
    from kode_tui.session.catalog import SessionCatalog, SessionRow
    from kode_tui.session.compare import CheckpointDiff, FileChange
    from kode_tui.session.drop import DropPlan
    from kode_tui.session.earlier import EarlierContexts, read_earlier
    from kode_tui.session.search import Match
    from kode_tui.session.timetravel import Comparison, ContextSnapshot, FileAction, FilePlan
    from kode_tui.soul.approval import SessionPermission
    from kode_tui.soul.attachments import (
        IMAGE_SUFFIXES,
        ImageAttachment,
        attach_image,
        attachments_dir,
        mentioned_images,
        pasted_paths,
        save_attachment,
    )
    from kode_tui.soul.compacting import CompactionPlan
    from kode_tui.soul.context_report import ContextReport
    from kode_tui.soul.cost import CostReport
    from kode_tui.soul.custom_commands import CommandListing, CustomCommand
    from kode_tui.soul.facade.builtins import COMMANDS, Compared, Found
    from kode_tui.soul.facade.commands import CommandReport, DomainCommand, RevertChoice
    from kode_tui.soul.facade.config_watch import watch_config
    from kode_tui.soul.facade.custom import CommandPrompt
    from kode_tui.soul.facade.lineage import LineageNote
    from kode_tui.soul.facade.session import AgentSession
    from kode_tui.soul.facade.tasks import TaskView
    from kode_tui.soul.facade.travel import (
        ContextSize,
        RestorePlan,
        RevertPlan,
        RotationEntry,
        RotationPreview,
        SubagentEntry,
    )
    from kode_tui.soul.hooks import CompactionBlocked
    from kode_tui.soul.llm import ChatProvider
    from kode_tui.soul.llm.demo import DemoProvider
    from kode_tui.soul.llm.model_map import ModelOption
    from kode_tui.soul.shell_escape import read_record, typed_text
    from kode_tui.soul.soul import TurnResult
    from kode_tui.soul.stream_json import StreamJson
    from kode_tui.soul.timetravel import RevertOutcome, RewindPoint
    from kode_tui.soul.transcript import PastResults, stored_result
    from kode_tui.tools.images import ImageError
    from kode_tui.tools.mcp_client import McpServerInfo, McpToolInfo
    from kode_tui.wire.bus import Subscription, WireBus

_HOME = {
    "AgentSession": "kode_tui.soul.facade.session",
    "COMMANDS": "kode_tui.soul.facade.builtins",
    "COMPACTION_OUTPUT_PREFIX": "kode_tui.message",
    "ChatProvider": "kode_tui.soul.llm",
    "Checkpoint": "kode_tui.session",
    "CheckpointDiff": "kode_tui.session.compare",
    "CommandListing": "kode_tui.soul.custom_commands",
    "CommandPrompt": "kode_tui.soul.facade.custom",
    "CommandReport": "kode_tui.soul.facade.commands",
    "CompactionBlocked": "kode_tui.soul.hooks",
    "CompactionPlan": "kode_tui.soul.compacting",
    "Compared": "kode_tui.soul.facade.builtins",
    "Comparison": "kode_tui.session.timetravel",
    "ContextReport": "kode_tui.soul.context_report",
    "ContextSize": "kode_tui.soul.facade.travel",
    "ContextSnapshot": "kode_tui.session.timetravel",
    "CostReport": "kode_tui.soul.cost",
    "CustomCommand": "kode_tui.soul.custom_commands",
    "DemoProvider": "kode_tui.soul.llm.demo",
    "DomainCommand": "kode_tui.soul.facade.commands",
    "DropPlan": "kode_tui.session.drop",
    "EarlierContexts": "kode_tui.session.earlier",
    "FileAction": "kode_tui.session.timetravel",
    "FileChange": "kode_tui.session.compare",
    "FilePlan": "kode_tui.session.timetravel",
    "Found": "kode_tui.soul.facade.builtins",
    "IMAGE_SUFFIXES": "kode_tui.soul.attachments",
    "ImageAttachment": "kode_tui.soul.attachments",
    "ImageError": "kode_tui.tools.images",
    "LineageNote": "kode_tui.soul.facade.lineage",
    "Match": "kode_tui.session.search",
    "McpServerInfo": "kode_tui.tools.mcp_client",
    "McpToolInfo": "kode_tui.tools.mcp_client",
    "Message": "kode_tui.message",
    "ModelOption": "kode_tui.soul.llm.model_map",
    "PastResults": "kode_tui.soul.transcript",
    "RestorePlan": "kode_tui.soul.facade.travel",
    "RevertChoice": "kode_tui.soul.facade.commands",
    "RevertOutcome": "kode_tui.soul.timetravel",
    "RevertPlan": "kode_tui.soul.facade.travel",
    "RewindPoint": "kode_tui.soul.timetravel",
    "Rotation": "kode_tui.session",
    "RotationEntry": "kode_tui.soul.facade.travel",
    "RotationPreview": "kode_tui.soul.facade.travel",
    "Session": "kode_tui.session",
    "SessionCatalog": "kode_tui.session.catalog",
    "SessionLocked": "kode_tui.session",
    "SessionPermission": "kode_tui.soul.approval",
    "SessionRow": "kode_tui.session.catalog",
    "StreamJson": "kode_tui.soul.stream_json",
    "SubagentEntry": "kode_tui.soul.facade.travel",
    "Subscription": "kode_tui.wire.bus",
    "TaskView": "kode_tui.soul.facade.tasks",
    "TurnResult": "kode_tui.soul.soul",
    "WireBus": "kode_tui.wire.bus",
    "attach_image": "kode_tui.soul.attachments",
    "attachments_dir": "kode_tui.soul.attachments",
    "mentioned_images": "kode_tui.soul.attachments",
    "pasted_paths": "kode_tui.soul.attachments",
    "read_earlier": "kode_tui.session.earlier",
    "read_record": "kode_tui.soul.shell_escape",
    "save_attachment": "kode_tui.soul.attachments",
    "stored_result": "kode_tui.soul.transcript",
    "typed_text": "kode_tui.soul.shell_escape",
    "watch_config": "kode_tui.soul.facade.config_watch",
}
"""Where each name of the facade lives."""

__all__ = [
    "COMMANDS",
    "COMPACTION_OUTPUT_PREFIX",
    "IMAGE_SUFFIXES",
    "AgentSession",
    "ChatProvider",
    "Checkpoint",
    "CheckpointDiff",
    "CommandListing",
    "CommandPrompt",
    "CommandReport",
    "CompactionBlocked",
    "CompactionPlan",
    "Compared",
    "Comparison",
    "ContextReport",
    "ContextSize",
    "ContextSnapshot",
    "CostReport",
    "CustomCommand",
    "DemoProvider",
    "DomainCommand",
    "DropPlan",
    "EarlierContexts",
    "FileAction",
    "FileChange",
    "FilePlan",
    "Found",
    "ImageAttachment",
    "ImageError",
    "LineageNote",
    "Match",
    "McpServerInfo",
    "McpToolInfo",
    "Message",
    "ModelOption",
    "PastResults",
    "RestorePlan",
    "RevertChoice",
    "RevertOutcome",
    "RevertPlan",
    "RewindPoint",
    "Rotation",
    "RotationEntry",
    "RotationPreview",
    "Session",
    "SessionCatalog",
    "SessionLocked",
    "SessionPermission",
    "SessionRow",
    "StreamJson",
    "SubagentEntry",
    "Subscription",
    "TaskView",
    "TurnResult",
    "WireBus",
    "attach_image",
    "attachments_dir",
    "mentioned_images",
    "pasted_paths",
    "read_earlier",
    "read_record",
    "save_attachment",
    "stored_result",
    "typed_text",
    "watch_config",
]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # the next look-up finds it without this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
