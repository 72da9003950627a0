"""Print mode and the offline demo, as a user without any API key meets them."""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kode_tui.cli import main
from kode_tui.config import Config, resolve_model
from kode_tui.message import TextPart
from kode_tui.paths import program
from kode_tui.print_mode import PrintView
from kode_tui.session import Session
from kode_tui.session.state import ModelSpend, SessionSpend
from kode_tui.soul.agent import open_agent
from kode_tui.soul.llm import LLMConnectionError, StreamItem
from kode_tui.soul.llm.demo import INTRO, NOTES_FILE, DemoProvider
from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.soul.stream_json import StreamJson
from kode_tui.wire import events as ev
from kode_tui.wire.recorder import read_wire
from tests.cli_helpers import Kode, in_process
from tests.llm_server import KEY_ENV, LLMServer, write_loopback_config
from tests.soul_helpers import make_rig, print_turn


@pytest.fixture
def project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "README.md").write_text("# Tiny project\n\nIt greets.\n")
    (project / "hello.py").write_text("print('hello')\n")
    return project


@pytest.fixture
def kode(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Kode:
    """`kode-tui ARGS`, run in this process (tests/cli_helpers.py)."""
    return in_process(capsys, monkeypatch)


async def test_with_no_key_and_no_config_the_demo_runs_a_full_turn(project: Path) -> None:
    choice = resolve_model(Config())
    assert choice.is_demo
    session = await Session.create(project)
    agent = await open_agent(session, Config(), choice, provider=DemoProvider(delay=0))
    events: list[ev.Event] = []

    def watch(event: ev.Event) -> None:
        events.append(event)
        if isinstance(event, ev.ApprovalRequest):
            event.resolve("approve")

    seen = agent.bus.subscribe(callback=watch)
    result = await agent.soul.run("What is this project?")
    await seen.join()
    await agent.close()

    assert result.stop_reason == "done"
    text = "".join(e.part.text for e in events if isinstance(e, ev.ContentPart))
    assert INTRO in text and "not an LLM" in text
    calls = [e.function.name for e in events if isinstance(e, ev.ToolCall)]
    assert calls == [
        "SetTodoList",
        "Glob",
        "SetTodoList",
        "ReadFile",
        "SetTodoList",
        "WriteFile",
        "SetTodoList",
    ]
    [request] = [e for e in events if isinstance(e, ev.ApprovalRequest)]
    assert request.tool_name == "WriteFile" and NOTES_FILE in request.description
    notes = (project / NOTES_FILE).read_text()
    assert "What is this project?" in notes and "# Tiny project" in notes
    assert all(todo.status == "done" for todo in session.state.todos)
    assert json.loads(session.state_file.read_text())["todos"][0]["status"] == "done"
    records = [json.loads(line) for line in session.context_file.read_text().splitlines()]
    assert [r["path"] for r in records if r["role"] == "_file_edit"] == [NOTES_FILE]
    kinds = {r.type for r in read_wire(session.wire_file)}
    assert {"TurnBegin", "ToolCall", "ApprovalRequest", "ToolResult", "TurnEnd"} <= kinds


async def test_the_demo_takes_a_rejection_with_feedback(project: Path) -> None:
    session = await Session.create(project)
    agent = await open_agent(
        session, Config(), resolve_model(Config()), provider=DemoProvider(delay=0)
    )
    texts: list[str] = []

    def watch(event: ev.Event) -> None:
        if isinstance(event, ev.ApprovalRequest):
            event.resolve(ev.RejectWithFeedback(feedback="not now"))
        elif isinstance(event, ev.ContentPart):
            texts.append(getattr(event.part, "text", ""))

    seen = agent.bus.subscribe(callback=watch)
    result = await agent.soul.run("hi")
    await seen.join()
    await agent.close()

    assert result.stop_reason == "done"
    assert not (project / NOTES_FILE).exists()
    assert "rejected the edit with feedback" in "".join(texts)


def test_print_mode_streams_the_answer_and_a_line_per_tool_call(project: Path, kode: Kode) -> None:
    done = kode("-p", "Tour, please", "--print", "--yolo", str(project))

    assert done.returncode == 0, done.stderr
    assert "offline demo" in done.stderr and "kode-tui -S " in done.stderr
    lines = done.stdout.splitlines()
    assert "not an LLM" in done.stdout
    assert any(line.startswith("· Glob ") and "✔" in line for line in lines)
    assert any(line.startswith("· ReadFile ") and "README.md" in line for line in lines)
    assert any(line.startswith("· WriteFile ") for line in lines)
    assert (project / NOTES_FILE).exists()


def test_demo_by_name_answers_a_message_given_as_claude_takes_it(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    assert main(["-m", "demo", "--print", "--yolo", "Tour, please"]) == 0
    err = capsys.readouterr().err
    assert err.splitlines()[0] == (
        "kode-tui: this is the offline demo: a scripted agent, not an LLM."
    )
    assert "Tour, please" in (project / NOTES_FILE).read_text()


def test_print_mode_rejects_approvals_without_yolo(project: Path, kode: Kode) -> None:
    done = kode("-p", "Tour, please", "--print", str(project))

    assert done.returncode == 1
    assert "rejected WriteFile" in done.stderr and "--yolo" in done.stderr
    assert any("⊘" in line for line in done.stdout.splitlines() if "WriteFile" in line)
    assert not (project / NOTES_FILE).exists()


def test_print_mode_resumes_a_session_with_continue(project: Path, kode: Kode) -> None:
    first = kode("-p", "first", "--print", "--yolo", str(project))
    assert first.returncode == 0, first.stderr
    session_id = first.stderr.split("kode-tui -S ")[1].split()[0]

    second = kode("-p", "second", "--print", "--yolo", "-C", str(project))
    assert second.returncode == 0, second.stderr
    assert f"kode-tui -S {session_id}" in second.stderr

    by_id = kode("-p", "third", "--print", "--yolo", "-S", session_id, str(project))
    assert by_id.returncode == 0, by_id.stderr
    [context] = Path(os.environ["KODE_TUI_HOME"]).glob(f"sessions/*/{session_id}/context.jsonl")
    users = [
        record["content"]
        for record in map(json.loads, context.read_text().splitlines())
        if record["role"] == "user" and not str(record["content"]).startswith("<system>")
    ]
    assert users == ["first", "second", "third"]


def test_print_mode_reads_the_prompt_from_stdin(project: Path, kode: Kode) -> None:
    done = kode("--print", "--yolo", str(project), stdin="Tour from a pipe\n")
    assert done.returncode == 0, done.stderr
    assert "Tour from a pipe" in (project / NOTES_FILE).read_text()


def test_print_mode_errors_are_one_line(project: Path, home: Path, kode: Kode) -> None:
    empty = kode("--print", str(project), stdin="  \n")
    assert (empty.returncode, empty.stderr) == (2, "kode-tui: the message is empty.\n")

    bad = home / "bad.toml"
    bad.write_text("[loop_control]\nmax_steps_per_run = 'many'\n")
    config_error = kode("-p", "hi", "--print", "--config", str(bad), str(project))
    assert config_error.returncode == 2
    assert config_error.stderr.count("\n") == 1
    assert f"{bad}:2: loop_control.max_steps_per_run" in config_error.stderr

    missing = kode("-p", "hi", "--print", "-S", "nope", str(project))
    assert missing.returncode == 2 and "no session nope" in missing.stderr


def test_print_mode_fails_with_one_line_when_the_model_fails(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from kode_tui.soul.llm import scripted

    def failing_demo(delay: float = 0) -> scripted.ScriptedProvider:
        return scripted.ScriptedProvider([{"error": {"status": 401, "message": "bad key"}}])

    monkeypatch.setattr("kode_tui.print_mode.DemoProvider", failing_demo)
    assert main(["-p", "hi", "--print", str(project)]) == 1
    err = capsys.readouterr().err
    assert err.splitlines()[-2] == "kode-tui: scripted: bad key"
    assert err.splitlines()[-1].startswith(f"kode-tui: resume this session with: {program()} -S ")


def test_context_command_shows_what_the_model_is_given(project: Path, kode: Kode) -> None:
    (project / "AGENTS.md").write_text("Greet politely.\n")
    done = kode("-p", "/context", "--print", str(project))

    assert done.returncode == 0, done.stderr
    out = done.stdout
    # Before the first request: the known prompt (system prompt, project context, tools).
    header, *lines = out.splitlines()
    size = int(header.removeprefix("Context: ").split()[0].replace(",", ""))
    assert size > 0 and header.endswith(" of 128,000 tokens (compacts at 78,000)")
    for block in ("system prompt", "AGENTS.md", "directoryStructure", "readme", "tool definitions"):
        assert any(line.strip().startswith(block) for line in lines), block
    table = lines[lines.index("What the model is given (tokens):") + 1 :]
    rows = table[: next(i for i, line in enumerate(table) if line.strip().startswith("total"))]
    assert sum(int(row.split()[-2].replace(",", "")) for row in rows) == size
    assert "Reminders of the last request:\n  none" in out
    assert "Greet politely." in out.split("System prompt:", 1)[1]


def test_compact_command_in_print_mode(project: Path, kode: Kode) -> None:
    assert kode("-p", "tour", "--print", "--yolo", str(project)).returncode == 0

    done = kode("-p", "/compact keep the README title", "--print", "-C", str(project))

    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Compacted the context: ")
    [context] = Path(os.environ["KODE_TUI_HOME"]).glob("sessions/*/*/context.jsonl")
    assert "The demo cannot summarise" in context.read_text()
    unknown = kode("-p", "/frobnicate", "--print", "-C", str(project))
    assert unknown.returncode == 2 and "/compact" in unknown.stderr


async def test_cost_command_prints_the_sessions_cost_per_model(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = await Session.create(project)
    session.context_file.write_text('{"role":"user","content":"hi"}\n')
    spend = ModelSpend(calls=2, input=40_000, cache_read=30_000, output=2_000, usd=0.042)
    session.state.spend = SessionSpend(models={"openai/gpt-4.1": spend})
    session.save_state()

    assert await asyncio.to_thread(main, ["-p", "/cost", "--print", "-C", str(project)]) == 0

    out = capsys.readouterr().out
    assert out.startswith("Session total: $0.042\n")
    lines = out.splitlines()
    at = lines.index("openai/gpt-4.1  $0.042")
    assert lines[at + 1] == "  2 calls · 40k in (30k cached, 0 written) · 2k out"


# --- what reaches the terminal -------------------------------------------------------------------

HOSTILE = "start\x1b[8mhidden\x1b[0m \x1b]0;pwned\x07 csi\x9b31m cr\rover bidi\u202eevil end"
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""What must not reach stdout or stderr: every control character but the line feed."""


async def test_print_mode_shows_escapes_from_the_model_and_tools_visibly(project: Path) -> None:
    provider = ScriptedProvider(
        [
            {
                "text": f"answer {HOSTILE}",
                "tool_calls": [{"name": "No\x1b[8mTool", "arguments": {"path": "a\x9b31m"}}],
            },
            {"error": {"status": 400, "message": f"bad request {HOSTILE}"}},
        ]
    )
    session = await Session.create(project)
    printed = await print_turn(project, provider, session=session)

    assert printed.status == 1
    for stream in (printed.out, printed.err):
        assert not RAW.findall(stream), stream
    assert (
        "answer start␛[8mhidden␛[0m ␛]0;pwned␇ csi\\x9b31m cr␍over bidi\\u202eevil" in printed.out
    )
    assert "· No␛[8mTool a\\x9b31m  ✘ no such tool" in printed.out
    assert "bad request start␛[8mhidden" in printed.err


async def test_stream_json_keeps_escapes_from_the_model_inside_json_strings(
    project: Path,
) -> None:
    provider = ScriptedProvider(
        [
            {
                "text": f"answer {HOSTILE}",
                "tool_calls": [{"name": "No\x1b[8mTool", "arguments": {"path": "a\x9b31m"}}],
            },
            {"text": "done"},
        ]
    )

    printed = await print_turn(project, provider, output_format="stream-json")

    assert not RAW.findall(printed.out), printed.out
    values = [json.loads(line) for line in printed.out.splitlines()]
    assert f"answer {HOSTILE}" in [value.get("text") for value in values]
    [call] = [value for value in values if value["type"] == "tool_call"]
    assert call["name"] == "No\x1b[8mTool" and call["input"] == {"path": "a\x9b31m"}


def test_print_mode_writes_a_warning_as_one_line_on_stderr() -> None:
    out, err = io.StringIO(), io.StringIO()
    view = PrintView(out, err)

    view(ev.Warning(message="3 damaged lines were skipped\nsee \x1b[31mthe log"))
    view.finish()

    assert out.getvalue() == ""
    assert err.getvalue() == "kode-tui: 3 damaged lines were skipped↵see ␛[31mthe log\n"


class CutFirstAttempt(ScriptedProvider):
    """The first call's stream drops after its first piece of text; later calls are as scripted."""

    def stream(self, *args: Any) -> AsyncIterator[StreamItem]:
        items = super().stream(*args)
        return self._cut(items) if len(self.requests) == 1 else items

    async def _cut(self, items: AsyncIterator[StreamItem]) -> AsyncIterator[StreamItem]:
        async for item in items:
            yield item
            if isinstance(item, TextPart):
                break
        raise LLMConnectionError("the connection dropped mid-answer")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


async def retried_turn(tmp_path: Path, out: io.StringIO) -> str:
    """Run a turn whose first answer is cut and retried; what went to stderr."""
    rig = await make_rig(tmp_path, [])
    rig.soul.provider = CutFirstAttempt(
        [{"text": "This answer will be cut"}, {"text": "retry answer"}]
    )
    err = io.StringIO()
    view = PrintView(out, err)
    shown = rig.bus.subscribe(callback=view)
    result = await rig.soul.run("hi")
    await shown.join()
    view.finish()
    assert result.stop_reason == "done" and rig.of(ev.StepRetry)
    return err.getvalue()


async def test_print_mode_into_a_pipe_writes_only_what_the_final_attempt_said(
    tmp_path: Path,
) -> None:
    out = io.StringIO()

    err = await retried_turn(tmp_path, out)

    assert out.getvalue() == "retry answer\n"
    assert "retrying" in err and "void" not in err


async def test_print_mode_on_a_terminal_marks_the_text_of_a_failed_attempt_void(
    tmp_path: Path,
) -> None:
    out = Terminal()

    err = await retried_turn(tmp_path, out)

    assert out.getvalue() == "This answer will \nretry answer\n"
    assert "the text above from the failed attempt is void" in err


async def test_stream_json_holds_only_what_the_final_attempt_said(tmp_path: Path) -> None:
    rig = await make_rig(tmp_path, [])
    rig.soul.provider = CutFirstAttempt(
        [{"text": "This answer will be cut"}, {"text": "retry answer"}]
    )
    stream = StreamJson()
    values: list[dict[str, Any]] = []
    shown = rig.bus.subscribe(callback=lambda event: values.extend(stream.feed(event)))

    assert (await rig.soul.run("hi")).stop_reason == "done"
    await shown.join()
    values += stream.end()

    types = [value["type"] for value in values]
    assert [value["text"] for value in values if value["type"] == "text"] == ["retry answer"]
    assert types.index("step_retry") < types.index("text")
    [retry] = [value for value in values if value["type"] == "step_retry"]
    assert re.search(r"retrying in [\d.]+ s \(attempt 2 of 10\)$", retry["text"])


async def test_compact_on_a_full_disk_says_so_in_one_line(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    from kode_tui.session import rotation

    session = await Session.create(project)
    provider = ScriptedProvider([{"text": "Hello."}, {"text": "The user said hi."}])
    assert (await print_turn(project, provider, session=session)).status == 0
    before = session.context_file.read_bytes()

    def no_room(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(rotation, "swap", no_room)
    printed = await print_turn(project, provider, "/compact", session=session)

    assert printed.status == 1
    [line] = printed.err.splitlines()
    assert line.startswith("kode-tui: compaction failed: disk full")
    assert session.context_file.read_bytes() == before


async def test_compact_prints_one_after_figure_the_one_the_context_holds(project: Path) -> None:
    session = await Session.create(project)
    provider = ScriptedProvider(
        [{"text": "Hello."}, {"text": "Hi again."}, {"text": "The user said hi twice."}]
    )
    assert (await print_turn(project, provider, session=session)).status == 0
    assert (await print_turn(project, provider, "again", session=session)).status == 0

    printed = await print_turn(project, provider, "/compact", session=session)

    assert printed.status == 0, printed.err
    [line] = printed.out.splitlines()
    after = int(line.rsplit("→ ", 1)[1].removesuffix(" tokens.").replace(",", ""))
    # Not a second, different figure on stderr.
    assert "compacted" not in printed.err.lower()
    last = json.loads(session.context_file.read_text().splitlines()[-1])
    assert last == {"role": "_usage", "token_count": after}


def test_print_mode_attaches_the_work_dirs_images_its_at_mentions_name(
    project: Path, server: LLMServer, home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from PIL import Image

    write_loopback_config(home, server, KEY_ENV)
    Image.new("RGB", (32, 16), "navy").save(project / "shot.png")
    Image.new("RGB", (8, 8), "red").save(project.parent / "outside.png")
    server.reply_text("A navy rectangle.")

    assert main(["-p", "What is @shot.png?", "--print", str(project)]) == 0
    assert capsys.readouterr().out.startswith("A navy rectangle.")
    (user,) = [m for m in server.requests[0]["messages"] if "@shot.png" in str(m["content"])]
    assert user["content"][0] == {"type": "text", "text": "What is @shot.png?"}
    assert [part["type"] for part in user["content"]].count("image_url") == 1

    # Outside the work dir: one line, exit 2, nothing sent.
    assert main(["-p", "And @../outside.png?", "--print", str(project)]) == 2
    assert capsys.readouterr().err == (
        "kode-tui: @../outside.png is outside the work dir: a prompt attaches only the work "
        "dir's images.\n"
    )
    assert len(server.requests) == 1
