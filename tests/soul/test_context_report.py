"""`/context`'s rows: they add up to the gauge's number however far the estimates are off."""

from __future__ import annotations

from kode_tui.soul.context_report import ContextRow, PromptParts, context_rows, reminder_tokens
from kode_tui.soul.reminders import Reminder

PARTS = PromptParts("prompt", [("system prompt", 100), ("AGENTS.md", 20)], 3, 300)
REMINDERS = [Reminder(kind="todo", key="k", text="Keep the todo list current." * 4)]


def tokens(rows: list[ContextRow]) -> dict[str, int]:
    return {row.name: row.tokens for row in rows}


def test_before_any_report_the_rows_are_the_known_prompt_and_the_messages() -> None:
    rows = context_rows(PARTS, [], reported=0, pending=40)

    assert tokens(rows) == {
        "system prompt": 100,
        "AGENTS.md": 20,
        "tool definitions (3)": 300,
        "messages": 40,
    }
    assert all(row.estimated for row in rows)


def test_the_messages_are_what_is_left_of_the_reported_count() -> None:
    rows = context_rows(PARTS, REMINDERS, reported=1_000, pending=50)

    found = tokens(rows)
    reminders = reminder_tokens(REMINDERS)
    assert found["reminders of the last request"] == reminders > 0
    assert found["messages"] == 1_000 - 100 - 20 - 300 - reminders
    assert found["messages since the last request"] == 50
    assert sum(found.values()) == 1_050
    [messages] = [row for row in rows if row.name == "messages"]
    assert not messages.estimated and "reported" in messages.note


def test_estimates_larger_than_the_report_are_scaled_down_to_it() -> None:
    rows = context_rows(PARTS, REMINDERS, reported=211, pending=7)

    found = tokens(rows)
    assert found["messages"] == 0
    assert sum(found.values()) == 211 + 7
    assert found["tool definitions (3)"] > found["system prompt"] > found["AGENTS.md"]
    [messages] = [row for row in rows if row.name == "messages"]
    assert "scaled" in messages.note
