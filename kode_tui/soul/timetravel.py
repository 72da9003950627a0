"""Time travel as the soul plans it: what a revert to a checkpoint, or a restore of a rotated
context, would do to the conversation and to the files, and putting the files back.

`TimeMachine` (the soul's `travel`) swaps the context and sends the events; the plans and the
file work are its helpers here, over `session.timetravel`'s per-file planner.
"""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kode_tui.message import Message, is_system_note, shown_messages
from kode_tui.pathnames import is_within
from kode_tui.session import Context
from kode_tui.session.checkpoints import Checkpoint
from kode_tui.session.journal import FileJournal
from kode_tui.session.snapshot import WorkSnapshot
from kode_tui.session.timetravel import (
    LEFT_ALONE,
    FilePlan,
    apply_file_revert,
    compare,
    edit_history,
    keep_hand_versions,
    plan_file_restore,
    plan_file_revert,
    read_snapshot,
)
from kode_tui.soul import shell_escape
from kode_tui.tools.base import ToolEnv
from kode_tui.tools.protected import is_protected
from kode_tui.wire import events as ev
from kode_tui.wire.bus import WireBus


@dataclass(frozen=True, slots=True)
class RevertPreview:
    """What reverting to a checkpoint would do, for the user to confirm."""

    checkpoint_id: int
    messages_leaving: int
    tokens_freed: int
    files: list[FilePlan]
    next_user_text: str
    """The user's message that followed the checkpoint (it goes back into the prompt)."""
    untracked: list[str] = field(default_factory=list)
    """Files whose Shell edits a revert cannot put back (too large, ignored), one line each."""


@dataclass(frozen=True, slots=True)
class RevertOutcome:
    rotated_file: Path
    files_restored: list[str]
    conflicts: list[str]
    next_user_text: str
    kept: list[str] = field(default_factory=list)
    """Files changed by hand that were overwritten anyway: what they held is kept in
    `rotated_file` (restoring it with its files brings it back)."""


@dataclass(frozen=True, slots=True)
class RestorePreview:
    """What making a rotated context live again would do, for the user to confirm."""

    source: Path
    messages: int
    """The messages of the restored context."""
    messages_back: int
    """Those the live context does not have (they come back), as `Comparison.counts` counts."""
    messages_leaving: int
    """The live context's messages the restored one does not have (kept in a rotation)."""
    tokens: int
    """The restored context's token count."""
    checkpoints: int
    files: list[FilePlan]
    """Per file the two conversations leave differently, what `files=True` does to it."""
    untracked: list[str] = field(default_factory=list)
    """Files whose Shell edits a restore cannot put back (too large, ignored), one line each."""


@dataclass(frozen=True, slots=True)
class RestoreOutcome:
    rotated_file: Path | None
    """The live context as it was (None when it was empty)."""
    files_restored: list[str]
    conflicts: list[str]
    """Files left alone: changed since the live conversation's edit, refused or missing."""
    kept: list[str] = field(default_factory=list)
    """Files changed by hand that were overwritten anyway, kept in `rotated_file`."""


@dataclass(frozen=True, slots=True)
class RewindPoint:
    """A message of the user's in the live context, as the rewind picker lists it: reverting
    to `checkpoint_id`, the checkpoint before it, takes it back with all that followed."""

    checkpoint_id: int
    text: str
    """What the user typed (for a `!` command, its line)."""
    sent_at: float | None
    """When it was sent (Unix time); None when the wire does not say."""
    changed_files: bool
    """Whether its turn changed files: edits after it and before the user's next message."""


def rewind_points(context: Context, sent: Mapping[str, float]) -> list[RewindPoint]:
    """The user's messages of `context`, newest first, each with the checkpoint before it.
    `sent` maps a message's text to when it was sent (the newest turn of that text)."""
    checkpoints = context.checkpoints
    history = context.history
    starts: list[tuple[int, int, str]] = []  # (position, checkpoint id, text)
    for position, checkpoint in enumerate(checkpoints):
        start = checkpoint.message_index
        following = position + 1
        stop = (
            checkpoints[following].message_index if following < len(checkpoints) else len(history)
        )
        # A turn's checkpoint comes right before its message (and maybe a CHECKPOINT note):
        # a step's checkpoint, never followed by one, is not read through.
        text = _user_text_after(history, start, min(stop, start + _MESSAGE_LOOKAHEAD))
        if text:
            starts.append((position, checkpoint.id, text))
    # The span of the checkpoint at position p holds the edits made while it was the newest.
    edited = sorted(edit.checkpoint_count - 1 for edit in context.file_edits)
    points = []
    for index, (position, checkpoint_id, text) in enumerate(starts):
        end = starts[index + 1][0] if index + 1 < len(starts) else len(checkpoints)
        first = bisect.bisect_left(edited, position)
        changed = first < len(edited) and edited[first] < end
        points.append(RewindPoint(checkpoint_id, text, sent.get(text), changed))
    points.reverse()
    return points


_MESSAGE_LOOKAHEAD = 3
"""Messages read after a checkpoint for the user's: a D-Mail's CHECKPOINT note may come first."""


def revert_preview(context: Context, env: ToolEnv, checkpoint_id: int) -> RevertPreview:
    """What reverting `context` to `checkpoint_id` would do; ValueError when there is no such
    checkpoint. The files are planned only when `env` has a journal to take them back from."""
    checkpoint = next((c for c in context.checkpoints if c.id == checkpoint_id), None)
    if checkpoint is None:
        raise ValueError(f"there is no checkpoint {checkpoint_id}")
    history = context.history
    files: list[FilePlan] = []
    if env.journal is not None:
        edits = context.file_edits_since(checkpoint_id)
        files = plan_file_revert(edits, env.work_dir, env.journal, _may_write(env.work_dir))
    return RevertPreview(
        checkpoint_id=checkpoint_id,
        messages_leaving=len(shown_messages(history[checkpoint.message_index :])),
        tokens_freed=max(0, context.token_count_with_pending - checkpoint.token_count),
        files=files,
        next_user_text=_user_text_after(
            history,
            checkpoint.message_index,
            _next_start(context.checkpoints, checkpoint_id, len(history)),
        ),
        untracked=untracked_files(env),
    )


def restore_preview(context: Context, env: ToolEnv, source: Path) -> RestorePreview:
    """What making the rotated context `source` live instead of `context` would do; OSError
    when `source` cannot be read."""
    snapshot = read_snapshot(source)
    comparison = compare(snapshot.messages, context.history)
    counts = comparison.counts
    files: list[FilePlan] = []
    if env.journal is not None:
        rotations = context.rotations()
        number = next((r.number for r in rotations if r.path.name == source.name), -1)
        live = [edit.record for edit in context.file_edits]
        files = plan_file_restore(
            edit_history(live, None, rotations),
            edit_history(snapshot.file_edits, number, rotations),
            env.work_dir,
            env.journal,
            _may_write(env.work_dir),
        )
    return RestorePreview(
        source=source,
        messages=len(snapshot.messages),
        messages_back=counts.only_there,
        messages_leaving=counts.only_here,
        tokens=snapshot.token_count,
        checkpoints=snapshot.n_checkpoints,
        files=files,
        untracked=untracked_files(env),
    )


@dataclass(frozen=True, slots=True)
class FilesPutBack:
    """What carrying out a file plan did."""

    restored: list[str]
    """Files restored or deleted."""
    conflicts: list[str]
    """Files left alone."""
    kept: list[str]
    """Files changed by hand, overwritten all the same: their versions are kept."""


async def apply_files(
    plans: Sequence[FilePlan],
    journal: FileJournal | None,
    *,
    write: bool,
    snapshots: WorkSnapshot | None = None,
    keep_in: Path | None = None,
) -> FilesPutBack:
    """With `write` and a journal, `plans` are carried out (in a thread) with the journal's
    blobs; else nothing is written, and the conflicts are the files the plans leave alone.
    With `keep_in` (the context that was live, now rotated) the conflicts are overwritten
    too, after what each holds is kept in it (`keep_hand_versions`). The files written are
    taken into `snapshots` as they are now: putting them back is not a change of anyone's to
    record."""
    if not write or journal is None:
        return FilesPutBack([], [p.path for p in plans if p.action in LEFT_ALONE], [])
    kept: list[str] = []
    if keep_in is not None:
        plans, kept = await asyncio.to_thread(keep_hand_versions, plans, journal, keep_in)
    restored, conflicts = await asyncio.to_thread(apply_file_revert, plans, journal)
    if snapshots is not None:
        await snapshots.refresh(restored)
    return FilesPutBack(restored, conflicts, [path for path in kept if path in restored])


class TimeMachine:
    """Takes the live `context` back to a checkpoint, or makes a rotated context live again;
    with the files when asked, from `env`'s journal. It says so on `bus`, then sends the
    gauge's `status()`; `moved()` follows every swap (SendDMail learns the checkpoints, the
    todo list follows the conversation)."""

    def __init__(
        self,
        context: Context,
        env: ToolEnv,
        bus: WireBus,
        *,
        moved: Callable[[], Awaitable[None]],
        status: Callable[[], ev.StatusUpdate],
    ) -> None:
        self._context = context
        self._env = env
        self._bus = bus
        self._moved = moved
        self._status = status

    def revert_preview(self, checkpoint_id: int) -> RevertPreview:
        """What `revert(checkpoint_id)` would do; ValueError when there is no such checkpoint."""
        return revert_preview(self._context, self._env, checkpoint_id)

    async def revert(
        self, checkpoint_id: int, *, files: bool = False, anyway: bool = False
    ) -> RevertOutcome:
        """Take the context back to `checkpoint_id` (the rest is kept in a rotated file), and
        with `files` put back the files the agent changed since, where nobody else did; with
        `anyway` also those changed by hand since, whose versions the rotated file keeps."""
        preview = self.revert_preview(checkpoint_id)
        rotated = await asyncio.shield(self._context.revert_to(checkpoint_id))
        done = await apply_files(
            preview.files,
            self._env.journal,
            write=files,
            snapshots=self._env.snapshots,
            keep_in=rotated if anyway else None,
        )
        await self._moved()
        self._bus.send(
            ev.ContextReverted(
                checkpoint_id=checkpoint_id,
                rotated_file=rotated.name,
                reason="user",
                files_restored=done.restored,
                conflicts=done.conflicts,
            )
        )
        self._bus.send(self._status())
        return RevertOutcome(
            rotated, done.restored, done.conflicts, preview.next_user_text, done.kept
        )

    def restore_preview(self, source: Path) -> RestorePreview:
        """What `restore(source)` would do; OSError when `source` cannot be read."""
        return restore_preview(self._context, self._env, source)

    async def restore(
        self, source: Path, *, files: bool = False, anyway: bool = False
    ) -> RestoreOutcome:
        """Make the rotated context `source` live again (the current one is rotated first),
        and with `files` make the files what the restored conversation left, where nobody
        changed them since the live conversation did (`plan_file_restore`); with `anyway`
        there too, keeping their versions in the rotated live context (an empty live
        context, which nothing rotates, leaves them alone)."""
        preview = self.restore_preview(source)  # the live context's edits, before the swap
        rotated = await asyncio.shield(self._context.restore_from(source))
        done = await apply_files(
            preview.files,
            self._env.journal,
            write=files,
            snapshots=self._env.snapshots,
            keep_in=rotated if anyway else None,
        )
        await self._moved()
        self._bus.send(
            ev.ContextRestored(
                from_file=source.name,
                rotated_file=rotated.name if rotated is not None else "",
                files_restored=done.restored,
                conflicts=done.conflicts,
            )
        )
        self._bus.send(self._status())
        return RestoreOutcome(rotated, done.restored, done.conflicts, done.kept)


def untracked_files(env: ToolEnv) -> list[str]:
    """What the work dir's snapshots leave out, one line each, for a revert's dialog: a revert
    cannot put back what a Shell command did to those files."""
    snapshots = env.snapshots
    if snapshots is None:
        return []
    if snapshots.off is not None:
        return [f"No Shell edits are tracked: {snapshots.off}."]
    large = snapshots.too_large
    lines = [
        f"{name} (over {snapshots.max_file_bytes:,} bytes)" for name in large[:UNTRACKED_SHOWN]
    ]
    if len(large) > UNTRACKED_SHOWN:
        lines.append(f"and {len(large) - UNTRACKED_SHOWN:,} more files over that size")
    return [*lines, "Files git or .gitignore ignore are not tracked."] if lines else lines


UNTRACKED_SHOWN = 10
"""Of the files too large to snapshot, how many a revert's dialog names."""


def _may_write(work_dir: Path) -> Callable[[Path], bool]:
    def may_write(target: Path) -> bool:
        """Whether a revert may write `target`: inside the work dir, and not a file that makes
        tools run code (the edit records come from the session folder, which may be foreign)."""
        return is_within(target, work_dir) and not is_protected(target, work_dir)

    return may_write


def _next_start(checkpoints: Sequence[Checkpoint], checkpoint_id: int, end: int) -> int:
    """Where the messages after `checkpoint_id` stop: at the next checkpoint, or at `end`."""
    later = [c.message_index for c in checkpoints if c.id > checkpoint_id]
    return min(later, default=end)


def _user_text_after(history: Sequence[Message], start: int, stop: int) -> str:
    """The user's own message (not a `<system>` note) between the checkpoint and the next one:
    what they typed at that point. A step's checkpoint has none."""
    for message in history[start:stop]:
        if message.role == "user" and not is_system_note(message.text):
            return shell_escape.typed_text(message)  # a `!` command: the line typed
    return ""
