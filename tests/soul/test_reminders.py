"""System reminders: what goes with a request, once, and never into the context."""

from __future__ import annotations

import os
from pathlib import Path

from kode_tui.message import Message, TextPart
from kode_tui.session.state import TodoItem
from kode_tui.soul.reminders import Reminder, Reminders, inject


def todo(title: str, status: str = "pending") -> TodoItem:
    return TodoItem(title=title, status=status)  # type: ignore[arg-type]


def kinds(reminders: list[Reminder]) -> list[str]:
    return [r.kind for r in reminders]


def generate(reminders: Reminders, **kw: object) -> list[Reminder]:
    args: dict[str, object] = {"todos": [], "context_tokens": 0, "max_context_tokens": 1000}
    args.update(kw)
    return reminders.generate(**args)  # type: ignore[arg-type]


def test_an_empty_todo_list_is_mentioned_once(tmp_path: Path) -> None:
    reminders = Reminders(tmp_path)
    assert kinds(generate(reminders)) == ["todo"]
    assert "empty" in reminders.last[0].text
    assert generate(reminders) == []


def test_a_changed_todo_list_is_one_reminder_not_one_per_request(tmp_path: Path) -> None:
    reminders = Reminders(tmp_path)
    generate(reminders)
    plan = [todo("Read"), todo("Write")]
    first = generate(reminders, todos=plan)
    assert kinds(first) == ["todo"] and '"title": "Read"' in first[0].text
    assert generate(reminders, todos=plan) == []
    assert generate(reminders, todos=[todo("Read", "done"), todo("Write")])[0].kind == "todo"
    assert generate(reminders, todos=[todo("Read", "done"), todo("Write")]) == []


def test_context_pressure_warns_at_70_and_85_percent_and_again_after_a_drop(
    tmp_path: Path,
) -> None:
    reminders = Reminders(tmp_path)
    generate(reminders)  # the empty-todo one
    assert generate(reminders, context_tokens=650) == []
    [at_70] = generate(reminders, context_tokens=720)
    assert at_70.kind == "context" and "72%" in at_70.text and "/compact" in at_70.text
    assert generate(reminders, context_tokens=760) == []
    [at_85] = generate(reminders, context_tokens=900)
    assert "90%" in at_85.text
    assert generate(reminders, context_tokens=950) == []
    assert generate(reminders, context_tokens=100) == []  # compacted
    assert kinds(generate(reminders, context_tokens=710)) == ["context"]


def test_a_mentioned_file_comes_with_its_head(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("".join(f"line {i}\n" for i in range(100)))
    (tmp_path / "blob.bin").write_bytes(b"\0\1\2")
    reminders = Reminders(tmp_path)
    generate(reminders)

    found = generate(
        reminders,
        user_text="Fix @src/app.py, not @missing.py or @blob.bin or @../outside. Also @src/app.py.",
    )

    assert kinds(found) == ["mention"]
    assert "@src/app.py" in found[0].text
    assert "line 39" in found[0].text and "line 40" not in found[0].text
    assert generate(reminders, user_text="Fix @src/app.py") == []
    (tmp_path / "src" / "app.py").write_text("changed\n")
    assert kinds(generate(reminders, user_text="Fix @src/app.py")) == ["mention"]


def test_at_most_five_per_request_and_the_session_limit(tmp_path: Path) -> None:
    for i in range(8):
        (tmp_path / f"f{i}.txt").write_text(f"file {i}\n")
    mentions = " ".join(f"@f{i}.txt" for i in range(8))
    reminders = Reminders(tmp_path, max_per_session=7)

    first = generate(reminders, user_text=mentions)
    second = generate(reminders, user_text=mentions)
    third = generate(reminders, user_text=mentions)

    assert len(first) == 5 and len(second) == 2 and third == []
    assert reminders.count == 7


def test_inject_puts_reminders_in_the_last_user_message_of_a_copy() -> None:
    history = [
        Message(role="user", content="first"),
        Message(role="assistant", content="ok"),
        Message(role="user", content="second"),
        Message(role="tool", content="out", tool_call_id="t"),
    ]
    reminder = Reminder("todo", "k", "Plan it.")

    request = inject(history, [reminder])

    assert request[2].parts == [
        TextPart(text="<system-reminder>\nPlan it.\n</system-reminder>"),
        TextPart(text="second"),
    ]
    assert history[2].content == "second"  # the context's message is untouched
    assert request[0] is history[0] and request[3] is history[3]
    assert inject(history, []) == history


def test_a_mention_never_reads_through_a_symlink_leading_outside(tmp_path: Path) -> None:
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    marker = "MARKER-outside-the-work-dir"
    (outside / "secret.txt").write_text(f"{marker}\n")
    (work / "notes.txt").symlink_to(outside / "secret.txt")
    (work / "shared").symlink_to(outside)
    (work / "own.txt").symlink_to("real.txt")
    (work / "real.txt").write_text("mine\n")
    reminders = Reminders(work)
    generate(reminders)

    found = generate(reminders, user_text="See @notes.txt @shared/secret.txt @own.txt")

    assert [r.text.splitlines()[0] for r in found] == [
        "The user mentioned @own.txt. Its first lines:"
    ]
    assert marker not in "".join(r.text for r in found)


def test_a_mention_of_an_escaped_name_reads_the_file_it_names(tmp_path: Path) -> None:
    with open(os.fsencode(tmp_path) + b"/caf\xe9.txt", "wb") as file:
        file.write(b"latin-1 name\n")
    reminders = Reminders(tmp_path)
    generate(reminders)

    [found] = generate(reminders, user_text="Look at @caf\\xe9.txt")

    assert "latin-1 name" in found.text
    found.text.encode("utf-8")
