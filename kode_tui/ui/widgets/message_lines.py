"""Messages in short, as the screens that list or quote them show them: one line per message
(the comparison of two contexts, the compaction review), a text cut to its first line, and a
quote for the prompt."""

from __future__ import annotations

import re
from collections.abc import Sequence

from textual.content import Content

from kode_tui.message import Message, TextPart, is_checkpoint_note
from kode_tui.safetext import visible
from kode_tui.ui.widgets.blocks import USER_MARK

COMPARED_CHARS = 60
"""How much of a message its line shows."""
PROMPT_CHARS = 20_000
"""How much a quote for the prompt holds at most."""

_SYSTEM_TAGS = re.compile(r"</?system>")
_ROLE_MARKS = {"user": USER_MARK, "assistant": "●", "tool": "↳", "system": "◆"}


def shorten(text: str, limit: int) -> str:
    """The first non-empty line of `text`, cut to `limit` characters with "…" (also when
    lines were left out)."""
    lines = [line.strip() for line in visible(text).strip().splitlines()]
    first = visible(next((line for line in lines if line), ""), multiline=False)
    if len(first) > limit:
        return first[: limit - 1].rstrip() + "…"
    return first + ("…" if len(lines) > 1 else "")


def message_line(message: Message) -> Content:
    """A message in one short line, marked with its role: what the comparison lists."""
    # Parts on their own lines: a tool result's status line and its output are two parts.
    text = "\n".join(part.text for part in message.parts if isinstance(part, TextPart))
    text = _SYSTEM_TAGS.sub("", text)
    if not text.strip() and message.tool_calls:
        text = ", ".join(
            visible(call.function.name, multiline=False) for call in message.tool_calls
        )
    mark = _ROLE_MARKS.get(message.role, "·")
    line = shorten(text, COMPARED_CHARS) or "(empty)"
    return Content.assemble((f"{mark} ", "$text-muted"), line)


def messages_as_text(messages: Sequence[Message]) -> str:
    """User and assistant text as a quote to paste into the prompt (tool output left out)."""
    lines = ["From an earlier context:", ""]
    for message in messages:
        text = _SYSTEM_TAGS.sub("", message.text).strip()
        if message.role in ("user", "assistant") and text and not is_checkpoint_note(message.text):
            lines.append(f"{message.role}: {text}")
            lines.append("")
    quoted = "\n".join(lines).strip()
    return quoted if len(quoted) <= PROMPT_CHARS else quoted[: PROMPT_CHARS - 1] + "…"
