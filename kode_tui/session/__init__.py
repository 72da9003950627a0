"""The session engine: context.jsonl, rotations, sessions (DESIGN.md §2, §9)."""

from kode_tui.session.checkpoints import Checkpoint, CheckpointIndex
from kode_tui.session.context import Context
from kode_tui.session.history import History
from kode_tui.session.lock import SessionLocked
from kode_tui.session.rotation import Rotation
from kode_tui.session.scan import FileEdit
from kode_tui.session.session import Session
from kode_tui.session.state import SessionState

__all__ = [
    "Checkpoint",
    "CheckpointIndex",
    "Context",
    "FileEdit",
    "History",
    "Rotation",
    "Session",
    "SessionLocked",
    "SessionState",
]
