"""Subagent types: Kimi 1.52's built-ins and Claude Code-format files in three folders."""

from __future__ import annotations

import os
from pathlib import Path

from kode_tui.soul.subagents.definitions import MAX_BYTES, list_agents


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


# Claude Code's documented example, unchanged.
REVIEWER = """\
---
name: code-reviewer
description: Expert code review specialist. Proactively reviews code for quality, security.
tools: Read, Grep, Glob, Bash
model: inherit
---
You are a senior code reviewer ensuring high standards of code quality and security.

When invoked:
1. Run git diff to see recent changes
"""


def test_the_built_ins_are_kimis_coder_explore_and_plan_with_their_tools(
    project: Path,
) -> None:
    listing = list_agents(project)
    assert [a.name for a in listing.agents] == ["coder", "explore", "plan"]
    coder, explore, plan = listing.agents
    assert {"WriteFile", "StrReplaceFile", "Shell"} <= set(coder.tools or ())
    assert "Shell" in (explore.tools or ()) and "WriteFile" not in (explore.tools or ())
    assert not {"Shell", "WriteFile", "StrReplaceFile"} & set(plan.tools or ())
    assert all("running as a subagent" in a.role for a in listing.agents)
    assert "codebase exploration specialist" in explore.role


def test_a_claude_code_agent_file_is_read_unchanged(project: Path) -> None:
    write(project / ".claude/agents/code-reviewer.md", REVIEWER)
    reviewer = list_agents(project).get("code-reviewer")
    assert reviewer is not None
    assert reviewer.source == "claude"
    assert reviewer.tools == ("ReadFile", "Grep", "Glob", "Shell")
    assert reviewer.model is None  # inherit
    assert reviewer.description.startswith("Expert code review specialist.")
    assert reviewer.system_prompt is not None
    assert reviewer.system_prompt.startswith("You are a senior code reviewer")
    assert "name:" not in reviewer.system_prompt
    assert reviewer.shown_path == ".claude/agents/code-reviewer.md"


def test_kode_wins_over_claude_over_the_users_and_built_ins_win_over_all(
    project: Path, home: Path
) -> None:
    write(project / ".kode/agents/docs.md", "---\ndescription: kode's\n---\nkode")
    write(project / ".claude/agents/docs.md", "---\ndescription: claude's\n---\nclaude")
    write(home / "agents/docs.md", "---\ndescription: user's\n---\nuser")
    write(home / "agents/mine.md", "---\ntools: [Read, WebFetch]\nmodel: fast\n---\nOnly mine.")
    write(project / ".claude/agents/explore.md", "---\ntools: Write\n---\nI write.")
    listing = list_agents(project)
    assert [a.name for a in listing.agents] == ["coder", "explore", "plan", "docs", "mine"]
    docs = listing.get("docs")
    assert docs is not None and docs.description == "kode's" and docs.source == "project"
    mine = listing.get("mine")
    assert mine is not None and mine.tools == ("ReadFile", "FetchURL") and mine.model == "fast"
    assert mine.description == "Only mine." and mine.source == "user"
    explore = listing.get("explore")
    assert explore is not None and explore.source == "built-in"
    assert {a.source for a in listing.shadowed} == {"claude", "user"}
    assert len(listing.shadowed) == 3
    assert listing.problems == ()


def test_hostile_files_are_refused_in_one_line_each_and_the_rest_still_listed(
    project: Path, tmp_path: Path
) -> None:
    secret = write(tmp_path / "secret.txt", "---\nname: thief\n---\nsecret key")
    agents = project / ".claude/agents"
    agents.mkdir(parents=True)
    (agents / "thief.md").symlink_to(secret)
    os.mkfifo(agents / "fifo.md")
    write(agents / "big.md", "x" * (MAX_BYTES + 1))
    write(agents / "latin.md", b"\xff\xfe caf\xe9")
    write(agents / "alias.md", "---\na: &x [1]\nb: *x\n---\nbody")
    write(agents / "nested.md", "---\ndescription: {a: 1}\n---\nbody")
    write(agents / "badname.md", "---\nname: ../../etc\n---\nbody")
    write(agents / "empty.md", "---\nname: empty\n---\n\n")
    write(agents / "escape.md", '---\ndescription: "evil \\e[31m red"\n---\nbody')
    write(agents / "good.md", "Reviews things.")
    listing = list_agents(project)
    assert [a.name for a in listing.agents] == ["coder", "explore", "plan", "escape", "good"]
    escape = listing.get("escape")
    assert escape is not None and "\x1b" not in escape.description
    messages = [p.message for p in listing.problems]
    assert len(messages) == 8
    assert all("\n" not in m and m.startswith("agent .claude/agents/") for m in messages)
    by_file = {m.split()[1].rsplit("/", 1)[1]: m for m in messages}
    assert "outside the work dir" in by_file["thief.md"]
    assert "regular file" in by_file["fifo.md"]
    assert "KiB" in by_file["big.md"]
    assert "UTF-8" in by_file["latin.md"]
    assert "front matter" in by_file["alias.md"]
    assert "`description:`" in by_file["nested.md"]
    assert "name" in by_file["badname.md"]
    assert "no system prompt" in by_file["empty.md"]
    assert all("secret key" not in m for m in messages)
