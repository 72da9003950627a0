"""The built-in slash commands (`COMMANDS`): what each does to a session, and what it says.

Every front end runs these and only these (`kode_tui.soul.facade.commands` says how): the TUI
adds its own commands of the screen (`/help`, `/theme`, `/quit`...), whose names none of these
has, and print mode and ACP none. Each body checks its argument, does the work through the
session's parts, and returns a `CommandReport` whose text reads the same everywhere.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass

from kode_tui.errors import ConfigError
from kode_tui.humanize import plural
from kode_tui.message import is_checkpoint_note
from kode_tui.paths import home, tilde
from kode_tui.session.compare import CheckpointDiff
from kode_tui.session.search import Match
from kode_tui.soul.context_report import ContextReport
from kode_tui.soul.facade.commands import (
    Asker,
    CommandRegistry,
    CommandReport,
    RevertChoice,
    refused,
    report,
)
from kode_tui.soul.facade.lineage import LineageNote
from kode_tui.soul.facade.session import AgentSession
from kode_tui.soul.facade.tasks import task_line
from kode_tui.soul.hooks import CompactionBlocked
from kode_tui.soul.llm import LLMError
from kode_tui.soul.markdown_files import one_line
from kode_tui.soul.skills import SkillListing, Skills

__all__ = ["COMMANDS", "Compared", "Found", "checkpoint_list", "context_text"]

COMMANDS = CommandRegistry()
"""Every built-in command, in the order lists show them."""


@dataclass(frozen=True, slots=True)
class Found:
    """What `/search` found."""

    text: str
    everywhere: bool
    matches: list[Match]


@dataclass(frozen=True, slots=True)
class Compared:
    """What `/diff` compared, and how the later point differs."""

    title: str
    """`From checkpoint 2 to now`."""
    diff: CheckpointDiff


# --- the conversation ----------------------------------------------------------------------------


@COMMANDS.command(
    "/compact",
    "[instruction]",
    "Compact the context (an instruction says what the summary must keep)",
    between_turns=True,
)
async def _compact(opened: AgentSession, argument: str, asker: Asker | None) -> CommandReport:
    compaction = opened.compaction
    instruction = argument or None
    before = compaction.token_count()
    try:
        if asker is None:
            if not await compaction.compact(instruction):
                return report("Nothing to compact.")
        else:
            asker.note("Working out the compaction…")
            plan = await compaction.plan(instruction)
            if plan is None:
                return report("Nothing to compact.")
            reviewed = await asker.review_compaction(plan, instruction)
            if reviewed is None:
                return report("Compaction cancelled: nothing changed.")
            await compaction.apply(reviewed)
    except CompactionBlocked:  # the hook's run says why
        return report("A PreCompact hook blocked the compaction.", "blocked")
    except LLMError as error:
        said = str(error) if opened.model_name in str(error) else f"{opened.model_name}: {error}"
        return report(f"Compaction failed: {said}", "failed")
    except ValueError as error:  # a reviewed plan the context moved away from, or emptied
        return report(str(error), "failed")
    except OSError as error:  # a session file could not be written (a full disk, say)
        return report(f"Compaction failed: {error}", "failed")
    after = compaction.token_count()
    return report(f"Compacted the context: {before:,} → {after:,} tokens.", changed={"context"})


@COMMANDS.command("/context", "[refresh]", "What the model is given, in tokens")
async def _context(opened: AgentSession, argument: str, asker: Asker | None) -> CommandReport:
    if argument not in ("", "refresh"):
        return refused("/context takes no argument but `refresh`.")
    await opened.mcp.ready()  # their tools are part of what the model is given
    got = await opened.context_report(refresh=argument == "refresh")
    if got is None:
        return refused("No agent is running.")
    return report(context_text(got), data=got, aligned=True)


@COMMANDS.command(
    "/cost", "", "What this session's model calls cost, per model and turn", needs_agent=False
)
async def _cost(opened: AgentSession, argument: str, asker: Asker | None) -> CommandReport:
    spent = opened.cost()
    return report("\n".join(spent.lines()), data=spent, aligned=True)


@COMMANDS.command(
    "/clear",
    "",
    "Start the conversation afresh (the old one is kept in a rotated file)",
    between_turns=True,
)
async def _clear(opened: AgentSession, argument: str, asker: Asker | None) -> CommandReport:
    kept = await opened.clear()
    said = f"Cleared the conversation; the old one is kept in {kept}." if kept else ""
    return report(said or "Cleared the conversation.", data=kept, changed={"context"})


@COMMANDS.command("/title", "[text]", "Show or set the session title", needs_agent=False)
async def _title(opened: AgentSession, argument: str, asker: Asker | None) -> CommandReport:
    if not argument:
        return report(f"Title: {opened.title}", data=opened.title)
    await opened.set_title(argument)
    return report(f"Title: {argument}", data=argument, changed={"title"})


# --- time travel ---------------------------------------------------------------------------------


_CHOICES: dict[tuple[str, ...], RevertChoice] = {
    (): "conversation",
    ("files",): "files",
    ("files", "anyway"): "anyway",
}
"""What the words after a revert's or a restore's target take back."""


@COMMANDS.command(
    "/revert",
    "[N [files [anyway]]]",
    "Take the conversation back to checkpoint N (with `files`, the files the agent changed "
    "since too, where nobody else did; `anyway`: those too); alone, pick one of your messages",
    between_turns=True,
)
async def _revert(opened: AgentSession, argument: str, asker: Asker | None) -> CommandReport:
    words = argument.split()
    if not words:
        if asker is None:
            return report(checkpoint_list(opened))
        return await _rewind(opened, asker)
    choice = _CHOICES.get(tuple(words[1:]))
    if not words[0].isdigit() or choice is None:
        return refused("/revert N [files [anyway]]: N is a checkpoint (`/revert` lists them).")
    return await _revert_to(opened, int(words[0]), choice, asker)


_UNDO_CHOICES: dict[tuple[str, ...], RevertChoice] = {
    (): "files",
    ("conversation",): "conversation",
    ("anyway",): "anyway",
}
"""What `/undo` takes back where nothing asks (print mode, ACP): with the files, unlike
`/revert N`, as undoing a turn means its edits too; a file changed by hand since is left
alone unless `anyway`."""


@COMMANDS.command(
    "/undo",
    "[conversation|anyway]",
    "Take back your last message, what followed it and the files changed since (a dialog asks "
    "first; without one, `conversation` keeps the files, `anyway` also overwrites hand edits)",
    between_turns=True,
)
async def _undo(opened: AgentSession, argument: str, asker: Asker | None) -> CommandReport:
    choice = _UNDO_CHOICES.get(tuple(argument.split()))
    if choice is None:
        return refused("/undo [conversation|anyway]: takes back your last message.")
    points = await opened.travel.rewind_points()
    if not points:
        return refused("Nothing to undo: the conversation holds no message of yours.")
    return await _revert_to(opened, points[0].checkpoint_id, choice, asker)


async def _rewind(opened: AgentSession, asker: Asker) -> CommandReport:
    """Pick a message of the user's, then confirm the revert to before it; cancelling the
    revert goes back to the list."""
    points = await opened.travel.rewind_points()
    if not points:
        return refused("Nothing to rewind: the conversation holds no message of yours.")
    checkpoint: int | None = None
    while True:
        checkpoint = await asker.pick_rewind(points, checkpoint)
        if checkpoint is None:
            return report("")
        try:
            choice = await asker.confirm_revert(await opened.travel.revert_plan(checkpoint))
        except ValueError as error:
            return refused(f"Cannot revert: {error}.")
        if choice is not None:
            return await _revert_to(opened, checkpoint, choice, None)


async def _revert_to(
    opened: AgentSession, checkpoint: int, choice: RevertChoice | None, asker: Asker | None
) -> CommandReport:
    """Revert to `checkpoint` as `choice` says, or as the user says when there is an asker."""
    try:
        if asker is not None:
            choice = await asker.confirm_revert(await opened.travel.revert_plan(checkpoint))
        if choice is None:
            return report("")
        done = await opened.travel.revert(
            checkpoint, files=choice != "conversation", anyway=choice == "anyway"
        )
    except ValueError as error:
        return refused(f"Cannot revert: {error}.")
    conflicts = done.conflicts if choice != "conversation" else []
    kept_in = done.rotated_file.name
    said = f"Reverted to checkpoint {checkpoint}; the rest is kept in {kept_in}"
    return report(
        said + _files_note(done.files_restored, conflicts, done.kept, kept_in),
        "warning" if conflicts else "done",
        data=done,
        changed={"conversation"},
    )


@COMMANDS.command(
    "/restore",
    "N [files [anyway]]",
    "Make the rotated context context_N.jsonl live again (with `files`, its files too)",
    needs_agent=False,
    between_turns=True,
)
async def _restore(opened: AgentSession, argument: str, asker: Asker | None) -> CommandReport:
    words = argument.split()
    name = opened.travel.rotated_file(words[0]) if words else None
    choice: RevertChoice | None = _CHOICES.get(tuple(words[1:]))
    if name is None or choice is None:
        return refused("/restore N [files [anyway]]: N is a rotated context (context_N.jsonl).")
    if asker is not None:
        try:
            preview = await opened.travel.preview(name)
        except (OSError, ValueError) as error:
            reason = error.strerror if isinstance(error, OSError) else None
            return report(f"Cannot read {name}: {reason or error}", "failed")
        choice = await asker.confirm_restore(preview)
        if choice is None:
            return report("")
    if not opened.started:
        return refused("This session is read-only: nothing can be restored.")
    done = await opened.travel.restore(
        name, files=choice != "conversation", anyway=choice == "anyway"
    )
    said = f"Restored {name}"
    kept_in = ""
    if done.rotated_file is not None:
        kept_in = done.rotated_file.name
        said += f"; the previous one is kept as {kept_in}"
    conflicts = done.conflicts if choice != "conversation" else []
    return report(
        said + _files_note(done.files_restored, conflicts, done.kept, kept_in),
        "warning" if conflicts else "done",
        data=done,
        changed={"conversation"},
    )


@COMMANDS.command("/diff", "A [B]", "What changed from checkpoint A to B (or to now)")
async def _diff(opened: AgentSession, argument: str, asker: Asker | None) -> CommandReport:
    numbers = argument.split()
    if not numbers or len(numbers) > 2 or not all(n.isdigit() for n in numbers):
        return refused("/diff A [B]: checkpoints of the timeline (B: now).")
    first = int(numbers[0])
    second = int(numbers[1]) if len(numbers) == 2 else None
    try:
        diff = await opened.travel.diff(first, second)
    except ValueError as error:
        return refused(f"{error}.")
    title = f"From checkpoint {first} to {'now' if second is None else f'checkpoint {second}'}"
    said = f"{title}: {plural(len(diff.added), 'message')} added, {len(diff.removed)} removed"
    if diff.files:
        said += f"; files changed: {', '.join(change.path for change in diff.files)}"
    return report(said + ".", data=Compared(title, diff))


@COMMANDS.command(
    "/fork",
    "[N] [context_K]",
    "A new session from this one up to now (or up to checkpoint N; of the rotated context "
    "context_K when given)",
    needs_agent=False,
    between_turns=True,
)
async def _fork(opened: AgentSession, argument: str, asker: Asker | None) -> CommandReport:
    checkpoint: int | None = None
    from_file: str | None = None
    for word in argument.split():
        if word.isdigit() and checkpoint is None:
            checkpoint = int(word)
        elif word.startswith("context_") and from_file is None:
            from_file = word
        else:
            return refused(
                "/fork [N] [context_K]: N is a checkpoint of the timeline, context_K a "
                "rotated context."
            )
    try:
        forked = await opened.lineage.fork(checkpoint, from_file)
    except (OSError, ValueError) as error:
        return report(f"Cannot fork: {error}.", "refused")
    note = LineageNote.of(forked)
    where = f" ({note.text})" if note is not None else ""
    return report(
        f"Forked into a new session, {forked.id}{where}.", data=forked, changed={"session"}
    )


@COMMANDS.command(
    "/search",
    "[--all] TEXT",
    "Find words in this work dir's sessions (--all: every one's)",
    needs_agent=False,
)
async def _search(opened: AgentSession, argument: str, asker: Asker | None) -> CommandReport:
    text = argument
    everywhere = text == "--all" or text.startswith("--all ")
    if everywhere:
        text = text.removeprefix("--all").strip()
    if not text:
        return refused("/search [--all] TEXT: the words to look for.")
    matches = await opened.lineage.search(text, everywhere=everywhere)
    found = Found(text, everywhere, matches)
    if not matches:
        where = "any session" if everywhere else "this work dir's sessions"
        return report(f"No message in {where} holds {text}.", data=found)
    lines = [f"{plural(len(matches), 'message')} hold {text}:"]
    for match in matches[:SEARCH_LINES]:
        at = f" checkpoint {match.checkpoint}" if match.checkpoint is not None else ""
        lines.append(f"- {match.session.id[:8]} {match.file}{at} ({match.role}): {match.snippet}")
    if len(matches) > SEARCH_LINES:
        lines.append(f"- and {len(matches) - SEARCH_LINES:,} more")
    return report("\n".join(lines), data=found)


SEARCH_LINES = 20
"""How many matches `/search`'s text lists (a screen shows them all)."""


# --- what goes with every request ----------------------------------------------------------------


@COMMANDS.command(
    "/pin", "TEXT", "Pin a note: sent with every request, whatever is compacted", needs_agent=False
)
async def _pin(opened: AgentSession, argument: str, asker: Asker | None) -> CommandReport:
    if opened.read_only is not None:
        return refused("This session is read-only: nothing can be pinned.")
    try:
        pinned = await opened.pins.add(argument)
    except ValueError as error:
        return refused(str(error))
    except OSError as error:
        return report(f"Could not save the pin: {error}", "failed")
    first = " ".join(pinned.split())
    if len(first) > PIN_PREVIEW_CHARS:
        first = first[: PIN_PREVIEW_CHARS - 1] + "…"
    count = len(opened.pins.texts())
    return report(f"Pinned ({count} in all, /pins): {first}", data=pinned, changed={"pins"})


PIN_PREVIEW_CHARS = 60


@COMMANDS.command("/pins", "", "List, edit and unpin the pinned notes", needs_agent=False)
async def _pins(opened: AgentSession, argument: str, asker: Asker | None) -> CommandReport:
    if opened.read_only is not None:
        return refused("This session is read-only: nothing can be pinned.")
    pins = opened.pins.texts()
    if not pins:
        return report("Nothing is pinned: /pin TEXT pins a note.", data=pins)
    lines = [f"Pinned ({opened.pins.tokens():,} tokens with every request):"]
    lines += [f"{n}. {' '.join(text.split())}" for n, text in enumerate(pins, 1)]
    return report("\n".join(lines), data=pins)


_RANGE = re.compile(r"\s*(\d+)\s*(?:\.\.\s*(\d+))?\s*")
DROP_USAGE = "/drop N..M drops the messages of checkpoints N to M; /drop alone the marked blocks."


@COMMANDS.command(
    "/drop",
    "[N..M]",
    "Drop the messages of checkpoints N to M (or the blocks marked with x) from the context",
    between_turns=True,
)
async def _drop(opened: AgentSession, argument: str, asker: Asker | None) -> CommandReport:
    if argument:
        found = _RANGE.fullmatch(argument)
        if found is None:
            return refused(DROP_USAGE)
        first = int(found[1])
        last = int(found[2]) if found[2] else first
        try:
            plan = opened.drops.range_plan(first, last)
        except ValueError as error:
            return refused(f"{error}.")
        what = f"checkpoint {first}" if first == last else f"checkpoints {first} to {last}"
    else:
        marked = list(await asker.marked()) if asker is not None else []
        if not marked:
            return refused(DROP_USAGE)
        plan = opened.drops.plan(marked)
        what = plural(len(marked), "marked block")
    if not plan.indexes:
        return refused("Nothing to drop there (checkpoint notes stay).")
    if asker is not None and not await asker.confirm_drop(plan, what):
        return report("")
    try:
        rotated = await opened.drops.apply(plan)
    except (ValueError, OSError) as error:
        return report(f"Nothing dropped: {error}.", "failed")
    kept = f"; the old context is kept in {rotated}" if rotated else ""
    return report(
        f"Dropped {plural(plan.messages, 'message')}{kept}.",
        data=rotated,
        changed={"conversation"},
    )


# --- the model, the mode, the tools --------------------------------------------------------------


@COMMANDS.command(
    "/model",
    "[name]",
    "Pick a model, or switch to an alias or provider/model",
    needs_agent=False,
)
async def _model(opened: AgentSession, argument: str, asker: Asker | None) -> CommandReport:
    name = argument
    current = opened.choice.name if opened.choice is not None else opened.model_name
    if not name:
        options = opened.model_options()
        if asker is None:
            lines = [f"Model: {current}. /model NAME switches to one of:"]
            for option in options:
                why = f" (set {option.missing_key})" if option.missing_key else ""
                lines.append(f"- {option.name}{why}")
            return report("\n".join(lines), data=options)
        picked = await asker.pick_model(options, current)
        if picked is None:
            return report("")
        name = picked
    try:
        choice = await opened.set_model(name)
    except ConfigError as error:
        return report(f"Model unchanged: {error}.", "failed")
    return report(f"Model: {choice.name}", data=choice, changed={"model"})


@COMMANDS.command("/mode", "[ask|auto-edit|plan|sandbox|yolo]", "Cycle or set the approval mode")
async def _mode(opened: AgentSession, argument: str, asker: Asker | None) -> CommandReport:
    if not argument:
        mode = await opened.cycle_mode()
    else:
        modes = opened.modes
        chosen = next((m for m in modes if m == argument), None)
        if chosen is None:
            why = f" ({opened.permissions.sandbox})" if argument == "sandbox" else ""
            return refused(f"Modes are {', '.join(modes)}.{why}")
        await opened.set_mode(chosen)
        mode = chosen
    return report(f"Approval mode: {mode}", data=mode, changed={"mode"})


@COMMANDS.command(
    "/think", "[off|low|medium|high]", "Show or set the model's thinking effort", needs_agent=False
)
async def _think(opened: AgentSession, argument: str, asker: Asker | None) -> CommandReport:
    thinking = opened.thinking
    model = opened.choice.name if opened.choice is not None else opened.model_name
    if not argument:
        if not thinking.supported:
            return report(
                f"{model} has no thinking-effort setting (thinking: {thinking.level}, unsent).",
                data=thinking.level,
            )
        levels = ", ".join(thinking.levels)
        return report(f"Thinking: {thinking.level} ({model} takes {levels}).", data=thinking.level)
    level = thinking.parse(argument)
    if level is None:
        return refused(f"/think {'|'.join(thinking.levels)}: no level “{argument}”.")
    if not thinking.supported:
        return refused(f"Thinking unchanged: {model} has no thinking-effort setting.")
    await thinking.set(level)
    return report(f"Thinking: {level}", data=level, changed={"thinking"})


@COMMANDS.command("/permissions", "", "List what is allowed for this session, and revoke it")
async def _permissions(opened: AgentSession, argument: str, asker: Asker | None) -> CommandReport:
    grants = opened.permissions.grants()
    lines = [f"Approval mode: {opened.mode}. {opened.permissions.sandbox}".rstrip()]
    if grants:
        lines += ["Allowed for this session:", *(f"- {grant.label}" for grant in grants)]
    else:
        lines.append("Nothing is allowed for this session beyond the mode.")
    return report("\n".join(lines), data=grants)


@COMMANDS.command("/mcp", "", "MCP servers: their tools and tokens; switch off, reconnect")
async def _mcp(opened: AgentSession, argument: str, asker: Asker | None) -> CommandReport:
    servers = opened.mcp.status()
    if not servers:
        return report("No MCP server is configured ([mcp.servers] in config.toml).", data=servers)
    lines = []
    for server in servers:
        offered = sum(tool.enabled for tool in server.tools)
        state = server.state if server.enabled else f"{server.state}, switched off"
        line = f"- {server.name} ({state}): {plural(offered, 'tool')}, {server.tokens:,} tokens"
        lines.append(line + (f"; {server.error}" if server.error else ""))
    return report("\n".join(["MCP servers:", *lines]), data=servers)


@COMMANDS.command("/tasks", "", "Background tasks: their status and output; stop one")
async def _tasks(opened: AgentSession, argument: str, asker: Asker | None) -> CommandReport:
    views = opened.tasks.views()
    if not views:
        return report("No background tasks in this session.", data=views)
    lines = ["Background tasks:", *(f"- {task_line(view)}" for view in views)]
    return report("\n".join(lines), data=views)


@COMMANDS.command(
    "/skills", "", "Skills: where each comes from and its tokens in the prompt", needs_agent=False
)
async def _skills(opened: AgentSession, argument: str, asker: Asker | None) -> CommandReport:
    if argument:
        return refused("/skills takes no argument.")
    listing = await asyncio.to_thread(Skills(opened.work_dir).listing)
    return report(_skills_text(listing), data=listing)


# --- helpers -------------------------------------------------------------------------------------


def _skills_text(listing: SkillListing) -> str:
    """`/skills` as text: each skill with where it comes from and what it costs, then the
    shadowed ones and the files not read."""
    lines = []
    if listing.skills:
        lines.append(
            "Skills (the system prompt lists their names and descriptions; the model reads a "
            "skill's SKILL.md when it uses it):"
        )
    else:
        lines.append(
            "No skills: a skill is a folder with a SKILL.md in .kode/skills/, .kimi/skills/, "
            ".claude/skills/ or .agents/skills/ of the work dir, or in "
            f"{tilde(home() / 'skills')}/, ~/.kimi/skills/, ~/.claude/skills/ or "
            "~/.agents/skills/."
        )
    for skill in listing.skills:
        link = f" -> {skill.link}" if skill.link else ""
        lines.append(
            f"- {skill.name} ({skill.shown_path}{link}): {skill.prompt_tokens:,} tokens in "
            f"every request, {skill.body_tokens:,} when read"
        )
        lines.append(f"  {one_line(skill.description, _DESCRIPTION_CHARS)}")
    if listing.shadowed:
        lines.append("Shadowed (a skill of the same name above is used):")
        lines += [f"- {skill.name} ({skill.shown_path})" for skill in listing.shadowed]
    if listing.problems:
        lines.append("Not read:")
        lines += [f"- {problem.message}" for problem in listing.problems]
    return "\n".join(lines)


_DESCRIPTION_CHARS = 160


def context_text(got: ContextReport) -> str:
    """`/context` as text: the rows that add up to the context's size, the reminders of the
    last request, the system prompt."""
    lines = [
        f"Context: {got.context_tokens:,} of {got.max_context_tokens:,} tokens "
        f"(compacts at {got.trigger_tokens:,})",
        "",
        "What the model is given (tokens):",
        *got.lines(),
    ]
    lines += ["", "Reminders of the last request:"]
    lines += [f"  [{r.kind}] {r.text.splitlines()[0]}" for r in got.reminders] or ["  none"]
    lines += ["", "System prompt:", "", got.system_prompt, ""]
    return "\n".join(lines)


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


def _files_note(restored: list[str], conflicts: list[str], kept: list[str], kept_in: str) -> str:
    note = "."
    if restored:
        note = f"; files put back: {', '.join(restored)}."
    if kept:
        note += (
            f" What you had changed by hand in {', '.join(kept)} is kept in {kept_in}: "
            "restoring it with its files brings it back."
        )
    if conflicts:
        note += f" Left alone (changed since, or missing): {', '.join(conflicts)}."
    return note
