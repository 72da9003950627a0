"""Regenerate screenshots/*.svg from the real app, driven by scripted models (`make screenshots`).

Each scene runs kode-tui headless in a throwaway KODE_TUI_HOME and project, so nothing on this
machine is read or changed, and saves what the screen shows as an SVG.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "screenshots"
SIZE = (130, 38)

Scene = Callable[[Path], Awaitable[None]]


def project_files(project: Path) -> None:
    (project / "README.md").write_text("# Greeter\n\nA tiny project that says hello.\n")
    (project / "hello.py").write_text("def main():\n    print('hello')\n\n\nmain()\n")
    (project / "AGENTS.md").write_text("Run `python hello.py` to check a change.\n")


async def until(pilot: Any, condition: Callable[[], object], timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"scene timed out waiting for {condition}")
        await pilot.pause(0.05)


def started(app: Any) -> bool:
    return app.agent_session is not None and bool(app.agent_session.started)


async def ready(pilot: Any) -> None:
    from kode_tui.ui.widgets.approval import ApprovalPanel
    from kode_tui.ui.widgets.prompt import PromptInput

    app = pilot.app
    await until(pilot, lambda: bool(app.screen.query(PromptInput)) and started(app))
    for panel in app.screen.query(ApprovalPanel):
        panel.key_delay_s = 0
    app.screen.query_one(PromptInput).cursor_blink = False
    await pilot.pause(0.2)


async def send(pilot: Any, text: str) -> None:
    from kode_tui.ui.widgets.prompt import PromptInput

    prompt = pilot.app.screen.query_one(PromptInput)
    prompt.text = text
    await pilot.press("enter")


ASK = "Add a greet(name) function to hello.py and use it"


async def tour(pilot: Any) -> None:
    """Ask for the TOUR's change and wait until its turn has ended."""
    app = pilot.app
    await send(pilot, ASK)
    await until(pilot, lambda: len(app._provider.requests) >= 4)
    await until(pilot, lambda: not app._turn.is_running)


def app_for(
    project: Path, script: list[dict[str, Any]] | None, config: Any = None, **options: Any
) -> Any:
    from kode_tui.config import Config, ModelChoice
    from kode_tui.soul.llm.demo import DemoProvider
    from kode_tui.soul.llm.scripted import ScriptedProvider
    from kode_tui.ui.app import KodeApp

    if script is None:
        provider: Any = DemoProvider(delay=0)
        choice = ModelChoice(name="demo", model="demo", source="demo")
    else:
        provider = ScriptedProvider(
            script, model_name="claude-sonnet-4-5", max_context_size=200_000
        )
        choice = ModelChoice(name="sonnet", model="anthropic/claude-sonnet-4-5", source="config")
    return KodeApp(project, config or Config(), choice, provider=provider, **options)


TOUR = [
    {
        "think": "I should look at the code before changing it.",
        "text": "I'll read `hello.py` first.",
        "tool_calls": [{"name": "ReadFile", "arguments": {"path": "hello.py"}}],
        "usage": {"input": 61_000, "output": 60},
    },
    {
        "text": "Adding a `greet(name)` function and using it from `main()`.",
        "tool_calls": [
            {
                "name": "StrReplaceFile",
                "arguments": {
                    "path": "hello.py",
                    "edit": {
                        "old": "def main():\n    print('hello')\n",
                        "new": "def greet(name):\n    return f'Hello, {name}!'\n\n\n"
                        "def main():\n    print(greet('world'))\n",
                    },
                },
            }
        ],
        "usage": {"input": 118_500, "output": 120},
    },
    {
        "text": "Checking that it runs.",
        "tool_calls": [{"name": "Shell", "arguments": {"command": "python3 hello.py"}}],
        "usage": {"input": 119_200, "output": 30},
    },
    {
        "text": "Done: `hello.py` now has **greet(name)**, and `main()` prints `Hello, world!`.",
        "usage": {"input": 119_500, "output": 25},
    },
]


async def main_screen(project: Path) -> None:
    app = app_for(project, [*TOUR, {"text": "Streaming the next answer", "hang": True}], yolo=True)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await tour(pilot)
        await send(pilot, "Now add a test for it")
        await until(pilot, lambda: len(app._provider.requests) >= 5)
        await pilot.pause(0.5)
        app.save_screenshot("main.svg", str(OUT))


async def approval(project: Path) -> None:
    app = app_for(project, TOUR)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, ASK)
        from kode_tui.ui.widgets.approval import ApprovalPanel

        panel = app.screen.query_one(ApprovalPanel)
        await until(
            pilot, lambda: panel.current is not None and "StrReplace" in panel.current.tool_name
        )
        await pilot.pause(0.3)
        app.save_screenshot("approval.svg", str(OUT))


async def demo_first_run(project: Path) -> None:
    app = app_for(project, None)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "What does this project do?")
        from kode_tui.ui.widgets.approval import ApprovalPanel

        panel = app.screen.query_one(ApprovalPanel)
        await until(pilot, lambda: panel.current is not None)
        await pilot.press("y")
        await until(pilot, lambda: not app._turn.is_running)
        await pilot.pause(0.3)
        app.save_screenshot("demo.svg", str(OUT))


async def narrow(project: Path) -> None:
    app = app_for(project, TOUR, yolo=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await tour(pilot)
        await pilot.pause(0.3)
        app.save_screenshot("narrow.svg", str(OUT))


async def light(project: Path) -> None:
    app = app_for(project, TOUR, theme="kode-light", yolo=True)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await tour(pilot)
        await pilot.pause(0.3)
        app.save_screenshot("light.svg", str(OUT))


async def revert(project: Path) -> None:
    app = app_for(project, TOUR, yolo=True)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await tour(pilot)
        from kode_tui.ui.screens.timetravel import RevertDialog
        from kode_tui.ui.widgets.timeline import CheckpointTimeline

        timeline = app.screen.query_one(CheckpointTimeline)
        timeline.focus()
        timeline.highlighted = 1
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, RevertDialog))
        await pilot.pause(0.3)
        app.save_screenshot("revert.svg", str(OUT))


async def review_compaction(app: Any, pilot: Any) -> None:
    """The tour, then `/compact` until its review screen is up."""
    from kode_tui.ui.screens.compaction import CompactionReview

    await ready(pilot)
    await tour(pilot)
    await send(pilot, "/compact keep the plan for the test")
    await until(pilot, lambda: isinstance(app.screen, CompactionReview))


async def preview(project: Path) -> None:
    summary = (
        "<current_focus>Adding a test for greet(name) in hello.py.</current_focus>\n"
        "<code_state>hello.py defines greet(name) and main() prints greet('world'); "
        "`python3 hello.py` prints Hello, world!</code_state>"
    )
    app = app_for(project, [*TOUR, {"text": summary}], yolo=True)
    async with app.run_test(size=SIZE) as pilot:
        await review_compaction(app, pilot)
        await pilot.press("ctrl+s")
        folder = app.session.dir
        await until(pilot, lambda: (folder / "context_1.jsonl").exists())
        await until(pilot, lambda: not app._turn or not app._turn.is_running)
        await pilot.pause(0.3)
        await send(pilot, "/restore 1")
        from kode_tui.ui.screens.timetravel import PreviewScreen

        await until(pilot, lambda: isinstance(app.screen, PreviewScreen))
        await pilot.pause(0.5)
        app.save_screenshot("preview.svg", str(OUT))


async def compaction(project: Path) -> None:
    summary = (
        "## Current focus\nA test for greet(name) in hello.py.\n\n"
        "## Decisions\n- greet returns the text; main prints it\n- tests in tests/test_hello.py"
    )
    app = app_for(project, [*TOUR, {"text": summary}], yolo=True)
    async with app.run_test(size=SIZE) as pilot:
        await review_compaction(app, pilot)
        await pilot.pause(0.5)
        app.save_screenshot("compaction.svg", str(OUT))


async def pins(project: Path) -> None:
    app = app_for(project, TOUR, yolo=True)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await tour(pilot)
        await send(pilot, "/pin Run the tests with `python3 -m pytest -q` before saying done")
        await send(pilot, "/pin greet(name) must stay a pure function: main() does the printing")
        await send(pilot, "/pins")
        from kode_tui.ui.screens.pins import PinsScreen

        await until(pilot, lambda: isinstance(app.screen, PinsScreen))
        await pilot.pause(0.5)
        app.save_screenshot("pins.svg", str(OUT))


PLAN = """# Plan: greet(name)

1. Add `greet(name)` to `hello.py`, returning `Hello, {name}!`
2. Make `main()` print `greet('world')`
3. Add `tests/test_hello.py` checking `greet('Ada')`

Risks: none; `python3 hello.py` still prints one line.
"""


async def plan(project: Path) -> None:
    from kode_tui.config import Config
    from kode_tui.ui.screens.plan import PlanReview

    script: list[dict[str, Any]] = []
    app = app_for(project, script, Config(approval_mode="plan"))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        slug = app.agent_session.session.state.plan_slug
        plan_file = Path(os.environ["KODE_TUI_HOME"]) / "plans" / f"{slug}.md"
        script += [
            {
                "text": "I read `hello.py`; here is the plan.",
                "tool_calls": [
                    {"name": "WriteFile", "arguments": {"path": str(plan_file), "content": PLAN}}
                ],
            },
            {"tool_calls": [{"name": "ExitPlanMode", "arguments": {}}]},
        ]
        await send(pilot, "Plan a greet(name) function with a test")
        await until(pilot, lambda: isinstance(app.screen, PlanReview))
        await pilot.pause(0.5)
        app.save_screenshot("plan.svg", str(OUT))


async def subagent(project: Path) -> None:
    script = [
        {
            "text": "I'll have an explorer survey the project while I wait.",
            "tool_calls": [
                {
                    "name": "Agent",
                    "arguments": {
                        "description": "Survey the project",
                        "prompt": "List the files and say what each is for.",
                        "subagent_type": "explore",
                    },
                }
            ],
        },
        {"tool_calls": [{"name": "Glob", "arguments": {"pattern": "*"}}]},
        {"tool_calls": [{"name": "ReadFile", "arguments": {"path": "hello.py"}}]},
        {"text": "Reading the README next", "hang": True},
    ]
    app = app_for(project, script, yolo=True)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "What is in this project?")
        await until(pilot, lambda: len(app._provider.requests) >= 4)
        await pilot.pause(0.5)
        app.save_screenshot("subagent.svg", str(OUT))


SCENES: dict[str, Scene] = {
    "main": main_screen,
    "approval": approval,
    "demo": demo_first_run,
    "narrow": narrow,
    "light": light,
    "revert": revert,
    "preview": preview,
    "compaction": compaction,
    "pins": pins,
    "plan": plan,
    "subagent": subagent,
}


def main() -> None:
    wanted = sys.argv[1:] or list(SCENES)
    OUT.mkdir(exist_ok=True)
    for name in wanted:
        with tempfile.TemporaryDirectory(prefix="kode-tui-shot-") as tmp:
            base = Path(tmp)
            project = base / "greeter"
            project.mkdir()
            project_files(project)
            os.environ["KODE_TUI_HOME"] = str(base / ".kode-tui")
            os.environ["HOME"] = str(base)
            os.environ["KODE_TUI_OLLAMA_URL"] = ""
            asyncio.run(SCENES[name](project))
            print(f"screenshots/{name}.svg")


if __name__ == "__main__":
    main()
