"""One reading of a tool call, its result and a retry, for every front end (issue 27, item 4):
the conversation, print mode, stream-JSON and ACP show these words."""

from __future__ import annotations

import pytest

from kode_tui.wire import events as ev
from kode_tui.wire.readings import (
    StreamedCall,
    calls_summary,
    read_call,
    read_result,
    read_system_note,
    retry_status,
    retry_text,
)


@pytest.mark.parametrize(
    ("name", "arguments", "title"),
    [
        ("Shell", '{"command": "make test"}', "Shell: make test"),
        ("Shell", '{"command": "git status\\ngit diff"}', "Shell: git status …"),
        ("WriteFile", '{"path": "hello.py", "content": "print(1)\\n"}', "WriteFile hello.py"),
        ("WriteFile", '{"path": "a", "content": "x", "mode": "append"}', "WriteFile a (append)"),
        ("StrReplaceFile", '{"path": "a.py", "edit": {"old": "x"}}', "StrReplaceFile a.py"),
        ("ReadFile", '{"path": "a.py", "line_offset": 10, "n_lines": 31}', "ReadFile a.py:10-40"),
        ("ReadFile", '{"path": "src/a.py", "line_offset": 3}', "ReadFile src/a.py:3-"),
        ("ReadFile", '{"path": "log.txt", "line_offset": -100}', "ReadFile log.txt:-100"),
        ("ReadFile", '{"path": "README.md"}', "ReadFile README.md"),
        ("Grep", '{"pattern": "TODO", "path": "src"}', 'Grep "TODO" in src'),
        ("Grep", '{"pattern": "TODO", "path": "."}', 'Grep "TODO"'),
        ("Glob", '{"pattern": "**/*.py"}', 'Glob "**/*.py"'),
        ("Glob", '{"pattern": "*.md", "directory": "docs"}', 'Glob "*.md" in docs'),
        ("mcp__web__fetch", '{"url": "https://x.org", "n": 2}', "web: fetch https://x.org"),
        ("mcp__a___x", "{}", "a: _x"),
        ("SendDMail", '{"message": "undo", "checkpoint_id": 3}', "SendDMail to checkpoint 3"),
        # Kimi's Agent tool: what the subagent is asked to do, not its JSON.
        ("Agent", '{"description": "Find the image", "prompt": "Which?"}', "Agent Find the image"),
        # A todo list is no title: what the call did to it is.
        ("TodoWrite", '{"todos": [{"title": "x"}]}', "TodoWrite updated todo list"),
        ("TodoWrite", "{}", "TodoWrite read todo list"),
        ("SetTodoList", '{"todos": []}', "SetTodoList updated todo list"),
        # A question to the user: the first one, not the JSON of them all.
        ("AskUserQuestion", '{"questions": [{"question": "Which?"}]}', "AskUserQuestion: Which?"),
        ("AskUserQuestion", '{"questions": [{"question": "A?"}, {"question": "B"}]}',
         "AskUserQuestion: A? (+1 more)"),
        ("Other", "{}", "Other"),
        ("Other", '{"a": "' + "x" * 100 + '"}', 'Other {"a": "' + "x" * 52 + "…"),
        ("Other", "[1, 2]", "Other [1, 2]"),
    ],
)  # fmt: skip
def test_a_tool_call_reads_as_its_name_and_what_it_is_about(
    name: str, arguments: str, title: str
) -> None:
    assert read_call(name, arguments).title == title


def test_a_call_whose_arguments_stream_reads_as_its_name_until_they_are_whole() -> None:
    assert read_call("Shell", '{"command": "ls"') == read_call("Shell", "")
    assert not read_call("Shell", "").whole and read_call("Shell", "").title == "Shell"
    call = StreamedCall("Shell")
    assert call.reading.title == "Shell"  # shown while the arguments stream
    assert not call.extend('{"command": ')
    assert not call.extend('"make test"')
    assert call.extend("}") and call.reading.title == "Shell: make test"
    assert not call.extend(" ")  # read once: later pieces change nothing
    unshown = StreamedCall("Shell")
    assert not unshown.extend('{"command": "ls"}')  # nothing was shown: nothing changed
    assert unshown.reading.title == "Shell: ls"  # read when first asked


def test_what_the_model_wrote_reads_as_plain_text() -> None:
    title = read_call("No\x1b[8mTool", '{"path": "a\\u009b31m", "command": "x"}').title
    assert title == "No␛[8mTool a\\x9b31m"
    assert read_call("Shell", '{"command": "printf \\u001b[31m"}').about == "printf ␛[31m"
    assert all(ord(c) >= 0x20 for c in read_call("Grep", '{"pattern": "a\\tb\\rc"}').title)


def test_the_calls_of_a_step_read_as_one_line() -> None:
    assert calls_summary([("ReadFile", '{"path": "README.md"}')]) == "ReadFile README.md"
    assert calls_summary([("Shell", None)]) == "Shell"
    three = [("ReadFile", "{}"), ("Grep", "{}"), ("ReadFile", "{}")]
    assert calls_summary(three) == "ReadFile \N{MULTIPLICATION SIGN}2, Grep"


def test_a_result_reads_as_its_status_and_the_tools_brief_or_first_line() -> None:
    brief = ev.BriefBlock(text="3 lines")
    ok = read_result(ev.ToolResult(tool_call_id="c", message="Read.", display=[brief]))
    assert (ok.status, ok.label, ok.summary) == ("ok", "✔", "3 lines")
    failed = read_result(ev.ToolResult(tool_call_id="c", is_error=True, message="no\nsuch"))
    assert (failed.status, failed.label, failed.summary) == ("error", "✘", "no …")
    refused = ev.ToolResult(
        tool_call_id="c", is_error=True, message="The tool call is rejected by the user."
    )
    assert (read_result(refused).status, read_result(refused).label) == ("rejected", "⊘")
    # What the user did, in every front end; the model's words stay in the message.
    assert read_result(refused).summary == "Rejected"
    told = refused.model_copy(
        update={"message": f"{refused.message} User feedback: use tabs", "display": [brief]}
    )
    assert read_result(told).summary == "Rejected: use tabs"


def test_a_retry_names_the_attempt_to_come() -> None:
    retry = ev.StepRetry(n=2, attempt=1, max_attempts=3, wait_s=0.4, error="HTTP 503")
    assert retry_status(retry) == "retrying in 0.4 s (attempt 2 of 3): the model call failed"
    assert retry_text(retry) == "HTTP 503; retrying in 0.4 s (attempt 2 of 3)"
    whole = retry.model_copy(update={"wait_s": 2.0, "error": ""})
    assert retry_text(whole) == "the model call failed; retrying in 2 s (attempt 2 of 3)"


def test_a_retry_status_says_why_in_a_few_words() -> None:
    limited = ev.StepRetry(
        n=1, attempt=1, max_attempts=10, wait_s=6, error="x is rate limited", status_code=429
    )
    assert retry_status(limited, 5.2) == "retrying in 6 s (attempt 2 of 10): 429 rate limited"
    busy = limited.model_copy(update={"status_code": 503})
    assert retry_status(busy).endswith("(attempt 2 of 10): HTTP 503")
    slow = limited.model_copy(update={"status_code": None, "error_type": "LLMTimeoutError"})
    assert retry_status(slow).endswith(": timed out")
    lost = limited.model_copy(update={"status_code": None, "error_type": "LLMConnectionError"})
    assert retry_status(lost).endswith(": connection lost")


def test_a_compaction_summary_and_a_d_mail_are_the_systems_notes() -> None:
    summary = read_system_note(
        "<system>Previous context has been compacted. Here is the compaction output:</system>"
        "\nWe wrote hello.py."
    )
    assert summary is not None and (summary.kind, summary.text) == (
        "compaction",
        "We wrote hello.py.",
    )
    mail = read_system_note(
        "<system>You just got a D-Mail from your future self. D-Mail content:\n\nUse B.</system>"
    )
    assert mail is not None and (mail.kind, mail.text) == ("dmail", "Use B.")
    assert read_system_note("Hello") is None
