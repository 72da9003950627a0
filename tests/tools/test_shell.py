"""Shell: results in Kimi's wording, timeouts and cancellation that leave nothing running, and
the scope "approve for session" covers."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from kode_tui.tools import shell as shell_module
from kode_tui.tools.base import MAX_OUTPUT_CHARS, ToolEnv, ToolError, ToolOutput
from kode_tui.tools.command_scope import scope_of
from kode_tui.tools.shell import OutputBuffer, Shell, ShellParams
from kode_tui.wire.events import ShellBlock


@pytest.fixture
def env(tmp_path: Path) -> ToolEnv:
    work = tmp_path / "work"
    work.mkdir()
    return ToolEnv(work_dir=work)


async def shell(env: ToolEnv, command: str, timeout: int = 60) -> ToolOutput:
    return await Shell().run(ShellParams(command=command, timeout=timeout), env, "call")


def live_members(pgid: int) -> list[int]:
    """Processes of the group that still run (zombies waiting for a reaper do not count)."""
    alive: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state, _ppid, group = stat.rsplit(")", 1)[1].split()[:3]
        if int(group) == pgid and state != "Z":
            alive.append(int(entry.name))
    return alive


async def wait_until_gone(pgid: int, within: float = 3.0) -> list[int]:
    deadline = time.monotonic() + within
    while (alive := live_members(pgid)) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    return alive


async def read_pid(path: Path) -> int:
    for _ in range(3000):
        if path.exists() and path.read_text().strip():
            return int(path.read_text())
        await asyncio.sleep(0.02)
    raise AssertionError(f"{path} was never written")


async def test_shell_runs_in_the_work_dir_and_reports_success(env: ToolEnv) -> None:
    (env.work_dir / "hello.txt").write_text("hi\n")
    result = await shell(env, "pwd; ls")
    assert result.output == f"{env.work_dir}\nhello.txt\n"
    assert result.message == "Command executed successfully."
    assert result.brief == "2 lines of output"
    assert not result.is_error


async def test_shell_merges_stderr_into_the_output(env: ToolEnv) -> None:
    result = await shell(env, "echo out; echo err >&2; echo out2")
    assert result.output == "out\nerr\nout2\n"


async def test_shell_gives_commands_no_input(env: ToolEnv) -> None:
    started = time.monotonic()
    result = await shell(env, "cat; read line || echo no-input")
    assert result.output == "no-input\n"
    assert time.monotonic() - started < 5


async def test_shell_failure_is_an_error_with_kimis_wording_and_the_output(env: ToolEnv) -> None:
    result = await shell(env, "echo partial; exit 3")
    assert result.is_error
    assert result.message == "Command failed with exit code: 3."
    assert result.output == "partial\n"
    assert result.brief == "exit code 3"


async def test_shell_names_the_signal_that_killed_the_command(env: ToolEnv) -> None:
    result = await shell(env, "kill -9 $$")
    assert result.is_error
    assert result.message == "Command failed with exit code: -9. It was killed by signal SIGKILL."


async def test_shell_timeout_kills_the_command_and_keeps_the_output_so_far(
    env: ToolEnv,
) -> None:
    pidfile = env.work_dir / "pgid"
    started = time.monotonic()
    result = await shell(env, f"echo $$ > {pidfile}; echo started; sleep 30 & sleep 30", 1)
    assert time.monotonic() - started < 4
    assert result.is_error
    assert "timed out after 1s" in result.message
    assert result.output == "started\n"
    assert await wait_until_gone(int(pidfile.read_text())) == []


async def test_shell_timeout_kills_processes_that_ignore_sigterm(
    env: ToolEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shell_module, "KILL_GRACE", 0.3)
    pidfile = env.work_dir / "pgid"
    command = f"echo $$ > {pidfile}; trap '' TERM; sleep 30 & sleep 30"
    result = await shell(env, command, 1)
    assert "timed out" in result.message
    assert await wait_until_gone(int(pidfile.read_text())) == []


async def test_shell_cancel_kills_the_whole_process_group(env: ToolEnv) -> None:
    pidfile = env.work_dir / "pgid"
    task = asyncio.create_task(shell(env, f"echo $$ > {pidfile}; sleep 100 & sleep 100"))
    pgid = await read_pid(pidfile)
    assert len(live_members(pgid)) >= 2  # the shell and its sleeps are running
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # Killed before CancelledError reached us: nothing of the group may run now.
    assert await wait_until_gone(pgid, within=0.5) == []


async def test_shell_stops_background_jobs_that_keep_the_output_open(env: ToolEnv) -> None:
    pidfile = env.work_dir / "pgid"
    started = time.monotonic()
    result = await shell(env, f"echo $$ > {pidfile}; sleep 100 & echo done")
    assert time.monotonic() - started < 4
    assert result.output == "done\n"
    assert not result.is_error
    assert "left in the background were stopped" in result.message
    assert await wait_until_gone(int(pidfile.read_text())) == []


async def test_shell_returns_even_when_an_escaped_process_holds_the_output(
    env: ToolEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shell_module, "KILL_GRACE", 0.2)
    pidfile = env.work_dir / "escaped"
    # setsid leaves the process group, so killing the group cannot reach it.
    task = asyncio.create_task(
        shell(env, f"setsid sh -c 'echo $$ > {pidfile}; exec sleep 30' & echo ok")
    )
    pid = await read_pid(pidfile)
    try:
        result = await asyncio.wait_for(task, 20)  # well before the 30 s sleep ends
        assert result.output == "ok\n"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def kill_session(pid: int) -> None:
    """Clean up after a test: `pid` leads the group setsid gave it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def running(pid: int) -> bool:
    """Whether `pid` still runs (a zombie no one reaped yet has stopped running)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def wait_until_stopped(pid: int, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while running(pid) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    return not running(pid)


needs_proc = pytest.mark.skipif(
    not Path("/proc/self/environ").exists() or not hasattr(os, "pidfd_open"),
    reason="finding processes that left the group needs Linux /proc and pidfds",
)


def setsid_sleep(pidfile: Path) -> str:
    """A command part that starts `sleep 300` in a session of its own, its pid in `pidfile`."""
    return f"setsid sh -c 'echo $$ > {pidfile}; exec sleep 300'"


@needs_proc
@pytest.mark.parametrize("form", ["{} & echo ok", "({} &); echo ok", "{} & disown; echo ok"])
async def test_a_setsid_process_holding_the_output_is_stopped_when_the_command_ends(
    env: ToolEnv, form: str
) -> None:
    pidfile = env.work_dir / "pid"
    result = await shell(env, form.format(setsid_sleep(pidfile)))
    pid = await read_pid(pidfile)
    try:
        assert result.output == "ok\n"
        assert "left in the background were stopped" in result.message
        assert await wait_until_stopped(pid)
    finally:
        kill_session(pid)


@needs_proc
async def test_a_setsid_process_with_redirected_output_is_stopped_on_timeout(
    env: ToolEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shell_module, "KILL_GRACE", 0.3)
    pidfile = env.work_dir / "pid"
    result = await shell(env, f"{setsid_sleep(pidfile)} > /dev/null 2>&1 & sleep 30", timeout=1)
    pid = await read_pid(pidfile)
    try:
        assert "timed out" in result.message
        assert await wait_until_stopped(pid)
    finally:
        kill_session(pid)


@needs_proc
async def test_a_setsid_process_that_ignores_sigterm_is_stopped_on_cancel(env: ToolEnv) -> None:
    pidfile = env.work_dir / "pid"
    command = (
        f"setsid sh -c 'trap \"\" TERM; echo $$ > {pidfile}; sleep 300; :' > /dev/null 2>&1 & "
        "sleep 30"
    )
    task = asyncio.create_task(shell(env, command))
    pid = await read_pid(pidfile)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    try:
        assert await wait_until_stopped(pid, within=0.5)
    finally:
        kill_session(pid)


@needs_proc
async def test_a_setsid_process_with_redirected_output_keeps_running_like_any_background_job(
    env: ToolEnv,
) -> None:
    pidfile = env.work_dir / "pid"
    result = await shell(env, f"{setsid_sleep(pidfile)} > /dev/null 2>&1 & echo ok")
    pid = await read_pid(pidfile)
    try:
        assert result.message == "Command executed successfully."
        assert running(pid)
    finally:
        kill_session(pid)


@needs_proc
async def test_background_jobs_a_session_left_running_stop_when_it_closes(env: ToolEnv) -> None:
    tool, other = Shell(), Shell()
    pidfile = env.work_dir / "pid"
    params = ShellParams(command=f"{setsid_sleep(pidfile)} > /dev/null 2>&1 & echo ok")
    await tool.run(params, env, "call")
    setsid_pid = await read_pid(pidfile)
    plain = await tool.run(ShellParams(command="sleep 300 > /dev/null 2>&1 & echo $!"), env, "c2")
    plain_pid = int(plain.output)
    others = await other.run(ShellParams(command="sleep 300 > /dev/null 2>&1 & echo $!"), env, "c3")
    other_pid = int(others.output)
    try:
        assert running(setsid_pid) and running(plain_pid)

        await tool.close()

        assert not running(setsid_pid) and not running(plain_pid)
        assert running(other_pid)  # another session's jobs are its own
    finally:
        kill_session(setsid_pid)
        for pid in (plain_pid, other_pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


async def test_shell_leaves_background_jobs_with_redirected_output_running(env: ToolEnv) -> None:
    result = await shell(env, "sleep 100 > /dev/null 2>&1 & echo $!")
    pid = int(result.output)
    try:
        assert result.message == "Command executed successfully."
        os.kill(pid, 0)  # still running
    finally:
        os.kill(pid, signal.SIGKILL)


async def test_shell_keeps_the_head_and_tail_of_long_output(env: ToolEnv) -> None:
    result = await shell(env, "seq 1 100000")
    assert len(result.output) <= MAX_OUTPUT_CHARS + 100
    lines = result.output.splitlines()
    assert lines[:3] == ["1", "2", "3"]
    assert lines[-1] == "100000"
    assert "bytes of output omitted" in result.output
    assert "Output truncated" in result.message
    assert result.message.startswith("Command executed successfully.")


def test_output_buffer_keeps_everything_below_the_limit() -> None:
    buffer = OutputBuffer(limit=10)
    for chunk in (b"abc", b"def", b"gh"):
        buffer.add(chunk)
    assert not buffer.truncated
    assert buffer.text() == "abcdefgh"
    buffer.add(b"ijklmnop")
    assert buffer.truncated
    assert buffer.text().startswith("abcde")
    assert buffer.text().endswith("lmnop")


async def test_shell_refuses_an_empty_command(env: ToolEnv) -> None:
    with pytest.raises(ToolError, match="empty"):
        await shell(env, "   ")


def test_shell_params_bound_the_timeout() -> None:
    assert ShellParams(command="ls").timeout == 60
    assert ShellParams(command="ls", timeout=300).timeout == 300
    for bad in (0, 301):
        with pytest.raises(ValidationError):
            ShellParams(command="ls", timeout=bad)
    with pytest.raises(ValidationError):
        ShellParams.model_validate({"timeout": 5})


@pytest.mark.parametrize(
    ("command", "scope"),
    [
        ("git status -s", "git status"),
        ("ls -la", "ls"),
        ("ls", "ls"),
        ("  git  log --oneline  ", "git log"),
        ("git --no-pager log -n 3", "git log"),
        ("git log --diff-filter=M", "git log"),
        ("npm run build", "npm run build"),
        ("npm test", "npm test"),
        ("make test", "make test"),
        ("cargo test --release", "cargo test"),
        ("docker compose up -d", None),
        ("python -m pytest -q", "python -m pytest"),
        ("python3 -m http.server 8000", None),
        ("python script.py --fast", None),
        ("uv run pytest -q", "uv run pytest"),
        ("uv run python -c 'import os'", None),
        ("pytest tests/", "pytest"),
        ("python3 -V", None),
        ("Python3 -c x", None),
        ("GIT -c alias.x=!id x", None),
        ("/usr/bin/git -c a=b log", None),
        ("python3 -c 'print(1)'", None),
        ("node -e 'x'", None),
        ("node --eval=x", None),
        ("perl -e 'x'", None),
        ("ruby -e x", None),
        ("php -r x", None),
        ("deno eval x", None),
        ("bun -e x", None),
        ("git -c alias.x='!touch pwned' x", None),
        ("git -C sub status", None),
        ("git --config-env=core.pager=X log", None),
        ("git --exec-path=/tmp log", None),
        ("git x", None),
        ("git config core.fsmonitor x", None),
        ("git rebase -x 'touch p' HEAD~1", None),
        ("git grep -Ovim foo", None),
        ("find . -name x", "find"),
        ("find . -exec rm {} +", None),
        ("find . -execdir rm x ;", None),
        ("find . -okdir rm x", None),
        ("find . -delete", None),
        ("find . -fprint0 out", None),
        ("rg --pre ./p x", None),
        ("tar --to-command=sh -xf a.tar", None),
        ("tar -I sh -xf a.tar", None),
        ("tar -xIsh -f a.tar", None),
        ("tar xIf sh a.tar", None),
        ("tar -czf a.tgz src", "tar"),
        ("rsync -avze sh a b", None),
        ("make SHELL=/tmp/x test", None),
        ("make --eval='x' test", None),
        ("sort --compress-program=sh a", None),
        ("xargs rm", None),
        ("env FOO=1 ls", None),
        ("awk '{print}' a", None),
        ("sed -n 1p a", None),
        ("cat a | grep b", None),
        ("echo hi > out.txt", None),
        ("cat < in.txt", None),
        ("ls 2>/dev/null", None),
        ("cat <<EOF\nx\nEOF", None),
        ("cat <<< x", None),
        ("sleep 1 & rm -rf /", None),
        ("echo $(whoami)", None),
        ("echo `id`", None),
        ("diff <(ls) >(cat)", None),
        ("echo $HOME", None),
        ("echo ${HOME}", None),
        ("ls *.py", None),
        ("ls {a,b}", None),
        ("ls; rm x", None),
        ("ls\nrm x", None),
        ("FOO=1 rm -rf x", None),
        ("sudo rm -rf x", None),
        ("bash -c 'rm -rf x'", None),
        ("echo 'unclosed", None),
        ("ls \x1b[8m", None),
    ],
)
def test_a_session_scope_is_widened_only_when_its_arguments_cannot_carry_code(
    env: ToolEnv, command: str, scope: str | None
) -> None:
    found = scope_of(command, env.work_dir)
    if scope is None:
        assert found.exact
        assert found.key == "shell-exact:" + command.strip()
        assert found.label == "exactly this command"
    else:
        assert not found.exact
        assert found.key == f"shell:{scope}"
        assert found.label == f"`{scope}` with arguments that run nothing else, inside the work dir"


@pytest.mark.parametrize(
    "command",
    [
        "cat /etc/passwd",
        "cat ~/.ssh/id_rsa",
        "cat ../secret",
        "cat sub/../../secret",
        "cat link/secret",
        "grep -r x --include=a /usr",
        "cp a.txt -t/tmp",
        "curl file:///etc/passwd",
        "scp a host:/x && cat /etc/hosts",
        "ls ../*",
        "ls .*/x",
        "/tmp/tool --help",
        "echo hi > /tmp/out",
        "tar -xf a.tar -C /",
        "docker build -v /:/host .",
    ],
)
def test_arguments_that_name_paths_outside_the_work_dir_ask_every_time(
    env: ToolEnv, tmp_path: Path, command: str
) -> None:
    (tmp_path / "outside").mkdir()
    (env.work_dir / "link").symlink_to(tmp_path / "outside")
    assert scope_of(command, env.work_dir).outside


@pytest.mark.parametrize(
    "command",
    [
        "cat README.md",
        "cat ./src/../README.md",
        f"ls {'/'.join(['..', 'work', 'src'])}",
        "ls 2>/dev/null",
        "curl https://example.com/a:b",
        "git log origin/main..HEAD",
        "git diff HEAD~1",
        "ls *.txt",
        "python3 -m pytest -q tests/",
    ],
)
def test_paths_inside_the_work_dir_are_not_outside(env: ToolEnv, command: str) -> None:
    (env.work_dir / "a.txt").write_text("")
    assert not scope_of(command, env.work_dir).outside


async def test_shell_permission_names_the_scope(env: ToolEnv) -> None:
    permission = await Shell().permission(ShellParams(command="git status -s"), env)
    assert permission is not None
    assert permission.kind == "shell"
    assert permission.action == "run command"
    assert permission.description == "git status -s"
    assert permission.scope == "shell:git status"
    assert (
        permission.scope_label
        == "`git status` with arguments that run nothing else, inside the work dir"
    )
    assert permission.display == [ShellBlock(command="git status -s")]
    assert not permission.outside_work_dir


async def test_shell_permission_for_a_compound_command_covers_only_that_command(
    env: ToolEnv,
) -> None:
    permission = await Shell().permission(ShellParams(command="rm -rf x && ls"), env)
    assert permission is not None
    assert permission.scope == "shell-exact:rm -rf x && ls"
    assert permission.scope_label == "exactly this command"
