"""What came before a compaction: the rotated contexts a live context was compacted from.

Live, the conversation pane keeps the old turns above the `compacted` marker. A resumed session
shows them again from the rotated files: `compacted_from` walks the rotations back from the
live context (through reverts, D-Mails and restores, which continue an older file) and stops
at a clear (live, a clear empties the pane too) or a rotation whose reason nobody knows.
`read_earlier` reads one of them as the pane shows it. Both only read: the live context is
never changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import msgspec

from kode_tui.message import COMPACTION_OUTPUT_PREFIX, Message, is_system_note
from kode_tui.session.rotation import Rotation, rotation_number
from kode_tui.session.timetravel import message_identity, read_snapshot

MAX_EARLIER_BYTES = 32 << 20
"""The earlier contexts shown read at most this many bytes together (the newest first): a
long lineage would cost the pane its memory, and Home a long read."""
_MAX_PRESERVED = 64
"""A compaction keeps a few of the newest messages; no more are looked for."""


class EarlierContexts(msgspec.Struct, frozen=True):
    """The rotated contexts shown above the live one, newest first, and those left out."""

    shown: list[Rotation] = msgspec.field(default_factory=list)
    left_out: int = 0
    """Older ones of the lineage beyond `MAX_EARLIER_BYTES` (History previews them)."""


def compacted_from(
    rotations: Sequence[Rotation], limit: int = MAX_EARLIER_BYTES
) -> EarlierContexts:
    """The contexts the live one was compacted from, newest first, as many as `limit` bytes
    hold. `rotations` are the session's, oldest first, with their reasons
    (`generations.infer_rotations` for Kimi CLI's)."""
    by_number = {rotation.number: rotation for rotation in rotations}
    numbers = sorted(by_number)
    found: list[Rotation] = []
    current: int | None = None
    while True:
        earlier = [n for n in numbers if current is None or n < current]
        if not earlier:
            break
        made = by_number[earlier[-1]]
        if made.reason == "compaction":
            found.append(made)
            current = made.number
        elif made.reason == "restore":
            # The live file continues the restored one, a file made before the restore.
            source = rotation_number(made.info.get("source"))
            if source is None or source not in by_number or source >= made.number:
                break
            current = source
        elif made.reason in ("revert", "dmail", "system_prompt"):
            current = made.number  # a prefix of it goes on here: what came before it counts
        else:
            break  # a clear (the pane starts empty after one), or nobody knows
    shown: list[Rotation] = []
    total = 0
    for rotation in found:
        total += rotation.size
        if total > limit:
            break
        shown.append(rotation)
    return EarlierContexts(shown, len(found) - len(shown))


def read_earlier(path: Path, successor: Sequence[Message]) -> list[Message]:
    """The messages of the rotated context at `path` as they show above `successor` (the
    context that followed its compaction): the newest ones that the compaction kept after its
    summary are left to `successor`, so each message shows once. OSError when it cannot be
    read. Blocking."""
    messages = read_snapshot(path).messages
    summary = next(
        (
            index
            for index, message in enumerate(successor[:2])
            if message.role == "user" and is_system_note(message.text, COMPACTION_OUTPUT_PREFIX)
        ),
        None,
    )
    if summary is None:
        return messages
    kept = [message_identity(m) for m in successor[summary + 1 : summary + 1 + _MAX_PRESERVED]]
    tail = [message_identity(m) for m in messages[-len(kept) :]] if kept else []
    for count in range(min(len(kept), len(tail)), 0, -1):
        if tail[len(tail) - count :] == kept[:count]:
            return messages[: len(messages) - count]
    return messages
