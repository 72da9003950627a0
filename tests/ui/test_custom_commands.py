"""Custom slash commands in the TUI: completed, listed in F1, sent as their prompt."""

from __future__ import annotations

from pathlib import Path

from textual.app import App
from textual.command import Command, CommandList

from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.ui.screens.help import HelpScreen
from kode_tui.ui.widgets.blocks import UserBlock
from kode_tui.ui.widgets.prompt import PromptInput
from tests.ui_helpers import make_app, ready, screen_text, turn_running, wait_for


def palette_names(app: App[None]) -> list[str]:
    """The names of the command palette's hits, in order."""
    hits = app.screen.query_one(CommandList)
    options = [hits.get_option_at_index(index) for index in range(hits.option_count)]
    return [option.hit.text.split()[0] for option in options if isinstance(option, Command)]


async def test_a_custom_command_is_completed_sent_as_its_prompt_and_listed_in_help(
    project: Path, tmp_path: Path
) -> None:
    commands = project / ".kode/commands"
    commands.mkdir(parents=True)
    (commands / "review.md").write_text(
        "---\ndescription: Review a file\nargument-hint: [file]\n---\nReview $1 closely.\n"
    )
    (commands / "model.md").write_text("A custom /model the built-in hides.\n")
    # Nested past any parser's stack: a line in F1, never a crash while `/` is completed.
    (commands / "deep.md").write_text("---\ndescription: " + "[" * 5000 + "\n---\nbody")
    (tmp_path / "secret").write_text("PRIVATE")
    (commands / "leak.md").symlink_to(tmp_path / "secret")
    provider = ScriptedProvider([{"text": "Reviewed."}])
    app = make_app(project, provider)
    async with app.run_test(size=(120, 30)) as pilot:
        await ready(pilot)
        prompt = app.screen.query_one(PromptInput)
        await pilot.press("/")
        await wait_for(pilot, lambda: bool(prompt.completion_labels))
        assert prompt.completion_labels[0].startswith("/help ")
        await pilot.press("r", "e", "v", "i")
        await pilot.pause()
        assert prompt.completion_labels == ["/review       [file]  Review a file"]
        await pilot.press("tab", "a", "p", "p", ".", "p", "y", "enter")
        await wait_for(pilot, lambda: len(provider.requests) == 1 and not turn_running(app))

        [block] = app.screen.query(UserBlock)
        assert block.text == "Review app.py closely."
        assert block.label == "/review app.py · .kode/commands/review.md"
        assert prompt.input_history[-1] == "/review app.py"  # what was typed

        # Commands whose names start with what is typed come first, above a help's words
        # ("revoke", in /permissions's).
        await pilot.press("ctrl+p", *"rev")
        await wait_for(pilot, lambda: palette_names(app)[:2] == ["/revert", "/review"])
        await pilot.press("ctrl+u")
        # The palette puts a command that takes arguments in the prompt, to be completed.
        await pilot.press(*"/review")
        await wait_for(pilot, lambda: "[file]  Review a file" in screen_text(app))
        await pilot.press("enter")
        await wait_for(pilot, lambda: prompt.text == "/review ")

        app.action_help()
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
        assert isinstance(app.screen, HelpScreen)
        rows = app.screen.commands
        assert ("/review", "[file]  Review a file  (.kode/commands/review.md)") in rows
        hidden = "not used: the built-in /model has its name (.kode/commands/model.md)"
        assert ("/model", hidden) in rows
        assert any(
            name == "/leak" and "leads outside the work dir" in help_ for name, help_ in rows
        )
        assert (
            "/deep",
            "not read: /deep: .kode/commands/deep.md has front matter that is nested deeper "
            "than 64 levels: not read.",
        ) in rows
    sent = [m.text for m in provider.requests[0].history if m.role == "user"]
    assert "Review app.py closely." in sent
