"""A session written out whole: a Markdown transcript, or its raw records as JSON lines.

Both walk the generations in order (every rotated `context_N.jsonl`, oldest first, then the
live `context.jsonl`). Markdown shows what each generation added to the one before it (a revert
or a D-Mail copies the messages before its checkpoint; those are not written twice) and a marked
line where each rotation happened and why (rotations.jsonl, or what the files show for Kimi
CLI's: `generations.infer_rotations`). JSON lines keep every record of every file as it is, each
file after a `{"role": "_export_file", ...}` line naming it: readers of context files skip
records whose role starts with `_` that they do not know.

Everything written is masked (API keys); Markdown also shows control characters as stand-ins.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from kode_tui.masking import mask, mask_bytes
from kode_tui.message import (
    COMPACTION_OUTPUT_PREFIX,
    Message,
    TextPart,
    ThinkPart,
    is_checkpoint_note,
    is_dmail_note,
    is_from_system,
    is_system_note,
    split_tool_result,
    unwrap_system,
)
from kode_tui.safetext import visible
from kode_tui.session.generations import common_prefix, infer_rotations, read_generation
from kode_tui.session.history import History, SpanReader
from kode_tui.session.rotation import Rotation, list_rotations
from kode_tui.session.scan import scan
from kode_tui.session.session import Session

FORMATS = ("md", "jsonl")
_SUMMARY_WIDTH = 80


def generations(session: Session) -> list[tuple[Path, Rotation | None]]:
    """Each context file in order, with the rotation that ended it (None for the live one)."""
    live = session.context_file
    rotations = infer_rotations(list_rotations(live), live)
    return [(rotation.path, rotation) for rotation in rotations] + [(live, None)]


def export_jsonl(session: Session) -> Iterator[bytes]:
    """Every record of every generation, raw and masked, one line each."""
    for path, rotation in generations(session):
        marker: dict[str, object] = {"role": "_export_file", "file": path.name}
        if rotation is not None and rotation.reason is not None:
            marker["reason"] = rotation.reason
        yield json.dumps(marker, ensure_ascii=False).encode() + b"\n"
        data = path.read_bytes()
        for line in data.splitlines():
            if line.strip():
                yield mask_bytes(line) + b"\n"


def export_markdown(session: Session) -> Iterator[str]:
    """The transcript, in pieces of Markdown."""
    yield f"# {_inline(session.title)}\n\n"
    yield f"Session `{_inline(session.id)}`"
    if session.work_dir is not None:
        yield f" in `{_inline(str(session.work_dir))}`"
    yield "\n\n"
    previous = None
    for path, rotation in generations(session):
        generation = read_generation(path)
        # What the file before this one handed on (a revert's or D-Mail's copy) is not repeated.
        skip = 0
        if previous is not None and generation is not None:
            skip = common_prefix(previous.messages, generation.messages)
        previous = generation
        yield from _messages(path, skip)
        if rotation is not None:
            yield _marker(rotation)


def _messages(path: Path, skip: int) -> Iterator[str]:
    data = path.read_bytes()
    found = scan(data, path.name)
    history = History(SpanReader(path), found.message_starts, found.message_ends,
                      found.message_flags)  # fmt: skip
    for index in range(skip, len(history)):
        yield from _message(history[index])


def _message(message: Message) -> Iterator[str]:
    if message.role == "tool":
        yield from _tool_result(message)
        return
    texts = [part.text for part in message.parts if isinstance(part, TextPart)]
    texts = [text for text in texts if not is_checkpoint_note(text)]
    thinking = [part.think for part in message.parts if isinstance(part, ThinkPart)]
    if not (texts or thinking or message.tool_calls):
        return
    if message.role == "user" and texts and is_dmail_note(texts[0]):
        yield f"> **D-Mail**\n>\n{_quote(unwrap_system(texts[0]))}\n\n"
        return
    if message.role == "user" and texts and is_system_note(texts[0], COMPACTION_OUTPUT_PREFIX):
        # The summary a compaction left: the note, then the summary itself.
        summary = "\n\n".join(texts[1:]) or unwrap_system(texts[0])
        yield _details("Compaction summary", summary)
        return
    if message.role == "user" and texts and all(is_from_system(text) for text in texts):
        yield _details("System note", "\n\n".join(unwrap_system(text) for text in texts))
        return
    yield f"## {message.role.capitalize()}\n\n"
    for think in thinking:
        yield _details("Thinking", think)
    for text in texts:
        yield _text(text) + "\n\n"
    for call in message.tool_calls or ():
        arguments = call.function.arguments or ""
        summary = f"Tool call: {call.function.name} {_shorten(arguments)}"
        yield _details(summary, _pretty(arguments), "json")


def _tool_result(message: Message) -> Iterator[str]:
    is_error, status, output = split_tool_result(message.text)
    label = "Error" if is_error else "Result"
    summary = f"{label}: {status}" if status else label
    yield _details(summary, output)


def _marker(rotation: Rotation) -> str:
    reason, info = rotation.reason, rotation.info
    where = f" (the context before it: {rotation.path.name})"
    if reason in ("revert", "dmail"):
        name = "Reverted" if reason == "revert" else "D-Mail sent back"
        to = f" to checkpoint {rotation.checkpoint}" if rotation.checkpoint is not None else ""
        text = f"{name}{to}"
    elif reason == "compaction":
        before, after = info.get("tokens_before", rotation.tokens), info.get("tokens_after")
        sizes = f": {before} → {after} tokens" if isinstance(after, int) and before else ""
        text = f"Compacted{sizes}"
    elif reason == "restore":
        source = info.get("source")
        text = f"Restored {source}" if isinstance(source, str) else "Restored an earlier context"
    elif reason == "clear":
        text = "Cleared"
    elif reason == "system_prompt":
        text = "New system prompt"
    else:
        text = f"Rotated ({reason})" if reason else "Rotated"
    return f"---\n\n**⟲ {_inline(text)}**{_inline(where)}\n\n---\n\n"


def _details(summary: str, body: str, language: str = "") -> str:
    fence = _fence(body)
    return (
        f"<details><summary>{_html(_inline(summary))}</summary>\n\n"
        f"{fence}{language}\n{_block(body)}\n{fence}\n\n</details>\n\n"
    )


def _fence(body: str) -> str:
    """A code fence longer than any run of backticks in `body`."""
    longest = run = 0
    for character in body:
        run = run + 1 if character == "`" else 0
        longest = max(longest, run)
    return "`" * max(3, longest + 1)


def _pretty(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), indent=2, ensure_ascii=False)
    except (ValueError, RecursionError):
        return arguments


def _shorten(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SUMMARY_WIDTH else text[: _SUMMARY_WIDTH - 1] + "…"


def _text(text: str) -> str:
    return visible(mask(text)).strip()


def _block(text: str) -> str:
    return visible(mask(text)).rstrip("\n")


def _inline(text: str) -> str:
    return visible(mask(text), multiline=False)


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" for line in _text(text).splitlines())


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
