"""The Shell sandbox (kode_tui/tools/sandbox.py): what a command can and cannot do inside it,
in both profiles, and how the soul, the modes and a machine without bubblewrap treat it."""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from kode_tui.config import Config, SandboxConfig, resolve_model
from kode_tui.paths import home as kode_home
from kode_tui.session import Session
from kode_tui.session.state import SessionState
from kode_tui.soul.agent import open_agent
from kode_tui.soul.approval import Approval
from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.tools.base import ToolEnv, ToolOutput
from kode_tui.tools.sandbox import (
    Confinement,
    Profile,
    Sandbox,
    Settings,
    Support,
    check,
    check_in_background,
    support,
)
from kode_tui.tools.shell import Escapees, Shell, ShellParams
from kode_tui.wire import WireBus
from kode_tui.wire import events as ev

SUPPORT = support()
needs_bwrap = pytest.mark.skipif(
    not SUPPORT.available, reason=SUPPORT.problem or "bubblewrap cannot run here"
)
PROFILES: list[Profile] = ["workspace", "open"]
FSMONITOR = '[core]\n\tfsmonitor = "touch /tmp/pwned"\n'


def git(work: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=work,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with one committed file, `a.txt`."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text("alpha\n")
    git(work, "init", "-q")
    git(work, "add", "a.txt")
    git(work, "commit", "-qm", "first")
    return work


@pytest.fixture
async def sandbox(repo: Path, tmp_path: Path) -> AsyncIterator[Sandbox]:
    assert SUPPORT.program is not None
    made = Sandbox(
        SUPPORT.program, repo, refused_dir=tmp_path / "refused", private_homes=[kode_home()]
    )
    yield made
    await made.close()


Run = Callable[..., Any]


@pytest.fixture
def run(repo: Path, sandbox: Sandbox) -> Run:
    shell = Shell(sandboxed=True)

    async def run(command: str, profile: Profile = "workspace") -> ToolOutput:
        env = ToolEnv(work_dir=repo, sandbox=Confinement(sandbox, profile))
        return await shell.run(ShellParams(command=command), env, "call")

    run.shell = shell  # type: ignore[attr-defined]
    return run


# --- what the kernel refuses -------------------------------------------------------------------


@needs_bwrap
@pytest.mark.parametrize("profile", PROFILES)
async def test_a_bundled_option_cannot_write_git_config(
    repo: Path, run: Run, profile: Profile
) -> None:
    config = (repo / ".git" / "config").read_bytes()
    (repo / "p.txt").write_text(FSMONITOR)

    result = await run("sort -uo.git/config p.txt", profile)

    assert (repo / ".git" / "config").read_bytes() == config
    assert result.is_error
    assert "read-only" in result.blocked


@needs_bwrap
@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize(
    ("command", "created"),
    [
        ("touch .envrc", ".envrc"),
        ("mkdir -p .husky && cp a.txt .husky/pre-commit", ".husky"),
        ("sort -uo.npmrc a.txt", ".npmrc"),
        ("mkdir -p sub/deep && touch sub/deep/x.pth", "sub/deep/x.pth"),
        ("ln -s a.txt .envrc", ".envrc"),
        ("git init -q nested", "nested/.git"),
        ("mkdir -p .vscode && echo '{}' > .vscode/tasks.json", ".vscode"),
    ],
)
async def test_a_protected_path_a_command_creates_is_taken_away_and_kept_aside(
    repo: Path, tmp_path: Path, run: Run, profile: Profile, command: str, created: str
) -> None:
    result = await run(command, profile)

    assert not os.path.lexists(repo / created)
    kept = [path for path in (tmp_path / "refused").rglob("*") if path.name == Path(created).name]
    assert kept, "moved into the session's refused/ folder, not deleted"
    assert created in result.blocked
    assert created in result.message


@needs_bwrap
async def test_a_protected_file_in_an_ignored_folder_is_taken_away_too(
    repo: Path, run: Run
) -> None:
    (repo / ".gitignore").write_text("build/\n.envrc\n")

    await run("mkdir -p build && touch build/.envrc .envrc")

    assert not (repo / "build" / ".envrc").exists()
    assert not (repo / ".envrc").exists()


@needs_bwrap
@pytest.mark.parametrize("profile", PROFILES)
async def test_an_existing_protected_file_cannot_be_changed_moved_or_deleted(
    repo: Path, run: Run, profile: Profile
) -> None:
    (repo / ".envrc").write_text("export A=1\n")
    (repo / "env.sh").write_text("safe\n")
    (repo / ".mise.toml").symlink_to("env.sh")  # what it runs is its target

    await run(
        "echo evil >> .envrc; rm -f .envrc; mv .envrc moved; echo evil > env.sh; "
        "ln -s .git g && echo evil > g/config; umount .git; echo evil > .git/config",
        profile,
    )

    assert (repo / ".envrc").read_text() == "export A=1\n"
    assert (repo / "env.sh").read_text() == "safe\n"
    assert "evil" not in (repo / ".git" / "config").read_text()


@needs_bwrap
async def test_writes_outside_the_work_dir_do_not_reach_the_disk(
    repo: Path, tmp_path: Path, run: Run
) -> None:
    probe = Path("/usr/local/kode-tui-sandbox-probe")
    try:
        result = await run(f"echo x > ../outside.txt; echo x > $HOME/planted; touch {probe}")
    finally:
        probe.unlink(missing_ok=True)
        assert not probe.exists()

    assert not (tmp_path / "outside.txt").exists()
    assert not (Path.home() / "planted").exists()
    assert "read-only" in result.blocked


@needs_bwrap
async def test_secrets_and_kode_tuis_home_are_hidden(repo: Path, tmp_path: Path) -> None:
    home = Path.home()
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY\n")
    (home / ".netrc").write_text("machine x password hunter2\n")
    kode_home().mkdir(parents=True, exist_ok=True)
    (kode_home() / "config.toml").write_text("# secret config\n")
    # A path to hide inside the work dir: its mount comes after the work dir's (ordering).
    (repo / "vault").mkdir()
    (repo / "vault" / "token").write_text("TOKEN\n")
    assert SUPPORT.program is not None
    sandbox = Sandbox(
        SUPPORT.program,
        repo,
        refused_dir=tmp_path / "refused",
        settings=Settings(hide=(str(repo / "vault"),)),
        private_homes=[kode_home()],
    )
    shell = Shell(sandboxed=True)
    env = ToolEnv(work_dir=repo, sandbox=Confinement(sandbox, "workspace"))
    try:
        result = await shell.run(
            ShellParams(
                command=f"cat ~/.ssh/id_rsa ~/.netrc {kode_home()}/config.toml vault/token"
            ),
            env,
            "call",
        )
        argv = (await sandbox.prepare("workspace", ["true"], repo, {})).argv
    finally:
        await sandbox.close()

    for secret in ("PRIVATE KEY", "hunter2", "secret config", "TOKEN"):
        assert secret not in result.output
    assert result.is_error
    assert "hidden in the sandbox" in result.blocked
    mounts = " ".join(argv)
    assert f"--tmpfs {home / '.ssh'}" in mounts
    assert f"--ro-bind /dev/null {home / '.netrc'}" in mounts


@needs_bwrap
async def test_an_api_key_kode_tui_masks_is_not_in_a_commands_environment(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kode_tui import masking

    monkeypatch.setenv("KODE_TEST_SANDBOX_API_KEY", "sk-sandbox-0123456789")
    masking.refresh()
    try:
        inside = await run("printenv KODE_TEST_SANDBOX_API_KEY || echo unset")
        yolo = await run("printenv KODE_TEST_SANDBOX_API_KEY || echo unset", "open")
    finally:
        monkeypatch.delenv("KODE_TEST_SANDBOX_API_KEY")
        masking.refresh()

    assert inside.output.strip() == "unset"
    assert yolo.output.strip() != "unset"


async def _listener() -> tuple[asyncio.Server, int]:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"hello\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


CONNECT = "python3 -c \"import socket; print(socket.create_connection(('127.0.0.1', {port}), 5).recv(9).decode())\""  # noqa: E501


@needs_bwrap
async def test_there_is_no_network_unless_the_config_or_yolo_allows_it(
    repo: Path, tmp_path: Path, run: Run
) -> None:
    server, port = await _listener()
    try:
        blocked = await run(CONNECT.format(port=port))
        yolo = await run(CONNECT.format(port=port), "open")
        assert SUPPORT.program is not None
        allowed = Sandbox(
            SUPPORT.program, repo, refused_dir=tmp_path / "r", settings=Settings(network=True)
        )
        env = ToolEnv(work_dir=repo, sandbox=Confinement(allowed, "workspace"))
        configured = await Shell().run(ShellParams(command=CONNECT.format(port=port)), env, "c")
        await allowed.close()
    finally:
        server.close()
        await server.wait_closed()

    assert blocked.is_error and "network" in blocked.blocked
    assert yolo.output.strip() == "hello"
    assert configured.output.strip() == "hello"


# --- what still works --------------------------------------------------------------------------


@needs_bwrap
async def test_ordinary_work_succeeds_in_the_sandbox(repo: Path, run: Run) -> None:
    (repo / "a.txt").write_text("alpha\nbeta\n")
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "test_calc.py").write_text(
        "import unittest\nfrom calc import add\n\n"
        "class T(unittest.TestCase):\n"
        "    def test_add(self):\n"
        "        self.assertEqual(add(2, 2), 4)\n"
    )
    (repo / "Makefile").write_text("build:\n\tpython3 -m py_compile calc.py && echo built\n")

    commands = [
        "git status --short",
        "git log --oneline",
        "git diff --stat",
        "make build",
        "python3 -m unittest -q test_calc 2>&1",
        "sed -i 's/beta/gamma/' a.txt && cat a.txt",
        "echo scratch > /tmp/scratch.txt && cat /tmp/scratch.txt",
    ]
    results = [await run(command) for command in commands]

    for command, result in zip(commands, results, strict=True):
        assert not result.is_error, (command, result.message, result.output)
        assert not result.blocked
    assert "built" in results[3].output
    assert (repo / "a.txt").read_text() == "alpha\ngamma\n"
    assert "scratch" in (await run("cat /tmp/scratch.txt")).output  # the session's own /tmp


@needs_bwrap
@pytest.mark.parametrize("profile", PROFILES)
async def test_nothing_a_command_started_outlives_it(run: Run, profile: Profile) -> None:
    result = await run(
        "sleep 300 > /dev/null 2>&1 & (setsid sleep 300; touch .envrc) > /dev/null 2>&1 & "
        "echo started",
        profile,
    )

    assert result.output.strip() == "started"
    leftovers = Escapees(None, run.shell._prefix, whole_prefix=True)  # type: ignore[attr-defined]
    assert leftovers.count() == 0


# --- the soul, the modes and the approvals -----------------------------------------------------


def shell_call(command: str, n: int) -> dict[str, Any]:
    return {"tool_calls": [{"id": f"call_{n}", "name": "Shell", "arguments": {"command": command}}]}


async def agent_with(
    project: Path,
    script: list[dict[str, Any]],
    *,
    mode: str = "sandbox",
    answer: ev.ApprovalResponse = "approve",
) -> tuple[Any, list[ev.ApprovalRequest], list[ev.ToolResult]]:
    session = await Session.create(project)
    config = Config(approval_mode=mode)  # type: ignore[arg-type]
    agent = await open_agent(
        session, config, resolve_model(config), provider=ScriptedProvider(script)
    )
    asked: list[ev.ApprovalRequest] = []
    results: list[ev.ToolResult] = []

    def reply(event: ev.ApprovalRequest) -> None:
        asked.append(event)
        event.resolve(answer)

    agent.bus.subscribe(ev.ApprovalRequest, callback=reply)
    agent.bus.subscribe(ev.ToolResult, callback=results.append)
    return agent, asked, results


@needs_bwrap
async def test_sandbox_mode_runs_commands_and_edits_without_asking(repo: Path) -> None:
    script = [
        shell_call("echo made > made.txt", 1),
        {
            "tool_calls": [
                {"id": "w", "name": "WriteFile", "arguments": {"path": "b.txt", "content": "b\n"}}
            ]
        },
        {"text": "done"},
    ]
    agent, asked, _ = await agent_with(repo, script)
    try:
        assert agent.soul.approval.modes == ("ask", "auto-edit", "plan", "sandbox", "yolo")
        assert (await agent.soul.run("go")).stop_reason == "done"
    finally:
        await agent.close()

    assert asked == []
    assert (repo / "made.txt").read_text() == "made\n"
    assert (repo / "b.txt").read_text() == "b\n"


@needs_bwrap
@pytest.mark.parametrize("answer", ["approve", "reject"])
async def test_a_command_the_sandbox_stopped_runs_outside_only_when_the_user_says_so(
    repo: Path, answer: ev.ApprovalResponse
) -> None:
    server, port = await _listener()
    script = [shell_call(CONNECT.format(port=port), 1), {"text": "done"}]
    agent, asked, results = await agent_with(repo, script, answer=answer)
    try:
        assert (await agent.soul.run("go")).stop_reason == "done"
    finally:
        await agent.close()
        server.close()
        await server.wait_closed()

    assert [a.action for a in asked] == ["run command outside the sandbox"]
    assert (
        asked[0].always_ask == "the sandbox stopped it: it needs the network (off in the sandbox)"
    )
    assert asked[0].scope_label == ""  # never for the session
    if answer == "approve":
        assert results[-1].output.strip() == "hello"
        assert "the user let it run outside" in results[-1].message
    else:
        assert results[-1].is_error
        assert "did not let it run outside" in results[-1].message


@needs_bwrap
async def test_a_revert_after_sandboxed_commands_is_exact(repo: Path) -> None:
    (repo / "keep.txt").write_text("keep\n")
    (repo / "gone.txt").write_text("gone\n")
    before = {
        p.relative_to(repo): p.read_bytes()
        for p in repo.rglob("*")
        if ".git" not in p.parts and p.is_file()
    }
    script = [
        shell_call("echo new > made.txt && echo changed >> keep.txt && rm gone.txt", 1),
        {"text": "one"},
        shell_call(
            "mkdir -p src && printf 'x\\n' > src/m.py && f=.envrc && touch $f && "
            "sed -i 's/alpha/omega/' a.txt",
            2,
        ),
        {"text": "two"},
    ]
    # (`$f`: no approval asks first; the sandbox takes .envrc away, the run outside is refused)
    agent, asked, _ = await agent_with(repo, script, answer="reject")
    try:
        assert (await agent.soul.run("first")).stop_reason == "done"
        assert (await agent.soul.run("second")).stop_reason == "done"
        assert not (repo / ".envrc").exists()
        await agent.soul.travel.revert(0, files=True)
    finally:
        await agent.close()

    after = {
        p.relative_to(repo): p.read_bytes()
        for p in repo.rglob("*")
        if ".git" not in p.parts and p.is_file()
    }
    assert after == before
    assert [a.action for a in asked] == ["run command outside the sandbox"]


async def test_without_bubblewrap_it_says_so_and_offers_no_sandbox_mode(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    problem = "the Shell sandbox is off: bubblewrap is not installed (install it: …)"
    monkeypatch.setattr("kode_tui.soul.agent.sandbox_support", lambda: Support(None, problem))
    script = [shell_call("echo out > ../outside.txt", 1), {"text": "done"}]
    session = await Session.create(project)
    config = Config(approval_mode="sandbox")
    agent = await open_agent(
        session,
        config,
        resolve_model(config),
        provider=ScriptedProvider(script),
        approval_override="yolo",
    )
    warnings: list[ev.Warning] = []
    agent.bus.subscribe(ev.Warning, callback=warnings.append)
    try:
        agent.soul.send_notices()
        assert agent.soul.sandbox is None
        assert agent.soul.approval.modes == ("ask", "auto-edit", "plan", "yolo")
        with pytest.raises(ValueError, match="sandbox"):
            await agent.soul.approval.set_mode("sandbox")
        assert (await agent.soul.run("go")).stop_reason == "done"
        await asyncio.sleep(0)
    finally:
        await agent.close()

    assert [w.message for w in warnings] == [problem]
    assert (project.parent / "outside.txt").read_text() == "out\n"  # approvals alone, as before
    assert "sandbox" not in Shell().schema()["function"]["description"]


async def test_a_session_saved_in_sandbox_mode_asks_where_there_is_no_sandbox() -> None:
    state = SessionState(approval_mode="sandbox")
    without = Approval(WireBus(), state, sandbox=False)
    with_it = Approval(WireBus(), state, sandbox=True)

    assert without.mode == "ask"
    assert with_it.mode == "sandbox"
    assert await with_it.cycle_mode() == "yolo"
    assert with_it.profile == "open"
    assert await with_it.cycle_mode() == "ask"
    assert with_it.profile == "workspace"


@needs_bwrap
async def test_the_users_own_bang_command_runs_outside_the_sandbox(project: Path) -> None:
    outside = project.parent / "bang.txt"
    session = await Session.create(project)
    config = Config(approval_mode="sandbox")
    agent = await open_agent(session, config, resolve_model(config), provider=ScriptedProvider([]))
    agent.bus.subscribe(ev.ApprovalRequest, callback=lambda e: e.resolve("approve"))
    try:
        assert await agent.soul.shell_escape.run(f"echo mine > {outside}")
    finally:
        await agent.close()

    assert outside.read_text() == "mine\n"


def test_a_bubblewrap_that_cannot_start_is_one_line_saying_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to create a new namespace' >&2\nexit 1\n"
    )
    fake.chmod(0o755)
    monkeypatch.setattr("kode_tui.tools.sandbox._find_bwrap", lambda: str(fake))
    monkeypatch.setattr("sys.platform", "linux")

    found = check()

    assert not found.available
    assert "\n" not in found.problem
    assert "No permissions to create a new namespace" in found.problem
    monkeypatch.setattr("kode_tui.tools.sandbox._find_bwrap", lambda: None)
    assert "apt install bubblewrap" in check().problem


def test_the_sandbox_can_be_turned_off_in_the_config() -> None:
    assert SandboxConfig().enabled
    assert not Config.model_validate({"sandbox": {"enabled": False}}).sandbox.enabled


@needs_bwrap
async def test_services_outside_the_sandbox_cannot_be_reached_through_run(run: Run) -> None:
    result = await run("ls -A /run /var/run")

    assert result.output.split() == ["/run:", "/var/run:"]


@needs_bwrap
async def test_the_folder_core_hookspath_names_cannot_be_created(repo: Path, run: Run) -> None:
    git(repo, "config", "core.hooksPath", "scripts/hooks")

    result = await run("mkdir -p scripts/hooks && echo 'touch /tmp/x' > scripts/hooks/pre-commit")

    assert not (repo / "scripts" / "hooks").exists()
    assert "scripts/hooks" in result.blocked


@needs_bwrap
async def test_in_yolo_programs_on_path_and_the_homes_start_up_files_stay_as_they_are(
    repo: Path, tmp_path: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_folder = tmp_path / "bin"
    bin_folder.mkdir()
    monkeypatch.setenv("PATH", f"{bin_folder}:{os.environ['PATH']}")
    Path.home().mkdir(parents=True, exist_ok=True)
    (Path.home() / ".bashrc").write_text("# mine\n")

    result = await run(
        f"echo evil > {bin_folder}/git; echo evil >> ~/.bashrc; echo evil > ~/.bash_login; "
        "mkdir -p ~/.config/git && echo evil > ~/.config/git/config; echo ok > ~/notes.txt",
        "open",
    )

    assert not (bin_folder / "git").exists()
    assert (Path.home() / ".bashrc").read_text() == "# mine\n"
    assert not (Path.home() / ".bash_login").exists()
    assert not (Path.home() / ".config" / "git").exists()
    assert (Path.home() / "notes.txt").read_text() == "ok\n"  # yolo: the rest is writable
    assert "~/.bash_login" in result.blocked


def test_a_check_started_in_the_background_is_the_one_the_sandbox_waits_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`check_in_background` (the app starts it while the agent's modules load): bubblewrap
    runs once, and `support()` answers what it found."""
    runs = tmp_path / "runs"
    fake = tmp_path / "bwrap"
    fake.write_text(f"#!/bin/sh\necho ran >> {runs}\n")
    fake.chmod(0o755)
    monkeypatch.setattr("kode_tui.tools.sandbox._find_bwrap", lambda: str(fake))
    monkeypatch.setattr("sys.platform", "linux")
    monkeypatch.setattr("kode_tui.tools.sandbox._checking", None)
    support.cache_clear()
    try:
        check_in_background()
        check_in_background()  # once
        assert support() == Support(str(fake))
        assert support() == Support(str(fake))
        assert runs.read_text() == "ran\n"
    finally:
        support.cache_clear()
