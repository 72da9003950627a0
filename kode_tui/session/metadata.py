"""`kode.json` in the home dir: the work dirs kode-tui has seen and each one's last session.

The sessions of a work dir live in `sessions/<md5 of its canonical path>/`, so this file is
only an index for `--continue`; losing it loses no session.
"""

from __future__ import annotations

import json
import logging
import os

from pydantic import BaseModel, ConfigDict, Field

from kode_tui.fsutil import atomic_write_json, make_private_dir
from kode_tui.pathnames import escape_name
from kode_tui.paths import Paths, canonical

logger = logging.getLogger(__name__)


class WorkDirMeta(BaseModel):
    """One work dir: its canonical path and the session opened there last."""

    # Keys written by a newer kode-tui survive a load/save by this one.
    model_config = ConfigDict(extra="allow", defer_build=True)

    path: str
    last_session_id: str | None = None


class Metadata(BaseModel):
    """The content of `kode.json`."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    work_dirs: list[WorkDirMeta] = Field(default_factory=list)

    def get(self, work_dir: str | os.PathLike[str]) -> WorkDirMeta | None:
        """The entry of `work_dir` (compared by canonical path), if there is one."""
        key = escape_name(str(canonical(work_dir)))
        return next((wd for wd in self.work_dirs if wd.path == key), None)

    def get_or_add(self, work_dir: str | os.PathLike[str]) -> WorkDirMeta:
        """The entry of `work_dir`, appended first when missing."""
        entry = self.get(work_dir)
        if entry is None:
            # Escaped (kode_tui.pathnames): a path that is not UTF-8 cannot be written as JSON.
            entry = WorkDirMeta(path=escape_name(str(canonical(work_dir))))
            self.work_dirs.append(entry)
        return entry


def load_metadata() -> Metadata:
    """Read `kode.json`; a missing or unreadable file gives empty metadata, never an error."""
    path = Paths.current().metadata_file
    try:
        return Metadata.model_validate(json.loads(path.read_bytes()))
    except FileNotFoundError:
        return Metadata()
    # ValidationError and JSON/Unicode errors are ValueErrors; RecursionError: nested too deeply.
    except (OSError, ValueError, RecursionError) as exc:
        logger.warning("Ignoring unreadable %s; starting with empty metadata: %s", path, exc)
        return Metadata()


def save_metadata(metadata: Metadata) -> None:
    """Replace `kode.json` atomically (0600; the home dir is created 0700)."""
    paths = Paths.current()
    make_private_dir(paths.home)
    atomic_write_json(paths.metadata_file, metadata.model_dump(mode="json"))


def record_last_session(work_dir: str | os.PathLike[str], session_id: str) -> None:
    """Remember `session_id` as the session `--continue` opens in `work_dir`."""
    metadata = load_metadata()
    metadata.get_or_add(work_dir).last_session_id = session_id
    save_metadata(metadata)
