"""System reminders (Kode's generateSystemReminders, seed 004): short notes for the model about
the state it cannot see in the conversation.

Kinds: the todo list (empty, once; changed, once per distinct list), context pressure (once when
the context passes 70% and again at 85%, re-armed when it drops below), and files the user
mentioned with `@path` (the head of each file). At most five go with one request, and at most
`max_per_session` in a session; each is sent once. They are injected into the last user message
of the *request* as `<system-reminder>` blocks and never written to context.jsonl.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import msgspec

from kode_tui.message import ContentPart, Message, TextPart, reminder_text
from kode_tui.pathnames import is_within, unescape_name
from kode_tui.session.state import TodoItem

MAX_PER_REQUEST = 5
PRESSURE_LEVELS = (0.70, 0.85)
MENTION_LINES = 40
MENTION_CHARS = 4_000

ReminderKind = Literal["todo", "context", "mention", "hook", "plan"]

# `@path`: after the start or whitespace, up to the next whitespace; a trailing punctuation
# mark ends a sentence rather than a path.
_MENTION = re.compile(r"(?:^|(?<=\s))@([^\s@`]+)")


class Reminder(msgspec.Struct, frozen=True):
    kind: ReminderKind
    key: str
    """What makes it a repeat: a reminder whose key was sent before is not sent again."""
    text: str

    def block(self) -> str:
        return reminder_text(self.text)


class Reminders(msgspec.Struct):
    """Decides which reminders go with each request of one session."""

    work_dir: Path
    max_per_session: int = 50
    sent: set[str] = msgspec.field(default_factory=set)
    count: int = 0
    last: list[Reminder] = msgspec.field(default_factory=list)
    """What went with the latest request (for `/context`)."""
    _armed: set[float] = msgspec.field(default_factory=lambda: set(PRESSURE_LEVELS))

    def generate(
        self,
        *,
        todos: Sequence[TodoItem],
        context_tokens: int,
        max_context_tokens: int,
        user_text: str = "",
    ) -> list[Reminder]:
        """The reminders for the next request, marked as sent."""
        candidates = [
            *self._todo(todos),
            *self._pressure(context_tokens, max_context_tokens),
            *self._mentions(user_text),
        ]
        room = min(MAX_PER_REQUEST, self.max_per_session - self.count)
        chosen = [c for c in candidates if c.key not in self.sent][: max(room, 0)]
        for reminder in chosen:
            self.sent.add(reminder.key)
        self.count += len(chosen)
        self.last = chosen
        return chosen

    def _todo(self, todos: Sequence[TodoItem]) -> list[Reminder]:
        if not todos:
            return [
                Reminder(
                    "todo",
                    "todo:empty",
                    "Your todo list is currently empty. If the task has several steps, use "
                    "SetTodoList to plan them. Do not mention this reminder to the user.",
                )
            ]
        items = [{"title": t.title[:100], "status": t.status} for t in todos]
        listing = json.dumps(items, ensure_ascii=False)
        digest = hashlib.sha256(listing.encode()).hexdigest()[:16]
        return [
            Reminder(
                "todo",
                f"todo:{len(items)}:{digest}",
                f"Your todo list has changed. It is now:\n{listing}\n"
                "Keep working on it; do not mention this reminder to the user.",
            )
        ]

    def _pressure(self, tokens: int, size: int) -> list[Reminder]:
        if size <= 0:
            return []
        share = tokens / size
        for level in PRESSURE_LEVELS:
            if share < level:
                self._armed.add(level)  # dropped below (a compaction): it may warn again
        passed = [level for level in PRESSURE_LEVELS if share >= level and level in self._armed]
        if not passed:
            return []
        level = max(passed)
        self._armed.difference_update(passed)
        self.sent.discard(f"context:{level}")
        return [
            Reminder(
                "context",
                f"context:{level}",
                f"The context is {share:.0%} full ({tokens:,} of {size:,} tokens). Keep tool "
                "output small (read files in parts, narrow searches), and when the current step "
                "is done, suggest that the user runs /compact.",
            )
        ]

    def _mentions(self, user_text: str) -> list[Reminder]:
        reminders = []
        for raw in dict.fromkeys(m.rstrip(".,;:!?)]}'\"") for m in _MENTION.findall(user_text)):
            # The completion offers names that are not UTF-8 escaped (kode_tui.pathnames); what
            # a symlink leads to outside the work dir is never read.
            path = self.work_dir / unescape_name(raw)
            if not is_within(path, self.work_dir):
                continue
            try:
                stat = path.stat()
            except (OSError, ValueError):
                continue
            if not path.is_file():
                continue
            head = _head(path)
            if head is None:
                continue
            reminders.append(
                Reminder(
                    "mention",
                    f"mention:{raw}:{stat.st_mtime_ns}:{stat.st_size}",
                    f"The user mentioned @{raw}. Its first lines:\n```\n{head}\n```\n"
                    "Read the rest with ReadFile if you need it.",
                )
            )
        return reminders


def _head(path: Path) -> str | None:
    """The first lines of a text file, or None when it is binary or unreadable."""
    try:
        with path.open("rb") as file:
            data = file.read(MENTION_CHARS)
    except OSError:
        return None
    if b"\0" in data:
        return None
    text = data.decode("utf-8", errors="replace")
    lines = text.splitlines()[:MENTION_LINES]
    return "\n".join(lines)


def inject(history: Sequence[Message], reminders: Sequence[Reminder]) -> list[Message]:
    """The request's messages: `history` with the reminders put in front of the content of its
    last user message (a copy: the context's own message is left alone)."""
    messages = list(history)
    if not reminders:
        return messages
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role != "user":
            continue
        blocks: list[ContentPart] = [TextPart(text=r.block()) for r in reminders]
        messages[index] = message.model_copy(update={"content": blocks + message.parts})
        break
    return messages
