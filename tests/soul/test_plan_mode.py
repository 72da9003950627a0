"""Plan mode: EnterPlanMode / ExitPlanMode with Kimi CLI 1.52's names, the plan file as the only
file the model may write, and every other edit or command refused with a message."""

from __future__ import annotations

import json
from pathlib import Path

from kode_tui.config import Config, ModelChoice, resolve_model
from kode_tui.session import Session
from kode_tui.session.state import load_state
from kode_tui.soul.agent import Agent, open_agent
from kode_tui.soul.facade import COMMANDS, AgentSession
from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.wire import events as ev
from tests.soul_helpers import record_events


def call(name: str, **arguments: object) -> dict[str, object]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


async def open_scripted(
    tmp_path: Path, script: list[dict[str, object]], config: Config | None = None
) -> tuple[Agent, Path]:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    session = await Session.create(project)
    config = config or Config()
    provider = ScriptedProvider(script)
    agent = await open_agent(session, config, resolve_model(config), provider=provider)
    return agent, project


def results(agent: Agent) -> list[str]:
    texts = []
    for message in agent.context.history:
        if message.role == "tool":
            texts.append(" ".join(getattr(p, "text", "") for p in message.content))
    return texts


async def test_plan_mode_refuses_edits_and_commands_but_writes_the_plan_file(
    tmp_path: Path, home: Path
) -> None:
    """The model enters plan mode (asked once), a write and a command are refused with a
    message it reads, the plan file is written without asking, and approving the plan returns
    to the mode plan mode was entered from."""
    plan_dir = home / "plans"
    script: list[dict[str, object]] = [call("EnterPlanMode")]
    agent, project = await open_scripted(tmp_path, script)
    asked: list[ev.ApprovalRequest] = []

    def approve(event: ev.ApprovalRequest) -> None:
        asked.append(event)
        event.resolve("approve")

    seen = agent.bus.subscribe(ev.ApprovalRequest, callback=approve)
    script.append({"text": "planning"})
    await agent.soul.run("add a feature")
    assert agent.soul.approval.mode == "plan"
    assert agent.session.state.plan_slug
    plan_file = plan_dir / f"{agent.session.state.plan_slug}.md"
    script += [
        call("WriteFile", path="code.py", content="x = 1\n"),
        call("Shell", command="touch made.txt"),
        call("WriteFile", path=str(plan_file), content="# Plan\n1. do it\n"),
        call("ExitPlanMode"),
        {"text": "ok"},
    ]
    await agent.soul.run("go on")
    await seen.join()
    state_on_disk = json.loads(agent.session.state_file.read_text())
    await agent.close()

    assert not (project / "code.py").exists()
    assert not (project / "made.txt").exists()
    assert plan_file.read_text() == "# Plan\n1. do it\n"
    # The plan file is no edit of the work dir: no revert is to undo (or refuse) it.
    assert [e.record.path for e in agent.context.file_edits] == []
    said = results(agent)
    assert sum("Plan mode is active" in text for text in said) == 2
    assert any("## Approved Plan:\n# Plan\n1. do it" in text for text in said)
    # Asked: entering plan mode, and approving the plan; never the plan file's write.
    assert [r.action for r in asked] == ["enter plan mode", "approve the plan"]
    assert agent.soul.approval.mode == "ask"
    assert state_on_disk["plan_mode"] is False
    # The plan-mode reminder went with the requests made in plan mode.
    requests = agent.soul.provider.requests  # type: ignore[attr-defined]
    last_user = [m for m in requests[2].history if m.role == "user"][-1]
    assert "Plan mode is active" in " ".join(getattr(p, "text", "") for p in last_user.content)


async def test_kimi_plan_mode_key_round_trips(tmp_path: Path) -> None:
    """A state.json Kimi wrote in plan mode opens in plan mode; ours tells Kimi of it."""
    path = tmp_path / "state.json"
    path.write_text(json.dumps({"plan_mode": True, "plan_slug": "iron-man-thor-hulk"}))
    state = load_state(path)
    assert state.approval_mode == "plan"
    assert state.plan_slug == "iron-man-thor-hulk"


async def test_exit_plan_mode_shows_the_plan_before_asking_and_asks_nothing_without_one(
    tmp_path: Path, home: Path
) -> None:
    """ExitPlanMode with no plan written is an error the model reads, asking no one; with a
    plan, a PlanDisplay (Kimi's event) carrying the plan file's text and path comes just before
    the approval request."""
    script: list[dict[str, object]] = [call("EnterPlanMode"), {"text": "planning"}]
    agent, _ = await open_scripted(tmp_path, script)
    order: list[ev.Event] = []

    def answer(event: ev.Event) -> None:
        order.append(event)
        if isinstance(event, ev.ApprovalRequest):
            event.resolve("approve")

    seen = agent.bus.subscribe(ev.PlanDisplay, ev.ApprovalRequest, callback=answer)
    await agent.soul.run("plan a feature")
    plan_file = home / "plans" / f"{agent.session.state.plan_slug}.md"
    script += [
        call("ExitPlanMode"),
        call("WriteFile", path=str(plan_file), content="# Plan\n1. add x\n"),
        call("ExitPlanMode"),
        {"text": "done"},
    ]
    await agent.soul.run("present it")
    await seen.join()
    await agent.close()

    said = results(agent)
    assert any("No plan file found" in text for text in said)
    kinds = [type(event).__name__ for event in order]
    assert kinds == ["ApprovalRequest", "PlanDisplay", "ApprovalRequest"]
    shown = order[1]
    assert isinstance(shown, ev.PlanDisplay)
    assert shown.content == "# Plan\n1. add x\n"
    assert shown.file_path == str(plan_file)
    assert isinstance(order[2], ev.ApprovalRequest) and order[2].tool_name == "ExitPlanMode"


async def test_a_session_opened_in_plan_mode_has_its_plan_file(tmp_path: Path, home: Path) -> None:
    """Plan mode as the config's default (or a Kimi session's plan_mode without a slug): the
    plan file is named as entering plan mode names it, so the model can write its plan."""
    agent, _ = await open_scripted(tmp_path, [], Config(approval_mode="plan"))
    await agent.close()

    assert agent.soul.approval.mode == "plan"
    slug = agent.session.state.plan_slug
    assert slug and (home / "plans").is_dir()


async def test_the_plan_is_revised_then_approved_as_edited_into_the_mode_chosen(
    tmp_path: Path, home: Path
) -> None:
    """ExitPlanMode's request offers the plan's approaches and the modes to continue in; sent
    back with feedback the model reads Kimi's revision text in the same turn, still planning;
    approved with an approach, an edited plan and a mode, the edit is in the plan file and in
    the result, and the session continues in that mode."""
    script: list[dict[str, object]] = [call("EnterPlanMode"), {"text": "planning"}]
    agent, _ = await open_scripted(tmp_path, script)
    asked: list[ev.ApprovalRequest] = []
    answers = [
        ev.PlanVerdict(choice="revise", feedback="split step 2"),
        ev.PlanVerdict(choice="approve", mode="yolo", option="Safe", plan="# Mine\n1. safe\n"),
    ]

    def answer(event: ev.ApprovalRequest) -> None:
        asked.append(event)
        event.resolve(answers.pop(0) if event.plan is not None else "approve")

    seen = agent.bus.subscribe(ev.ApprovalRequest, callback=answer)
    await agent.soul.run("plan a feature")
    plan_file = home / "plans" / f"{agent.session.state.plan_slug}.md"
    options = [{"label": "Fast"}, {"label": "Safe", "description": "slow"}]
    script += [
        call("WriteFile", path=str(plan_file), content="# Plan\n1. fast\n2. safe\n"),
        call("ExitPlanMode", options=options),
        call("ExitPlanMode", options=options),
        {"text": "building"},
    ]
    stop = await agent.soul.run("present it")
    await seen.join()
    await agent.close()

    assert stop.stop_reason == "done"
    ask = asked[1].plan
    assert ask is not None
    assert [o.label for o in ask.options] == ["Fast", "Safe"]
    offered = agent.soul.approval.modes  # sandbox only where it works
    assert ask.modes == [mode for mode in offered if mode != "plan"] and "yolo" in ask.modes
    assert ask.mode == "ask" and ask.file_path == str(plan_file)
    said = results(agent)
    assert "Revise based on the feedback below.\n\nUser feedback: split step 2" in said[-2]
    assert 'Selected approach: "Safe"' in said[-1]
    assert said[-1].endswith("## Approved Plan:\n# Mine\n1. safe\n")
    assert plan_file.read_text() == "# Mine\n1. safe\n"
    assert agent.soul.approval.mode == "yolo"
    # The reminder tells a plan still to write from one to revise, as Kimi's does.
    requests = agent.soul.provider.requests  # type: ignore[attr-defined]
    reminded = [
        " ".join(
            getattr(p, "text", "") for p in [m for m in r.history if m.role == "user"][-1].content
        )
        for r in requests
    ]
    assert f"Plan file: {plan_file} (create it with WriteFile" in reminded[-4]
    assert f"Plan file: {plan_file} (exists — read first" in reminded[-2]


async def test_a_rejected_plan_ends_the_turn_in_plan_mode_or_out_of_it(
    tmp_path: Path, home: Path
) -> None:
    """Reject: the turn ends, still planning, the model reads Kimi's text; a plain rejection
    (a front end that only says no) is the same. Reject and exit: the turn ends and the session
    is back in the mode plan mode was entered from."""
    script: list[dict[str, object]] = [call("EnterPlanMode"), {"text": "planning"}]
    agent, _ = await open_scripted(tmp_path, script)
    await agent.soul.approval.set_mode("auto-edit")
    answers: list[ev.ApprovalResponse] = [
        "approve",
        ev.PlanVerdict(choice="reject"),
        "reject",
        ev.PlanVerdict(choice="reject_and_exit"),
    ]
    seen = agent.bus.subscribe(
        ev.ApprovalRequest, callback=lambda event: event.resolve(answers.pop(0))
    )
    await agent.soul.run("plan a feature")
    plan_file = home / "plans" / f"{agent.session.state.plan_slug}.md"
    script += [
        call("WriteFile", path=str(plan_file), content="# Plan\n"),
        call("ExitPlanMode"),
        {"text": "never"},
    ]
    assert (await agent.soul.run("present it")).stop_reason == "rejected"
    assert agent.soul.approval.mode == "plan"
    script[-1:] = [call("ExitPlanMode"), {"text": "never"}]
    assert (await agent.soul.run("again")).stop_reason == "rejected"
    script[-1:] = [call("ExitPlanMode"), {"text": "never"}]
    assert (await agent.soul.run("and again")).stop_reason == "rejected"
    await seen.join()
    await agent.close()

    said = results(agent)
    stay = "Plan rejected by user. Stay in plan mode."
    assert stay in said[-3] and stay in said[-2]
    assert "Plan rejected by user. Plan mode deactivated." in said[-1]
    assert agent.soul.approval.mode == "auto-edit"


async def test_slash_mode_plan_through_the_facade_names_the_plan_file_and_refuses_edits(
    project: Path, home: Path
) -> None:
    """`/mode plan` (the domain's command, as every front end runs it) enters plan mode with a
    plan file; the next turn's write is refused and its request carries the reminder naming
    that file; `/mode ask` leaves it and forgets the file's name, as Kimi does."""
    provider = ScriptedProvider([call("WriteFile", path="code.py", content="x"), {"text": "ok"}])
    opened = await AgentSession.open(project)
    await opened.start(Config(), ModelChoice(name="s", model="s", source="flag"), provider=provider)
    mode = COMMANDS.get("/mode")
    assert mode is not None
    try:
        entered = await COMMANDS.run(opened, mode, "plan")
        slug = opened.session.state.plan_slug
        await opened.run("add a feature")
        left = await COMMANDS.run(opened, mode, "ask")
        now = opened.mode
    finally:
        await opened.close()

    assert entered.text == "Approval mode: plan" and slug
    assert not (project / "code.py").exists()
    request = provider.requests[0]
    last_user = [m for m in request.history if m.role == "user"][-1]
    said = " ".join(getattr(p, "text", "") for p in last_user.content)
    assert f"Plan file: {home / 'plans' / slug}.md" in said
    assert left.text == "Approval mode: ask"
    assert now == "ask" and opened.session.state.plan_slug is None


async def test_plan_mode_entered_under_a_mode_for_this_run_only_returns_to_the_sessions_own(
    tmp_path: Path, home: Path
) -> None:
    """`--yolo` holds for its run only: the model entering plan mode then must not make yolo
    the mode a later approval of the plan returns to (and the session saves)."""
    project = tmp_path / "project"
    project.mkdir()
    session = await Session.create(project)
    provider = ScriptedProvider([call("EnterPlanMode"), {"text": "Planning."}])
    config = Config()
    agent = await open_agent(
        session, config, resolve_model(config), provider=provider, approval_override="yolo"
    )
    await agent.soul.run("Plan it")
    assert agent.soul.approval.mode == "plan"
    assert await agent.soul.approval.leave_plan() == "ask"
    await agent.close()

    saved = load_state(session.dir)
    assert saved.approval_mode == "ask"


async def test_enter_plan_mode_in_plan_mode_is_kimis_error_without_asking(tmp_path: Path) -> None:
    """As in Kimi CLI: the model is told it is in plan mode already; no one is asked to
    approve a switch that would change nothing (print mode's refusal ended the turn)."""
    script = [call("EnterPlanMode"), {"text": "Planning on."}]
    agent, _ = await open_scripted(tmp_path, script, Config(approval_mode="plan"))
    seen = record_events(agent.bus, "reject")
    turn = await agent.soul.run("Plan more")
    await agent.close()

    assert turn.stop_reason == "done"
    assert not [e for e in seen if isinstance(e, ev.ApprovalRequest)]
    [result] = [e for e in seen if isinstance(e, ev.ToolResult)]
    assert result.is_error
    assert result.message == "Already in plan mode. Use ExitPlanMode when your plan is ready."
