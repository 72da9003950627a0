"""The message model reads and writes Kimi CLI's JSON exactly."""

from __future__ import annotations

import json

import pytest

from kode_tui.message import (
    IMAGE_TOKENS,
    CheckpointRecord,
    FileEditRecord,
    FunctionBody,
    ImageURL,
    ImageURLPart,
    Message,
    SystemPromptRecord,
    TextPart,
    ThinkPart,
    ToolCall,
    UnknownPart,
    UnknownRecord,
    UsageRecord,
    checkpoint_note,
    dump_record,
    estimate_tokens,
    is_checkpoint_note,
    is_from_system,
    is_system_note,
    parse_record,
    reminder_text,
    split_system_note,
    split_tool_result,
    system,
    tool_status,
    unwrap_system,
)
from tests.conftest import KIMI_FIXTURE

FIXTURE_LINES = [
    line
    for path in sorted(KIMI_FIXTURE.glob("context*.jsonl"))
    for line in path.read_bytes().splitlines()
]


def test_every_line_kimi_wrote_comes_back_byte_for_byte() -> None:
    assert len(FIXTURE_LINES) == 70
    for line in FIXTURE_LINES:
        assert dump_record(parse_record(line)).encode() == line


def test_records_are_told_apart_by_role() -> None:
    kinds = {type(parse_record(line)).__name__ for line in FIXTURE_LINES}
    assert kinds == {"Message", "CheckpointRecord", "UsageRecord", "SystemPromptRecord"}


def test_new_messages_are_written_as_kimi_writes_them() -> None:
    message = Message(
        role="assistant",
        content=[ThinkPart(think="Let me look."), TextPart(text="Looking.")],
        tool_calls=[ToolCall(id="call_1", function=FunctionBody(name="Shell", arguments="{}"))],
        tool_call_id=None,
        name=None,
    )
    assert message.to_json() == (
        '{"role":"assistant","content":[{"type":"think","think":"Let me look.","encrypted":null},'
        '{"type":"text","text":"Looking."}],"tool_calls":[{"type":"function","id":"call_1",'
        '"function":{"name":"Shell","arguments":"{}"}}]}'
    )
    image = Message(role="user", content=[ImageURLPart(image_url=ImageURL(url="data:x"))])
    assert image.to_json() == (
        '{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:x","id":null}}]}'
    )
    assert Message(role="tool", content="ok", tool_call_id="call_1").to_json() == (
        '{"role":"tool","content":"ok","tool_call_id":"call_1"}'
    )


def test_records_are_written_as_kimi_writes_them() -> None:
    assert CheckpointRecord(id=3).to_json() == '{"role": "_checkpoint", "id": 3}'
    assert UsageRecord(token_count=12).to_json() == '{"role": "_usage", "token_count": 12}'
    assert SystemPromptRecord(content="Be — brief").to_json() == (
        '{"role": "_system_prompt", "content": "Be \\u2014 brief"}'
    )


def test_unknown_parts_keys_and_records_survive() -> None:
    line = (
        '{"role":"user","content":[{"type":"audio_url","audio_url":{"url":"a.mp3"}},'
        '{"type":"text","text":"hi","cache":true}],"future_key":{"x":[1,2]}}'
    )
    message = parse_record(line)
    assert isinstance(message, Message)
    assert isinstance(message.parts[0], UnknownPart)
    assert message.to_json() == line
    record = parse_record('{"role": "_bookmark", "name": "here", "at": [1, 2]}')
    assert isinstance(record, UnknownRecord)
    assert dump_record(record) == '{"role": "_bookmark", "name": "here", "at": [1, 2]}'


@pytest.mark.parametrize(
    "line",
    [
        '{"role": "_checkpoint"}',
        '{"role": "_checkpoint", "id": "1"}',
        '{"role": "_checkpoint", "id": true}',
        '{"role": "_checkpoint", "id": -1}',
        '{"role": "_usage", "token_count": 1.5}',
        '{"role": "_system_prompt", "content": 3}',
        '{"role": "robot", "content": "hi"}',
        '{"role": "user", "content": 5}',
    ],
)
def test_malformed_records_are_rejected(line: str) -> None:
    with pytest.raises(ValueError):
        parse_record(line)


def test_a_file_edit_carries_content_so_kimi_skips_it() -> None:
    edit = FileEditRecord(path="src/a.py", before=None, after="ab", tool_call_id="c1")
    assert json.loads(edit.to_json()) == {
        "role": "_file_edit",
        "content": "file edit: src/a.py",
        "path": "src/a.py",
        "before": None,
        "after": "ab",
        "tool_call_id": "c1",
    }
    assert parse_record(edit.to_json()) == edit


def test_content_reads_the_same_as_a_string_or_parts() -> None:
    as_string = Message(role="user", content="hello")
    as_parts = Message(role="user", content=[TextPart(text="hel"), TextPart(text="lo")])
    assert as_string.text == as_parts.text == "hello"
    assert [part.type for part in as_string.parts] == ["text"]
    assert Message(role="assistant").parts == []
    assert system("CHECKPOINT 2").text == "<system>CHECKPOINT 2</system>"


def test_token_estimate_is_characters_over_four() -> None:
    messages = [
        Message(role="user", content="x" * 40),
        Message(
            role="assistant",
            content=[ThinkPart(think="y" * 20), TextPart(text="z" * 20)],
            tool_calls=[ToolCall(id="c", function=FunctionBody(name="Glob", arguments="a" * 36))],
        ),
    ]
    assert estimate_tokens(messages) == 10 + (20 + 20 + 4 + 36) // 4


def test_kimis_system_markers_are_read_back_as_they_were_built() -> None:
    fixture_line = "<system>Command executed successfully.</system>\nmain.py"  # Kimi CLI's
    assert split_tool_result(fixture_line) == (False, "Command executed successfully.", "main.py")
    error = tool_status("`a.txt` does not exist.", is_error=True).text + "details"
    assert error == "<system>ERROR: `a.txt` does not exist.</system>details"
    assert split_tool_result(error) == (True, "`a.txt` does not exist.", "details")
    assert split_tool_result("plain output") == (False, "", "plain output")
    assert split_system_note("<system>a</system>\nb") == ("a", "b")

    note = checkpoint_note(7)
    assert note == "<system>CHECKPOINT 7</system>" and is_checkpoint_note(note)
    assert is_system_note(note) and not is_system_note("CHECKPOINT 7")
    summary = system("Previous context has been compacted.").text
    assert is_system_note(summary, "Previous context") and not is_system_note(summary, "D-Mail")
    assert split_system_note(summary + "the summary")[1] == "the summary"
    mail = system("You just got a D-Mail. D-Mail content: quote </system> here").text
    assert unwrap_system(mail).partition("D-Mail content:")[2] == " quote </system> here"

    reminder = reminder_text("Your todo list is empty.")
    assert reminder == "<system-reminder>\nYour todo list is empty.\n</system-reminder>"
    assert is_from_system(reminder) and is_from_system(note)
    assert not is_system_note(reminder) and not is_from_system("hello <system>")


def test_an_image_counts_as_kimis_media_estimate_not_as_its_data_url() -> None:
    url = "data:image/png;base64," + "A" * 400_000
    image = ImageURLPart(image_url=ImageURL(url=url))
    message = Message(role="tool", content=[TextPart(text="x" * 40), image], tool_call_id="c")
    assert message.estimated_tokens() == 10 + IMAGE_TOKENS
