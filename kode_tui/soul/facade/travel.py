"""The facade's time travel (DESIGN.md §9): the timeline, the rotated contexts with their
lineage, the plans of a revert and of a restore and their application, the diff between
checkpoints and a rotated context's preview (`AgentSession.travel`).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kode_tui.message import Message, estimate_tokens
from kode_tui.session import Checkpoint, Context, FileEdit, Rotation
from kode_tui.session.generations import infer_rotations, read_generation
from kode_tui.session.rotation import (
    ROTATIONS_LOG,
    rotation_number,
    rotation_numbers,
    rotation_path,
)
from kode_tui.session.timetravel import (
    Comparison,
    ContextSnapshot,
    FilePlan,
    compare,
    lineage,
    read_snapshot,
)
from kode_tui.soul.facade.live import Live
from kode_tui.soul.subagents.store import SubagentStore, valid_agent_id
from kode_tui.soul.timetravel import (
    RestoreOutcome,
    RestorePreview,
    RevertOutcome,
    RevertPreview,
    RewindPoint,
    rewind_points,
)
from kode_tui.soul.transcript import PastResults, turn_text
from kode_tui.wire import events as ev
from kode_tui.wire.recorder import read_kimi_records

if TYPE_CHECKING:
    from kode_tui.session.compare import CheckpointDiff
    from kode_tui.session.journal import FileJournal
    from kode_tui.session.search import Match

WATCH_DEBOUNCE_MS = 100


@dataclass(frozen=True, slots=True)
class TimelineState:
    """The live context's checkpoints, what follows each and the files edited after each.

    `history` is the context's own (lazy) sequence: read it, never keep it past the next
    `ContextRestored`/`ContextCleared`/`CompactionEnd`, which replace it.
    """

    history: Sequence[Message]
    checkpoints: Sequence[Checkpoint]
    file_edits: Sequence[FileEdit]


@dataclass(frozen=True, slots=True)
class ContextSize:
    """A context's size in tokens as the gauge counts it: the count the model last reported
    and an estimate (characters / 4) of what that count leaves out."""

    tokens: int
    estimated: int
    """The part of `tokens` that is estimated: the messages after the last count reported;
    all of it (the system prompt and tools with the messages) when none was."""


@dataclass(frozen=True, slots=True)
class RotationEntry:
    """A rotated context file, as the History pane lists it."""

    rotation: Rotation
    messages: int | None
    tokens: int | None
    tokens_estimated: bool = False
    """`tokens` is an estimate: the model reported no count in that context."""
    on_live_path: bool = True
    """Whether the live context descends from it (else it is an abandoned branch)."""
    parent: int | None = None
    """The rotated context this one continued, when that is not simply the one before it."""


@dataclass(frozen=True, slots=True)
class RevertPlan:
    """What reverting to a checkpoint would do, with what the dialog shows of it."""

    preview: RevertPreview
    label: str
    """The checkpoint in a few words: the user's message there, else what the agent did."""
    conflict_diffs: list[ev.DiffBlock]
    """For each conflicting file: what the agent left in it against what it holds now."""
    kept_in: str = ""
    """The rotated file the revert will make, which keeps what a conflict restored anyway
    held (the next free `context_N.jsonl`)."""


@dataclass(frozen=True, slots=True)
class RestorePlan:
    """What restoring a rotated context would do, files included, with the conflicts' diffs."""

    preview: RestorePreview
    conflict_diffs: list[ev.DiffBlock]
    """For each conflicting file: what the live conversation left in it against what it
    holds now."""
    kept_in: str = ""
    """The rotated file the restore will make of the live context (as `RevertPlan`'s)."""


@dataclass(frozen=True, slots=True)
class RotationPreview:
    """A rotated context, read without the session's lock, compared with the live one."""

    snapshot: ContextSnapshot
    rotation: Rotation | None
    tokens: int | None
    """Its size when it was left, as History's row says (None: not known)."""
    tokens_estimated: bool
    """`tokens` is an estimate: the model reported no count in that context."""
    comparison: Comparison
    results: PastResults | None
    """What the tool calls of its conversation showed (briefs, diffs), from wire.jsonl."""
    plan: RestorePlan | None = None
    """What restoring it would do (None in a read-only view: nothing can be restored)."""
    subagent: bool = False
    """A subagent's context: it can be read, never restored in the parent's place."""


SUBAGENT_PREFIX = "subagents/"
"""How History names a subagent's context: `subagents/<agent_id>` (its folder)."""


@dataclass(frozen=True, slots=True)
class SubagentEntry:
    """A subagent's context, as the History pane lists it (read-only: never restored)."""

    name: str
    """`subagents/<agent_id>`, what `preview` takes."""
    agent_id: str
    subagent_type: str
    description: str
    status: str
    updated_at: float


class TimeTravel:
    """The time travel of an opened session: what it shows and what it does."""

    def __init__(self, live: Live) -> None:
        self._live = live
        self._summaries: dict[tuple[str, int, float], tuple[int, ContextSize] | None] = {}

    def forget_summaries(self) -> None:
        """The context files were read again (a read-only view): count them afresh."""
        self._summaries.clear()

    def timeline(self) -> TimelineState:
        context = self._live.context
        return TimelineState(context.history, context.checkpoints, context.file_edits)

    def checkpoint_size(self, checkpoint: Checkpoint) -> ContextSize:
        """The context's size at `checkpoint`, as the gauge showed it then: the count reported
        last before it and the messages since, estimated; before any count (a new session, or
        since a compaction), the system prompt and tools as measured now with the messages."""
        context = self._live.context
        since = estimate_tokens(context.history[checkpoint.usage_index : checkpoint.message_index])
        if checkpoint.token_count:
            return ContextSize(checkpoint.token_count + since, since)
        soul = self._live.running
        prompt = soul.prompt_tokens if soul is not None else 0
        prompt = prompt or len(checkpoint.system_prompt or "") // 4  # a read-only view's
        return ContextSize(prompt + since, prompt + since)

    def is_rotation_file(self, name: str) -> bool:
        """Whether a file name in the session folder is a rotated context or their log."""
        return name == ROTATIONS_LOG or rotation_number(name) is not None

    def rotations(self) -> list[RotationEntry]:
        """The rotated contexts, newest first, with their lineage (blocking: run in a thread).

        A rotation without a note (Kimi CLI's) gets the reason its files show, so the lineage
        follows what the files hold."""
        rotations = self._known_rotations()
        found = lineage([(r.number, r.reason, _restore_source(r)) for r in rotations])
        entries = []
        for rotation in reversed(rotations):
            messages, tokens, estimated = self._counts(rotation)
            parent = found.parent.get(rotation.number)
            branched = parent is not None and parent != rotation.number - 1
            entries.append(
                RotationEntry(
                    rotation,
                    messages,
                    tokens,
                    estimated,
                    rotation.number in found.live_path,
                    parent if branched else None,
                )
            )
        return entries

    def subagents(self) -> list[SubagentEntry]:
        """The session's subagent contexts (Kimi's or ours), latest first (blocking)."""
        return [
            SubagentEntry(
                f"{SUBAGENT_PREFIX}{record.agent_id}",
                record.agent_id,
                record.subagent_type,
                record.description,
                record.status,
                record.updated_at,
            )
            for record in SubagentStore(self._live.session.dir).list_instances()
        ]

    def subagent_context(self, name: str) -> Path | None:
        """The context file of the subagent History names `name` (`subagents/<agent_id>`,
        a trailing `/context.jsonl` allowed, as a search match gives it), if there is one."""
        agent_id = name.removeprefix(SUBAGENT_PREFIX).removesuffix("/context.jsonl")
        if not name.startswith(SUBAGENT_PREFIX) or not valid_agent_id(agent_id):
            return None  # checked before it becomes a path: `../x` never reaches the disk
        path = SubagentStore(self._live.session.dir).context_path(agent_id)
        return path if path.is_file() else None

    async def rotation_changes(self, stop: asyncio.Event) -> AsyncIterator[None]:
        """Yields each time rotated contexts appear or change, until `stop` is set."""
        from kode_tui import watching

        folder = self._live.session.dir
        if not folder.is_dir():
            return
        async for _changes in watching.changes(
            folder,
            watch_filter=lambda change, path: self.is_rotation_file(os.path.basename(path)),
            debounce=WATCH_DEBOUNCE_MS,
            step=50,
            stop_event=stop,
            recursive=False,
        ):
            yield

    def _known_rotations(self) -> list[Rotation]:
        context = self._live.context
        return infer_rotations(context.rotations(), context.path)

    def _counts(self, rotation: Rotation) -> tuple[int | None, int | None, bool]:
        """Its messages and tokens: the note's, else read from the file; and whether the
        tokens are an estimate (the model reported no count in that context)."""
        messages, tokens, estimated = rotation.messages, rotation.tokens, False
        # A note's 0: nothing was reported since the context began or was compacted.
        if messages is None or not tokens:
            summary = self._summary(rotation)
            if summary is not None:
                count, size = summary
                messages = count if messages is None else messages
                if not tokens:
                    tokens, estimated = size.tokens, size.estimated == size.tokens
        return messages, tokens, estimated

    def _summary(self, rotation: Rotation) -> tuple[int, ContextSize] | None:
        """Its message count and size; None for a file too big to read whole."""
        key = (rotation.path.name, rotation.size, rotation.mtime)
        if key in self._summaries:
            return self._summaries[key]
        found = read_generation(rotation.path)
        if found is None:
            return None
        size = ContextSize(found.tokens, found.pending_tokens)
        summary = (len(found.messages), size) if found.complete else None
        self._summaries[key] = summary
        return summary

    async def rewind_points(self) -> list[RewindPoint]:
        """The user's messages of the live context, newest first, each with the checkpoint
        before it (reverting there takes it back), when it was sent and whether its turn
        changed files."""
        wire = self._live.session.wire_file
        context = self._live.context
        return await asyncio.to_thread(lambda: rewind_points(context, _sent_times(wire)))

    async def revert_plan(self, checkpoint_id: int) -> RevertPlan:
        """What reverting to `checkpoint_id` would do; ValueError when there is none."""
        soul = self._live.soul()
        preview = soul.travel.revert_preview(checkpoint_id)
        label = _checkpoint_label(self._live.context, checkpoint_id, preview.next_user_text)
        journal = soul.env.journal
        diffs = await asyncio.to_thread(_conflict_diffs, preview.files, journal)
        kept_in = await asyncio.to_thread(_next_rotation, self._live.context.path)
        return RevertPlan(preview, label, diffs, kept_in)

    async def revert(
        self, checkpoint_id: int, *, files: bool = False, anyway: bool = False
    ) -> RevertOutcome:
        """Take the conversation (and with `files` the files the agent changed since, where
        nobody else did; with `anyway` those changed by hand too, their versions kept) back
        to `checkpoint_id`; the rest is kept in a rotated file."""
        travel = self._live.soul().travel
        return await travel.revert(checkpoint_id, files=files, anyway=anyway)

    async def diff(self, first: int, second: int | None = None) -> CheckpointDiff:
        """What changed between two checkpoints (or from one to now): messages and files.
        ValueError when a checkpoint does not exist."""
        from kode_tui.session.compare import diff_checkpoints  # loaded at the first `/diff`

        journal = self._live.soul().env.journal
        if journal is None:
            raise ValueError("this session keeps no file history")
        context = self._live.context
        return await asyncio.to_thread(diff_checkpoints, context, first, second, journal)

    def rotated_file(self, name_or_number: str) -> str | None:
        """The name of a rotated context (`3`, `context_3`, `context_3.jsonl`), if it exists."""
        name = name_or_number.strip().removesuffix(".jsonl")
        if name.isdigit():
            name = f"context_{name}"
        name += ".jsonl"
        # Checked before it becomes a path: a name like `../x` must not reach the file system.
        if rotation_number(name) is None:
            return None
        return name if self._live.context.path.with_name(name).is_file() else None

    async def preview(self, name: str) -> RotationPreview:
        """A rotated context, compared with the live one, or a subagent's context
        (`subagent_context`: read-only, nothing to restore); OSError when it cannot be read."""
        subagent = self.subagent_context(name) if name.startswith(SUBAGENT_PREFIX) else None
        if subagent is not None:
            return await self._subagent_preview(subagent)
        path = self._rotated_path(name)
        snapshot = await asyncio.to_thread(read_snapshot, path)
        rotations = await asyncio.to_thread(self._known_rotations)
        rotation = next((r for r in rotations if r.path.name == path.name), None)
        _, tokens, estimated = (
            await asyncio.to_thread(self._counts, rotation)
            if rotation is not None
            else (None, None, False)
        )
        live = list(self._live.context.history)
        comparison = await asyncio.to_thread(compare, snapshot.messages, live)
        results = await asyncio.to_thread(PastResults.read, self._live.session.wire_file)
        plan = None
        soul = self._live.running
        if soul is not None:
            restore = await asyncio.to_thread(soul.travel.restore_preview, path)
            diffs = await asyncio.to_thread(_conflict_diffs, restore.files, soul.env.journal)
            kept_in = await asyncio.to_thread(_next_rotation, self._live.context.path)
            plan = RestorePlan(restore, diffs, kept_in)
        return RotationPreview(snapshot, rotation, tokens, estimated, comparison, results, plan)

    async def _subagent_preview(self, path: Path) -> RotationPreview:
        snapshot = await asyncio.to_thread(read_snapshot, path)
        # Compared with itself: none of its messages would come back to the parent's context.
        comparison = await asyncio.to_thread(compare, snapshot.messages, snapshot.messages)
        results = await asyncio.to_thread(PastResults.read, path.with_name("wire.jsonl"))
        return RotationPreview(snapshot, None, None, False, comparison, results, None, True)

    async def restore(
        self, name: str, *, files: bool = False, anyway: bool = False
    ) -> RestoreOutcome:
        """Make the rotated context `name` live again (the live one is kept in a rotated
        file), and with `files` put the files back as its conversation left them, where
        nobody changed them since (with `anyway`, there too, their versions kept)."""
        travel = self._live.soul().travel
        return await travel.restore(self._rotated_path(name), files=files, anyway=anyway)

    def _rotated_path(self, name: str) -> Path:
        found = self.rotated_file(name)
        if found is None:
            raise ValueError(f"there is no rotated context {name}")
        return self._live.context.path.with_name(found)

    @staticmethod
    def match_index(messages: Sequence[Message], match: Match) -> int | None:
        """Where a search match is in its file's `messages` (a preview's), to open it there;
        None when they no longer hold it."""
        from kode_tui.session.search import message_index  # loaded with the first search

        return message_index(messages, match)


# --- helpers -------------------------------------------------------------------------------------


def _next_rotation(live: Path) -> str:
    """The name the next rotation of `live` takes (as `link_to_next_rotation` picks it)."""
    existing = rotation_numbers(live)
    return rotation_path(live, existing[-1][0] + 1 if existing else 1).name


def _sent_times(wire: Path) -> dict[str, float]:
    """When each text was last sent as a turn's message, from the wire's TurnBegin records."""
    sent: dict[str, float] = {}
    for record in read_kimi_records(wire, "TurnBegin"):
        if isinstance(record.event, ev.TurnBegin):
            sent[turn_text(record.event.user_input)] = record.timestamp
    return sent


def _restore_source(rotation: Rotation) -> str | None:
    source = rotation.info.get("source")
    return source if isinstance(source, str) else None


def _checkpoint_label(context: Context, checkpoint_id: int, user_text: str) -> str:
    """A checkpoint in a few words: the user's message there, else what the agent did next."""
    if user_text.strip():
        return user_text.strip().splitlines()[0]
    checkpoint = next(c for c in context.checkpoints if c.id == checkpoint_id)
    for message in context.history[checkpoint.message_index : checkpoint.message_index + 5]:
        if message.role != "assistant":
            continue
        if message.tool_calls:
            return ", ".join(call.function.name for call in message.tool_calls)
        if message.text.strip():
            return message.text.strip().splitlines()[0]
    return ""


def _conflict_diffs(plans: Sequence[FilePlan], journal: FileJournal | None) -> list[ev.DiffBlock]:
    """For each conflicting file: what the agent left in it against what it holds now."""
    diffs = []
    for plan in plans:
        if plan.action != "conflict" or journal is None:
            continue
        agent = journal.blob(plan.expected) if plan.expected is not None else b""
        try:
            now = plan.target.read_bytes()
        except OSError:
            now = b""
        diffs.append(
            ev.DiffBlock(
                path=plan.path,
                old_text=(agent or b"").decode("utf-8", "replace"),
                new_text=now.decode("utf-8", "replace"),
            )
        )
    return diffs
