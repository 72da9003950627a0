"""`kode.json` in the home dir: the work dirs kode-tui has seen and each one's last session.

The sessions of a work dir live in `sessions/<md5 of its canonical path>/`, so this file is
only an index for `--continue`; losing it loses no session. With Kimi CLI's own index
(`kimi.json`) it also tells which work dir a session folder opened by path belongs to.
"""

# Annotations are evaluated as the module loads, not postponed: pydantic compiles and evaluates
# each field's annotation from its string otherwise (issue 31: ~6 ms for the models a session
# loads before its first request).

import json
import logging
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from kode_tui.fsutil import atomic_write_json, make_private_dir
from kode_tui.pathnames import escape_name, unescape_name
from kode_tui.paths import Paths, canonical, work_dir_hash

KIMI_SHARE_DIR_ENV = "KIMI_SHARE_DIR"
KIMI_METADATA_FILE = "kimi.json"

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
    """Remember `session_id` as the session `--continue` opens in `work_dir`. A file that says
    so already is left as it is: a new session is recorded as it is created and again as it
    opens, and each rewrite is two fsyncs before the first request."""
    metadata = load_metadata()
    entry = metadata.get_or_add(work_dir)
    if entry.last_session_id == session_id:
        return
    entry.last_session_id = session_id
    save_metadata(metadata)


def kimi_share_dir() -> Path:
    """Kimi CLI's data folder: `$KIMI_SHARE_DIR`, else `~/.kimi` (kimi_cli/share.py)."""
    override = os.environ.get(KIMI_SHARE_DIR_ENV)
    return Path(override).expanduser() if override else Path.home() / ".kimi"


def recorded_work_dir(session_dir: str | os.PathLike[str]) -> Path | None:
    """The work dir a session folder belongs to, as kode-tui or Kimi CLI recorded it; None
    when neither knows it (or it is no longer a folder).

    Both keep a work dir's sessions in `sessions/<md5 of the work dir's path>/<id>/`, so the
    folder's parent names its work dir's hash (`known_work_dirs`).
    """
    work_dir = known_work_dirs().get(Path(session_dir).parent.name)
    return work_dir if work_dir is not None and work_dir.is_dir() else None


def known_work_dirs() -> dict[str, Path]:
    """Every work dir kode-tui (`kode.json`) or Kimi CLI 1.52 (`kimi.json` in its share dir)
    has recorded, by the hash that names its sessions folder, canonical.

    Entries of Kimi's for another machine (`kaos` other than "local", whose folders are named
    `<kaos>_<md5>`) are left out: they are not work dirs here.
    """
    listed = [Path(unescape_name(entry.path)) for entry in load_metadata().work_dirs]
    for entry in _kimi_entries():
        path, kaos = entry.get("path"), entry.get("kaos", "local")
        if isinstance(path, str) and kaos == "local" and os.path.isabs(path):
            listed.append(Path(path))
    found: dict[str, Path] = {}
    for path in listed:
        # kode-tui hashes the path's bytes, Kimi the UTF-8 of its text: alike for a UTF-8 name.
        found.setdefault(work_dir_hash(path), canonical(path))
    return found


def _kimi_entries() -> list[dict[str, Any]]:
    """The `work_dirs` of Kimi CLI's index; [] when it is missing or unreadable."""
    path = kimi_share_dir() / KIMI_METADATA_FILE
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        return []
    except (OSError, ValueError, RecursionError) as exc:
        logger.warning("Ignoring unreadable %s: %s", path, exc)
        return []
    entries = data.get("work_dirs") if isinstance(data, dict) else None
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []
