"""Searching the words of sessions: the live context and every rotated generation.

A context file can be 70 MB, so each file is searched as bytes first (one case-insensitive
`find` over the lowered bytes, for the query as JSON writes it: about 0.2 s for 90 MB). Only the
lines holding a hit are parsed, and the checkpoint before one is found by searching backwards. A
hit counts only when the query is in what the message says (its text, thinking, tool call or
result), never in a key or an id of the JSON around it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from kode_tui.masking import mask
from kode_tui.message import Message, TextPart, ThinkPart, is_checkpoint_note, parse_record
from kode_tui.safetext import visible
from kode_tui.session.rotation import rotation_numbers
from kode_tui.session.session import Session

log = logging.getLogger(__name__)

_CHECKPOINT = b'"_checkpoint"'
SNIPPET_BEFORE = 30
SNIPPET_AFTER = 60


@dataclass(frozen=True, slots=True)
class Match:
    """One message holding the query."""

    session: Session
    path: Path
    """The context file: context.jsonl or a rotated context_N.jsonl."""
    checkpoint: int | None
    """The checkpoint the message follows (None before the first one)."""
    offset: int
    """Where the message's line starts in the file."""
    role: str
    snippet: str
    """A line of the message around the query: one line, masked, control characters shown."""
    query: str = ""
    nth: int = 0
    """How many messages of the same file hold the query before this one."""

    @property
    def file(self) -> str:
        """The file's name; a subagent's context is named by its folder (`subagents/<id>`)."""
        if self.path.parent.parent.name == SUBAGENTS and self.path.parent.parent.parent == (
            self.session.dir
        ):
            return f"{SUBAGENTS}/{self.path.parent.name}"
        return self.path.name


SUBAGENTS = "subagents"
"""The folder of a session's subagents, each with a context of its own (Kimi 1.52's layout)."""


def context_files(session: Session) -> list[Path]:
    """A session's context files, oldest rotation first and the live one, then its subagents'
    (`subagents/<agent_id>/context.jsonl`)."""
    live = session.context_file
    subagents = sorted((session.dir / SUBAGENTS).glob("*/context.jsonl"))
    return [path for _, path in rotation_numbers(live)] + [live] + subagents


def search_sessions(sessions: Iterable[Session], query: str) -> Iterator[Match]:
    """Every message of `sessions` (each file of each) holding `query`, ignoring case
    (blocking; files that cannot be read are skipped with a log line)."""
    for session in sessions:
        for path in context_files(session):
            yield from search_file(session, path, query)


def search_file(session: Session, path: Path, query: str) -> Iterator[Match]:
    """The messages of one context file holding `query`, in file order."""
    needles = _needles(query)
    if not needles:
        return
    try:
        data = path.read_bytes()
    except OSError as error:
        log.warning("Cannot search %s: %s", path, error)
        return
    lowered = data.lower()  # ASCII letters only: the needles are lowered the same way
    line_starts = sorted({_line_start(lowered, hit) for hit in _hits(lowered, needles)})
    folded = query.casefold()
    nth = 0
    for line_start in line_starts:
        end = data.find(b"\n", line_start)
        try:
            message = parse_record(data[line_start : end if end >= 0 else len(data)])
        except ValueError:
            continue  # a damaged line: opening the session reports it
        if not isinstance(message, Message):
            continue  # a `_` record (a system prompt, a file edit): not what anyone said
        # Masked before it is cut: a key cut in half would not be recognised.
        snippet = _snippet(mask(searchable_text(message)), folded)
        if snippet is None:
            continue
        yield Match(
            session=session,
            path=path,
            checkpoint=_checkpoint_before(data, line_start),
            offset=line_start,
            role=message.role,
            snippet=snippet,
            query=query,
            nth=nth,
        )
        nth += 1


def message_index(messages: Sequence[Message], match: Match) -> int | None:
    """Where `match` is in `messages` (its file's messages, in order); None when they no
    longer hold it. A tool result gives its call's message: the two show as one block."""
    folded = match.query.casefold()
    seen = 0
    for index, message in enumerate(messages):
        if _snippet(mask(searchable_text(message)), folded) is None:
            continue
        if seen == match.nth:
            while index > 0 and messages[index].role == "tool":
                index -= 1
            return index
        seen += 1
    return None


def _checkpoint_before(data: bytes, offset: int) -> int | None:
    """The id of the last `_checkpoint` record before `offset` (found backwards: no full
    parse of a big file for one match)."""
    pos = offset
    while (pos := data.rfind(_CHECKPOINT, 0, pos)) >= 0:
        start = data.rfind(b"\n", 0, pos) + 1
        end = data.find(b"\n", pos)
        try:
            record = json.loads(data[start : end if end >= 0 else len(data)])
        except (ValueError, RecursionError):
            continue
        if isinstance(record, dict) and record.get("role") == "_checkpoint":
            found = record.get("id")
            return found if isinstance(found, int) and not isinstance(found, bool) else None
    return None


def searchable_text(message: Message) -> str:
    """What a message says: text and thinking, and each tool call's name and arguments."""
    pieces = []
    for part in message.parts:
        if isinstance(part, TextPart):
            if not is_checkpoint_note(part.text):
                pieces.append(part.text)
        elif isinstance(part, ThinkPart):
            pieces.append(part.think)
    for call in message.tool_calls or ():
        pieces.append(f"{call.function.name} {_argument_text(call.function.arguments or '')}")
    return "\n".join(pieces)


def _argument_text(arguments: str) -> str:
    """A tool call's argument values as text (a file's content with its real line breaks),
    the JSON as it is when it does not parse."""
    try:
        value = json.loads(arguments)
    except (ValueError, RecursionError):
        return arguments
    if isinstance(value, dict):
        return " ".join(str(item) for item in value.values())
    return arguments


def _needles(query: str) -> list[bytes]:
    """The query as JSON may write it (raw UTF-8, or \\u escapes as Kimi's json.dumps does),
    lowered as `bytes.lower` lowers the file."""
    if not query:
        return []
    forms = {json.dumps(query, ensure_ascii=flag)[1:-1] for flag in (False, True)}
    return sorted({form.encode().lower() for form in forms})


def _hits(lowered: bytes, needles: list[bytes]) -> Iterator[int]:
    for needle in needles:
        pos = lowered.find(needle)
        while pos >= 0:
            yield pos
            # The rest of this line is parsed anyway: go on from the next one.
            end = lowered.find(b"\n", pos)
            if end < 0:
                break
            pos = lowered.find(needle, end + 1)


def _line_start(data: bytes, pos: int) -> int:
    return data.rfind(b"\n", 0, pos) + 1


def _snippet(text: str, folded_query: str) -> str | None:
    """The words around the first place `text` holds the query; None when it does not."""
    # casefold can change lengths (ß -> ss): look in the folded text, cut the folded text.
    folded = text.casefold()
    at = folded.find(folded_query)
    if at < 0:
        return None
    source = text if len(folded) == len(text) else folded
    start = max(0, at - SNIPPET_BEFORE)
    end = min(len(source), at + len(folded_query) + SNIPPET_AFTER)
    piece = " ".join(source[start:end].split())
    return (
        ("…" if start else "")
        + visible(piece, multiline=False)
        + ("…" if end < len(source) else "")
    )
