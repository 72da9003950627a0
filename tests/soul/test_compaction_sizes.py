"""The sizes a compaction is shown with (issue 28, item 1): "after" counts what the next request
carries (the system prompt with the project context, the tools, the messages), and the review,
the gauge, `/context`, History, the export, a fork and the next request agree on it."""

from __future__ import annotations

import re
from pathlib import Path

from kode_tui.config import Config, ModelChoice
from kode_tui.session.export import export_markdown
from kode_tui.soul.facade import COMMANDS, AgentSession
from kode_tui.soul.llm.scripted import ScriptedProvider, request_tokens

SCRIPTED = ModelChoice(name="scripted", model="scripted", source="flag")


async def opened(project: Path, provider: ScriptedProvider, **kwargs: object) -> AgentSession:
    agent = await AgentSession.open(project, **kwargs)  # type: ignore[arg-type]
    await agent.start(Config(), SCRIPTED, provider=provider, yolo=True)
    return agent


async def test_after_a_compaction_every_figure_counts_what_the_next_request_carries(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    # A project context of a few thousand tokens, as a real README makes.
    (project / "README.md").write_text("# Tiny\n\n" + "A line of the README here.\n" * 300)
    provider = ScriptedProvider(
        [{"text": "One. " * 300}, {"text": "Two. " * 300}, {"text": "SUMMARY"}, {"text": "3."}]
    )
    agent = await opened(project, provider)
    await agent.run("first")
    await agent.run("second")
    compact = COMMANDS.get("/compact")
    assert compact is not None

    done = await COMMANDS.run(agent, compact, "")  # print mode's and ACP's way

    found = re.fullmatch(r"Compacted the context: ([\d,]+) → ([\d,]+) tokens\.", done.text)
    assert found is not None, done.text
    before, after = (int(figure.replace(",", "")) for figure in found.groups())
    # The gauge.
    status = agent.status()
    assert status is not None and status.context_tokens == after
    # `/context`: its rows add up to it, the fixed ones as estimated, none scaled down.
    report = await agent.context_report()
    assert report is not None and sum(row.tokens for row in report.rows) == after
    assert [(row.name, row.tokens) for row in report.rows[: len(report.blocks)]] == report.blocks
    assert not any("scaled" in row.note for row in report.rows)
    assert "since the context began or was compacted" in report.lines()[-1]
    messages = report.rows[-1]
    assert messages.name == "messages" and after - messages.tokens > len(report.system_prompt) // 4
    # History's row and the export repeat the figures.
    [entry] = agent.travel.rotations()
    assert (entry.rotation.tokens, entry.rotation.info["tokens_after"]) == (before, after)
    assert f"Compacted: {before} → {after} tokens" in "".join(export_markdown(agent.session))
    # A fork of it opens at the same size.
    forked = await agent.lineage.fork()
    fork = await opened(project, ScriptedProvider([]), session=forked)
    fork_report = await fork.context_report()  # once the project context is measured
    assert fork_report is not None and fork_report.context_tokens == after
    await fork.close()

    # The next request carries that, and the turn's message.
    await agent.run("third")
    sent = provider.requests[-1]
    carried = request_tokens(sent.system_prompt, sent.history, sent.tools)
    assert after <= carried <= after + 50
    await agent.close()
