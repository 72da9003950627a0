"""The `demo` model: an offline, scripted agent for a first run without any API key.

It is not an LLM and says so. Each turn it tours what kode-tui does: it lists the project (Glob),
keeps a todo list, reads the README, proposes one small edit that needs the user's approval
(creating KODE_DEMO.md), reacts to the answer, and tells the user how to connect a real model.
Each response is worked out from the history, like a model's, so a resumed session goes on where
it stopped.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from kode_tui.humanize import plural
from kode_tui.message import Message, TextPart, is_from_system, is_system_note
from kode_tui.soul.llm import DEFAULT_MAX_CONTEXT_SIZE, StreamItem, ToolSchema
from kode_tui.soul.llm.scripted import request_tokens, stream_response

DEMO_MODEL = "demo"
NOTES_FILE = "KODE_DEMO.md"

INTRO = (
    "**This is kode-tui's offline demo: a scripted agent, not an LLM.** It walks through what "
    "a turn looks like (tool calls, a todo list, an edit that waits for your approval) without "
    "an API key. Your message was not read by a model. First, a look around the project."
)


SUMMARY = (
    "<current_focus>\nTrying kode-tui with its offline demo model (a scripted agent, not an "
    "LLM).\n</current_focus>\n<important_context>\n- The demo cannot summarise; this text "
    "stands in for the summary a real model would write.\n</important_context>"
)


@dataclass
class DemoProvider:
    """The scripted tour; `delay` paces the streamed words so it reads like a model."""

    delay: float = 0.02
    model_name: str = DEMO_MODEL
    max_context_size: int = DEFAULT_MAX_CONTEXT_SIZE

    def stream(
        self, system_prompt: str | None, history: Sequence[Message], tools: Sequence[ToolSchema]
    ) -> AsyncIterator[StreamItem]:
        turn = _current_turn(history)
        # A call without tools is a compaction asking for a summary, not a turn of the tour.
        response = _respond(turn) if tools else {"text": SUMMARY}
        sent = request_tokens(system_prompt, history, tools)
        return stream_response(response, len(turn), sent, self.delay)


def _current_turn(history: Sequence[Message]) -> list[Message]:
    """The messages since the user's last own message (system notes are not the user's)."""
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        if message.role == "user" and _written_by_user(message):
            return list(history[index:])
    return []


def _written_by_user(message: Message) -> bool:
    """Whether a user message holds text of the user's (not only `<system>` notes/reminders)."""
    return any(
        isinstance(part, TextPart) and not is_from_system(part.text) for part in message.parts
    )


def _todos(*statuses: str) -> dict[str, Any]:
    titles = ("Look around the project", "Read the README", "Propose a small edit")
    return {
        "name": "SetTodoList",
        "arguments": {
            "todos": [{"title": t, "status": s} for t, s in zip(titles, statuses, strict=True)]
        },
    }


def _respond(turn: list[Message]) -> dict[str, Any]:
    steps = sum(message.role == "assistant" for message in turn)
    if steps == 0:
        return {
            "text": INTRO,
            "tool_calls": [
                _todos("in_progress", "pending", "pending"),
                {"name": "Glob", "arguments": {"pattern": "*"}},
            ],
        }
    if steps == 1:
        listing = _result_of(turn, "Glob")
        files = _output_lines(listing) if listing is not None else []
        readme = next((f for f in files if f.lower().startswith("readme")), None)
        if readme is None:
            return {
                "text": f"I see {plural(len(files), 'entry', 'entries')} and no README, so "
                "nothing to read there.",
                "tool_calls": [_todos("done", "done", "in_progress")],
            }
        return {
            "text": f"I see {len(files)} entries at the top level. Reading {readme}.",
            "tool_calls": [
                _todos("done", "in_progress", "pending"),
                {"name": "ReadFile", "arguments": {"path": readme, "n_lines": 40}},
            ],
        }
    if steps == 2:
        readme_result = _result_of(turn, "ReadFile")
        title = _readme_title(readme_result) if readme_result is not None else ""
        notes = (
            "# Notes from the kode-tui demo\n\n"
            f"Your request: {_user_text(turn)}\n\n"
            f"The README starts with: {title or '(no README found)'}\n\n"
            "A real model would have read and answered your request. Connect one: set an API "
            "key (ANTHROPIC_API_KEY, OPENAI_API_KEY, ...) or add a model to config.toml.\n"
        )
        return {
            "text": (
                f"Now one small edit, to show approvals: I'd like to create `{NOTES_FILE}` "
                "with a few notes. The approval panel shows the diff: `y` allows it once, `a` "
                "for the session, `n` rejects it, `f` rejects it with feedback."
            ),
            "tool_calls": [
                _todos("done", "done", "in_progress"),
                {"name": "WriteFile", "arguments": {"path": NOTES_FILE, "content": notes}},
            ],
        }
    if steps == 3:
        edit = _result_of(turn, "WriteFile")
        feedback = edit is not None and "User feedback:" in edit.text
        text = (
            "You rejected the edit with feedback. A real model would now follow it."
            if feedback
            else f"Done: `{NOTES_FILE}` now holds the notes."
        )
        return {"text": text, "tool_calls": [_todos("done", "done", "done")]}
    return {
        "text": (
            "That was the whole demo. What to try next:\n\n"
            "- Connect a real model: set `ANTHROPIC_API_KEY`, `OPENAI_API_KEY` or another key, "
            "or add a `[models.<name>]` entry to config.toml (`kode-tui --paths` shows where), "
            "then start kode-tui again or pick it with `/model`.\n"
            "- Travel in time: each step above is a checkpoint. Revert to one to take the "
            "conversation back, and the files too if you like; nothing is ever lost.\n"
            "- See the context: the gauge shows how full it is, and `/context` shows what the "
            "model is given."
        )
    }


def _output_lines(message: Message) -> list[str]:
    """The lines of a tool message's output, without its `<system>` status."""
    lines: list[str] = []
    for part in message.parts:
        text = getattr(part, "text", "")
        if text and not is_system_note(text):
            lines += [line.strip() for line in text.splitlines() if line.strip()]
    return lines


def _result_of(turn: list[Message], tool_name: str) -> Message | None:
    """The tool message answering the turn's last call of `tool_name`."""
    ids = [
        call.id
        for message in turn
        for call in message.tool_calls or ()
        if call.function.name == tool_name
    ]
    return next((m for m in reversed(turn) if ids and m.tool_call_id == ids[-1]), None)


def _readme_title(result: Message) -> str:
    for line in _output_lines(result):
        text = line.split("\t", 1)[-1].strip()
        if text:
            return text
    return ""


def _user_text(turn: list[Message]) -> str:
    parts = turn[0].parts if turn else []
    text = "".join(
        p.text for p in parts if isinstance(p, TextPart) and not is_from_system(p.text)
    ).strip()
    return text if len(text) <= 200 else text[:199] + "…"
