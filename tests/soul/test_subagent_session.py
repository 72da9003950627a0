"""A session offers the `Agent` tool with its types, and a call runs a subagent end to end
through the facade the front ends use."""

from __future__ import annotations

from pathlib import Path

import pytest

from kode_tui.config import Config, ModelChoice
from kode_tui.soul.facade import AgentSession
from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.wire import events as ev
from tests.soul_helpers import call, record_events

SCRIPTED = ModelChoice(name="scripted", model="scripted", source="flag")
SUMMARY = "Wrote a.txt with the greeting. " * 8  # over Kimi's 200-character minimum


async def test_a_session_offers_agent_with_its_types_and_runs_a_subagent(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / ".claude/agents").mkdir(parents=True)
    (work / ".claude/agents/writer.md").write_text(
        "---\nname: writer\ndescription: Writes greetings\ntools: Write\n---\nYou write files.\n"
    )
    (work / ".claude/agents/empty.md").write_text("---\nname: empty\n---\n")
    provider = ScriptedProvider(
        [
            {
                "tool_calls": [
                    call(
                        "Agent",
                        description="Write a greeting",
                        prompt="Write a.txt",
                        subagent_type="writer",
                    )
                ]
            },
            {"tool_calls": [call("WriteFile", path="a.txt", content="hello")]},
            {"text": SUMMARY},
            {"text": "Done."},
        ]
    )
    opened = await AgentSession.open(work)
    events = record_events(opened.bus)
    await opened.start(Config(), SCRIPTED, provider=provider, yolo=True)
    try:
        result = await opened.run("Delegate the greeting.")
        assert result.stop_reason == "done"
        # The broken agent file was told once, naming it.
        assert any(
            isinstance(e, ev.Warning) and ".claude/agents/empty.md" in e.message for e in events
        )
        # The parent's request offers Agent, its description listing the built-ins and the file.
        offered = {t["function"]["name"]: t["function"] for t in provider.requests[0].tools}
        description = offered["Agent"]["description"]
        for line in ("- `coder`:", "- `explore`:", "- `plan`:", "- `writer`: Writes greetings"):
            assert line in description
        assert "(Tools: WriteFile, Model: inherit)" in description
        # The subagent had its file's prompt and tools, and did the work.
        assert provider.requests[1].system_prompt == "You write files."
        assert [t["function"]["name"] for t in provider.requests[1].tools] == ["WriteFile"]
        assert (work / "a.txt").read_text() == "hello"
        # The parent got Kimi's result and its instance folder exists in the session.
        [answer] = [m.text for m in provider.requests[3].history if m.role == "tool"]
        agent_id = answer.split("\n", 1)[0].removeprefix("agent_id: ")
        assert "actual_subagent_type: writer" in answer and SUMMARY.strip() in answer
        assert (opened.session.dir / "subagents" / agent_id / "meta.json").is_file()
    finally:
        await opened.close()


async def test_a_subagents_context_is_listed_searched_and_previewed_read_only(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    provider = ScriptedProvider(
        [
            {"tool_calls": [call("Agent", description="Find the owl", prompt="Find the owl")]},
            {"text": "The snowy owl nests in README. " * 8},
            {"text": "Found it."},
        ]
    )
    opened = await AgentSession.open(work)
    await opened.start(Config(), SCRIPTED, provider=provider, yolo=True)
    try:
        assert (await opened.run("Delegate.")).stop_reason == "done"
        # History lists it: its type, task and status.
        [entry] = opened.travel.subagents()
        assert (entry.subagent_type, entry.description, entry.status) == (
            "coder",
            "Find the owl",
            "idle",
        )
        assert entry.name == f"subagents/{entry.agent_id}"
        # Search finds its words in its context too (after the parent's result quoting them),
        # naming it by its folder.
        matches = await opened.lineage.search("snowy owl")
        assert [(m.file, m.role) for m in matches] == [
            ("context.jsonl", "tool"),
            (entry.name, "assistant"),
        ]
        # Its preview reads its context (and its wire's results), read-only.
        preview = await opened.travel.preview(entry.name)
        assert preview.subagent and preview.plan is None
        assert [m.role for m in preview.snapshot.messages] == ["user", "assistant"]
        assert "snowy owl" in preview.snapshot.messages[-1].text
        # Never a path outside the session, never a restore in the parent's place.
        for name in ("subagents/../context", "subagents/nobody"):
            with pytest.raises(ValueError):
                await opened.travel.preview(name)
        with pytest.raises(ValueError):
            await opened.travel.restore(entry.name)
    finally:
        await opened.close()


def documented_example(marker: str) -> str:
    """The file docs/usage.md shows after `<!-- example: NAME -->`, exactly as shown."""
    usage = (Path(__file__).parents[2] / "docs/usage.md").read_text(encoding="utf-8")
    after = usage.split(f"<!-- example: {marker} -->\n", 1)[1]
    fence, rest = after.split("\n", 1)
    assert fence.startswith("```")
    return rest.split("\n```\n", 1)[0] + "\n"


async def test_the_documented_claude_code_agent_file_works_unchanged(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / ".claude/agents").mkdir(parents=True)
    example = documented_example(".claude/agents/reviewer.md")
    (work / ".claude/agents/reviewer.md").write_text(example, encoding="utf-8")
    review = call(
        "Agent", description="Review the change", prompt="Review", subagent_type="reviewer"
    )
    provider = ScriptedProvider(
        [
            {"tool_calls": [review]},
            {"text": "No problems found in the change. " * 8},
            {"text": "Ok."},
        ]
    )
    opened = await AgentSession.open(work)
    events = record_events(opened.bus)
    await opened.start(Config(), SCRIPTED, provider=provider, yolo=True)
    try:
        assert (await opened.run("Review it.")).stop_reason == "done"
        assert not [e for e in events if isinstance(e, ev.Warning)]  # nothing refused in it
        offered = {t["function"]["name"]: t["function"] for t in provider.requests[0].tools}
        assert "- `reviewer`: Reviews a change for bugs" in offered["Agent"]["description"]
        # Its body is the subagent's system prompt; Claude Code's tool names map to ours.
        body = example.split("---\n", 2)[2].strip()
        assert provider.requests[1].system_prompt == body
        tools = [t["function"]["name"] for t in provider.requests[1].tools]
        assert sorted(tools) == ["Glob", "Grep", "ReadFile", "Shell"]
        [answer] = [m.text for m in provider.requests[2].history if m.role == "tool"]
        assert "actual_subagent_type: reviewer" in answer
    finally:
        await opened.close()
