"""The slash commands an ACP client can send as a prompt: time travel and the context's care.

Each runs through the facade instead of a model turn and answers with one message. A revert or
restore changes the conversation the client shows, so the agent replays it afterwards.
"""

from __future__ import annotations

from kode_tui.message import is_checkpoint_note
from kode_tui.soul.facade import AgentSession, CompactionBlocked, LLMError

BUILT_IN: tuple[tuple[str, str, str], ...] = (
    ("compact", "[instruction]", "Summarise the conversation to free context"),
    (
        "revert",
        "[N [files]]",
        "List the checkpoints; with N, take the conversation back to checkpoint N "
        "(with `files`, the files the agent changed since too, where nobody else did)",
    ),
    (
        "restore",
        "N [files]",
        "Make the rotated context context_N.jsonl live again (with `files`, its files too)",
    ),
    ("clear", "", "Start the conversation afresh (the old one is kept in a rotated file)"),
    ("context", "[refresh]", "What the model is given, in tokens"),
)
"""(name, input hint, description) as `available_commands_update` advertises them."""
BUILT_IN_NAMES = frozenset(f"/{name}" for name, _, _ in BUILT_IN)
"""Their names with the slash: a custom command of such a name is neither run nor advertised."""


async def run_built_in(opened: AgentSession, name: str, argument: str) -> tuple[str | None, bool]:
    """Run the built-in command `name` (`/revert`): what to tell the user, and whether the
    conversation changed under the client (replay it). (None, False) when `name` is none of
    them: the line is a message for the model."""
    words = argument.split()
    files = words[1:] == ["files"]
    match name.lower():
        case "/compact":
            return await _compact(opened, argument), False
        case "/clear":
            kept = await opened.clear()
            return "Cleared the conversation" + (
                f"; the old one is {kept}." if kept else "."
            ), False
        case "/context":
            report = await opened.context_report(refresh=argument == "refresh")
            if report is None:
                return "The agent is not up yet.", False
            head = f"Context: {report.context_tokens:,} of {report.max_context_tokens:,} tokens"
            return "\n".join([head, "", "```", *report.lines(), "```"]), False
        case "/revert":
            if not words:
                return checkpoint_list(opened), False
            if not words[0].isdigit() or (len(words) > 1 and not files):
                return "/revert N [files]: N is a checkpoint (`/revert` lists them).", False
            try:
                reverted = await opened.travel.revert(int(words[0]), files=files)
            except ValueError as error:
                return f"Cannot revert: {error}.", False
            said = f"Reverted to checkpoint {words[0]}; the rest is kept in "
            said += reverted.rotated_file.name + _files_note(
                reverted.files_restored, reverted.conflicts
            )
            return said, True
        case "/restore":
            found = opened.travel.rotated_file(words[0]) if words else None
            if found is None or (len(words) > 1 and not files):
                return "/restore N [files]: N is a rotated context (context_N.jsonl).", False
            restored = await opened.travel.restore(found, files=files)
            said = f"Restored {found}" + _files_note(restored.files_restored, restored.conflicts)
            return said, True
        case _:
            return None, False


async def _compact(opened: AgentSession, instruction: str) -> str:
    before = opened.compaction.token_count()
    try:
        changed = await opened.compaction.compact(instruction or None)
    except CompactionBlocked:
        return "A PreCompact hook blocked the compaction."
    except (LLMError, OSError) as error:
        return f"Compaction failed: {error}"
    if not changed:
        return "Nothing to compact."
    return f"Compacted the context: {before:,} → {opened.compaction.token_count():,} tokens."


def checkpoint_list(opened: AgentSession) -> str:
    """The checkpoints a revert can go back to, each with the first words that follow it."""
    timeline = opened.travel.timeline()
    lines = ["Checkpoints (`/revert N` keeps what came before N):"]
    for checkpoint in timeline.checkpoints:
        following = timeline.history[checkpoint.message_index : checkpoint.message_index + 4]
        said = [
            m for m in following if m.text and m.role != "tool" and not is_checkpoint_note(m.text)
        ]
        if said:
            shown = " ".join(said[0].text.split())[:_LABEL_CHARS]
            lines.append(f"- {checkpoint.id}: before the {said[0].role}'s “{shown}”")
        else:
            lines.append(f"- {checkpoint.id}: the end of the conversation")
    return "\n".join(lines) if timeline.checkpoints else "This conversation has no checkpoints."


_LABEL_CHARS = 60


def _files_note(restored: list[str], conflicts: list[str]) -> str:
    note = "."
    if restored:
        note = f"; files put back: {', '.join(restored)}."
    if conflicts:
        note += f" Left alone (changed since, or missing): {', '.join(conflicts)}."
    return note
