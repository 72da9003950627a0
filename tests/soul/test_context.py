"""What the model is given: project context, reminders and compaction, in a real loop."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kode_tui.config import CompactionConfig, Config, ConfigError, LoopControl, resolve_model
from kode_tui.session import Session
from kode_tui.soul.agent import Agent, open_agent
from kode_tui.soul.compaction import COMPACTION_OUTPUT_PREFIX
from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.wire import events as ev
from tests.soul_helpers import record_events

GIT = [
    "git",
    "-c",
    "user.email=dev@example.com",
    "-c",
    "user.name=Dev",
    "-c",
    "init.defaultBranch=main",
]


def git(repo: Path, *args: str) -> None:
    subprocess.run([*GIT, *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "checkout", "-q", "-b", "feature/gauge")
    (repo / "AGENTS.md").write_text("Always run `make test` before saying you are done.\n")
    (repo / "README.md").write_text("# Gauge\n\nShows how full the context is.\n")
    (repo / "src").mkdir()
    (repo / "src" / "gauge.py").write_text("def fill(n):\n    return n\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "First gauge")
    return repo


async def start(
    work_dir: Path, script: list[dict[str, Any]], config: Config | None = None, **provider: Any
) -> tuple[Agent, ScriptedProvider, list[ev.Event]]:
    config = config or Config()
    scripted = ScriptedProvider(script, **provider)
    session = await Session.create(work_dir)
    agent = await open_agent(session, config, resolve_model(config), provider=scripted)
    return agent, scripted, record_events(agent.bus)


async def test_the_request_carries_the_project_context(repo: Path) -> None:
    agent, provider, _ = await start(repo, [{"text": "Noted."}])

    await agent.soul.run("What should I know?")
    await agent.close()

    system_prompt = provider.requests[0].system_prompt or ""
    assert system_prompt.startswith("You are kode-tui")
    assert "Always run `make test` before saying you are done." in system_prompt
    assert '<context name="directoryStructure">' in system_prompt
    assert "gauge.py" in system_prompt
    assert "Current branch: feature/gauge" in system_prompt
    assert '<context name="readme">' in system_prompt
    # Only the base prompt is kept in the context file: the project context is per request.
    stored = json.loads(agent.session.context_file.read_text().splitlines()[0])
    assert stored["role"] == "_system_prompt"
    assert "directoryStructure" not in stored["content"]


async def test_a_changed_agents_md_is_seen_by_the_next_turn(repo: Path) -> None:
    agent, provider, _ = await start(repo, [{"text": "One."}, {"text": "Two."}])
    await agent.soul.run("first")
    assert agent.soul.project is not None and agent.soul.project.current is not None

    (repo / "AGENTS.md").write_text("Use tabs, never spaces.\n")
    for _ in range(100):  # the watcher notices within a second or so
        if "tabs" in (await agent.soul.request_system_prompt() or ""):
            break
        await asyncio.sleep(0.05)
    await agent.soul.run("second")
    await agent.close()

    assert "Use tabs, never spaces." in (provider.requests[1].system_prompt or "")
    assert "make test" not in (provider.requests[1].system_prompt or "")


async def test_a_todo_change_is_one_reminder_and_never_stored(repo: Path) -> None:
    plan = [{"title": "Measure", "status": "in_progress"}, {"title": "Draw", "status": "pending"}]
    agent, provider, events = await start(
        repo,
        [
            {"tool_calls": [{"name": "TodoWrite", "arguments": {"todos": plan}}]},
            {"tool_calls": [{"name": "ReadFile", "arguments": {"path": "README.md"}}]},
            {"text": "Planned."},
        ],
    )

    await agent.soul.run("Plan the gauge from @src/gauge.py")
    await agent.close()

    sent = [event.reminders for event in events if isinstance(event, ev.SystemReminders)]
    assert [[r.kind for r in reminders] for reminders in sent] == [["todo", "mention"], ["todo"]]
    assert "empty" in sent[0][0].text and "def fill(n):" in sent[0][1].text
    assert '"Measure"' in sent[1][0].text
    requests = [request.history for request in provider.requests]
    last_user = [next(m for m in reversed(h) if m.role == "user") for h in requests]
    assert "<system-reminder>" in last_user[0].text
    assert "todo list has changed" in last_user[1].text
    assert "<system-reminder>" not in last_user[2].text
    stored = agent.session.context_file.read_text().splitlines()[1:]  # after _system_prompt
    assert not any("<system-reminder>" in line for line in stored)


def compacting_config(strategy: str = "kode_tui.soul.compaction:LLMSummaryCompaction") -> Config:
    return Config(
        loop_control=LoopControl(reserved_context_size=200, compaction_trigger_ratio=0.8),
        compaction=CompactionConfig(strategy=strategy),
    )


async def test_auto_compaction_starts_the_live_context_with_the_summary(repo: Path) -> None:
    agent, provider, events = await start(
        repo,
        [
            {"text": "A long answer. " * 40, "usage": {"input": 700, "output": 150}},
            {"text": "<current_focus>\nThe gauge\n</current_focus>"},  # the summary
            {"text": "Short now.", "usage": {"input": 120, "output": 4}},
        ],
        config=compacting_config(),
        max_context_size=1000,
    )

    await agent.soul.run("Explain the gauge at length")
    await agent.soul.run("And now briefly?")
    await agent.close()

    [end] = [e for e in events if isinstance(e, ev.CompactionEnd)]
    # Before: the gauge's number (the count reported); after: what the next request carries,
    # estimated, the gauge's number once it applied (the scripted counts leave the prompt out).
    assert end.tokens_before >= 850
    after = events[events.index(end) + 1]
    assert isinstance(after, ev.StatusUpdate) and after.context_tokens == end.tokens_after
    assert end.tokens_after > agent.soul.prompt_tokens > 0
    assert [e.strategy for e in events if isinstance(e, ev.CompactionBegin)] == [
        "LLMSummaryCompaction"
    ]
    session_dir = agent.session.dir
    assert end.rotated_file and "A long answer." in (session_dir / end.rotated_file).read_text()
    note = json.loads((session_dir / "rotations.jsonl").read_text().splitlines()[-1])
    assert note["reason"] == "compaction" and note["file"] == end.rotated_file
    # The sizes the compaction was shown with, History's and the export's.
    assert (note["tokens"], note["tokens_after"]) == (end.tokens_before, end.tokens_after)
    assert note["strategy"] == "LLMSummaryCompaction"
    records = [json.loads(line) for line in agent.session.context_file.read_text().splitlines()]
    assert [r["role"] for r in records[:4]] == ["_system_prompt", "_checkpoint", "user", "user"]
    assert records[2]["content"] == "<system>CHECKPOINT 0</system>"
    assert COMPACTION_OUTPUT_PREFIX in records[3]["content"][0]["text"]
    assert "The gauge" in records[3]["content"][1]["text"]
    # The summary request was the strategy's, with no tools; the preserved tail follows.
    assert provider.requests[1].tools == []
    assert "## Message 1" in provider.requests[1].history[0].text
    assert "And now briefly?" in [m.text for m in provider.requests[2].history]
    status = [e for e in events if isinstance(e, ev.StatusUpdate)][-1]
    assert status.context_tokens == 124


async def test_manual_compact_with_an_instruction(repo: Path) -> None:
    agent, provider, events = await start(
        repo,
        [
            {"text": "First answer."},
            {"text": "Second answer."},
            {"text": "<current_focus>the gauge colours</current_focus>"},
        ],
    )
    await agent.soul.run("one")
    await agent.soul.run("two")

    assert await agent.soul.compact("keep the colour decisions")
    await agent.close()

    assert "keep the colour decisions" in provider.requests[2].history[0].text
    assert any(isinstance(e, ev.CompactionEnd) and e.rotated_file for e in events)


async def test_a_compact_summary_call_is_paid_for_and_counted_as_a_line_of_its_own(
    repo: Path,
) -> None:
    agent, _, _ = await start(
        repo,
        [
            {"text": "First.", "usage": {"input": 10_000, "output": 1_000}},
            {"text": "Second.", "usage": {"input": 10_000, "output": 1_000}},
            {"text": "<current_focus>x</current_focus>", "usage": {"input": 20_000, "output": 0}},
        ],
        model_name="openai/gpt-4o-mini",  # $0.15 / M input, $0.60 / M output
    )
    await agent.soul.run("one")
    await agent.soul.run("two")

    assert await agent.soul.compact()
    await agent.close()

    report = agent.soul.cost.report()
    assert [turn.usd for turn in report.turns] == pytest.approx([0.0021, 0.0021, 0.003])
    assert report.usd == pytest.approx(0.0072)
    assert (
        json.loads(agent.session.state_file.read_text())["spend"]["models"]["openai/gpt-4o-mini"][
            "calls"
        ]
        == 3
    )


async def test_the_summary_call_is_retried_like_a_step(repo: Path) -> None:
    agent, _, events = await start(
        repo,
        [
            {"text": "First."},
            {"text": "Second."},
            {"error": {"status": 503, "message": "busy"}},
            {"text": "<current_focus>x</current_focus>"},
        ],
    )
    slept: list[float] = []

    async def take(seconds: float) -> None:
        slept.append(seconds)

    agent.soul.retry_sleep = take
    await agent.soul.run("one")
    await agent.soul.run("two")

    assert await agent.soul.compact()
    await agent.close()

    assert [e.attempt for e in events if isinstance(e, ev.StepRetry)] == [1]
    assert len(slept) == 1


async def test_hiding_strategy_from_config(repo: Path) -> None:
    calls = [
        {"tool_calls": [{"name": "ReadFile", "arguments": {"path": "README.md"}}]} for _ in range(7)
    ]
    agent, _, _ = await start(
        repo,
        [*calls, {"text": "Read it seven times."}],
        config=compacting_config("kode_tui.soul.compaction:HidingThenSummaryCompaction"),
    )
    await agent.soul.run("read the readme again and again")

    assert await agent.soul.compact()
    await agent.close()

    tools = [m for m in agent.context.history if m.role == "tool"]
    hidden = [m for m in tools if "hidden" in m.text]
    assert len(tools) == 7 and len(hidden) == 2


@pytest.mark.parametrize(
    ("strategy", "message"),
    [
        ("no_such_module:Thing", "no_such_module"),
        ("kode_tui.soul.approval:Approval", "not a compaction strategy"),
        ("kode_tui.soul.compaction:Nope", "Nope"),
    ],
)
async def test_a_bad_strategy_is_a_config_error(repo: Path, strategy: str, message: str) -> None:
    session = await Session.create(repo)
    config = compacting_config(strategy)
    with pytest.raises(ConfigError) as error:
        await open_agent(session, config, resolve_model(config), provider=ScriptedProvider([]))
    assert message in str(error.value) and "\n" not in str(error.value)
