"""Skills: `SKILL.md` folders from the work dir's and the user's skills folders, listed in the
system prompt by name and description only; the model reads a skill with ReadFile, which reads
a listed skill's folder without asking and nothing beside it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kode_tui.config import Config, ModelChoice
from kode_tui.paths import tilde
from kode_tui.session import Session
from kode_tui.session.state import SessionState
from kode_tui.soul.agent import open_agent
from kode_tui.soul.approval import Approval
from kode_tui.soul.facade import COMMANDS, AgentSession, CommandPrompt
from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.soul.skills import Skills
from kode_tui.tools.base import ToolEnv
from kode_tui.tools.glob import Glob, GlobParams
from kode_tui.tools.grep import Grep
from kode_tui.tools.grep_params import GrepParams
from kode_tui.tools.shell import Shell, ShellParams
from kode_tui.ui.commands import completions
from kode_tui.wire import WireBus
from kode_tui.wire import events as ev
from tests.llm_server import LLMServer, loopback_choice
from tests.soul_helpers import print_turn, record_events

KEY_ENV = "KODE_TEST_LLM_KEY"
SCRIPTED = ModelChoice(name="scripted", model="scripted", source="flag")
BODY = "Run scripts/extract.py on the file, then summarise the tables. BODY-MARKER-7731"

# Claude Code's format: front matter `name` and `description`, the body, files beside it.
PDF_SKILL = f"""---
name: pdf-processing
description: Extract text and tables from PDF files. Use when the user mentions PDFs.
allowed-tools: Read, Bash
---

# PDF processing

{BODY}
See reference.md for the table formats.
"""


def make_skill(root: Path, folder: str, text: str) -> Path:
    """A skill folder `root/folder` with `text` as its SKILL.md, a reference and a script."""
    skill = root / folder
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text(text)
    (skill / "reference.md").write_text("Tables are pipe-separated. REFERENCE-MARKER-4410\n")
    (skill / "scripts" / "extract.py").write_text("print('tables')\n")
    return skill


def front(name: str, description: str, body: str = "Do the thing.") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n\n{body}\n"


def test_claude_code_skill_folders_are_found_in_every_skills_folder_first_one_winning(
    project: Path, home: Path, tmp_path: Path
) -> None:
    make_skill(project / ".claude/skills", "pdf-processing", PDF_SKILL)
    make_skill(project / ".kode/skills", "release", front("release", "Cut a release."))
    make_skill(project / ".agents/skills", "lint", front("lint", "Lint the code."))
    make_skill(project / ".kimi/skills", "kimi-one", front("kimi-one", "From Kimi's folder."))
    make_skill(home / "skills", "mine", front("mine", "The user's own skill."))
    make_skill(tmp_path / "user-home/.kimi/skills", "kimi-user", "# Kimi user skill\n\nBody.\n")
    # The same name (case ignored) in a later folder is shadowed, not listed twice.
    make_skill(home / "skills", "pdf", front("PDF-Processing", "The user's older copy."))

    listing = Skills(project).listing()

    assert [(s.name, s.source, s.shown_path) for s in listing.skills] == [
        ("kimi-one", "kimi", ".kimi/skills/kimi-one/SKILL.md"),
        ("kimi-user", "kimi-user", "~/.kimi/skills/kimi-user/SKILL.md"),
        ("lint", "agents", ".agents/skills/lint/SKILL.md"),
        ("mine", "user", tilde(home / "skills/mine/SKILL.md")),
        ("pdf-processing", "claude", ".claude/skills/pdf-processing/SKILL.md"),
        ("release", "project", ".kode/skills/release/SKILL.md"),
    ]
    pdf = listing.skills[4]
    assert pdf.description == (
        "Extract text and tables from PDF files. Use when the user mentions PDFs."
    )
    assert pdf.body_tokens == len(PDF_SKILL) // 4
    # No front matter: the folder's name and the body's first line, as Kimi reads it.
    assert listing.skills[1].description == "Kimi user skill"
    assert [(s.name, s.description) for s in listing.shadowed] == [
        ("PDF-Processing", "The user's older copy.")
    ]
    assert listing.problems == ()


def test_a_bad_skill_file_is_one_line_naming_it_and_the_others_are_listed(
    project: Path, home: Path, tmp_path: Path
) -> None:
    skills = project / ".claude/skills"
    make_skill(skills, "good", front("good", "Works."))
    make_skill(skills, "broken", "---\nname: [unclosed\n---\nBody.\n")
    make_skill(skills, "bad-name", front("no spaces allowed", "Bad name."))
    make_skill(skills, "binary", "placeholder")
    (skills / "binary/SKILL.md").write_bytes(b"---\nname: x\n---\n\xff\xfe")
    outside = make_skill(tmp_path / "elsewhere", "stolen", front("stolen", "Outside."))
    (skills / "linked").symlink_to(outside)  # a cloned repo's link out of the work dir
    (skills / "no-skill-here").mkdir()  # a folder without SKILL.md is no skill, and no problem

    listing = Skills(project).listing()

    assert [s.name for s in listing.skills] == ["good"]
    assert sorted(p.message for p in listing.problems) == [
        "skill .claude/skills/bad-name/SKILL.md has a name that is not letters, digits, ., - "
        "and _ (at most 64): not read.",
        "skill .claude/skills/binary/SKILL.md is not UTF-8 text: not read.",
        "skill .claude/skills/broken/SKILL.md has front matter that is not valid YAML (line 3): "
        "not read.",
        "skill .claude/skills/linked/SKILL.md leads outside the work dir: not read.",
    ]


def test_an_edited_skill_counts_from_the_next_listing(project: Path) -> None:
    skill = make_skill(project / ".kode/skills", "fmt", front("fmt", "Format the code."))
    skills = Skills(project)
    assert skills.listing().skills[0].description == "Format the code."
    (skill / "SKILL.md").write_text(front("fmt", "Format the code with black, then ruff."))
    assert skills.listing().skills[0].description == "Format the code with black, then ruff."


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LLMServer]:
    monkeypatch.setenv(KEY_ENV, "sk-test-not-a-secret")
    with LLMServer() as server:
        yield server


def system_text(request: dict[str, Any]) -> str:
    first = request["messages"][0]
    assert first["role"] == "system"
    content = first["content"]
    return content if isinstance(content, str) else "".join(part["text"] for part in content)


def tool_results(request: dict[str, Any]) -> dict[str, str]:
    results = {}
    for message in request["messages"]:
        if message["role"] == "tool":
            content = message["content"]
            text = content if isinstance(content, str) else "".join(p["text"] for p in content)
            results[message["tool_call_id"]] = text
    return results


async def test_requests_carry_skill_names_and_descriptions_and_readfile_reads_a_skill_on_use(
    project: Path, home: Path, server: LLMServer
) -> None:
    """Progressive disclosure: the prompt lists each skill (name, path, description), never its
    body; the model reads SKILL.md and the files beside it with ReadFile, without an approval
    even in the user's folder outside the work dir; a file beside the skills folder still asks."""
    skill = make_skill(home / "skills", "pdf-processing", PDF_SKILL)
    make_skill(project / ".claude/skills", "lint", front("lint", "Lint the code.", "LINT-BODY"))
    secret = home / "skills" / "secret.txt"  # in the skills folder, but in no skill's folder
    secret.write_text("SECRET-MARKER-9902\n")
    reads = [
        ("call_1", "ReadFile", json.dumps({"path": str(skill / "SKILL.md")})),
        ("call_2", "ReadFile", json.dumps({"path": str(skill / "reference.md")})),
        ("call_3", "ReadFile", json.dumps({"path": str(secret)})),
    ]
    server.reply_tool_calls(reads)
    server.reply_text("Done.")
    session = await Session.create(project)
    agent = await open_agent(session, Config(), loopback_choice(server, KEY_ENV))
    events = record_events(agent.bus)

    result = await agent.soul.run("Summarise the tables of report.pdf")
    report = await agent.soul.context_report()
    await agent.close()

    assert result.stop_reason == "done", result.error
    first, second = server.requests
    prompt = system_text(first)
    assert "### Project\n- lint\n" in prompt and "  - Description: Lint the code." in prompt
    assert "### User\n- pdf-processing\n" in prompt
    assert f"  - Path: {skill / 'SKILL.md'}\n" in prompt
    assert "  - Description: Extract text and tables from PDF files." in prompt
    assert "BODY-MARKER" not in prompt and "LINT-BODY" not in prompt
    assert "REFERENCE-MARKER" not in prompt
    tools = {tool["function"]["name"] for tool in first["tools"]}
    assert "ReadFile" in tools and not {"Skill", "LoadSkill"} & tools
    results = tool_results(second)
    assert "BODY-MARKER-7731" in results["call_1"]
    assert "REFERENCE-MARKER-4410" in results["call_2"]
    # Only the file that is in no skill's folder asked (and was approved).
    asked = [e for e in events if isinstance(e, ev.ApprovalRequest)]
    assert [e.description for e in asked] == [f"ReadFile {secret}"]
    assert "SECRET-MARKER-9902" in results["call_3"]
    # `/context` has a row for the skills block, counted in the gauge like the other blocks.
    rows = {row.name: row.tokens for row in report.rows}
    assert rows["skills (2)"] > 0


def test_readfile_asks_for_a_link_in_a_skill_folder_that_leads_out_of_it(
    project: Path, home: Path, tmp_path: Path
) -> None:
    skill = make_skill(home / "skills", "tricky", front("tricky", "Has a link."))
    private = tmp_path / "private.txt"
    private.write_text("not the skill's\n")
    (skill / "notes.md").symlink_to(private)
    skills = Skills(project)
    assert not skills.covers(skill / "SKILL.md")  # nothing listed yet: the model saw nothing
    skills.listing()
    assert skills.covers(skill / "SKILL.md") and skills.covers(skill / "scripts/extract.py")
    assert not skills.covers(skill / "notes.md")
    assert not skills.covers(home / "skills")


async def test_the_skills_command_says_where_each_comes_from_and_what_it_costs(
    project: Path, home: Path
) -> None:
    make_skill(project / ".claude/skills", "pdf-processing", PDF_SKILL)
    make_skill(home / "skills", "pdf-processing", front("pdf-processing", "Older."))
    make_skill(project / ".kode/skills", "broken", "---\nname: [x\n---\n")
    opened = await AgentSession.open(project)
    command = COMMANDS.get("/skills")
    assert command is not None
    try:
        done = await COMMANDS.run(opened, command, "")
        empty = await COMMANDS.run(opened, command, "now")
    finally:
        await opened.close()

    listed = Skills(project).listing().skills[0]
    assert done.ok
    lines = done.text.splitlines()
    assert lines[1] == (
        f"- pdf-processing (.claude/skills/pdf-processing/SKILL.md): {listed.prompt_tokens} "
        f"tokens in every request, {len(PDF_SKILL) // 4} when read"
    )
    assert lines[2] == "  Extract text and tables from PDF files. Use when the user mentions PDFs."
    shadowed = lines.index("Shadowed (a skill of the same name above is used):")
    assert (
        lines[shadowed + 1]
        == f"- pdf-processing ({tilde(home / 'skills/pdf-processing/SKILL.md')})"
    )
    assert lines[-2] == "Not read:"
    assert lines[-1].startswith("- skill .kode/skills/broken/SKILL.md has front matter that")
    assert not empty.ok


async def test_claude_code_and_agents_user_folders_are_read_and_a_symlinked_user_skill_is_kept(
    project: Path, home: Path, tmp_path: Path
) -> None:
    """A Claude Code or Codex user's skills come along (`~/.claude/skills`, `~/.agents/skills`,
    after kode-tui's and Kimi's user folders); a skill folder symlinked into a user folder from
    the user's dotfiles is read and `/skills` says where it points; the same link in the work
    dir (a cloned repo's) is still refused, and so is a user link to a folder anyone can write."""
    user_home = tmp_path / "user-home"
    make_skill(user_home / ".claude/skills", "review", front("review", "Claude's review."))
    make_skill(user_home / ".agents/skills", "deploy", front("deploy", "Deploy it."))
    make_skill(user_home / ".agents/skills", "review-2", front("Review", "Shadowed one."))
    dotfiles = make_skill(tmp_path / "dotfiles", "notes", front("notes", "From dotfiles."))
    (user_home / ".claude/skills/notes").symlink_to(dotfiles)
    (project / ".claude/skills").mkdir(parents=True)
    (project / ".claude/skills/repo-notes").symlink_to(dotfiles)
    shared = make_skill(tmp_path / "shared", "open", front("open", "Anyone may write."))
    shared.chmod(0o777)
    (user_home / ".agents/skills/open").symlink_to(shared)

    listing = Skills(project).listing()

    assert [(s.name, s.source, s.shown_path, s.link) for s in listing.skills] == [
        ("deploy", "agents-user", "~/.agents/skills/deploy/SKILL.md", ""),
        ("notes", "claude-user", "~/.claude/skills/notes/SKILL.md", tilde(dotfiles)),
        ("review", "claude-user", "~/.claude/skills/review/SKILL.md", ""),
    ]
    assert [s.shown_path for s in listing.shadowed] == ["~/.agents/skills/review-2/SKILL.md"]
    assert sorted(p.message for p in listing.problems) == [
        "skill .claude/skills/repo-notes/SKILL.md leads outside the work dir: not read.",
        f"skill ~/.agents/skills/open/SKILL.md is a link to {tilde(shared)}, a folder anyone "
        "can write to: not read.",
    ]
    # ReadFile reads the linked folder's files, where the link points.
    skills = Skills(project)
    skills.listing()
    assert skills.covers(user_home / ".claude/skills/notes/reference.md")
    assert skills.covers(dotfiles / "scripts/extract.py")

    opened = await AgentSession.open(project)
    command = COMMANDS.get("/skills")
    assert command is not None
    try:
        done = await COMMANDS.run(opened, command, "")
    finally:
        await opened.close()
    assert f"- notes (~/.claude/skills/notes/SKILL.md -> {tilde(dotfiles)}): " in done.text


async def test_glob_and_grep_in_a_listed_skill_folder_do_not_ask(project: Path, home: Path) -> None:
    """As ReadFile: the model lists and searches a listed skill's folder outside the work dir
    without an approval (Kimi lets Glob do it); the skills folder around it still asks."""
    skill = make_skill(home / "skills", "pdf-processing", PDF_SKILL)
    skills = Skills(project)
    skills.listing()
    env = ToolEnv(work_dir=project, skill_file=skills.covers)

    assert await Glob().permission(GlobParams(pattern="**/*", directory=str(skill)), env) is None
    grep = GrepParams(pattern="tables", path=str(skill / "scripts"))
    assert await Grep().permission(grep, env) is None
    found = await Glob().run(GlobParams(pattern="**/*.py", directory=str(skill)), env, "call")
    assert str(skill / "scripts/extract.py") in found.output
    matches = await Grep(use_rg=False).run(
        GrepParams(pattern="REFERENCE", path=str(skill)), env, "c"
    )
    assert str(skill / "reference.md") in matches.output

    around = await Glob().permission(GlobParams(pattern="*", directory=str(home / "skills")), env)
    assert around is not None and around.scope == f"read:{(home / 'skills').resolve()}"
    assert await Grep().permission(GrepParams(pattern="x", path=str(home)), env) is not None


async def test_a_subagent_is_told_of_the_skills_as_its_parent_is(
    project: Path, home: Path, server: LLMServer
) -> None:
    """Kimi renders its subagents' system prompt with the same skills block: a subagent that
    needs a skill finds it, and reads it as its parent would."""
    make_skill(home / "skills", "pdf-processing", PDF_SKILL)
    arguments = {"description": "Read PDFs", "prompt": "Find the PDFs.", "subagent_type": "explore"}
    server.reply_tool_calls([("call_a", "Agent", json.dumps(arguments))])
    server.reply_text("Found the PDFs and the skill for them. " * 8)  # the subagent's summary
    server.reply_text("Done.")
    session = await Session.create(project)
    agent = await open_agent(session, Config(), loopback_choice(server, KEY_ENV))
    try:
        result = await agent.soul.run("Look at the PDFs.")
    finally:
        await agent.close()

    assert result.stop_reason == "done", result.error
    parent, child = (system_text(request) for request in server.requests[:2])
    assert child != parent  # the subagent's own prompt (its role), with the same skills
    entry = "### User\n- pdf-processing\n  - Path: "
    assert entry in parent and entry in child
    assert "BODY-MARKER" not in child


async def test_skill_name_sends_the_skill_as_kimi_does_and_every_list_offers_it(
    project: Path, home: Path
) -> None:
    """`/skill:NAME request` (Kimi 1.52's command) sends the whole SKILL.md, then the request;
    the command lists (the TUI's `/` completion, ACP, print mode) offer one per skill, and it
    hides a custom command of its name."""
    make_skill(project / ".claude/skills", "pdf-processing", PDF_SKILL)
    (project / ".kode/commands/skill").mkdir(parents=True)
    (project / ".kode/commands/skill/pdf-processing.md").write_text("The repo's command.")
    provider = ScriptedProvider([{"text": "Summarised."}])

    printed = await print_turn(project, provider, "/skill:PDF-processing summarise report.pdf")

    assert printed.status == 0, printed.err
    [message] = [
        m for m in provider.requests[0].history if m.role == "user" and "<system" not in m.text
    ]
    assert message.text == PDF_SKILL.strip() + "\n\nUser request:\nsummarise report.pdf"

    opened = await AgentSession.open(project)
    events = record_events(opened.bus)
    await opened.start(Config(), SCRIPTED, provider=ScriptedProvider([{"text": "Ok."}]))
    try:
        bare = COMMANDS.find(opened, "/skill:pdf-processing", "")
        assert isinstance(bare, CommandPrompt) and bare.text == PDF_SKILL.strip()
        await opened.custom.run(bare)
        assert COMMANDS.find(opened, "/skill:nope", "") is None
        entries = [e for e in COMMANDS.entries(opened) if e.name.startswith("/skill:")]
        host = SimpleNamespace(agent_session=opened)  # what the TUI's completion reads
        assert dict(completions(host))["/skill:pdf-processing"].startswith("[request]  Extract")
        assert [(e.name, e.hint, e.description) for e in entries] == [
            (
                "/skill:pdf-processing",
                "[request]",
                "Extract text and tables from PDF files. Use when the user mentions PDFs.",
            )
        ]
    finally:
        await opened.close()
    [sent] = [e for e in events if isinstance(e, ev.CommandSent)]
    assert (sent.command, sent.file) == (
        "/skill:pdf-processing",
        ".claude/skills/pdf-processing/SKILL.md",
    )


@pytest.mark.parametrize("mode", ["ask", "auto-edit", "plan", "sandbox", "yolo"])
async def test_a_script_a_skill_ships_runs_only_through_shells_rules(
    project: Path, home: Path, tmp_path: Path, mode: str
) -> None:
    """No skill exemption for Shell: running a listed skill's script is approved (and, in the
    sandbox mode, sandboxed) exactly as the same script anywhere else outside the work dir."""
    skill = make_skill(home / "skills", "pdf-processing", PDF_SKILL)
    other = make_skill(tmp_path / "elsewhere", "pdf-processing", PDF_SKILL)
    skills = Skills(project)
    skills.listing()
    env = ToolEnv(work_dir=project, skill_file=skills.covers)
    assert skills.covers(skill / "scripts/extract.py")  # ReadFile would read it unasked

    def ask(folder: Path) -> Any:
        return Shell().permission(ShellParams(command=f"python3 {folder}/scripts/extract.py"), env)

    in_skill, elsewhere = await ask(skill), await ask(other)
    assert in_skill is not None and elsewhere is not None
    assert in_skill.scope.replace(str(skill), "X") == elsewhere.scope.replace(str(other), "X")
    assert (in_skill.kind, in_skill.outside_work_dir, in_skill.always_ask) == (
        elsewhere.kind,
        elsewhere.outside_work_dir,
        elsewhere.always_ask,
    )
    approval = Approval(WireBus(), SessionState(approval_mode=mode), sandbox=True)  # type: ignore[arg-type]
    assert approval.allows(in_skill) == approval.allows(elsewhere)
    assert approval.allows(in_skill) == (mode == "yolo")  # outside the work dir: it asks
