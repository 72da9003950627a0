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
- Secrets. A file that looks like one (`snapshot_pool.looks_secret`: `.env*`, `*.env`, keys,
  `credentials*`, `.netrc`, `.npmrc`, ...) never goes to the pool, nor into its index: the
  snapshot holds its content in memory (up to `SECRETS_HELD_BYTES` for them all), and writes
  it to the session's blobs only when a Shell call (the agent's or a `!command`) changes the
  file and the change is recorded. A change of one made by nobody in the session (found at a
  checkpoint) is not recorded: its contents are kept nowhere. The session's index saves its
  entry as never unchanged, so the session's next run reads it again into memory.
- Crash safety: the contents a record names are given to the session's own blobs (hard links
  to the pool's, their data fsynced), durably, before the record; the index is saved after
  the records, so a crash in between records a change twice, never loses one.
- The pool's lock is held shared from the first snapshot to `close`, which may collect the
  pool (`session.pool_gc`'s automatic rule).

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
from pathlib import Path

import msgspec

from kode_tui import workfiles
from kode_tui.message import FileEditRecord
from kode_tui.paths import Paths
from kode_tui.paths import home as kode_home
from kode_tui.session.context import Context
from kode_tui.session.journal import FileJournal
from kode_tui.session.pool_gc import collect_grown
from kode_tui.session.snapshot_pool import (
    SESSION_INDEX_NAME,
    Entry,
    SnapshotPool,
    load_index,
    looks_secret,
    save_index,
)

log = logging.getLogger(__name__)

INDEX_NAME = SESSION_INDEX_NAME
MAX_FILE_BYTES = 1 << 20
MAX_FILES = 50_000
RACY_NS = 50_000_000
"""A file changed this close to a scan is read again at the next one (coarse kernel clocks)."""
SECRETS_HELD_BYTES = 4 << 20
"""How much of the secret-looking files' contents a snapshot holds in memory, at most."""

Change = tuple[str, str | None, str | None]
"""A file's path, its sha256 before and after (None: it did not exist)."""
Held = tuple[str, bytes | None]
"""A secret-looking file's sha256 and its content (None: over `SECRETS_HELD_BYTES`)."""


class _Scan(msgspec.Struct):
    files: dict[str, Entry]
    too_large: list[str]
    held: dict[str, Held]
    """Every secret-looking file of `files`: never in the pool, its content in memory."""
    changes: list[Change] = msgspec.field(default_factory=list)


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
        self._pool = pool or SnapshotPool(Paths.current().snapshot_pool(work_dir), work_dir)
        self._files: dict[str, Entry] | None = None
        self._held: dict[str, Held] = {}
        """The secret-looking files of `_files` (`_Scan.held`)."""
        self._hinted: dict[str, Entry] | None = None
        """What this session last wrote as the pool's index."""
        self._own = _own_folders(work_dir, (kode_home(), context.path.parent))
        self._edits_seen = 0
        """How many of the context's file edits the last snapshot had seen."""
        self._unsaved = False
        """Whether `_files` holds more than the index file (saved at the next checkpoint)."""
        self._warming: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._holding = False
        """Whether this session holds the pool's lock (from its first snapshot to `close`)."""
        self.too_large: list[str] = []
        """Files left out at the last snapshot because they are over `max_file_bytes`."""
        self.off: str | None = None
        """Why the last snapshot tracked nothing (a tree too big), else None."""
        self.reads = 0
        """How many files' contents the snapshots have read (the benchmark and tests count)."""
        self._scanned = False

    def start(self) -> None:
        """Take the first snapshot (the baseline, which reads every file) in the background,
        so that the first turn does not wait for it."""
        if self._warming is None:
            self._warming = asyncio.create_task(self._warm(), name="snapshot baseline")

    async def close(self) -> None:
        """Stop the background baseline if it is still running (its blobs stay valid), leave
        the newest scan in the pool for the work dir's next session, and let go of the pool:
        collected now when it grew past the automatic rule (`session.pool_gc`)."""
        task, self._warming = self._warming, None
        if task is not None and not task.done():
            task.cancel()
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        async with self._lock:
            files = self._files
            if files is not None and files is not self._hinted:
                await self._hint(files, self._held)
            if not self._holding:
                return
            self._holding = False
            await asyncio.to_thread(self._pool.release)
            named = len({entry.sha256 for entry in (files or {}).values()})
            try:
                collected = await asyncio.to_thread(
                    collect_grown, self._pool, named, self._index_path
                )
            except OSError as error:
                log.warning("could not collect the snapshot pool %s: %s", self._pool.folder, error)
                return
            if collected is not None:
                log.info("collected the snapshot pool %s: %s", self._pool.folder, collected)

    async def _hint(self, files: dict[str, Entry], held: dict[str, Held]) -> None:
        """Write `files` as the pool's index, but for the secret-looking ones `held`: at a
        baseline and at the end, not at every step (a cache: a crash costs the next session
        some reads, nothing more)."""
        hints = {p: entry for p, entry in files.items() if p not in held} if held else files
        try:
            await asyncio.to_thread(self._pool.save_hints, hints)
            self._hinted = files
        except OSError as error:
            log.warning("could not save the snapshot pool's index: %s", error)

    async def _warm(self) -> None:
        try:
            async with self._lock:
                # A capture that came first took the baseline: one now would take what a
                # command is doing meanwhile (a `!` command after its own first capture) for
                # someone else's changes.
                if not self._scanned:
                    await self._capture(None)
        except OSError as error:
            log.warning("could not snapshot %s: %s", self.work_dir, error)

    async def capture(self, tool_call_id: str | None = None) -> list[FileEditRecord]:
        """Take a snapshot and record what changed since the last one, as done by
        `tool_call_id` (None: by someone else); the records written."""
        async with self._lock:
            return await self._capture(tool_call_id)

    async def _capture(self, tool_call_id: str | None) -> list[FileEditRecord]:
        self._scanned = True
        if self.off is not None:
            return []  # a tree that big does not shrink: no walk at every checkpoint
        if not self._holding:
            await asyncio.to_thread(self._pool.hold)
            self._holding = True
        if self._files is None:
            self._files = await asyncio.to_thread(load_index, self._index_path)
        keep_secrets = tool_call_id is not None
        scan = await asyncio.to_thread(self._scan, self._files, keep_secrets)
        if scan is None:
            return []
        if self._hinted is None:
            await self._hint(scan.files, scan.held)
        written: list[FileEditRecord] = []
        recorded = self._recorded_since()
        for path, before, after in scan.changes:
            if recorded.get(path, "") == after:
                continue  # a file tool's edit, recorded already
            written.append(await self._journal.note(path, (before, after), tool_call_id))
        self._edits_seen = len(self._context.file_edits)
        self._held = scan.held
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
            files, held = dict(self._files), dict(self._held)
            start = time.time_ns()
            for path in paths:
                files.pop(path, None)
                held.pop(path, None)
                entry = await asyncio.to_thread(self._read, path, start, held)
                if entry is not None:
                    files[path] = entry
            self._files, self._held = files, held
            await asyncio.to_thread(self._save, files)
            self._unsaved = False

    # --- blocking parts (in a thread) --------------------------------------------------------

    def _save(self, files: dict[str, Entry]) -> None:
        """Save the session's index. A secret-looking file's entry is saved as never unchanged:
        the session's next run reads it again, to hold its content (`_Scan.held`)."""
        saved = dict(files)
        for path in self._held.keys() & saved.keys():
            saved[path] = saved[path]._replace(mtime_ns=0)
        save_index(self._index_path, saved)

    def _scan(self, old: dict[str, Entry] | None, keep_secrets: bool) -> _Scan | None:
        """The files now, with the changes since `old` (None: a baseline, no changes), those
        of secret-looking files only when `keep_secrets`; None when the tree is too big to
        track."""
        start = time.time_ns()
        paths = _listed(self.work_dir, self.max_files + 1)
        if self._own:  # our own files change at every step: not the work dir's
            paths = [path for path in paths if not path.startswith(self._own)]
        if len(paths) > self.max_files:
            self.off = f"the work dir has more than {self.max_files:,} files"
            self.too_large = []
            return None
        scan = _Scan({}, [], {})
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
            entry = self._read(path, start, scan.held)
            if entry is not None:
                files[path] = entry
        for path, kept in self._held.items():  # an unchanged secret keeps its content
            if path not in scan.held and path in files and files[path].sha256 == kept[0]:
                scan.held[path] = kept
        self.too_large = scan.too_large
        if old is not None:
            for path, entry in scan.files.items():
                before = old.get(path)
                if before is None or before.sha256 != entry.sha256:
                    scan.changes.append((path, before.sha256 if before else None, entry.sha256))
            for path, entry in old.items():
                if path not in scan.files and not os.path.lexists(root + path):
                    scan.changes.append((path, entry.sha256, None))
            scan.changes = self._adopt(scan.changes, scan.held, keep_secrets)
        return scan

    def _adopt(
        self,
        changes: list[Change],
        held: dict[str, Held],
        keep_secrets: bool,
    ) -> list[Change]:
        """Give the session's blobs the contents the records of `changes` name (durably,
        before the records); the changes that can be recorded. One whose old content the pool
        lost goes unrecorded; so does a secret-looking file's unless `keep_secrets`."""
        secrets = [change for change in changes if looks_secret(change[0])]
        others = [change for change in changes if not looks_secret(change[0])]
        wanted = {sha for change in others for sha in change[1:] if sha is not None}
        lost = self._pool.adopt(sorted(wanted), self._journal)
        kept = [change for change in others if lost.isdisjoint(change[1:])]
        if keep_secrets:
            kept += [change for change in secrets if self._keep_secret(change, held)]
        return kept

    def _keep_secret(self, change: Change, held: dict[str, Held]) -> bool:
        """Write the contents of a secret-looking file's change from memory to the session's
        blobs; False when one of them was not held (over `SECRETS_HELD_BYTES`)."""
        path = change[0]
        contents = dict(found for found in (self._held.get(path), held.get(path)) if found)
        for sha in change[1:]:
            if sha is None or self._journal.blob_exists(sha):
                continue
            content = contents.get(sha)
            if content is None:
                log.warning("the content of %s was not held: its change is not recorded", path)
                return False
            self._journal.store_blob(sha, content)
        return True

    def _read(self, path: str, start: int, held: dict[str, Held]) -> Entry | None:
        """The index entry of `path`, its content kept in the pool, or in `held` when the file
        looks like a secret; None when it is not a regular file of at most `max_file_bytes`
        now."""
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
        if looks_secret(path):
            room = SECRETS_HELD_BYTES - sum(len(kept[1] or b"") for kept in held.values())
            held[path] = (sha, content if len(content) <= room else None)
        else:
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
