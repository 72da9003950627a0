"""Tool output a person can read: a command's first lines and its full view, arguments as
fields, the todo list as one checklist, how long thinking took, a turn's reminders on one line,
diffs that wrap beside their line numbers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from textual.content import Content
from textual.pilot import Pilot
from textual.widgets import Static

from kode_tui.message import FunctionBody, Message, TextPart, ThinkPart, ToolCall
from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.ui.screens.diff import DiffScreen
from kode_tui.ui.screens.output import OutputScreen
from kode_tui.ui.widgets.blocks import ReminderBlock, ThinkingBlock
from kode_tui.ui.widgets.conversation import Conversation
from kode_tui.ui.widgets.display_blocks import diff_lines, diff_rows
from kode_tui.ui.widgets.rows import Gutter, lay_out
from kode_tui.ui.widgets.tool_block import ToolBlock
from kode_tui.ui.widgets.tool_views import field_rows
from kode_tui.wire import WireBus
from kode_tui.wire import events as ev
from tests.ui.test_conversation import host, settle, tool_message
from tests.ui_helpers import (
    Host,
    Posted,
    make_app,
    ready,
    screen_text,
    send,
    turn_running,
    wait_for,
)

TODOS = [
    {"title": "read the code", "status": "done"},
    {"title": "write the tests", "status": "in_progress"},
    {"title": "ship it", "status": "pending"},
]


def call(call_id: str, name: str, arguments: object) -> ev.ToolCall:
    return ev.ToolCall(
        id=call_id, function=FunctionBody(name=name, arguments=json.dumps(arguments))
    )


def stored_call(call_id: str, name: str, arguments: object) -> ToolCall:
    return ToolCall(id=call_id, function=FunctionBody(name=name, arguments=json.dumps(arguments)))


def lines_of(block: ToolBlock, width: int = 100) -> list[str]:
    shown = block.render()
    content = shown if isinstance(shown, Content) else shown.content(width)
    return content.plain.splitlines()


def full_view_text(screen: OutputScreen) -> str:
    return "\n".join(str(static.render()) for static in screen.query(Static))


# --- rows that keep a gutter ---------------------------------------------------------------------


def test_a_wrapped_row_keeps_its_gutter_and_goes_on_under_its_text() -> None:
    row = Gutter(Content("12 │"), Content("abcdefghijklmnopqrstuvwxyz"))
    assert [line.plain for line in lay_out([row], 14)] == [
        "12 │abcdefghij",
        "    klmnopqrst",
        "    uvwxyz",
    ]
    cut = Gutter(Content("path: "), Content("src/" + "deep/" * 20), clip=True)
    (line,) = lay_out([cut], 20)
    assert line.plain == "path: src/deep/deep…"


def test_a_long_diff_line_wraps_beside_line_numbers_that_stay_in_their_column() -> None:
    long = "value = " + "x" * 90
    rows = diff_rows(list(diff_lines("a\nb\n", f"a\n{long}\n")))
    lines = [line.plain for line in lay_out(rows, 40)]
    assert all(len(line) <= 40 for line in lines)
    gutter = lines[1].index("│")
    assert all(line.index("│") == gutter for line in lines)
    added = [line for line in lines if "x" in line]
    assert added[0].startswith("  2 │+value = ")
    assert all(line.startswith("    │ xx") for line in added[1:]), added
    assert "".join(line[6:] for line in added).replace(" ", "") == long.replace(" ", "")


async def test_the_full_diff_wraps_instead_of_scrolling_its_line_numbers_away() -> None:
    long = "value = " + "y" * 300
    diff = ev.DiffBlock(path="a.py", old_text="a\nb\n", new_text=f"a\n{long}\n")
    app = Host(screen=DiffScreen("a.py", [diff]))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        body = app.screen.query_one(".dialog-body")
        assert body.max_scroll_x == 0
        shown = screen_text(app)
    assert "2 │+value = yyy" in shown
    # (The screenshot's text drops the blank under the sign.)
    assert shown.count("    │yyy") + shown.count("    │ yyy") >= 3


# --- arguments as fields -------------------------------------------------------------------------


def test_arguments_show_as_one_field_a_line_cut_to_the_width() -> None:
    arguments = json.dumps(
        {"pattern": "def main", "path": "src/" + "deep/" * 40, "options": {"a": [1, 2]}}
    )
    lines = [line.plain for line in lay_out(field_rows(arguments), 40)]
    assert lines[0] == "pattern: def main"
    assert lines[1].startswith("path: src/deep/") and lines[1].endswith("…")
    assert len(lines[1]) == 40
    assert lines[2] == 'options: {"a": [1, 2]}'
    assert not any(line.startswith("{") for line in lines)


async def test_an_open_tool_block_shows_its_arguments_as_fields_and_o_shows_them_whole() -> None:
    bus, posted = WireBus(), Posted()
    path = "src/" + "deep/" * 40 + "end.py"
    output = "\n".join(f"match {n}" for n in range(1, 101))
    async with host(bus).run_test(size=(100, 40), message_hook=posted) as pilot:
        conversation = await settle(
            pilot,
            posted,
            bus,
            call("g1", "Grep", {"pattern": "def main", "path": path}),
            ev.ToolResult(tool_call_id="g1", output=output),
        )
        block = conversation.query_one(ToolBlock)
        assert lines_of(block)[0].startswith('▸ Grep "def main"')
        await pilot.click(block)
        shown = lines_of(block, 96)
        assert shown[1] == "pattern: def main"
        assert shown[2].startswith("path: src/deep/") and shown[2].endswith("…")
        assert "… 80 more lines · o for full output" in shown
        conversation.focus()
        await pilot.press("o")
        await pilot.pause()
        assert isinstance(pilot.app.screen, OutputScreen)
        text = full_view_text(pilot.app.screen)
        assert path in text
        assert "match 100" in text and "more lines" not in text
        await pilot.press("q")
        await pilot.pause()
        assert not isinstance(pilot.app.screen, OutputScreen)


# --- a command's output --------------------------------------------------------------------------


async def test_a_command_shows_its_first_lines_and_opens_all_of_them() -> None:
    bus, posted = WireBus(), Posted()
    output = "\n".join(f"line {n}" for n in range(1, 5001))
    async with host(bus).run_test(size=(100, 40), message_hook=posted) as pilot:
        conversation = await settle(
            pilot,
            posted,
            bus,
            call("s1", "Shell", {"command": "make test"}),
            ev.ToolResult(
                tool_call_id="s1",
                is_error=True,
                output=output,
                message="Command failed with exit code: 2.",
                display=[ev.BriefBlock(text="exit code 2")],
            ),
        )
        block = conversation.query_one(ToolBlock)
        assert lines_of(block) == [
            "▸ Shell: make test  ✘ exit code 2",
            "Command failed with exit code: 2.",
            "line 1",
            "line 2",
            "line 3",
            "line 4",
            "line 5",
            "… 4995 more lines · Enter/click for full output",
        ]
        await pilot.click(block)
        await pilot.pause()
        screen = pilot.app.screen
        assert isinstance(screen, OutputScreen)
        text = full_view_text(screen)
        assert "$ make test" in text
        assert "Command failed with exit code: 2." in text
        assert "line 1\n" in text and text.rstrip().endswith("line 5000")
        assert "more lines" not in text
        # Built in pieces: only those in view are drawn.
        assert len(screen.query(".output-text")) >= 5
        await pilot.press("end")
        await pilot.pause()
        assert "line 5000" in screen_text(pilot.app)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(pilot.app.screen, OutputScreen)


async def test_a_command_shows_no_markup_or_escapes_from_its_output() -> None:
    bus, posted = WireBus(), Posted()
    output = "[bold red]not markup[/]\n\x1b[31mred\x1b[0m"
    async with host(bus).run_test(size=(100, 30), message_hook=posted) as pilot:
        conversation = await settle(
            pilot,
            posted,
            bus,
            call("s1", "Shell", {"command": "cat x"}),
            ev.ToolResult(tool_call_id="s1", output=output),
        )
        block = conversation.query_one(ToolBlock)
        assert "[bold red]not markup[/]" in lines_of(block)
        await pilot.click(block)
        await pilot.pause()
        text = full_view_text(pilot.app.screen)
        assert "[bold red]not markup[/]" in text
        assert "\x1b" not in text and "␛[31mred" in text


async def test_a_real_commands_whole_output_opens_from_the_keyboard(project: Path) -> None:
    provider = ScriptedProvider(
        [
            {"tool_calls": [{"name": "Shell", "arguments": {"command": "seq 1 3000"}}]},
            {"text": "Counted."},
        ]
    )
    app = make_app(project, provider)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await send(pilot, "/mode yolo")
        await wait_for(pilot, lambda: app.sub_title.endswith("· yolo"))
        await send(pilot, "count")
        await wait_for(pilot, lambda: len(provider.requests) == 2 and not turn_running(app))
        block = app.screen.query_one(ToolBlock)
        assert lines_of(block)[1:] == [
            *(str(n) for n in range(1, 6)),
            "… 2995 more lines · Enter/click for full output",
        ]
        app.screen.query_one(Conversation).focus()
        # The block cursor stops at the answer after the call too (`p` pins either).
        for _ in range(5):
            if block.has_class("-cursor"):
                break
            await pilot.press("alt+up")
        assert block.has_class("-cursor")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, OutputScreen))
        text = full_view_text(app.screen)
        assert "$ seq 1 3000" in text and text.rstrip().endswith("\n3000")
        assert text.count("\n") > 3000
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, OutputScreen))


# --- the todo list -------------------------------------------------------------------------------


def todo_result(call_id: str, todos: list[dict[str, str]]) -> ev.ToolResult:
    items = [ev.TodoItem(title=t["title"], status=t["status"]) for t in todos]
    done = sum(item.status == "done" for item in items)
    return ev.ToolResult(
        tool_call_id=call_id,
        output="Todo list updated",
        message="Todo list updated",
        display=[ev.BriefBlock(text=f"{done}/{len(items)} done"), ev.TodoBlock(items=items)],
    )


async def test_a_new_todo_list_replaces_the_shown_one_which_folds_to_a_line() -> None:
    bus, posted = WireBus(), Posted()
    later = [{**todo, "status": "done"} for todo in TODOS]
    async with host(bus).run_test(size=(100, 40), message_hook=posted) as pilot:
        conversation = await settle(
            pilot,
            posted,
            bus,
            call("t1", "TodoWrite", {"todos": TODOS}),
            todo_result("t1", TODOS),
        )
        first = conversation.query_one(ToolBlock)
        assert lines_of(first) == [
            "▾ TodoWrite updated todo list  ✔ 1/3 done",
            "☑ read the code",
            "◐ write the tests",
            "☐ ship it",
        ]
        conversation = await settle(
            pilot, posted, bus, ev.StepBegin(n=2), call("t2", "TodoWrite", {"todos": later})
        )
        first, second = conversation.query(ToolBlock)
        assert lines_of(first) == ["▸ TodoWrite updated todo list  ✔ 1/3 done"]
        # Shown from its arguments while it runs.
        assert lines_of(second)[1:] == ["☑ read the code", "☑ write the tests", "☑ ship it"]
        await pilot.click(first)
        assert "◐ write the tests" in lines_of(first)


async def test_a_todo_list_call_that_failed_shows_its_error_and_no_checklist() -> None:
    bus, posted = WireBus(), Posted()
    wrong = {"todos": [{"content": "read the code", "status": "completed"}]}
    async with host(bus).run_test(size=(100, 40), message_hook=posted) as pilot:
        conversation = await settle(
            pilot,
            posted,
            bus,
            call("t1", "TodoWrite", wrong),
            ev.ToolResult(
                tool_call_id="t1",
                is_error=True,
                output="Invalid arguments for TodoWrite: todos.0.title: Field required.",
                message="Invalid arguments for TodoWrite: todos.0.title: Field required.",
                display=[ev.BriefBlock(text="invalid arguments")],
            ),
        )
        block = conversation.query_one(ToolBlock)
        if not block.expanded:
            await pilot.click(block)
        lines = lines_of(block)
        assert "todos.0.title: Field required" in " ".join(lines)
        assert not any(line.startswith(("☑", "◐", "☐")) for line in lines)


async def test_a_resumed_session_shows_only_its_last_todo_list_until_a_new_one_comes() -> None:
    done = [{**todo, "status": "done"} for todo in TODOS]
    messages = [
        Message(role="user", content="plan it"),
        Message(role="assistant", tool_calls=[stored_call("t1", "TodoWrite", {"todos": TODOS})]),
        tool_message("t1", "Todo list updated"),
        Message(role="assistant", tool_calls=[stored_call("t2", "TodoWrite", {"todos": done})]),
        tool_message("t2", "Todo list updated"),
        Message(role="assistant", content=[TextPart(text="Done.")]),
    ]
    bus, posted = WireBus(), Posted()
    async with host(bus).run_test(size=(100, 40), message_hook=posted) as pilot:
        conversation = pilot.app.query_one(Conversation)
        await conversation.load_history(messages)
        await pilot.pause()
        first, second = conversation.query(ToolBlock)
        assert len(lines_of(first)) == 1
        assert lines_of(second)[1:] == ["☑ read the code", "☑ write the tests", "☑ ship it"]
        conversation = await settle(
            pilot,
            posted,
            bus,
            ev.TurnBegin(user_input="more"),
            ev.StepBegin(n=1),
            call("t3", "TodoWrite", {"todos": TODOS}),
        )
        first, second, third = conversation.query(ToolBlock)
        assert len(lines_of(second)) == 1
        assert "◐ write the tests" in lines_of(third)


async def test_a_call_that_only_read_the_todo_list_folds_and_leaves_the_shown_list() -> None:
    # Kimi CLI's SetTodoList without `todos` reads the list: it has no checklist to show, and
    # the list it read is still the one shown above it.
    messages = [
        Message(role="user", content="plan it"),
        Message(role="assistant", tool_calls=[stored_call("t1", "SetTodoList", {"todos": TODOS})]),
        tool_message("t1", "Todo list updated"),
        Message(role="assistant", tool_calls=[stored_call("t2", "SetTodoList", {})]),
        tool_message("t2", "Current todo list:\n- [done] read the code"),
    ]
    bus, posted = WireBus(), Posted()
    async with host(bus).run_test(size=(100, 40), message_hook=posted) as pilot:
        conversation = pilot.app.query_one(Conversation)
        await conversation.load_history(messages)
        await pilot.pause()
        listed, read = conversation.query(ToolBlock)
        assert lines_of(listed)[1:] == ["☑ read the code", "◐ write the tests", "☐ ship it"]
        assert lines_of(read) == ["▸ SetTodoList read todo list  ✔"]
        await pilot.click(read)
        assert "- [done] read the code" in lines_of(read)


# --- thinking and reminders ----------------------------------------------------------------------


class Clock:
    """The thinking blocks' clock, stopped: it moves only when a test moves it (a loaded
    machine must not turn 3.2 s into "4 s")."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = 1000.0
        monkeypatch.setattr("kode_tui.ui.widgets.blocks._now", lambda: self.now)


async def test_finished_thinking_says_how_long_it_took_and_stored_thinking_only_that_it_was(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = Clock(monkeypatch)
    bus, posted = WireBus(), Posted()
    async with host(bus).run_test(size=(100, 30), message_hook=posted) as pilot:
        conversation = await settle(
            pilot,
            posted,
            bus,
            ev.TurnBegin(user_input="hi"),
            ev.StepBegin(n=1),
            ev.ContentPart(part=ThinkPart(think="Hmm.")),
        )
        thinking = conversation.query_one(ThinkingBlock)
        assert thinking.title == "Thinking…"
        clock.now += 4.2  # the model thinks for 4.2 s
        await settle(pilot, posted, bus, ev.ContentPart(part=TextPart(text="Hello.")))
        assert thinking.title == "Thought for 4 s"
        # Made again (scrolled away and back), it says the same.
        again = thinking.factory()()
        assert isinstance(again, ThinkingBlock) and again.title == "Thought for 4 s"

        stored = Message(role="assistant", content=[ThinkPart(think="Hmm."), TextPart(text="Hi")])
        await conversation.load_history([Message(role="user", content="hi"), stored])
        await pilot.pause()
        assert conversation.query_one(ThinkingBlock).title == "Thought"


async def test_a_turns_reminders_fold_into_one_line_that_opens_to_all_of_them() -> None:
    bus, posted = WireBus(), Posted()

    def reminders(*items: tuple[str, str]) -> ev.SystemReminders:
        return ev.SystemReminders(reminders=[ev.ReminderItem(kind=k, text=t) for k, t in items])

    async with host(bus).run_test(size=(100, 40), message_hook=posted) as pilot:
        conversation = await settle(
            pilot,
            posted,
            bus,
            ev.TurnBegin(user_input="go"),
            ev.StepBegin(n=1),
            reminders(("todo", "the todo list is empty")),
            call("s1", "Shell", {"command": "ls"}),
            ev.ToolResult(tool_call_id="s1", output="a"),
            ev.StepBegin(n=2),
            reminders(("todo", "the list changed"), ("context", "the context is 70% full")),
        )
        (block,) = conversation.query(ReminderBlock)
        assert block.title == "3 reminders: todo, context"
        assert str(block.render()) == "▸ 3 reminders: todo, context"
        await pilot.click(block)
        opened = str(block.render())
        assert "the todo list is empty" in opened and "70% full" in opened
        conversation = await settle(
            pilot,
            posted,
            bus,
            ev.TurnEnd(),
            ev.TurnBegin(user_input="again"),
            ev.StepBegin(n=1),
            reminders(("context", "the context is 85% full")),
        )
        assert [b.title for b in conversation.query(ReminderBlock)] == [
            "3 reminders: todo, context",
            "reminder: context",
        ]


# --- how it looks --------------------------------------------------------------------------------


def test_tool_output_at_80_columns(snap_compare: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A turn's blocks as a user reads them: one reminders line, how long the model thought,
    a folded older todo list and the newest as a checklist, a failed command's first lines,
    an open call's fields, and an edit whose long line wraps beside its sign."""
    clock = Clock(monkeypatch)
    bus = WireBus()
    app = host(bus)
    output = "\n".join(f"FAILED tests/test_{n}.py::test_it - AssertionError" for n in range(40))
    long = "greeting = " + "'hello, ' * 3 + " * 6 + "'world'"
    later = [{**TODOS[0]}, {**TODOS[1], "status": "done"}, {**TODOS[2], "status": "in_progress"}]

    async def run_before(pilot: Pilot[Any]) -> None:
        # (No message hook here: snap_compare runs the app.)
        for event in (
            ev.TurnBegin(user_input="Run the tests and fix them"),
            ev.StepBegin(n=1),
            ev.SystemReminders(reminders=[ev.ReminderItem(kind="todo", text="no todo list")]),
            ev.ContentPart(part=ThinkPart(think="Tests first.")),
        ):
            bus.send(event)
        await wait_for(pilot, lambda: app.query(ThinkingBlock))
        clock.now += 3.2
        for event in (
            call("t1", "TodoWrite", {"todos": TODOS}),
            todo_result("t1", TODOS),
            call("s1", "Shell", {"command": "pytest -q"}),
            ev.ToolResult(
                tool_call_id="s1",
                is_error=True,
                output=output,
                message="Command failed with exit code: 1.",
                display=[ev.BriefBlock(text="exit code 1")],
            ),
            ev.StepBegin(n=2),
            ev.SystemReminders(reminders=[ev.ReminderItem(kind="todo", text="list changed")]),
            call("g1", "Grep", {"pattern": "def greet", "path": "src/", "ignore_case": True}),
            ev.ToolResult(tool_call_id="g1", output="src/greet.py:1:def greet():"),
            call("e1", "StrReplaceFile", {"path": "src/greet.py", "old": "x", "new": "y"}),
            ev.ToolResult(
                tool_call_id="e1",
                message="File edited.",
                display=[
                    ev.BriefBlock(text="1 edit"),
                    ev.DiffBlock(path="src/greet.py", old_text="greeting = 'hi'\n", new_text=long),
                ],
            ),
            call("t2", "TodoWrite", {"todos": later}),
            todo_result("t2", later),
            ev.TurnEnd(),
        ):
            bus.send(event)

        def finished() -> bool:
            blocks = app.query(ToolBlock)
            return len(blocks) == 5 and blocks[4].state.status == "ok"

        await wait_for(pilot, finished)
        await pilot.pause()
        app.query(ToolBlock)[2].toggle()
        await pilot.pause()

    assert snap_compare(app, run_before=run_before, terminal_size=(80, 50))


def test_a_newer_todo_list_read_later_folds_the_one_shown_and_says_so() -> None:
    """Pages of a stored history are not always read newest first (Home reads the oldest)."""
    from kode_tui.ui.widgets.tool_state import ToolState
    from kode_tui.ui.widgets.tool_views import TodoBoard

    board, folded = TodoBoard(), []
    board.on_fold = folded.append
    old, new, older, live = (ToolState(n, "TodoWrite") for n in ("a", "b", "c", "d"))
    board.add_stored(old, 10, 0)
    board.add_stored(new, 30, 1)
    assert old.superseded and not new.superseded and folded == [old]
    board.add_stored(older, 2, 0)  # read after, but older: folded from the start
    assert older.superseded and folded == [old]
    board.add_live(live)
    assert new.superseded and not live.superseded and folded == [old, new]


async def test_a_long_resumed_session_is_not_read_whole_to_find_its_todo_list(
    tmp_path: Path,
) -> None:
    from kode_tui.session import Context
    from tests.session_helpers import write_turns

    path = tmp_path / "context.jsonl"
    async with Context(path) as context:
        await write_turns(context, 300)  # 900 messages, no todo list among them
    restored = Context(path)
    await restored.restore()
    async with host(WireBus()).run_test(size=(100, 30)) as pilot:
        conversation = pilot.app.query_one(Conversation)
        await conversation.load_history(restored.history)
        await pilot.pause()
        unread = int(repr(restored.history).split(", ")[1].split()[0])
    assert len(restored.history) == 900 and unread > 800


async def test_a_resumed_commands_block_and_full_view_show_what_the_model_was_given() -> None:
    output = "\n".join(f"row {n}" for n in range(1, 201))
    messages = [
        Message(role="user", content="list"),
        Message(role="assistant", tool_calls=[stored_call("s1", "Shell", {"command": "rows"})]),
        tool_message("s1", "<system>ERROR: Command failed with exit code: 3.</system>", output),
    ]
    async with host(WireBus()).run_test(size=(100, 30)) as pilot:
        conversation = pilot.app.query_one(Conversation)
        await conversation.load_history(messages)
        await pilot.pause()
        block = conversation.query_one(ToolBlock)
        assert lines_of(block)[1:] == [
            "Command failed with exit code: 3.",
            *(f"row {n}" for n in range(1, 6)),
            "… 195 more lines · Enter/click for full output",
        ]
        await pilot.click(block)
        await pilot.pause()
        assert isinstance(pilot.app.screen, OutputScreen)
        assert full_view_text(pilot.app.screen).rstrip().endswith("row 200")
