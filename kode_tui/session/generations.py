"""Why a rotation was made and which context it continued, read from the files themselves.

Kimi CLI rotates `context.jsonl` as we do but notes nothing in rotations.jsonl (and a note of
ours can be lost to a crash). What each operation leaves in the file that replaced the rotated
one tells them apart (kimi_cli/soul/context.py and kimisoul.py, 1.52):

- a compaction clears, then writes the system prompt, checkpoint 0, a user message beginning
  `<system>Previous context has been compacted...`, the preserved messages and a `_usage`
  estimate: the summary is new, so the two files share at most a `CHECKPOINT 0` note;
- a clear (`/clear`) leaves an empty file, then the system prompt: nothing of the old talk;
- a D-Mail copies the lines before checkpoint k as they were (a compaction's summary with
  them, when the context began with one), writes checkpoint k again and the
  `<system>You just got a D-Mail...` note;
- a revert (ours) copies the lines before checkpoint k, and a new turn follows;
- a restore (ours) copies an older rotation whole, and new turns follow.

So each file is reduced to a hash of each message line (copies are byte for byte), its
checkpoints and where its notes are; the file after a rotation is the next one by number (both
programs take 1 + the highest number), or the live file after the newest.
"""

from __future__ import annotations

import bisect
import os
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import msgspec.structs

from kode_tui.message import (
    COMPACTION_OUTPUT_PREFIX,
    DMAIL_NOTE,
    Message,
    is_dmail_note,
    is_system_note,
    parse_record,
    system_text,
)
from kode_tui.session.rotation import Rotation
from kode_tui.session.scan import scan

MAX_READ = 64 << 20
"""A larger file is not read whole: only its first `HEAD_READ` bytes."""
HEAD_READ = 1 << 20

# How the notes start inside a message line's JSON (a text part's string value).
_COMPACTED = ('"' + system_text(COMPACTION_OUTPUT_PREFIX)).encode()
_DMAIL = f'"<system>{DMAIL_NOTE}'.encode()
_FIRST_MESSAGES = 2
"""A compaction's summary is the first message, after a `CHECKPOINT 0` note at most."""


@dataclass(frozen=True, slots=True)
class Generation:
    """What a context file says of where it came from."""

    messages: array[int]
    """A hash of each message line, in order (Python's own hash: the cache lives in-process)."""
    checkpoint_ids: array[int]
    messages_before: array[int]
    """How many messages come before each checkpoint."""
    token_count: int
    """The count the model last reported (0: none, since it began or was compacted)."""
    first_token_count: int | None
    """The first count the model reported: after a compaction, what the next request held."""
    pending_tokens: int
    """An estimate (characters / 4) of what `token_count` leaves out: the messages after it,
    and the system prompt too when nothing was reported (`tokens`)."""
    system_prompt: str | None
    summary_at: int | None
    """The index of the compaction summary it begins with (after a `CHECKPOINT 0` note at
    most); None when it does not begin with one."""
    dmail_at: frozenset[int]
    """Indexes of the messages that are a D-Mail's note."""
    complete: bool
    """False when only the head of a big file was read: its counts are not known."""

    @property
    def tokens(self) -> int:
        """The context's size as far as the file tells: the count last reported and the
        estimate of what it leaves out (the tools a request also carried are not in the file)."""
        return self.token_count + self.pending_tokens


def read_generation(path: Path) -> Generation | None:
    """What `path` says of its origin (cached while its size and time stay); None when it
    cannot be read."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return _read_cached(str(path), stat.st_size, stat.st_mtime_ns)


@lru_cache(maxsize=32)
def _read_cached(path: str, size: int, mtime_ns: int) -> Generation | None:
    complete = size <= MAX_READ
    try:
        with open(path, "rb") as file:
            data = file.read(-1 if complete else HEAD_READ)
    except OSError:
        return None
    if not complete:
        data = data[: data.rfind(b"\n") + 1]  # whole lines only
    found = scan(data, os.path.basename(path))
    view = memoryview(data)
    starts, ends = found.message_starts, found.message_ends
    hashes = array("q", (hash(view[s:e]) for s, e in zip(starts, ends, strict=True)))
    columns = found.checkpoints
    summary_at = next(
        (
            i
            for i in range(min(_FIRST_MESSAGES, len(starts)))
            if _is_note(data[starts[i] : ends[i]], _COMPACTED)
        ),
        None,
    )
    pending = sum(
        _estimate(data[starts[i] : ends[i]]) for i in range(found.usage_index, len(starts))
    )
    if not found.token_count:
        pending += len(found.system_prompt or "") // 4
    return Generation(
        hashes,
        columns.ids,
        columns.message_index,
        found.token_count,
        found.first_token_count,
        pending,
        found.system_prompt,
        summary_at,
        frozenset(_dmail_indexes(data, starts, ends)),
        complete,
    )


def _estimate(line: bytes) -> int:
    """A message line's estimated tokens (0 for a line that is not a message's)."""
    try:
        message = parse_record(line)
    except ValueError:
        return 0
    return message.estimated_tokens() if isinstance(message, Message) else 0


def _is_note(line: bytes, marker: bytes) -> bool:
    """Whether a message line is a user message whose text begins with the note `marker`."""
    if marker not in line:
        return False
    try:
        message = parse_record(line)
    except ValueError:
        return False
    if not isinstance(message, Message) or message.role != "user":
        return False
    if marker is _DMAIL:
        return is_dmail_note(message.text)
    return is_system_note(message.text, COMPACTION_OUTPUT_PREFIX)


def _dmail_indexes(data: bytes, starts: Sequence[int], ends: Sequence[int]) -> list[int]:
    found: list[int] = []
    pos = data.find(_DMAIL)
    while pos >= 0:
        index = bisect.bisect_right(starts, pos) - 1
        if index >= 0 and pos < ends[index] and _is_note(data[starts[index] : ends[index]], _DMAIL):
            found.append(index)
        pos = data.find(_DMAIL, max(pos + 1, ends[index] if index >= 0 else 0))
    return found


# --- inference ----------------------------------------------------------------------------------


def common_prefix(a: array[int], b: array[int]) -> int:
    """How many messages two generations share from the start (by binary search: each step
    is one slice comparison, in C)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def infer_rotations(
    rotations: Sequence[Rotation],
    live: Path,
    read: Callable[[Path], Generation | None] = read_generation,
) -> list[Rotation]:
    """`rotations` (oldest first, as `list_rotations` gives them), each one that has no note
    given the reason its files show, marked `inferred`; the others as they are."""
    if all(rotation.reason is not None for rotation in rotations):
        return list(rotations)
    result = []
    for index, rotation in enumerate(rotations):
        if rotation.reason is not None:
            result.append(rotation)
            continue
        after = rotations[index + 1].path if index + 1 < len(rotations) else live
        # A restore brings back a file made before it.
        earlier = [(other.path.name, other.path) for other in rotations[:index]]
        result.append(_infer(rotation, read(rotation.path), read(after), earlier, read))
    return result


def _infer(
    rotation: Rotation,
    rotated: Generation | None,
    after: Generation | None,
    others: Sequence[tuple[str, Path]],
    read: Callable[[Path], Generation | None],
) -> Rotation:
    if rotated is None or after is None:
        return rotation
    tokens = rotation.tokens if rotation.tokens is not None else rotated.tokens
    kept = common_prefix(rotated.messages, after.messages)
    # First: a restored file may begin with a compaction's summary itself.
    source = _restored(kept, after, others, read)
    if source is not None:
        info = {**rotation.info, "source": source}
        return _with(rotation, "restore", None, tokens, info)
    # A summary both files hold was copied (a D-Mail, a revert in a compacted context): only
    # a new one is a compaction's.
    if after.summary_at is not None and kept <= after.summary_at:
        info = dict(rotation.info)
        # Kimi's own `_usage` estimate counts the messages alone: what the next request
        # carried is the first count reported after it (unknown until one was).
        if after.first_token_count is not None:
            info.setdefault("tokens_after", after.first_token_count)
        return _with(rotation, "compaction", None, tokens, info)
    # Both ends must be known to say where the two part.
    if (kept == len(rotated.messages) and not rotated.complete) or (
        kept == len(after.messages) and not after.complete
    ):
        return rotation
    checkpoint = _checkpoint_at(rotated, kept)
    if after.dmail_at & {kept, kept + 1}:
        return _with(rotation, "dmail", checkpoint, tokens, rotation.info)
    if kept == 0:
        return _with(rotation, "clear", None, tokens, rotation.info)
    if kept < len(rotated.messages):
        return _with(rotation, "revert", checkpoint, tokens, rotation.info)
    if rotated.system_prompt != after.system_prompt:
        return _with(rotation, "system_prompt", None, tokens, rotation.info)
    return rotation


def _restored(
    kept: int,
    after: Generation,
    others: Sequence[tuple[str, Path]],
    read: Callable[[Path], Generation | None],
) -> str | None:
    """The other rotation `after` began as a whole copy of (a restore), when it shares more
    with it than the `kept` messages it shares with the rotation before it."""
    best, best_length = None, kept
    for name, path in others:
        other = read(path)
        if other is None or not other.complete or len(other.messages) <= best_length:
            continue
        length = len(other.messages)
        if length <= len(after.messages) and after.messages[:length] == other.messages:
            best, best_length = name, length
    return best


def _checkpoint_at(rotated: Generation, kept: int) -> int | None:
    """The checkpoint a revert that kept `kept` messages went back to: the last one before
    them (taken again by the turn after it, or not yet)."""
    index = bisect.bisect_right(rotated.messages_before, kept) - 1
    return rotated.checkpoint_ids[index] if index >= 0 else None


def _with(
    rotation: Rotation,
    reason: str,
    checkpoint: int | None,
    tokens: int,
    info: dict[str, Any],
) -> Rotation:
    return msgspec.structs.replace(
        rotation,
        reason=reason,
        checkpoint=checkpoint,
        tokens=tokens,
        info=dict(info),
        inferred=True,
    )
