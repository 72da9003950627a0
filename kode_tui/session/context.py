"""`Context`: the live `context.jsonl` of a session and its state in memory.

Every record is one line, handed to the OS (os.write on a file kept open) before the call
returns; `sync()` makes them durable and the soul calls it at the end of each turn. Rewrites
(revert, clear, restore, a new system prompt) go through the crash-safe swap of `rotation`, so
the replaced content always survives as `context_N.jsonl`. An index of checkpoint byte offsets
lets a revert copy the kept prefix as bytes and slice the history in memory: nothing is parsed.

The file format is Kimi CLI's (see `kode_tui.message`): Kimi CLI 1.52 restores our files and we
restore its files.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import mmap
import os
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import msgspec

from kode_tui.fsutil import (
    FILE_MODE,
    copy_range,
    fsync_dir,
    make_private_dir,
    write_all,
)
from kode_tui.masking import mask_bytes
from kode_tui.message import (
    CheckpointRecord,
    FileEditRecord,
    Message,
    SystemPromptRecord,
    UsageRecord,
    checkpoint_note,
    estimate_tokens,
    interrupted_result,
    unanswered_at_end,
)
from kode_tui.session import rotation
from kode_tui.session.checkpoints import Checkpoint, CheckpointIndex
from kode_tui.session.history import History, SpanReader
from kode_tui.session.lock import SessionLock
from kode_tui.session.rotation import Rotation
from kode_tui.session.scan import FileEdit, Scan, scan

log = logging.getLogger(__name__)

_dump_message = Message.__pydantic_serializer__.to_json

# Reading a context is CPU work (a few ms per 10 MB). Below this size it runs on the event loop:
# handing it to a thread would cost more than it takes. Above, the thread lets the UI breathe.
_READ_IN_THREAD_FROM = 16 << 20


class ContextWriteError(OSError):
    """A record could not be written (a full disk, say). The file was cut back to its last
    whole record and nothing in memory changed: the context is as it was before the call."""

    def __init__(self, path: Path, error: OSError) -> None:
        super().__init__(error.errno, error.strerror or str(error), str(path))
        self.path = path

    @property
    def disk_full(self) -> bool:
        return self.errno in (errno.ENOSPC, errno.EDQUOT)

    def __str__(self) -> str:
        if self.disk_full:
            return (
                f"disk full: {self.path.name} could not be written, so the last change was not "
                "saved and the session is as it was before it (nothing was lost); free some "
                "space and try again"
            )
        return f"could not write {self.path}: {self.strerror}; the last change was not saved"


class _State(msgspec.Struct):
    """Everything `restore()` rebuilds; swapped in whole so readers never see half of it."""

    history: History = msgspec.field(default_factory=History)
    checkpoints: CheckpointIndex = msgspec.field(default_factory=CheckpointIndex)
    file_edits: list[FileEdit] = msgspec.field(default_factory=list)
    token_count: int = 0
    usage_index: int = 0
    pending_tokens: int = 0
    next_checkpoint_id: int = 0
    system_prompt: str | None = None
    system_prompt_spans: list[tuple[int, int]] = msgspec.field(default_factory=list)
    warnings: list[str] = msgspec.field(default_factory=list)


class Context:
    """The context of one session, backed by a `context.jsonl` file.

    One writer per session: the first operation takes the session's lock and a second opener
    gets `SessionLocked` naming the pid that holds it.
    """

    def __init__(self, path: str | os.PathLike[str], *, read_only: bool = False) -> None:
        self._path = Path(path)
        self._lock = SessionLock(self._path.with_name("lock"))
        self._mutex = asyncio.Lock()
        self._fd: int | None = None
        self._size = 0
        # A write failed and cutting it off failed too: cut before the next write appends.
        self._cut_pending = False
        self._read_only = read_only
        self._loaded = False
        self._state = _State()

    # --- reading -------------------------------------------------------------------------------

    @property
    def path(self) -> Path:
        return self._path

    @property
    def read_only(self) -> bool:
        """Opened for viewing only: no lock is taken, nothing is written or cut."""
        return self._read_only

    @property
    def history(self) -> Sequence[Message]:
        return self._state.history

    @property
    def token_count(self) -> int:
        """The context size the model last reported (`_usage`)."""
        return self._state.token_count

    @property
    def pending_tokens(self) -> int:
        """An estimate (chars / 4) of the messages added since the last `_usage`."""
        return self._state.pending_tokens

    @property
    def token_count_with_pending(self) -> int:
        return self._state.token_count + self._state.pending_tokens

    @property
    def n_checkpoints(self) -> int:
        """The id the next checkpoint gets (checkpoint ids count from 0)."""
        return self._state.next_checkpoint_id

    @property
    def checkpoints(self) -> Sequence[Checkpoint]:
        return self._state.checkpoints

    @property
    def system_prompt(self) -> str | None:
        return self._state.system_prompt

    @property
    def file_edits(self) -> Sequence[FileEdit]:
        return self._state.file_edits

    @property
    def warnings(self) -> Sequence[str]:
        """What `restore()` found wrong with the file (each problem once)."""
        return self._state.warnings

    def file_edits_since(self, checkpoint_id: int) -> list[FileEditRecord]:
        """The file edits made after checkpoint `checkpoint_id`, oldest first."""
        position = self._position(checkpoint_id)
        start = self._state.checkpoints[position].file_edit_index
        return [edit.record for edit in self._state.file_edits[start:]]

    def rotations(self) -> list[Rotation]:
        """The rotated generations of this context, oldest first."""
        return rotation.list_rotations(self._path)

    # --- restoring -----------------------------------------------------------------------------

    async def restore(self) -> bool:
        """Read the file into memory; False when there is nothing to restore.

        Bad lines are skipped with one warning each (see `warnings`) and stay in the file; a
        torn last line is cut off after the whole file is copied to `context.jsonl.damaged-<ts>`.
        Tool calls at the end that have no result (a kill between the steps of an old version,
        a file edited by hand) get an "interrupted" result appended, so the next request is one
        a provider accepts and Kimi CLI reads the same history.
        """
        async with self._mutex:
            if self._loaded or len(self._state.history):
                raise RuntimeError("this context was already restored or written to")
            restored = await self._load()
            if restored and not self._read_only:
                await self._answer_unanswered()
            return restored

    async def _answer_unanswered(self) -> None:
        missing = unanswered_at_end(self._state.history)
        if not missing:
            return
        results = [interrupted_result(call_id) for call_id in missing]
        await self._ensure_writable()
        self._write(b"".join(_dump_message(m, exclude_unset=True) + b"\n" for m in results))
        self._state.history.extend(results)
        self._state.pending_tokens += estimate_tokens(results)
        log.warning(
            "%s: %d tool call(s) had no result; marked interrupted", self._path, len(missing)
        )

    async def _load(self) -> bool:
        if not self._path.exists():
            self._loaded = True
            return False
        if not self._read_only:
            self._lock.acquire()
        if self._path.stat().st_size < _READ_IN_THREAD_FROM:
            state = self._read_file()
        else:
            state = await asyncio.to_thread(self._read_file)
        self._state = state
        self._loaded = True
        return bool(len(state.history) or len(state.checkpoints) or state.system_prompt is not None)

    def _read_file(self) -> _State:
        try:
            reader = SpanReader(self._path)
        except FileNotFoundError:
            return _State()
        size = os.fstat(reader.fd).st_size
        if size == 0:
            reader.close()
            return _State()
        with mmap.mmap(reader.fd, size, access=mmap.ACCESS_READ) as view:
            found = scan(view, self._path.name)
        if found.torn_tail and not self._read_only:
            self._cut_torn_tail(found.good_size, found.warnings)
        return _state_from_scan(found, reader)

    def _cut_torn_tail(self, good_size: int, warnings: list[str]) -> None:
        """Copy the file aside, then cut its torn last line off.

        A copy identical to one made before is not made again (a start that fails before it can
        cut would otherwise add one per start). If the copy cannot be made (a full disk), nothing
        is cut: the torn line stays, skipped as damaged, until a later start can keep it aside.
        """
        live_fd = os.open(self._path, os.O_RDWR)
        try:
            size = os.fstat(live_fd).st_size
            aside = self._same_copy(live_fd, size)
            if aside is None:
                try:
                    aside = self._copy_aside(live_fd, size)
                except OSError as error:
                    log.warning(
                        "could not copy %s aside (%s): its torn line stays", self._path, error
                    )
                    warnings.append(
                        f"{self._path.name}: the torn last line was kept (no room to copy the "
                        "file aside first)"
                    )
                    return
            try:
                os.ftruncate(live_fd, good_size)
                os.fsync(live_fd)
            except OSError as error:
                log.warning("could not cut the torn line of %s: %s", self._path, error)
                return
        finally:
            os.close(live_fd)
        log.warning("copied %s to %s and cut off its torn last line", self._path, aside.name)

    def _same_copy(self, live_fd: int, size: int) -> Path | None:
        """A `.damaged-*` copy already holding exactly the live file's bytes."""
        for candidate in self._path.parent.glob(f"{self._path.name}.damaged-*"):
            try:
                if candidate.stat().st_size != size:
                    continue
                with candidate.open("rb") as copy:
                    offset = 0
                    while offset < size:
                        chunk = copy.read(1 << 20)
                        if not chunk or chunk != os.pread(live_fd, len(chunk), offset):
                            break
                        offset += len(chunk)
                    else:
                        return candidate
            except OSError:
                continue
        return None

    def _copy_aside(self, live_fd: int, size: int) -> Path:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        for attempt in range(1000):
            suffix = f"-{attempt}" if attempt else ""
            aside = self._path.with_name(f"{self._path.name}.damaged-{stamp}{suffix}")
            try:
                aside_fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
            except FileExistsError:
                continue
            break
        else:
            raise RuntimeError(f"no free name to copy {self._path} aside")
        try:
            try:
                copy_range(live_fd, aside_fd, 0, size)
                os.fsync(aside_fd)
            finally:
                os.close(aside_fd)
            fsync_dir(self._path.parent)
        except OSError:
            # A half copy is no copy: it must not pass for one at the next start.
            with contextlib.suppress(OSError):
                os.unlink(aside)
            raise
        return aside

    # --- appending -----------------------------------------------------------------------------

    async def append_message(self, message: Message | Iterable[Message]) -> None:
        messages = [message] if isinstance(message, Message) else list(message)
        if not messages:
            return
        async with self._mutex:
            await self._ensure_writable()
            self._write(b"".join([_dump_message(m, exclude_unset=True) + b"\n" for m in messages]))
            state = self._state
            state.history.extend(messages)
            state.pending_tokens += estimate_tokens(messages)

    async def append_records(self, records: Sequence[Message | UsageRecord]) -> None:
        """Append messages and usage records in ONE write: a step's assistant message, its
        usage and its tool results reach the file together or not at all (a kill between
        separate writes would leave tool calls without results, which providers refuse)."""
        if not records:
            return
        async with self._mutex:
            await self._ensure_writable()
            self._write(
                b"".join(
                    _dump_message(r, exclude_unset=True) + b"\n"
                    if isinstance(r, Message)
                    else (r.to_json() + "\n").encode()
                    for r in records
                )
            )
            state = self._state
            for record in records:
                if isinstance(record, Message):
                    state.history.append(record)
                    state.pending_tokens += record.estimated_tokens()
                else:
                    state.token_count = record.token_count
                    state.usage_index = len(state.history)
                    state.pending_tokens = 0

    async def checkpoint(self, add_user_message: bool = False) -> int:
        """Mark a point the context can be reverted to; returns its id.

        With `add_user_message`, a `<system>CHECKPOINT n</system>` user message follows, so the
        model can name the checkpoint in a D-Mail.
        """
        async with self._mutex:
            await self._ensure_writable()
            state = self._state
            checkpoint_id = state.next_checkpoint_id
            entry = Checkpoint(
                checkpoint_id,
                self._size,
                len(state.history),
                state.token_count,
                state.usage_index,
                checkpoint_id,
                state.system_prompt,
                len(state.file_edits),
            )
            self._write_record(CheckpointRecord(id=checkpoint_id))
            state.checkpoints.add(entry)
            state.next_checkpoint_id = checkpoint_id + 1
        if add_user_message:
            await self.append_message(Message(role="user", content=checkpoint_note(checkpoint_id)))
        return checkpoint_id

    async def update_token_count(self, token_count: int) -> None:
        async with self._mutex:
            await self._ensure_writable()
            self._write_record(UsageRecord(token_count=token_count))
            state = self._state
            state.token_count = token_count
            state.usage_index = len(state.history)
            state.pending_tokens = 0

    async def append_file_edit(self, edit: FileEditRecord) -> None:
        """Note that a tool changed a file (the blobs hold both images)."""
        async with self._mutex:
            await self._ensure_writable()
            self._write_record(edit)
            self._state.file_edits.append(FileEdit(edit, len(self._state.checkpoints)))

    async def sync(self) -> None:
        """Make everything written so far durable (the end of a turn)."""
        async with self._mutex:
            if self._fd is not None:
                await asyncio.to_thread(os.fsync, self._fd)

    # --- rewriting -----------------------------------------------------------------------------

    async def write_system_prompt(self, prompt: str) -> None:
        """Make `prompt` the `_system_prompt` record, the first line of the file.

        A file that has none gets it prepended (an atomic rewrite, nothing removed); a different
        prompt already in the file is replaced and the old file kept as a rotation.
        """
        async with self._mutex:
            await self._ensure_writable()
            state = self._state
            if state.system_prompt == prompt and state.system_prompt_spans:
                return
            line = mask_bytes((SystemPromptRecord(content=prompt).to_json() + "\n").encode())
            if self._size == 0:
                self._write(line)
                state.system_prompt = prompt
                state.system_prompt_spans = [(0, len(line) - 1)]
                return
            cut = list(state.system_prompt_spans)
            size = self._size
            source_fd = self._fd
            assert source_fd is not None

            def write_new(fd: int) -> None:
                write_all(fd, line)
                start = 0
                for span_start, span_end in [*cut, (size, size)]:
                    copy_range(source_fd, fd, start, span_start)
                    start = min(span_end + 1, size)

            await self._rewrite(write_new, "system_prompt" if cut else None)

    async def revert_to(self, checkpoint_id: int, *, reason: str = "revert") -> Path:
        """Drop `_checkpoint checkpoint_id` and everything after it from the live context.

        Returns the rotated file that keeps the content as it was. ValueError when there is no
        such checkpoint (nothing is touched then).
        """
        async with self._mutex:
            await self._ensure_writable()
            position = self._position(checkpoint_id)
            state = self._state
            entry = state.checkpoints[position]
            source_fd = self._fd
            assert source_fd is not None
            note = {
                "checkpoint": checkpoint_id,
                "tokens": state.token_count,
                "messages": len(state.history),
            }
            try:
                rotated = await asyncio.to_thread(
                    rotation.swap,
                    self._path,
                    lambda fd: copy_range(source_fd, fd, 0, entry.offset),
                    source_fd,
                )
            except OSError as error:
                raise ContextWriteError(self._path, error) from error
            assert rotated is not None  # a file holding a checkpoint is not empty
            self._reopen()
            state.checkpoints.truncate(position)
            del state.file_edits[entry.file_edit_index :]
            state.history.truncate(entry.message_index)
            state.token_count = entry.token_count
            state.usage_index = entry.usage_index
            state.next_checkpoint_id = entry.next_id
            state.system_prompt = entry.system_prompt
            state.system_prompt_spans = [
                span for span in state.system_prompt_spans if span[0] < entry.offset
            ]
            state.pending_tokens = estimate_tokens(state.history[entry.usage_index :])
            await asyncio.to_thread(rotation.finish, self._path, rotated, reason, **note)
            return rotated

    async def clear(self, *, reason: str = "clear", **note: Any) -> Path | None:
        """Start an empty context; the old one is kept as the returned rotation (None when the
        context was already empty). `note` goes to rotations.jsonl (a compaction's numbers)."""
        async with self._mutex:
            await self._ensure_writable()
            if self._size == 0:
                self._state = _State()
                return None
            return await self._rewrite(lambda fd: None, reason, **note)

    async def replace_all(
        self,
        records: Sequence[Message | CheckpointRecord | SystemPromptRecord | UsageRecord],
        *,
        reason: str,
        **note: Any,
    ) -> Path | None:
        """Make `records` the whole live context in one crash-safe swap (a compaction's
        result): at every instant the file holds the old context or all of the new one, never
        an empty one waiting for its content. The old one is kept as the returned rotation."""
        data = mask_bytes(
            b"".join(
                _dump_message(r, exclude_unset=True) + b"\n"
                if isinstance(r, Message)
                else (r.to_json() + "\n").encode()
                for r in records
            )
        )
        async with self._mutex:
            await self._ensure_writable()
            return await self._rewrite(lambda fd: write_all(fd, data), reason, **note)

    async def restore_from(self, source: str | os.PathLike[str]) -> Path | None:
        """Make a copy of `source` (a rotated context, say) the live context. The current one is
        kept as the returned rotation (None when it was empty)."""
        source_path = Path(source).absolute()
        if not source_path.is_file():
            raise FileNotFoundError(f"no context file at {source_path}")
        if self._path.exists() and source_path.samefile(self._path):
            raise ValueError(f"{source_path.name} is already the live context")
        async with self._mutex:
            await self._ensure_writable()

            def write_new(fd: int) -> None:
                source_fd = os.open(source_path, os.O_RDONLY)
                try:
                    copy_range(source_fd, fd, 0, os.fstat(source_fd).st_size)
                finally:
                    os.close(source_fd)

            return await self._rewrite(write_new, "restore", source=source_path.name)

    async def _rewrite(self, write_new: Any, reason: str | None, **note: Any) -> Path | None:
        """Swap in new content (kept as a rotation unless `reason` is None), then read it back."""
        state = self._state
        # The count last reported (`_usage`), as a revert notes it: not the estimate after it.
        note = {"tokens": state.token_count, "messages": len(state.history), **note}
        try:
            rotated = await asyncio.to_thread(
                rotation.swap, self._path, write_new, self._fd, rotate=reason is not None
            )
        except OSError as error:
            # Nothing was swapped: the live file and the memory are as they were.
            raise ContextWriteError(self._path, error) from error
        self._close_fd()
        self._state = _State()
        await self._load()
        await asyncio.to_thread(rotation.finish, self._path, rotated, reason or "", **note)
        return rotated

    # --- closing -------------------------------------------------------------------------------

    async def close(self) -> None:
        """Make writes durable and let another process open the session."""
        async with self._mutex:
            try:
                if self._fd is not None:
                    await asyncio.to_thread(os.fsync, self._fd)
            except OSError as error:
                # Every record was handed to the OS; closing must still let go of the session.
                log.warning("could not fsync %s: %s", self._path, error)
            finally:
                self._close_fd()
                self._lock.release()

    async def __aenter__(self) -> Context:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    # --- internals -----------------------------------------------------------------------------

    def _position(self, checkpoint_id: int) -> int:
        """Where checkpoint `checkpoint_id` is in `checkpoints` (the first, should ids repeat)."""
        if type(checkpoint_id) is int:
            position = self._state.checkpoints.position(checkpoint_id)
            if position is not None:
                return position
        raise ValueError(f"checkpoint {checkpoint_id!r} does not exist")

    async def _ensure_writable(self) -> None:
        if self._read_only:
            raise PermissionError(errno.EROFS, "opened read-only", str(self._path))
        if self._fd is not None:
            return
        if not self._loaded:
            await self._load()  # writing without restore() first must not clash with old records
        make_private_dir(self._path.parent)
        self._lock.acquire()
        self._open()

    def _open(self) -> None:
        fd = os.open(self._path, os.O_RDWR | os.O_APPEND | os.O_CREAT, FILE_MODE)
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            # A last line without its newline (a crash, an edit by hand) must not swallow ours.
            try:
                write_all(fd, b"\n")
            except OSError as error:
                _cut_back(fd, size)
                os.close(fd)
                raise ContextWriteError(self._path, error) from error
            size += 1
        self._fd, self._size = fd, size

    def _reopen(self) -> None:
        self._close_fd()
        self._open()

    def _close_fd(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _write(self, data: bytes) -> None:
        """Append `data` whole, or raise ContextWriteError with the file cut back to where it
        was: a torn line must never be left for the next record to be glued onto."""
        assert self._fd is not None
        data = mask_bytes(data)  # API keys never reach the disk (the history in memory keeps them)
        try:
            if self._cut_pending:
                os.ftruncate(self._fd, self._size)
                self._cut_pending = False
            write_all(self._fd, data)
        except OSError as error:
            self._cut_pending = not _cut_back(self._fd, self._size)
            raise ContextWriteError(self._path, error) from error
        self._size += len(data)

    def _write_record(self, record: CheckpointRecord | UsageRecord | FileEditRecord) -> None:
        self._write((record.to_json() + "\n").encode())


_CANNOT_WRITE = (errno.EACCES, errno.EPERM, errno.EROFS)


async def restore_or_view(path: str | os.PathLike[str]) -> Context:
    """The context at `path`, restored for writing, or for viewing only (`read_only`) when its
    folder cannot be written (read-only media, a folder without write permission): such a
    session can still be looked at. SessionLocked still means another kode-tui is writing it."""
    context = Context(path)
    try:
        await context.restore()
    except OSError as error:
        if error.errno not in _CANNOT_WRITE:
            raise
        await context.close()
        log.info("%s cannot be written (%s): opened read-only", path, error)
        context = Context(path, read_only=True)
        await context.restore()
    return context


def _cut_back(fd: int, size: int) -> bool:
    """Cut what a failed write left after `size`; False when even that failed."""
    try:
        os.ftruncate(fd, size)
    except OSError as error:
        log.warning("could not cut a failed write back: %s", error)
        return False
    return True


def _state_from_scan(found: Scan, reader: SpanReader) -> _State:
    history = History(reader, found.message_starts, found.message_ends, found.message_flags)
    return _State(
        history=history,
        checkpoints=found.checkpoints,
        file_edits=found.file_edits,
        token_count=found.token_count,
        usage_index=found.usage_index,
        pending_tokens=estimate_tokens(history[found.usage_index :]),
        next_checkpoint_id=found.next_checkpoint_id,
        system_prompt=found.system_prompt,
        system_prompt_spans=found.system_prompt_spans,
        warnings=found.warnings,
    )
