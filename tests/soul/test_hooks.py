"""Hooks (`[[hooks]]`, kode_tui.soul.hooks) through the facade, with real hook scripts: small
Python programs run by the shell, given the event as JSON on stdin."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from kode_tui.config import Config, ConfigError, HookConfig, ModelChoice, load_config
from kode_tui.soul.facade import AgentSession, CompactionBlocked
from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.wire import events as ev
from kode_tui.wire.records import sidecar_path
from tests.soul_helpers import print_turn

SCRIPTED = ModelChoice(name="scripted", model="scripted", source="flag")


def hook(tmp_path: Path, name: str, body: str) -> str:
    """The command of a hook script named `name`: `event` holds its stdin JSON, `out` is a
    file next to it to write what it saw."""
    script = tmp_path / f"{name}.py"
    out = tmp_path / f"{name}.json"
    script.write_text(
        "import json, sys, os, time\n"
        "event = json.load(sys.stdin)\n"
        f"out = {str(out)!r}\n"
        "def keep():\n"
        "    open(out, 'w').write(json.dumps(event))\n" + body
    )
    return shlex.join([sys.executable, str(script)])


def seen(tmp_path: Path, name: str) -> Any:
    return json.loads((tmp_path / f"{name}.json").read_text())


async def started(
    work_dir: Path, script: list[dict[str, Any]], *hooks: HookConfig, max_context_size: int = 0
) -> tuple[AgentSession, ScriptedProvider, list[ev.Event]]:
    provider = ScriptedProvider(script)
    if max_context_size:
        provider.max_context_size = max_context_size
    opened = await AgentSession.open(work_dir)
    events: list[ev.Event] = []
    opened.bus.subscribe(callback=events.append)
    await opened.start(Config(hooks=list(hooks)), SCRIPTED, provider=provider, yolo=True)
    return opened, provider, events


def shell(command: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "Shell", "arguments": {"command": command}}]}


def runs(events: list[ev.Event]) -> list[ev.HookRan]:
    return [e for e in events if isinstance(e, ev.HookRan)]


async def test_a_pre_tool_use_hook_exiting_2_blocks_the_call_and_the_model_reads_why(
    tmp_path: Path, project: Path
) -> None:
    guard = hook(tmp_path, "guard", "keep()\nprint('no shell today', file=sys.stderr)\nexit(2)\n")
    opened, provider, events = await started(
        project,
        [shell("echo made > made.txt"), {"text": "Understood."}],
        HookConfig(event="PreToolUse", matcher="Shell", command=guard),
    )
    try:
        result = await opened.run("make a file")
    finally:
        await opened.close()

    assert result.stop_reason == "done"  # the turn goes on, as after a rejection with feedback
    assert not (project / "made.txt").exists()
    given = seen(tmp_path, "guard")
    assert given["hook_event_name"] == "PreToolUse"
    assert given["tool_name"] == "Shell"
    assert given["tool_input"] == {"command": "echo made > made.txt"}
    assert given["cwd"] == str(project) and given["session_id"] == opened.id
    [tool_message] = [m for m in provider.requests[1].history if m.role == "tool"]
    assert "no shell today" in tool_message.text
    [ran] = runs(events)
    assert ran.outcome == "blocked" and ran.exit_code == 2
    assert ran.note == "blocked: no shell today"
    assert ran.tool_call_id == given["tool_use_id"]


async def test_hooks_that_exit_0_let_calls_run_and_matchers_choose_the_tools(
    tmp_path: Path, project: Path
) -> None:
    allow = hook(tmp_path, "allow", "keep()\n")
    never = hook(tmp_path, "never", "keep()\nexit(2)\n")
    after = hook(tmp_path, "after", "keep()\n")
    opened, _provider, events = await started(
        project,
        [shell("echo made > made.txt && echo done"), {"text": "Made."}],
        HookConfig(event="PreToolUse", matcher="Sh.ll", command=allow),
        HookConfig(event="PreToolUse", matcher="Write.*|StrReplace.*", command=never),
        HookConfig(event="PostToolUse", command=after),
    )
    try:
        result = await opened.run("make a file")
    finally:
        await opened.close()

    assert result.stop_reason == "done"
    assert (project / "made.txt").read_text() == "made\n"
    assert seen(tmp_path, "allow")["tool_name"] == "Shell"
    assert not (tmp_path / "never.json").exists()
    response = seen(tmp_path, "after")["tool_response"]
    assert response["output"] == "done\n" and response["is_error"] is False
    assert [(r.hook_event, r.outcome) for r in runs(events)] == [
        ("PreToolUse", "ok"),
        ("PostToolUse", "ok"),
    ]


async def test_prompt_and_session_start_hooks_add_their_output_to_what_the_model_reads(
    tmp_path: Path, project: Path
) -> None:
    starts = hook(tmp_path, "starts", "keep()\nprint('on branch main')\n")
    prompt = hook(tmp_path, "prompt", "keep()\nprint('the build is green')\n")
    stop = hook(tmp_path, "stop", "keep()\n")
    opened, provider, _events = await started(
        project,
        [shell("true"), {"text": "Fine."}, {"text": "Again."}],
        HookConfig(event="SessionStart", command=starts),
        HookConfig(event="UserPromptSubmit", command=prompt),
        HookConfig(event="Stop", command=stop),
    )
    try:
        await opened.run("how are things")
        first_turn = len(provider.requests)
        await opened.run("and now")
        report = await opened.context_report()
    finally:
        await opened.close()

    assert seen(tmp_path, "starts")["source"] == "startup"
    assert seen(tmp_path, "prompt")["prompt"] == "and now"
    assert seen(tmp_path, "stop")["stop_reason"] == "done"
    for request in provider.requests[:first_turn]:  # every request of the turn
        user = [m for m in request.history if m.role == "user"][-1]  # where reminders go
        assert "<system-reminder>\non branch main\n</system-reminder>" in user.text
        assert "<system-reminder>\nthe build is green\n</system-reminder>" in user.text
    last = [m for m in provider.requests[-1].history if m.role == "user"][-1]
    assert "the build is green" in last.text and "on branch main" not in last.text
    assert "the build is green" not in opened.session.context_file.read_text()
    assert report is not None
    assert [(r.kind, r.text) for r in report.reminders][:1] == [("hook", "the build is green")]


async def test_a_prompt_hook_exiting_2_keeps_the_prompt_from_being_sent(
    tmp_path: Path, project: Path
) -> None:
    veto = hook(tmp_path, "veto", "print('no secrets in prompts', file=sys.stderr)\nexit(2)\n")
    opened, provider, events = await started(
        project, [{"text": "never"}], HookConfig(event="UserPromptSubmit", command=veto)
    )
    try:
        result = await opened.run("my password is hunter2")
    finally:
        await opened.close()

    assert result.stop_reason == "blocked"
    assert result.error == "A UserPromptSubmit hook blocked the prompt: no secrets in prompts"
    assert provider.requests == []
    assert not [e for e in events if isinstance(e, ev.TurnBegin)]
    # Nothing was said in the session, so it is not kept: the prompt is in no file.
    assert not opened.session.dir.exists()


async def test_a_pre_compact_hook_blocks_compaction_and_post_compact_gets_the_rotation(
    tmp_path: Path, project: Path
) -> None:
    veto = hook(tmp_path, "veto", "keep()\nprint('not now', file=sys.stderr)\nexit(2)\n")
    record = hook(tmp_path, "record", "keep()\n")
    script = [{"text": "one."}, {"text": "two."}, {"text": "SUMMARY"}]
    opened, _provider, _events = await started(
        project, script, HookConfig(event="PreCompact", command=veto)
    )
    try:
        await opened.run("first")
        await opened.run("second")
        before = opened.session.context_file.read_bytes()
        with pytest.raises(CompactionBlocked, match="not now"):
            await opened.compaction.compact()
        assert opened.session.context_file.read_bytes() == before
        assert opened.travel.rotations() == []
        assert seen(tmp_path, "veto")["trigger"] == "manual"
    finally:
        await opened.close()

    again = await AgentSession.open(project, opened.session)
    await again.start(
        Config(hooks=[HookConfig(event="PostCompact", command=record)]),
        SCRIPTED,
        provider=ScriptedProvider([{"text": "SUMMARY"}]),
    )
    try:
        assert await again.compaction.compact()
    finally:
        await again.close()
    given = seen(tmp_path, "record")
    assert given["strategy"] == "LLMSummaryCompaction" and given["trigger"] == "manual"
    assert given["tokens_before"] > given["tokens_after"] > 0
    assert Path(given["rotated_file"]).is_file()
    assert Path(given["rotated_file"]).read_bytes().startswith(before)


async def test_a_turn_whose_compaction_a_hook_blocked_goes_on_uncompacted_and_unasked(
    tmp_path: Path, project: Path
) -> None:
    veto = hook(tmp_path, "veto", "open(out, 'a').write(event['trigger'] + '\\n')\nexit(2)\n")
    script = [{"text": "one."}, shell("true"), {"text": "two."}]
    opened, provider, _events = await started(
        project, script, HookConfig(event="PreCompact", command=veto), max_context_size=1000
    )
    try:
        await opened.run("first")
        report = await opened.context_report()
        assert report is not None and opened.compaction.token_count() >= report.trigger_tokens
        result = await opened.run("second")
    finally:
        await opened.close()

    assert result.stop_reason == "done" and result.steps == 2
    assert (tmp_path / "veto.json").read_text() == "auto\n"  # asked once in the turn
    assert opened.travel.rotations() == []
    assert len(provider.requests) == 3


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


async def test_a_hook_that_fails_or_hangs_is_a_warning_and_the_work_goes_on(
    tmp_path: Path, project: Path
) -> None:
    fails = hook(tmp_path, "fails", "print('lint broke', file=sys.stderr)\nexit(3)\n")
    hangs = hook(tmp_path, "hangs", "open(out, 'w').write(str(os.getpid()))\ntime.sleep(60)\n")
    opened, _provider, events = await started(
        project,
        [shell("echo made > made.txt"), {"text": "Made."}],
        HookConfig(event="PreToolUse", command=fails),
        HookConfig(event="PreToolUse", command=hangs, timeout=0.5),
    )
    try:
        result = await opened.run("make a file")
    finally:
        await opened.close()

    assert result.stop_reason == "done"
    assert (project / "made.txt").exists()
    failed, hung = runs(events)
    assert (failed.outcome, failed.exit_code, failed.note) == ("warning", 3, "exit code 3")
    assert failed.stderr == "lint broke\n"
    assert (hung.outcome, hung.exit_code) == ("warning", None)
    assert hung.note == "timed out after 0.5 s and was killed"
    assert hung.duration_s < 5
    assert _gone(int((tmp_path / "hangs.json").read_text()))


async def test_hook_runs_go_to_the_sidecar_and_show_where_they_ran_when_read_back(
    tmp_path: Path, project: Path
) -> None:
    from kode_tui.ui.widgets.history_blocks import page_blocks

    quiet = hook(tmp_path, "quiet", "pass\n")
    red = hook(tmp_path, "red", "print('\\x1b[31mred')\n")
    opened, _provider, _events = await started(
        project,
        [shell("true"), {"text": "Done."}],
        HookConfig(event="UserPromptSubmit", command=quiet),
        HookConfig(event="PostToolUse", command=red),
        HookConfig(event="Stop", command=quiet),
    )
    try:
        await opened.run("go")
        history, past = await opened.messages()
        wire = opened.session.wire_file
    finally:
        await opened.close()

    assert "HookRan" not in wire.read_text()  # Kimi CLI stops at a type it does not know
    assert "HookRan" in sidecar_path(wire).read_text()
    assert past is not None
    blocks = [make() for make in page_blocks(history, 0, len(history), past)]
    shown = [(type(b).__name__, getattr(b, "title", "")) for b in blocks]
    assert [name for name, _ in shown] == [
        "DetailBlock",
        "UserBlock",
        "ToolBlock",
        "DetailBlock",
        "AnswerBlock",
        "DetailBlock",
    ]
    assert shown[0][1].startswith("hook UserPromptSubmit · exit 0 · ")
    assert shown[0][1].endswith(quiet if len(quiet) <= 40 else "…")
    assert shown[3][1].startswith("hook PostToolUse")
    assert shown[5][1].startswith("hook Stop")
    assert "stdout:\n␛[31mred" in getattr(blocks[3], "text")  # noqa: B009


@pytest.mark.parametrize(
    ("entry", "error"),
    [
        ('event = "PostToolUs"\ncommand = "true"', "4: hooks[0].event: Input should be"),
        (
            'event = "PreToolUse"\nmatcher = "Sh(ell"\ncommand = "true"',
            "5: hooks[0].matcher: not a valid regular expression",
        ),
        (
            'event = "Stop"\nmatcher = "Shell"\ncommand = "true"',
            "5: hooks[0].matcher: a matcher applies only to PreToolUse, PostToolUse, SubagentStart "
            "and SubagentStop hooks",
        ),
        (
            'event = "Stop"\ncommand = "true"\ntimout = 5',
            "6: hooks[0].timout: unknown key; did you mean 'timeout'?",
        ),
    ],
)
def test_a_wrong_hook_entry_is_a_one_line_error_naming_its_line(
    tmp_path: Path, entry: str, error: str
) -> None:
    file = tmp_path / "config.toml"
    file.write_text(f'theme = "kode-dark"\n\n[[hooks]]\n{entry}\n')
    with pytest.raises(ConfigError) as raised:
        load_config(file)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"{file}:{error}")


def test_hook_entries_read_from_the_config(tmp_path: Path) -> None:
    file = tmp_path / "config.toml"
    file.write_text('[[hooks]]\nevent = "PreToolUse"\nmatcher = "Shell"\ncommand = "./check"\n')
    [entry] = load_config(file).hooks
    assert (entry.event, entry.matcher, entry.command, entry.timeout) == (
        "PreToolUse",
        "Shell",
        "./check",
        60,
    )


async def test_print_mode_runs_hooks_and_a_blocked_prompt_is_one_line_and_status_1(
    tmp_path: Path, project: Path
) -> None:
    veto = hook(tmp_path, "veto", "print('not from CI\\nreally', file=sys.stderr)\nexit(2)\n")
    provider = ScriptedProvider([{"text": "never"}])
    config = Config(hooks=[HookConfig(event="UserPromptSubmit", command=veto)])

    printed = await print_turn(project, provider, "deploy", config=config)

    assert printed.status == 1
    assert printed.out == ""
    assert printed.err.splitlines() == [
        f"kode-tui: UserPromptSubmit hook `{veto}`: blocked: not from CI …"
    ]
    assert provider.requests == []


async def test_in_the_tui_a_blocked_prompt_says_why_and_stays_in_the_prompt(
    tmp_path: Path, project: Path
) -> None:
    from kode_tui.ui.widgets.prompt import PromptInput
    from tests.ui_helpers import make_app, ready, screen_text, send, turn_running, wait_for

    veto = hook(tmp_path, "veto", "print('no deploys on Friday', file=sys.stderr)\nexit(2)\n")
    provider = ScriptedProvider([{"text": "never"}])
    config = Config(hooks=[HookConfig(event="UserPromptSubmit", command=veto)])
    app = make_app(project, provider, config)
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        await send(pilot, "deploy")
        await wait_for(pilot, lambda: "blocked: no deploys on Friday" in screen_text(app))
        await wait_for(pilot, lambda: not turn_running(app))
        assert app.screen.query_one(PromptInput).text == "deploy"
    assert provider.requests == []
