"""The one way in for front ends (DESIGN.md §1, §9): `AgentSession` and the types it hands out.

The TUI, print mode and ACP import from this module alone (tests/test_layers.py checks it): the
session, its parts (`kode_tui.soul.facade.session` says what each does), and the plain data
they return. A name is here because a front end uses it; the parts' own modules are the
facade's inside, not a second door.
"""

from __future__ import annotations

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
