"""Approvals that cannot be fooled (issue 12): writes that can make tools run code always ask,
and a session approval of a command covers exactly what its label says."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from typing import Any, Literal

import pytest

from kode_tui.config import Config, resolve_model
from kode_tui.print_mode import PrintView
from kode_tui.session import Session
from kode_tui.session.state import ApprovalMode, SessionState
from kode_tui.soul.agent import open_agent
from kode_tui.soul.approval import Approval
from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.tools.base import Permission, ToolEnv
from kode_tui.tools.protected import REASON, is_protected
from kode_tui.tools.shell import Shell, ShellParams
from kode_tui.wire import WireBus
from kode_tui.wire import events as ev

# --- writes that can make tools run code ---------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        ".git/config",
        ".git/hooks/pre-commit",
        ".git/info/attributes",
        ".git/modules/sub/config",
        ".git",
        ".GIT/CONFIG",
        ".g\u200cit/config",
        "sub/.git",
        ".gitmodules",
        "src/.gitattributes",
        ".envrc",
        ".vscode/tasks.json",
        ".idea/workspace.xml",
        ".devcontainer/devcontainer.json",
        ".husky/pre-commit",
        ".githooks/pre-commit",
        ".cursor/mcp.json",
        ".kode/commands/x.md",
        ".claude/settings.json",
        ".mcp.json",
        ".npmrc",
        ".yarnrc.yml",
        ".pre-commit-config.yaml",
        ".cargo/config.toml",
        ".venv/lib/python3.11/site-packages/evil.pth",
        "./x/../.git/config",
    ],
)
def test_files_that_make_tools_run_code_are_protected(tmp_path: Path, name: str) -> None:
    assert is_protected(tmp_path / name, tmp_path)


@pytest.mark.parametrize(
    "name", ["README.md", "src/git.py", ".github/workflows/ci.yml", "gitconfig.txt", ".gitignore"]
)
def test_ordinary_files_are_not_protected(tmp_path: Path, name: str) -> None:
    assert not is_protected(tmp_path / name, tmp_path)


def test_a_symlink_into_git_is_protected_by_where_it_leads(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("")
    (tmp_path / "notes.txt").symlink_to(".git/config")
    (tmp_path / "docs").symlink_to(".git")
    assert is_protected(tmp_path / "notes.txt", tmp_path)
    assert is_protected(tmp_path / "docs" / "hooks" / "pre-commit", tmp_path)


def test_a_work_dir_inside_a_protected_folder_does_not_protect_everything(tmp_path: Path) -> None:
    work = tmp_path / ".claude" / "project"
    work.mkdir(parents=True)
    assert not is_protected(work / "main.py", work)
    assert is_protected(work / ".git" / "config", work)


async def run_agent(
    tmp_path: Path,
    calls: list[dict[str, object]],
    *,
    mode: ApprovalMode = "ask",
    override: ApprovalMode | None = None,
    answer: ev.ApprovalResponse = "approve_for_session",
) -> tuple[list[ev.ApprovalRequest], Session, Path]:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    (project / ".git").mkdir(exist_ok=True)
    script = [{"tool_calls": [c]} for c in calls] + [{"text": "done"}]
    provider = ScriptedProvider(script)
    session = await Session.create(project)
    config = Config(approval_mode=mode)
    agent = await open_agent(
        session, config, resolve_model(config), provider=provider, approval_override=override
    )
    requests: list[ev.ApprovalRequest] = []

    def reply(event: ev.ApprovalRequest) -> None:
        requests.append(event)
        event.resolve(answer)

    seen = agent.bus.subscribe(ev.ApprovalRequest, callback=reply)
    await agent.soul.run("edit")
    await seen.join()
    await agent.close()
    return requests, session, project


def write(path: str, content: str = "x\n") -> dict[str, object]:
    return {"name": "WriteFile", "arguments": {"path": path, "content": content}}


@pytest.mark.parametrize("mode", ["ask", "auto-edit", "yolo"])
async def test_a_write_to_git_config_asks_in_every_mode_and_is_never_remembered(
    tmp_path: Path, mode: ApprovalMode
) -> None:
    hostile = '[core]\n\tfsmonitor = "touch PWNED"\n'
    calls = [write("plain.txt"), write(".git/config", hostile), write(".git/hooks/post-commit")]
    requests, _, project = await run_agent(tmp_path, calls, mode=mode)
    protected = [r for r in requests if r.always_ask]
    assert [r.description for r in protected] == [
        "WriteFile .git/config",
        "WriteFile .git/hooks/post-commit",
    ]
    for request in protected:
        assert request.always_ask == REASON
        assert request.scope_label == ""  # "approve for session" is not offered
    assert len(requests) == (3 if mode == "ask" else 2)  # plain.txt asks in ask mode only
    assert (project / ".git" / "config").read_text() == hostile  # approved once, it was written


async def test_approving_all_edits_for_the_session_does_not_cover_protected_files(
    tmp_path: Path,
) -> None:
    calls = [write("plain.txt"), write(".envrc"), write("other.txt"), write(".gitattributes")]
    requests, session, _ = await run_agent(tmp_path, calls)
    assert [r.description for r in requests] == [
        "WriteFile plain.txt",
        "WriteFile .envrc",
        "WriteFile .gitattributes",
    ]
    assert session.state.session_approvals == ["edit"]


async def test_yolo_does_not_let_a_protected_write_through(tmp_path: Path) -> None:
    calls = [write("plain.txt"), write(".git/config", "[core]\n")]
    requests, _, project = await run_agent(tmp_path, calls, override="yolo", answer="reject")
    assert [r.description for r in requests] == ["WriteFile .git/config"]
    assert not (project / ".git" / "config").exists()
    assert (project / "plain.txt").exists()


async def test_print_mode_says_why_a_protected_write_was_rejected_even_with_yolo() -> None:
    out, err = io.StringIO(), io.StringIO()
    request = ev.ApprovalRequest(
        id="a",
        tool_call_id="t",
        action="edit file",
        description="WriteFile .git/config",
        always_ask=REASON,
    )
    PrintView(out, err)(request)
    assert "writes here can make tools run code" in err.getvalue()
    assert "even with --yolo" in err.getvalue()
    assert "--yolo allows every call" not in err.getvalue()


def test_an_old_approval_request_record_still_reads() -> None:
    old = {"id": "a", "tool_call_id": "t", "action": "run command", "description": "ls"}
    assert ev.ApprovalRequest.model_validate(old).always_ask == ""


# --- "approve for session" of a command covers exactly its label --------------------------------


class Asker:
    """An Approval over a real bus whose questions are answered `approve_for_session`."""

    def __init__(self, work_dir: Path, approvals: list[str] | None = None) -> None:
        self.work_dir = work_dir
        self.state = SessionState(session_approvals=list(approvals or []))
        self.bus = WireBus()
        self.asked: list[ev.ApprovalRequest] = []
        self.bus.subscribe(ev.ApprovalRequest, callback=self._answer)
        self.approval = Approval(self.bus, self.state)

    def _answer(self, request: ev.ApprovalRequest) -> None:
        self.asked.append(request)
        request.resolve("approve_for_session")

    async def asks(self, command: str) -> bool:
        """Whether running `command` asked the user."""
        before = len(self.asked)
        env = ToolEnv(work_dir=self.work_dir)
        permission = await Shell().permission(ShellParams(command=command), env)
        assert permission is not None
        await self.approval.request("Shell", "call", permission)
        return len(self.asked) > before


@pytest.mark.parametrize(
    ("approved", "attack"),
    [
        ("python3 -V", 'python3 -c \'__import__("os").system("touch pwned")\''),
        ("node --version", 'node -e \'require("child_process").execSync("id")\''),
        ("git --no-pager log", "git -c alias.x='!touch pwned' x"),
        ("git status", "git -c core.fsmonitor='touch pwned' status"),
        ("git log", "git --config-env=core.pager=EVIL log"),
        ("find . -name '*.py'", "find . -exec touch pwned ;"),
        ("ls", "ls $(touch pwned)"),
        ("ls", "ls > pwned"),
        ("echo hi", "echo hi; touch pwned"),
        ("make test", "make test SHELL=/tmp/evil"),
        ("npm run build", "npm run deploy"),
    ],
)
async def test_a_session_approval_does_not_cover_a_command_that_runs_more(
    tmp_path: Path, approved: str, attack: str
) -> None:
    asker = Asker(tmp_path)
    assert await asker.asks(approved)
    assert not await asker.asks(approved)  # the approval holds for the command itself
    assert await asker.asks(attack)


async def test_a_session_approval_covers_what_its_label_says(tmp_path: Path) -> None:
    asker = Asker(tmp_path)
    assert await asker.asks("git --no-pager log -n 3")
    assert (
        asker.asked[-1].scope_label
        == "`git log` with arguments that run nothing else, inside the work dir"
    )
    assert not await asker.asks("git log --oneline src/")
    assert await asker.asks("python3 -m pytest -q")
    assert not await asker.asks("python3 -m pytest tests/test_x.py -k slow")


async def test_an_argument_outside_the_work_dir_asks_every_time_whatever_was_approved(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "secret").write_text("key")
    (work / "escape").symlink_to(tmp_path / "secret")
    asker = Asker(work)
    assert await asker.asks("cat README.md")
    for attack in ("cat /etc/hostname", f"cat {tmp_path}/secret", "cat ../secret", "cat escape"):
        assert await asker.asks(attack)
        assert asker.asked[-1].outside_work_dir
        assert asker.asked[-1].scope_label == ""  # no session approval offered
        assert await asker.asks(attack)  # and none was remembered
    assert asker.state.session_approvals == ["shell:cat"]


async def test_broad_scopes_saved_by_an_older_version_cover_only_what_they_mean_now(
    tmp_path: Path,
) -> None:
    old = ["shell:python3", "shell:git", "shell:node", "shell:cat", "shell:git log"]
    asker = Asker(tmp_path, old)
    assert await asker.asks("python3 -c 'print(1)'")
    assert await asker.asks("python3 -V")
    assert await asker.asks("git -c alias.x='!touch pwned' x")
    assert await asker.asks("node -e 1")
    assert await asker.asks("cat /etc/hostname")
    assert not await asker.asks("cat README.md")  # the same meaning today, inside the work dir
    assert not await asker.asks("git log --oneline")


@pytest.mark.parametrize(
    "attack",
    [
        "cp hook.sh .git/hooks/pre-commit",
        "tee .envrc",
        "echo x >> .git/config",
        "echo 'rm -rf ~' > .envrc",  # a redirection's file is not a command word
        "printf x 2>.gitattributes",
        "cat < x >| .envrc",
        "mv notes .gitattributes",
        "cp hook.sh docs/x",  # docs is a symlink to .git/hooks
    ],
)
async def test_a_command_naming_a_protected_file_asks_every_time_even_in_yolo(
    tmp_path: Path, attack: str
) -> None:
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    (tmp_path / "docs").symlink_to(".git/hooks")
    asker = Asker(tmp_path)
    assert await asker.asks("cp a.txt b.txt")
    assert await asker.asks("tee out.txt")
    assert await asker.asks(attack)
    assert "make tools run code" in asker.asked[-1].always_ask
    assert asker.asked[-1].scope_label == ""
    await asker.approval.set_mode("yolo")
    assert await asker.asks(attack)
    assert not await asker.asks("cp x.txt y.txt")


# --- the user's own `!cmd` --------------------------------------------------------------------


async def test_the_users_bang_command_asks_nothing_while_the_models_same_command_asks(
    tmp_path: Path,
) -> None:
    """`!cmd` is typed by the user: in ask mode it runs unasked, even on a protected file or
    outside the work dir; the model's Shell call of the same command still asks."""
    outside = tmp_path / "outside.txt"
    command = f"echo mine > .envrc && echo mine > {outside}"
    requests, _, project = await run_agent(
        tmp_path, [{"name": "Shell", "arguments": {"command": command}}], answer="reject"
    )
    [request] = requests  # the model's call asked, and was rejected
    assert "make tools run code" in request.always_ask
    assert not (project / ".envrc").exists() and not outside.exists()

    session = await Session.create(project)
    config = Config(approval_mode="ask")
    agent = await open_agent(session, config, resolve_model(config), provider=ScriptedProvider([]))
    asked: list[ev.ApprovalRequest] = []

    def reject(event: ev.ApprovalRequest) -> None:
        asked.append(event)
        event.resolve("reject")

    agent.bus.subscribe(ev.ApprovalRequest, callback=reject)
    try:
        assert await agent.soul.shell_escape.run(command)
    finally:
        await agent.close()
    assert asked == []
    assert (project / ".envrc").read_text() == outside.read_text() == "mine\n"


# --- a mode switched while calls wait -------------------------------------------------------

ANSWERED_S = 10
"""A bound on waiting for an answer the switch gives at once (a hang fails, not stalls)."""


async def test_a_mode_switched_while_calls_wait_approves_what_it_lets_through_and_no_more(
    tmp_path: Path,
) -> None:
    """Ctrl+T while an edit waits: auto-edit approves the edit in the work dir, yolo the
    command and the edit outside it too (as a call asked for in yolo is); what asks in every
    mode (a protected path) still waits for the user."""
    bus = WireBus()
    asked: list[ev.ApprovalRequest] = []
    bus.subscribe(ev.ApprovalRequest, callback=asked.append)
    approval = Approval(bus, SessionState())

    def call(kind: Literal["edit", "shell"], **asking: Any) -> asyncio.Task[ev.ApprovalResponse]:
        permission = Permission(kind, f"{kind} it", f"{kind} {len(asked)}", kind, kind, **asking)
        return asyncio.create_task(approval.request("Tool", f"call-{len(asked)}", permission))

    edit, command = call("edit"), call("shell")
    outside, protected = call("edit", outside_work_dir=True), call("edit", always_ask=REASON)
    while len(asked) < 4:
        await asyncio.sleep(0)

    await approval.set_mode("auto-edit")
    assert await asyncio.wait_for(edit, ANSWERED_S) == "approve"
    assert not command.done() and not outside.done()
    await approval.set_mode("yolo")
    assert await asyncio.wait_for(command, ANSWERED_S) == "approve"
    assert await asyncio.wait_for(outside, ANSWERED_S) == "approve"
    assert not protected.done()
    asked[3].resolve("reject")
    assert await protected == "reject"


async def test_cycling_past_yolo_approves_nothing_and_the_mode_kept_applies(
    tmp_path: Path,
) -> None:
    """Ctrl+T from sandbox back to ask passes yolo: a mode passed by is not chosen, so the
    waiting command stays waiting; the mode the user stops at applies once kept."""
    bus = WireBus()
    asked: list[ev.ApprovalRequest] = []
    bus.subscribe(ev.ApprovalRequest, callback=asked.append)
    approval = Approval(bus, SessionState(approval_mode="sandbox"), sandbox=True)
    approval.cycle_settle_s = 3600.0  # only settle() below may settle the passes
    shell = Permission("shell", "run it", "shell 0", "shell", "shell", outside_work_dir=True)
    edit = Permission("edit", "edit it", "edit 1", "edit", "edit")
    command = asyncio.create_task(approval.request("Shell", "call-0", shell))
    while len(asked) < 1:
        await asyncio.sleep(0)

    assert await approval.cycle_mode() == "yolo"
    assert await approval.cycle_mode() == "ask"
    approval.settle()  # what the timer would do, had the user stopped at ask
    await asyncio.sleep(0)
    assert not command.done()

    edited = asyncio.create_task(approval.request("WriteFile", "call-1", edit))
    while len(asked) < 2:
        await asyncio.sleep(0)

    approval.cycle_settle_s = 0.0
    assert await approval.cycle_mode() == "auto-edit"
    assert await asyncio.wait_for(edited, ANSWERED_S) == "approve"
    assert not command.done()
    asked[0].resolve("reject")
    assert await command == "reject"
