"""Background tasks: Shell(run_in_background), TaskList, TaskOutput, TaskStop, the model told
when a task ends, the tasks stopped when the session closes, their output masked, and the
sandbox running a background command beside a foreground one."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from kode_tui import masking
from kode_tui.config import Config
from kode_tui.session import Session
from kode_tui.soul.agent import Agent, open_agent
from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.tools.background import BackgroundTasks
from kode_tui.tools.base import ToolEnv
from kode_tui.tools.files import ReadFile, ReadFileParams
from kode_tui.tools.sandbox import Confinement, Sandbox, support
from kode_tui.tools.shell import Shell, ShellParams
from kode_tui.tools.tasks import TaskList, TaskListParams, TaskOutput, TaskStop
from kode_tui.wire import events as ev
from kode_tui.wire.readings import is_task_notification, read_call, read_system_note
from tests.llm_server import LLMServer, loopback_choice
from tests.soul_helpers import call, make_rig, print_turn, record_events

SECRET_VAR = "KODE_TEST_TASK_SECRET"
WAIT_FOR_GO = "while [ ! -e go ]; do sleep 0.05; done"


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie waiting for its parent does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


async def _until(condition: Any) -> None:
    """Wait for `condition()` (a file a command writes), giving the loop the turn between looks."""
    async with asyncio.timeout(30):
        while not condition():
            await asyncio.sleep(0.02)


def _task_id(events: list[ev.Event]) -> str:
    started = [e for e in events if isinstance(e, ev.BackgroundTaskUpdate)]
    assert started, "no background task started"
    return started[0].task_id


async def _open(project: Path, server: LLMServer) -> tuple[Agent, list[ev.Event]]:
    session = await Session.create(project)
    agent = await open_agent(session, Config(), loopback_choice(server, "KODE_TEST_LLM_KEY"))
    return agent, record_events(agent.bus, "approve")


def _tool_message(request: dict[str, Any], call_id: str) -> str:
    for message in request["messages"]:
        if message.get("role") == "tool" and message.get("tool_call_id") == call_id:
            content = message["content"]
            return content if isinstance(content, str) else json.dumps(content)
    raise AssertionError(f"no result of {call_id}")


async def test_a_background_command_is_read_by_task_output_and_the_model_told_when_it_ends(
    project: Path, server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-task-" + "q7" * 12
    monkeypatch.setenv(SECRET_VAR, secret)
    masking.watch_env([SECRET_VAR])
    masking.refresh()
    agent, events = await _open(project, server)
    try:
        (project / "secret.txt").write_text(f"key {secret}\n")
        command = f"echo hi; cat secret.txt; {WAIT_FOR_GO}; echo done"
        start = {"command": command, "run_in_background": True, "description": "greet"}
        server.reply_tool_calls([("call_bg", "Shell", json.dumps(start))])
        server.reply_text("Started it.")
        await agent.soul.run("start it")
        task_id = _task_id(events)
        started = _tool_message(server.requests[1], "call_bg")
        assert f"task_id: {task_id}" in started and "automatic_notification: true" in started
        assert "status: running" in started and "description: greet" in started

        # The next turn waits on the task; it ends meanwhile, and is told before the next step.
        wait = {"task_id": task_id, "block": True, "timeout": 60}
        server.reply_tool_calls([("call_out", "TaskOutput", json.dumps(wait))])
        server.reply_text("It finished.")
        turn = asyncio.ensure_future(agent.soul.run("wait for it"))
        await _until(
            lambda: any(
                isinstance(e, ev.ToolStarted) and e.tool_call_id == "call_out" for e in events
            )
        )
        (project / "go").touch()
        await turn

        output = _tool_message(server.requests[3], "call_out")
        assert "retrieval_status: success" in output and "status: completed" in output
        assert "[output]\nhi\nkey [masked: KODE_TEST_TASK_SECRET]\ndone" in output
        told = [
            m["content"]
            for m in server.requests[3]["messages"]
            if m["role"] == "user" and f'source_id="{task_id}"' in str(m["content"])
        ]
        assert len(told) == 1
        assert "Status: completed" in str(told[0]) and "Output tail:" in str(told[0])
        assert "key [masked: KODE_TEST_TASK_SECRET]" in str(told[0])
        assert secret not in json.dumps(server.requests[3])
        # Stored as Kimi stores it; read back as the system's note, not the user's words.
        stored = [m.text for m in agent.context.history if is_task_notification(m.text)]
        assert len(stored) == 1
        note = read_system_note(stored[0])
        assert note is not None and note.title == "Background task completed: greet"
        statuses = [e.status for e in events if isinstance(e, ev.BackgroundTaskUpdate)]
        assert statuses == ["running", "completed"]
        # The log is where TaskOutput says, read without asking (the session's own file).
        assert agent.soul.env.tasks is not None
        log = agent.soul.env.tasks.get(task_id)
        assert (
            log is not None
            and log.output_path == agent.session.dir / "tasks" / task_id / "output.log"
        )
        read = ReadFile()
        params = ReadFileParams(path=str(log.output_path))
        assert await read.permission(params, agent.soul.env) is None
        spec = ReadFileParams(path=str(log.output_path.parent / "spec.json"))
        assert await read.permission(spec, agent.soul.env) is not None
    finally:
        await agent.close()
        masking.forget(SECRET_VAR)


def _sleeping(seconds: int) -> bool:
    """Whether a `sleep SECONDS` runs on the machine (its pid inside a sandbox is not ours)."""
    wanted = f"sleep\0{seconds}\0".encode()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_bytes() == wanted and _alive(int(entry.name)):
                    return True
            except OSError:
                continue
    return False


async def test_task_stop_and_closing_the_session_kill_background_commands(
    project: Path, server: LLMServer
) -> None:
    # Durations no other test uses: the processes are found by their command line.
    first, second = 7301, 7302
    agent, events = await _open(project, server)
    closed = False
    try:
        starts = [
            (
                f"call_{seconds}",
                "Shell",
                json.dumps(
                    {
                        "command": f"sleep {seconds} & wait",
                        "run_in_background": True,
                        "description": f"sleep {seconds}",
                    }
                ),
            )
            for seconds in (first, second)
        ]
        server.reply_tool_calls(starts)
        server.reply_text("Both run.")
        await agent.soul.run("start two")
        await _until(lambda: _sleeping(first) and _sleeping(second))
        ids = [e.task_id for e in events if isinstance(e, ev.BackgroundTaskUpdate)]

        server.reply_tool_calls([("call_stop", "TaskStop", json.dumps({"task_id": ids[0]}))])
        server.reply_text("Stopped one.")
        await agent.soul.run("stop the first")
        stopped = _tool_message(server.requests[3], "call_stop")
        assert "status: killed" in stopped and "reason: Stopped by TaskStop" in stopped
        assert not _sleeping(first) and _sleeping(second)

        await agent.close()
        closed = True
        assert not _sleeping(second)
        ended = {e.task_id: e.status for e in events if isinstance(e, ev.BackgroundTaskUpdate)}
        assert ended == {ids[0]: "killed", ids[1]: "killed"}
    finally:
        if not closed:
            await agent.close()


async def test_shell_checks_background_arguments_as_kimi_and_task_list_lists(
    tmp_path: Path,
) -> None:
    rig = await make_rig(
        tmp_path,
        [
            {
                "tool_calls": [
                    call("Shell", command="true", run_in_background=True),
                    call("Shell", command="true", timeout=600),
                    call("Shell", command="echo x", run_in_background=True, description="x"),
                ]
            },
            {"tool_calls": [call("TaskList", active_only=False)]},
            {"text": "ok"},
        ],
        tools=[Shell(), TaskList()],
        tasks=True,
    )
    await rig.soul.run("go")
    results = rig.of(ev.ToolResult)
    assert "description is required when run_in_background is true" in results[0].message
    assert "timeout must be <= 300s for foreground commands" in results[1].message
    assert results[2].message == "Background task started"
    assert rig.soul.env.tasks is not None
    (view,) = rig.soul.env.tasks.list_tasks(active_only=False)
    await rig.soul.env.tasks.wait(view.id, 30)
    listing = results[3].output
    assert listing.startswith("background_tasks: 1\n\n[1]\ntask_id: bash-")
    assert "command: echo x" in listing
    stop = await TaskStop().permission(TaskStop.params(task_id=view.id), rig.soul.env)
    assert stop is not None and stop.kind != "read" and stop.action == "stop background task"
    assert await TaskList().permission(TaskListParams(), rig.soul.env) is None


@pytest.mark.skipif(not support().available, reason="bubblewrap cannot run here")
async def test_a_foreground_command_beside_a_sandboxed_background_one_keeps_protection(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    program = support().program
    assert program is not None
    sandbox = Sandbox(program, work, refused_dir=tmp_path / "refused")
    tasks = BackgroundTasks(tmp_path / "tasks")
    env = ToolEnv(work_dir=work, sandbox=Confinement(sandbox, "workspace"), tasks=tasks)
    shell = Shell(sandboxed=True)
    try:
        background = ShellParams(
            command=f"touch .envrc created; {WAIT_FOR_GO}; echo bye",
            run_in_background=True,
            description="plant",
        )
        started = await shell.run(background, env, "call_bg")
        (view,) = tasks.list_tasks()
        await _until(lambda: (work / "created").exists())
        # The foreground command's prepare must not take the task's .envrc as the user's.
        foreground = await shell.run(ShellParams(command="echo fg"), env, "call_fg")
        assert foreground.output == "fg\n"
        assert ".envrc" in foreground.message
        (work / "go").touch()
        ended = await tasks.wait(view.id, 30)
        assert ended.status == "completed" and started.message == "Background task started"
        assert not (work / ".envrc").exists()
        assert "bye" in ended.output_path.read_text()
    finally:
        await tasks.close()
        await sandbox.close()


async def test_tasks_lists_in_print_mode(project: Path) -> None:
    printed = await print_turn(project, ScriptedProvider([]), "/tasks")
    assert printed.status == 0
    assert "No background tasks in this session." in printed.out


async def test_esc_while_task_output_waits_ends_the_turn_and_leaves_the_task_running(
    tmp_path: Path,
) -> None:
    start = call("Shell", command=WAIT_FOR_GO, run_in_background=True, description="wait")
    rig = await make_rig(
        tmp_path,
        [{"tool_calls": [start]}, {"text": "started"}],
        tools=[Shell(), TaskOutput()],
        tasks=True,
    )
    await rig.soul.run("start")
    tasks = rig.soul.env.tasks
    assert tasks is not None
    (view,) = tasks.list_tasks()
    rig.provider.script.append({"tool_calls": [call("TaskOutput", task_id=view.id, block=True)]})
    turn = asyncio.ensure_future(rig.soul.run("wait"))
    await _until(lambda: bool(rig.of(ev.ToolStarted)) and len(rig.of(ev.ToolStarted)) == 2)
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    current = tasks.get(view.id)
    assert current is not None and current.status == "running"
    (rig.work_dir / "go").touch()
    assert (await tasks.wait(view.id, 30)).status == "completed"


def test_task_calls_read_by_their_command_or_task_id() -> None:
    start = {"command": "make serve", "run_in_background": True, "description": "server"}
    assert read_call("Shell", json.dumps(start)).title == "Shell: make serve (background)"
    assert (
        read_call("TaskOutput", '{"task_id": "bash-1a2b3c4d"}').title == "TaskOutput bash-1a2b3c4d"
    )


def _stored_task(tasks: Path, task_id: str, status: str, output: str) -> None:
    """A task folder as Kimi CLI 1.52 leaves it (its spec.json and runtime.json keys)."""
    folder = tasks / task_id
    folder.mkdir(parents=True)
    spec = {
        "version": 1, "id": task_id, "kind": "bash", "session_id": "s",
        "description": f"{task_id} job", "tool_call_id": "c", "owner_role": "root",
        "created_at": 1000.0 + len(status), "command": f"echo {task_id}", "shell_name": "bash",
        "timeout_s": 60, "kind_payload": None,
    }  # fmt: skip
    runtime = {"status": status, "worker_pid": 1, "started_at": 1000.0, "exit_code": None}
    (folder / "spec.json").write_text(json.dumps(spec))
    (folder / "runtime.json").write_text(json.dumps(runtime))
    (folder / "output.log").write_text(output)


async def test_tasks_an_earlier_run_left_are_listed_and_read_when_the_session_goes_on(
    tmp_path: Path,
) -> None:
    """A continued session (Kimi CLI's or ours) keeps its tasks: TaskList and TaskOutput see
    them; one that was running when its process ended is `lost` (no job outlives it); a
    folder that is no task is skipped."""
    tasks = tmp_path / "session" / "tasks"
    _stored_task(tasks, "bash-done0001", "killed", "started\n")
    _stored_task(tasks, "bash-left0002", "running", "half of it\n")
    (tasks / "bash-broken03").mkdir()
    (tasks / "bash-broken03" / "spec.json").write_text("{not json")
    rig = await make_rig(
        tmp_path,
        [
            {
                "tool_calls": [
                    call("TaskList", active_only=False),
                    call("TaskOutput", task_id="bash-left0002"),
                    call("TaskStop", task_id="bash-done0001"),
                ]
            },
            {"text": "ok"},
        ],
        tools=[TaskList(), TaskOutput(), TaskStop()],
        tasks=True,
    )
    await rig.soul.run("go on")

    listed, output, stopped = rig.of(ev.ToolResult)
    assert listed.output.startswith("background_tasks: 2\n")
    assert "task_id: bash-left0002" in listed.output and "status: lost" in listed.output
    assert "task_id: bash-done0001" in listed.output and "bash-broken03" not in listed.output
    assert not output.is_error and "half of it" in output.output
    assert "status: lost" in output.output
    assert not stopped.is_error, stopped.message
    assert rig.soul.env.tasks is not None
    assert rig.soul.env.tasks.list_tasks() == []  # nothing of theirs runs now
