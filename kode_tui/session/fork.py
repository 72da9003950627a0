"""Forking: a new session of the same work dir whose context is a copy of another's.

The copy is the records of one context file (the live one or a rotated `context_N.jsonl`) up to
a checkpoint, byte for byte, as a revert to that checkpoint keeps them: a context Kimi CLI reads
as it reads the original. Its `_file_edit` records come along and so do the blobs they point to
(hard links: blobs are content-addressed and never rewritten), so "revert conversation + files"
works in the fork with the usual conflict rules. The new session's state.json says where it came
from (`forked_from`).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from pathlib import Path

from kode_tui.fsutil import atomic_write_bytes, make_private_dir
from kode_tui.session.journal import BLOBS_DIR_NAME
from kode_tui.session.scan import scan
from kode_tui.session.session import Session
from kode_tui.session.state import ForkOrigin

FORK_SUFFIX = " (fork)"


def forked_records(path: Path, checkpoint: int | None) -> bytes:
    """The lines of `path` before checkpoint `checkpoint` (all of them when None): whole
    lines only, a torn last line left out. ValueError when there is no such checkpoint or no
    message to copy."""
    data = path.read_bytes()
    found = scan(data, path.name)
    end = found.good_size
    if checkpoint is not None:
        position = found.checkpoints.position(checkpoint)
        if position is None:
            raise ValueError(f"there is no checkpoint {checkpoint} in {path.name}")
        end = found.checkpoints[position].offset
    if not found.message_starts or found.message_starts[0] >= end:
        raise ValueError(f"there is nothing to fork: {path.name} holds no message before that")
    kept = data[:end]
    if kept and not kept.endswith(b"\n"):
        kept += b"\n"  # a complete last record without its newline (kept by the scan)
    return kept


async def fork_session(source: Session, path: Path, checkpoint: int | None, title: str) -> Session:
    """A new session of `source`'s work dir holding `path`'s records before `checkpoint`.
    ValueError when there is no such checkpoint; nothing is made then."""
    if source.work_dir is None:
        raise ValueError("this session's work dir is not known, so it cannot be forked")
    records = await asyncio.to_thread(forked_records, path, checkpoint)
    forked = await Session.create(source.work_dir)
    forked.state.custom_title = title if title.endswith(FORK_SUFFIX) else title + FORK_SUFFIX
    forked.state.forked_from = ForkOrigin(
        session=source.id, file=path.name, checkpoint=checkpoint, time=time.time()
    )
    # The user's pinned notes go with the conversation they were pinned for.
    forked.state.pins = [pin.model_copy() for pin in source.state.pins]

    def write() -> None:
        _link_blobs(source.dir / BLOBS_DIR_NAME, forked.dir / BLOBS_DIR_NAME)
        atomic_write_bytes(forked.context_file, records)
        forked.save_state()

    await asyncio.to_thread(write)
    await forked.refresh()
    return forked


def _link_blobs(source: Path, target: Path) -> None:
    try:
        names = os.listdir(source)
    except FileNotFoundError:
        return
    make_private_dir(target)
    for name in names:
        if name.endswith(".tmp"):
            continue
        try:
            os.link(source / name, target / name)
        except FileExistsError:
            continue
        except OSError:
            shutil.copy2(source / name, target / name)  # no hard links on this file system
