"""Print mode's JSON formats: `--output-format json|stream-json`, `--input-format stream-json`,
as a script reads them."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kode_tui import masking
from kode_tui.cli import main
from kode_tui.session import Session
from kode_tui.soul.llm.scripted import ScriptedProvider
from tests.llm_server import KEY_ENV, LLMServer, write_loopback_config
from tests.soul_helpers import print_turn

THINK = "The user wants the README read, so I will read it and then say what it holds."
SAID = "Let me read the README first, then I will tell you what this project is about."


def lines_of(out: str) -> list[dict[str, Any]]:
    """Every line of stdout, parsed: any line that is not a JSON object fails the test."""
    values = [json.loads(line) for line in out.splitlines()]
    assert all(isinstance(value, dict) and "type" in value for value in values)
    return values


async def session_exists(project: Path, session_id: str) -> bool:
    return await Session.find(project, session_id) is not None


async def test_stream_json_writes_each_event_as_a_json_line_ending_with_the_result(
    project: Path,
) -> None:
    provider = ScriptedProvider(
        [
            {
                "think": THINK,
                "text": SAID,
                "tool_calls": [{"name": "ReadFile", "arguments": {"path": "README.md"}}],
            },
            {"text": "It is a tiny project that greets."},
        ]
    )

    printed = await print_turn(project, provider, "What is it?", output_format="stream-json")

    assert printed.status == 0, printed.err
    values = lines_of(printed.out)
    types = [v["type"] for v in values]
    turn = types[types.index("turn_begin") :]
    assert [
        t for t in turn if t not in ("status_update", "checkpoint_created", "system_reminders")
    ] == [
        "turn_begin",
        "step_begin",
        "thinking",
        "text",
        "tool_call",
        "tool_started",
        "tool_result",
        "step_begin",
        "text",
        "turn_end",
        "result",
    ]
    # The deltas of each part are one object; the call's argument pieces are merged.
    assert [v["thinking"] for v in values if v["type"] == "thinking"] == [THINK]
    assert [v["text"] for v in values if v["type"] == "text"] == [
        SAID,
        "It is a tiny project that greets.",
    ]
    [call] = [v for v in values if v["type"] == "tool_call"]
    assert (call["name"], call["input"]) == ("ReadFile", {"path": "README.md"})
    assert json.loads(call["arguments"]) == {"path": "README.md"}
    assert call["title"] == "ReadFile README.md"  # as every front end reads it
    [started] = [v for v in values if v["type"] == "tool_started"]
    [result] = [v for v in values if v["type"] == "tool_result"]
    assert result["tool_call_id"] == call["id"] == started["tool_call_id"]
    assert "Tiny project" in result["output"]
    assert (result["status"], result["summary"]) == ("ok", "1 line")  # ReadFile's brief
    final = values[-1]
    assert final["is_error"] is False and final["stop_reason"] == "done"
    assert final["result"] == "It is a tiny project that greets."
    assert final["num_turns"] == 2 and final["usage"]["input"] > 0 and final["usage"]["output"] > 0
    assert final["cost_usd"] is None  # the scripted model has no price
    assert await session_exists(project, final["session_id"])
    assert printed.err == ""


async def test_stream_json_masks_api_keys(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ODD_API_KEY", "sk-odd-key-0123456789")
    masking.refresh()
    provider = ScriptedProvider([{"text": "Your key is sk-odd-key-0123456789, I think."}])

    printed = await print_turn(project, provider, output_format="stream-json")

    assert "sk-odd-key" not in printed.out
    assert lines_of(printed.out)[-1]["result"] == "Your key is [masked: ODD_API_KEY], I think."


async def test_a_failed_turn_ends_with_an_error_result_and_exit_status_1(project: Path) -> None:
    provider = ScriptedProvider([{"error": {"status": 401, "message": "bad key"}}])

    printed = await print_turn(project, provider, output_format="stream-json")

    assert printed.status == 1
    values = lines_of(printed.out)
    assert "error" in [v["type"] for v in values]
    final = values[-1]
    assert final["type"] == "result" and final["is_error"] is True
    assert final["stop_reason"] == "error" and "bad key" in final["error"]
    assert printed.err == f"kode-tui: {final['error']}\n"
    assert await session_exists(project, final["session_id"])


async def test_a_rejected_approval_shows_as_request_and_resolution(project: Path) -> None:
    provider = ScriptedProvider(
        [{"tool_calls": [{"name": "WriteFile", "arguments": {"path": "a.txt", "content": "x"}}]}]
    )

    printed = await print_turn(project, provider, output_format="stream-json")

    assert printed.status == 1
    values = lines_of(printed.out)
    [request] = [v for v in values if v["type"] == "approval_request"]
    [resolved] = [v for v in values if v["type"] == "approval_resolved"]
    assert request["tool_name"] == "WriteFile" and resolved == {
        "type": "approval_resolved",
        "id": request["id"],
        "response": "reject",
    }
    assert values[-1]["stop_reason"] == "rejected" and values[-1]["is_error"] is True
    assert not (project / "a.txt").exists()


async def test_json_writes_one_object_with_the_messages_of_the_turn(project: Path) -> None:
    session = await Session.create(project)
    provider = ScriptedProvider([{"text": "First answer."}, {"text": "Second answer."}])
    assert (await print_turn(project, provider, "first", session=session)).status == 0

    printed = await print_turn(project, provider, "second", session=session, output_format="json")

    assert printed.status == 0, printed.err
    [value] = lines_of(printed.out)
    assert value["type"] == "result" and value["session_id"] == session.id
    assert value["result"] == "Second answer."
    messages = value["messages"]
    said = [m["content"] for m in messages if m["role"] == "user"]
    assert [text for text in said if not text.startswith("<system>")] == ["second"]
    assert messages[-1] == {"role": "assistant", "content": "Second answer."}
    assert "First answer." not in json.dumps(messages)


async def test_context_and_cost_commands_give_their_report_as_data(project: Path) -> None:
    provider = ScriptedProvider([])
    session = await Session.create(project)

    context = await print_turn(project, provider, "/context", session=session, output_format="json")
    cost = await print_turn(project, provider, "/cost", session=session, output_format="json")
    unknown = await print_turn(
        project, provider, "/frobnicate", session=session, output_format="json"
    )

    [report] = lines_of(context.out)
    assert report["result"].startswith("Context: ")
    assert report["context"]["context_tokens"] > 0 and report["context"]["rows"]
    [spent] = lines_of(cost.out)
    assert spent["cost"]["counted"] is False and spent["result"].startswith("No cost")
    assert unknown.status == 2
    [failed] = lines_of(unknown.out)
    assert failed["is_error"] is True and "unknown command /frobnicate" in failed["error"]
    assert unknown.err.startswith("kode-tui: unknown command /frobnicate")


async def test_compact_and_custom_commands_stream_their_events(project: Path) -> None:
    (project / ".kode/commands").mkdir(parents=True)
    (project / ".kode/commands/greet.md").write_text("Greet $ARGUMENTS warmly.")
    provider = ScriptedProvider([{"text": "Hello, Ada!"}, {"text": "The user was greeted."}])
    messages = io.StringIO(
        '{"type": "user", "content": "/greet Ada"}\n{"type": "user", "content": "/compact"}\n'
    )

    printed = await print_turn(
        project, provider, "", output_format="stream-json", messages=messages
    )

    assert printed.status == 0, printed.err
    values = lines_of(printed.out)
    types = [v["type"] for v in values]
    [sent] = [v for v in values if v["type"] == "command_sent"]
    assert (sent["command"], sent["arguments"]) == ("/greet", "Ada")
    assert types.index("command_sent") < types.index("turn_begin")
    assert types.index("compaction_begin") < types.index("compaction_end")
    first, second = [v for v in values if v["type"] == "result"]
    assert first["result"] == "Hello, Ada!"
    assert second["result"].startswith("Compacted the context: ")
    assert types[-1] == "result" and types.index("compaction_end") < len(types) - 1


async def test_stream_json_input_runs_each_message_as_a_turn_of_one_session(
    project: Path,
) -> None:
    provider = ScriptedProvider([{"text": "One."}, {"text": "Two."}])
    messages = io.StringIO(
        '{"type": "user", "message": {"role": "user", "content": "first"}}\n'
        "not json\n"
        "\n"
        '{"type": "user", "content": [{"type": "text", "text": "second"}]}\n'
    )

    printed = await print_turn(
        project, provider, "", output_format="stream-json", messages=messages
    )

    assert printed.status == 2  # the bad line; the turns after it ran
    shown = lines_of(printed.out)
    # Each message ends with its result: nothing of a settling session comes after it.
    assert shown[-1]["type"] == "result"
    after = [shown[i + 1]["type"] for i, v in enumerate(shown[:-1]) if v["type"] == "result"]
    assert "status_update" not in after, after
    results = [v for v in shown if v["type"] == "result"]
    assert [(r["is_error"], r["result"]) for r in results] == [
        (False, "One."),
        (True, ""),
        (False, "Two."),
    ]
    assert results[1]["error"] == "line 2 of stdin: not JSON"
    assert printed.err == "kode-tui: line 2 of stdin: not JSON\n"
    [session_id] = {r["session_id"] for r in results}
    session = await Session.find(project, session_id)
    assert session is not None
    users = [
        record["content"]
        for record in map(json.loads, session.context_file.read_text().splitlines())
        if record["role"] == "user" and not str(record["content"]).startswith("<system>")
    ]
    assert users == ["first", "second"]


def test_a_bad_format_or_an_error_before_any_session_is_one_line_on_stderr(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["-p", "hi", "--print", "--output-format", "yaml", str(project)])
    assert exited.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith("kode-tui: argument --output-format: invalid choice: 'yaml'")

    bad = tmp_path / "bad.toml"
    bad.write_text("[loop_control]\nmax_steps_per_run = 'many'\n")
    args = ["-p", "hi", "--print", "--output-format", "stream-json", "--config", str(bad)]
    assert main([*args, str(project)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "max_steps_per_run" in err

    assert main(["--output-format", "json", str(project)]) == 2
    wrong = "kode-tui: --output-format and --input-format go with --print.\n"
    assert capsys.readouterr().err == wrong
    assert main(["--print", "--input-format", "stream-json", str(project)]) == 2
    wrong = "kode-tui: --input-format stream-json needs --output-format stream-json.\n"
    assert capsys.readouterr().err == wrong


def test_the_command_streams_turns_of_a_real_model_read_from_stdin(
    project: Path, server: LLMServer, home: Path
) -> None:
    write_loopback_config(home, server, KEY_ENV)
    server.reply_tool_calls(
        [("call_g", "Glob", json.dumps({"pattern": "*.md"}))], text="Looking.", usage=(100, 10)
    )
    server.reply_reasoning(
        "Only the README is there.", "One Markdown file: README.md.", usage=(150, 12)
    )
    server.reply_text("Second turn.", usage=(200, 5))
    messages = "".join(
        json.dumps({"type": "user", "message": {"role": "user", "content": text}}) + "\n"
        for text in ("Which docs are there?", "And now?")
    )

    done = subprocess.run(
        [
            *(sys.executable, "-m", "kode_tui", "--print", str(project)),
            *("--input-format", "stream-json", "--output-format", "stream-json"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        input=messages,
        env={**os.environ},
    )

    assert done.returncode == 0, done.stderr
    values = lines_of(done.stdout)
    assert [v["thinking"] for v in values if v["type"] == "thinking"] == [
        "Only the README is there."
    ]
    assert [v["text"] for v in values if v["type"] == "text"] == [
        "Looking.",
        "One Markdown file: README.md.",
        "Second turn.",
    ]
    [call] = [v for v in values if v["type"] == "tool_call"]
    assert (call["id"], call["input"]) == ("call_g", {"pattern": "*.md"})
    first, second = [v for v in values if v["type"] == "result"]
    assert (first["result"], second["result"]) == ("One Markdown file: README.md.", "Second turn.")
    assert first["usage"]["input"] == 250 and first["usage"]["output"] == 22
    assert first["num_turns"] == 2 and first["cost_usd"] is None  # no price for test-model
    assert first["session_id"] == second["session_id"]
    [context] = Path(os.environ["KODE_TUI_HOME"]).glob(
        f"sessions/*/{first['session_id']}/context.jsonl"
    )
    assert "Which docs are there?" in context.read_text() and "And now?" in context.read_text()


def test_a_status_update_after_a_result_is_not_written_after_it() -> None:
    from kode_tui.print_mode import JsonView
    from kode_tui.wire import events as ev

    out = io.StringIO()
    # The view's session is only read for results; this test writes one itself.
    view = JsonView(None, out, io.StringIO(), stream=True)  # type: ignore[arg-type]
    view(ev.StatusUpdate(context_tokens=10, max_context_tokens=100))
    view._write({"type": "result"}, final=True)
    view(ev.StatusUpdate(context_tokens=12, max_context_tokens=100))  # the session settling

    assert [json.loads(line)["type"] for line in out.getvalue().splitlines()] == [
        "status_update",
        "result",
    ]


async def test_stream_json_marks_a_subagents_objects_with_the_agent_call(project: Path) -> None:
    summary = "The README says this is a tiny project that greets. " * 5
    provider = ScriptedProvider(
        [
            {
                "tool_calls": [
                    {
                        "name": "Agent",
                        "arguments": {
                            "description": "Read README",
                            "prompt": "Read README.md",
                            "subagent_type": "explore",
                        },
                    }
                ]
            },
            {
                "text": "Reading.",
                "tool_calls": [{"name": "ReadFile", "arguments": {"path": "README.md"}}],
            },
            {"text": summary},
            {"text": "It greets."},
        ]
    )

    printed = await print_turn(project, provider, "What is it?", output_format="stream-json")

    assert printed.status == 0, printed.err
    values = lines_of(printed.out)
    [agent_call] = [
        v for v in values if v["type"] == "tool_call" and "parent_tool_call_id" not in v
    ]
    assert agent_call["name"] == "Agent"
    sub = [v for v in values if v.get("parent_tool_call_id") == agent_call["id"]]
    assert {(v["agent_id"], v["subagent_type"]) for v in sub} == {(sub[0]["agent_id"], "explore")}
    # The subagent's objects, merged as the parent's are, before the Agent call's result.
    noise = ("status_update", "checkpoint_created", "system_reminders")
    assert [v["type"] for v in sub if v["type"] not in noise] == [
        "turn_begin",
        "step_begin",
        "text",
        "tool_call",
        "tool_started",
        "tool_result",
        "step_begin",
        "text",
        "turn_end",
    ]
    [read] = [v for v in sub if v["type"] == "tool_call"]
    assert (read["name"], read["input"]) == ("ReadFile", {"path": "README.md"})
    assert [v["text"] for v in sub if v["type"] == "text"] == ["Reading.", summary]
    [agent_result] = [
        i
        for i, v in enumerate(values)
        if v["type"] == "tool_result" and v["tool_call_id"] == agent_call["id"]
    ]
    assert values.index(sub[-1]) < agent_result
    # The parent's own answer is not the subagent's; its usage counts the subagent's model
    # calls too, as its cost does (four calls: two of each).
    assert values[-1]["result"] == "It greets."
    reported = [v["usage"]["input"] for v in values if v["type"] == "status_update" and v["usage"]]
    assert len(reported) == 4
    assert values[-1]["usage"]["input"] == sum(reported)


async def test_a_background_task_stopped_as_the_run_ends_leaves_the_result_last(
    project: Path, home: Path
) -> None:
    provider = ScriptedProvider(
        [
            {
                "tool_calls": [
                    {
                        "name": "Shell",
                        "arguments": {
                            "command": "sleep 60",
                            "run_in_background": True,
                            "description": "a long sleep",
                        },
                    }
                ]
            },
            {"text": "Started it."},
        ]
    )

    printed = await print_turn(project, provider, "Sleep", output_format="stream-json", yolo=True)

    assert printed.status == 0, printed.err
    values = lines_of(printed.out)
    started = next(v for v in values if v["type"] == "background_task_update")
    assert started["status"] == "running"
    # The task is killed when the session closes, after the result: a script reading the
    # last line as the result still finds it there (the session's records keep the kill).
    assert values[-1]["type"] == "result" and values[-1]["result"] == "Started it."
    [runtime] = home.glob(f"sessions/*/*/tasks/{started['task_id']}/runtime.json")
    assert json.loads(runtime.read_text())["status"] == "killed"


def test_stream_json_input_takes_claude_codes_image_blocks(
    project: Path,
    server: LLMServer,
    home: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import base64

    from PIL import Image

    write_loopback_config(home, server, KEY_ENV)
    server.reply_text("A navy rectangle.")
    png = io.BytesIO()
    Image.new("RGB", (32, 16), "navy").save(png, format="PNG")
    image = {
        "type": "image",
        "source": {
            "type": "base64",
            "media_type": "image/png",
            "data": base64.b64encode(png.getvalue()).decode(),
        },
    }
    lines = [
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [image, {"type": "text", "text": "What is it?"}],
            },
        },
        {
            "type": "user",
            "content": [{**image, "source": {**image["source"], "data": "bm90IGFuIGltYWdl"}}],
        },
        {
            "type": "user",
            "content": [{"type": "image", "source": {"type": "url", "url": "https://x"}}],
        },
    ]
    monkeypatch.setattr(
        sys, "stdin", io.StringIO("".join(json.dumps(line) + "\n" for line in lines))
    )
    status = main(
        [
            *("--print", str(project)),
            *("--input-format", "stream-json", "--output-format", "stream-json"),
        ]
    )
    out, err = capsys.readouterr()
    assert status == 2, err
    results = [line for line in lines_of(out) if line["type"] == "result"]
    assert [r["is_error"] for r in results] == [False, True, True]
    assert results[0]["result"] == "A navy rectangle."
    assert "line 2 of stdin: " in results[1]["error"] and "image" in results[1]["error"]
    assert (
        results[2]["error"] == 'line 3 of stdin: an image block needs a base64 "source" (no URLs)'
    )
    assert len(server.requests) == 1
    (sent,) = [m for m in server.requests[0]["messages"] if "What is it?" in str(m["content"])]
    assert [part["type"] for part in sent["content"]] == ["text", "text", "image_url", "text"]
