"""Snapshots of the work dir's files, so a revert also undoes what Shell commands (and anything
else: a formatter, the user) did to them (DESIGN.md §2).

Design. The session keeps an index of the work dir's files in its own folder (`snapshot.json`:
per file its size, mtime_ns, ctime_ns, inode and sha256); their contents go to the work dir's
pool (`session.snapshot_pool`), shared by its sessions; the user's `.git` is never read or
written. A snapshot is taken before and after each Shell call and at each checkpoint
(`capture`):

- The files are those `workfiles.listing`'s walk gives (it honours `.gitignore` files), so
  ignored files and `SKIP_DIRS` are not tracked. A file over `max_file_bytes` is skipped and
  named in `too_large`; a work dir of more than `max_files` files is not tracked at all (`off`).
- It is incremental: a file whose (size, mtime_ns, ctime_ns, inode) is what the index holds is
  not read. The ctime is the kernel's: a command can put a file's mtime back after rewriting it
  in place (`os.utime`), never its ctime. A hash of the contents as well would mean reading
  every file at every snapshot: ~50 ms for 10,000 small files, twice per Shell call, where the
  whole call costs ~100 ms (`bench/bench_snapshot.py`); the ctime makes it needless.
  A file whose mtime or ctime is within `RACY_NS` of the scan is read again next time (git's
  "racily clean" rule: a second write in the same clock tick would keep its stat).
- The first snapshot is the baseline: it records nothing. It reads only the files the pool's
  index does not know as they are now, so only a work dir's first session reads them all.
  After that, each file whose hash changed becomes a `_file_edit` record (before, after, the
  Shell call's id, or None for a change nobody in the session made), exactly what the file
  tools write, so reverts and restores plan and apply it with the same conflict rules, and
  Kimi CLI skips it as it skips theirs (it carries `content`). A change the file tools already
  recorded (their newest record of the file ends in the same content) is not recorded twice.
- Crash safety: the contents a record names are copied from the pool into the session's own
  blobs, durably, before the record; the index is saved after the records, so a crash in
  between records a change twice, never loses one.

Cost: one `git ls-files` (or walk) and one `lstat` per file per snapshot, plus reading the
files that changed; `bench/bench_snapshot.py` measures it on a 10,000-file repository.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import stat
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from kode_tui import workfiles
from kode_tui.message import FileEditRecord
from kode_tui.paths import Paths
from kode_tui.paths import home as kode_home
from kode_tui.session.context import Context
from kode_tui.session.journal import FileJournal
from kode_tui.session.snapshot_pool import Entry, SnapshotPool, load_index, save_index

log = logging.getLogger(__name__)

INDEX_NAME = "snapshot.json"
MAX_FILE_BYTES = 1 << 20
MAX_FILES = 50_000
RACY_NS = 50_000_000
"""A file changed this close to a scan is read again at the next one (coarse kernel clocks)."""


@dataclass(slots=True)
class _Scan:
    files: dict[str, Entry]
    too_large: list[str]
    changes: list[tuple[str, str | None, str | None]] = field(default_factory=list)


class WorkSnapshot:
    """The work dir's files as the session last saw them, and the changes since."""

    def __init__(
        self,
        work_dir: Path,
        context: Context,
        journal: FileJournal,
        *,
        max_file_bytes: int = MAX_FILE_BYTES,
        max_files: int = MAX_FILES,
        index_path: Path | None = None,
        pool: SnapshotPool | None = None,
    ) -> None:
        self.work_dir = work_dir
        self.max_file_bytes = max_file_bytes
        self.max_files = max_files
        self._context = context
        self._journal = journal
        self._index_path = index_path or context.path.parent / INDEX_NAME
        self._pool = pool or SnapshotPool(Paths.current().snapshot_pool(work_dir))
        self._files: dict[str, Entry] | None = None
        self._hinted: dict[str, Entry] | None = None
        """What this session last wrote as the pool's index."""
        self._own = _own_folders(work_dir, (kode_home(), context.path.parent))
        self._edits_seen = 0
        """How many of the context's file edits the last snapshot had seen."""
        self._unsaved = False
        """Whether `_files` holds more than the index file (saved at the next checkpoint)."""
        self._warming: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self.too_large: list[str] = []
        """Files left out at the last snapshot because they are over `max_file_bytes`."""
        self.off: str | None = None
        """Why the last snapshot tracked nothing (a tree too big), else None."""
        self.reads = 0
        """How many files' contents the snapshots have read (the benchmark and tests count)."""

    def start(self) -> None:
        """Take the first snapshot (the baseline, which reads every file) in the background,
        so that the first turn does not wait for it."""
        if self._warming is None:
            self._warming = asyncio.create_task(self._warm(), name="snapshot baseline")

    async def close(self) -> None:
        """Stop the background baseline if it is still running (its blobs stay valid), and
        leave the newest scan in the pool for the work dir's next session."""
        task, self._warming = self._warming, None
        if task is not None and not task.done():
            task.cancel()
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        async with self._lock:
            if self._files is not None and self._files is not self._hinted:
                await self._hint(self._files)

    async def _hint(self, files: dict[str, Entry]) -> None:
        """Write `files` as the pool's index: at a baseline and at the end, not at every
        step (a cache: a crash costs the next session some reads, nothing more)."""
        try:
            await asyncio.to_thread(self._pool.save_hints, files)
            self._hinted = files
        except OSError as error:
            log.warning("could not save the snapshot pool's index: %s", error)

    async def _warm(self) -> None:
        try:
            await self.capture()
        except OSError as error:
            log.warning("could not snapshot %s: %s", self.work_dir, error)

    async def capture(self, tool_call_id: str | None = None) -> list[FileEditRecord]:
        """Take a snapshot and record what changed since the last one, as done by
        `tool_call_id` (None: by someone else); the records written."""
        async with self._lock:
            if self.off is not None:
                return []  # a tree that big does not shrink: no walk at every checkpoint
            if self._files is None:
                self._files = await asyncio.to_thread(load_index, self._index_path)
            scan = await asyncio.to_thread(self._scan, self._files)
            if scan is None:
                return []
            if self._hinted is None:
                await self._hint(scan.files)
            written: list[FileEditRecord] = []
            recorded = self._recorded_since()
            for path, before, after in scan.changes:
                if recorded.get(path, "") == after:
                    continue  # a file tool's edit, recorded already
                written.append(await self._journal.note(path, (before, after), tool_call_id))
            self._edits_seen = len(self._context.file_edits)
            if scan.files != self._files:
                self._files = scan.files
                self._unsaved = True
            # After a Shell call a checkpoint follows at once: the index is saved then (a
            # crash before it records the command's changes again, never loses them).
            if self._unsaved and tool_call_id is None:
                await asyncio.to_thread(self._save, scan.files)
                self._unsaved = False
            return written

    def _recorded_since(self) -> dict[str, str | None]:
        """What the file tools recorded since the last snapshot: each file (as the work dir's
        real file: an edit through a symlink changed its target) and its newest content."""
        edits = self._context.file_edits
        start = self._edits_seen if self._edits_seen <= len(edits) else 0  # a revert cut them
        recorded: dict[str, str | None] = {}
        root = os.path.realpath(self.work_dir)
        for edit in edits[start:]:
            path = edit.record.path
            real = os.path.realpath(path if os.path.isabs(path) else os.path.join(root, path))
            recorded[os.path.relpath(real, root).replace(os.sep, "/")] = edit.record.after
        return recorded

    async def refresh(self, paths: Iterable[str]) -> None:
        """Take `paths` as they are now without recording them (a revert just wrote them)."""
        async with self._lock:
            if self._files is None:
                return
            files = dict(self._files)
            start = time.time_ns()
            for path in paths:
                files.pop(path, None)
                entry = await asyncio.to_thread(self._read, path, start)
                if entry is not None:
                    files[path] = entry
            self._files = files
            await asyncio.to_thread(self._save, files)
            self._unsaved = False

    # --- blocking parts (in a thread) --------------------------------------------------------

    def _save(self, files: dict[str, Entry]) -> None:
        save_index(self._index_path, files)

    def _scan(self, old: dict[str, Entry] | None) -> _Scan | None:
        """The files now, with the changes since `old` (None: a baseline, no changes); None
        when the tree is too big to track."""
        start = time.time_ns()
        paths = _listed(self.work_dir, self.max_files + 1)
        if self._own:  # our own files change at every step: not the work dir's
            paths = [path for path in paths if not path.startswith(self._own)]
        if len(paths) > self.max_files:
            self.off = f"the work dir has more than {self.max_files:,} files"
            self.too_large = []
            return None
        scan = _Scan({}, [])
        known_files = old if old is not None else self._pool.hints()
        root = os.fspath(self.work_dir) + "/"
        lstat, files = os.lstat, scan.files
        for path in paths:
            try:
                st = lstat(root + path)  # not os.path.join: a third of the walk's time
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):
                continue  # symlinks, submodules: not content we can put back
            if st.st_size > self.max_file_bytes:
                scan.too_large.append(path)
                continue
            known = known_files.get(path)
            # ctime too: a command that restores a file's mtime cannot restore it.
            if known is not None and known[:4] == (
                st.st_size,
                st.st_mtime_ns,
                st.st_ctime_ns,
                st.st_ino,
            ):
                files[path] = known
                continue
            entry = self._read(path, start)
            if entry is not None:
                files[path] = entry
        self.too_large = scan.too_large
        if old is not None:
            for path, entry in scan.files.items():
                before = old.get(path)
                if before is None or before.sha256 != entry.sha256:
                    scan.changes.append((path, before.sha256 if before else None, entry.sha256))
            for path, entry in old.items():
                if path not in scan.files and not os.path.lexists(root + path):
                    scan.changes.append((path, entry.sha256, None))
            scan.changes = [change for change in scan.changes if self._adopt(change)]
        return scan

    def _adopt(self, change: tuple[str, str | None, str | None]) -> bool:
        """Copy the contents a record of `change` names into the session's blobs (durably,
        before the record); False when the pool lost one (the change goes unrecorded)."""
        return all(sha is None or self._pool.adopt(sha, self._journal) for sha in change[1:])

    def _read(self, path: str, start: int) -> Entry | None:
        """The index entry of `path`, its content kept in the pool; None when it is not a
        regular file of at most `max_file_bytes` now."""
        try:
            with open(os.path.join(self.work_dir, path), "rb", opener=_no_follow) as file:
                st = os.fstat(file.fileno())
                if not stat.S_ISREG(st.st_mode) or st.st_size > self.max_file_bytes:
                    return None
                content = file.read(self.max_file_bytes + 1)
        except OSError:
            return None
        self.reads += 1
        if len(content) > self.max_file_bytes:
            return None
        sha = hashlib.sha256(content).hexdigest()
        self._pool.keep(sha, content)
        # Changed within a clock tick of the scan (its content, or only its stat: ctime): a
        # later write in that tick could keep this stat.
        racy = max(st.st_mtime_ns, st.st_ctime_ns) >= start - RACY_NS
        return Entry(len(content), 0 if racy else st.st_mtime_ns, st.st_ctime_ns, st.st_ino, sha)


def _own_folders(work_dir: Path, folders: Iterable[Path]) -> tuple[str, ...]:
    """Of our folders (kode-tui's home, the session's), those in the work dir, each as a
    prefix of the work dir's relative paths (`home/`)."""
    root = os.path.realpath(work_dir)
    found = []
    for folder in folders:
        real = os.path.realpath(folder)
        if real != root and real.startswith(root.rstrip("/") + "/"):
            found.append(os.path.relpath(real, root).replace(os.sep, "/") + "/")
    return tuple(found)


def _listed(work_dir: Path, limit: int) -> list[str]:
    """The work dir's files: the walk that honours `.gitignore` files (git's own rules, through
    `pathspec`) and leaves out `SKIP_DIRS`, even in a git work tree. `git ls-files` through
    `gitcmd` costs two git processes (the config check that keeps it from running anything),
    twice the whole walk on 10,000 files; what the walk does not know (`.git/info/exclude`, a
    global excludes file, a tracked file a `.gitignore` names) makes a few files more or
    fewer tracked, never a wrong revert."""
    return workfiles.listing(work_dir, use_git=False).files(limit=limit)


def _no_follow(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NOFOLLOW)
