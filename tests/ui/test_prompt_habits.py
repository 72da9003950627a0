"""Prompt habits from other terminal agents: history across restarts, Ctrl+R, Alt+Enter and
`\\`+Enter, Ctrl+G in $EDITOR."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from kode_tui import prompt_history
from kode_tui.masking import marker
from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.ui.widgets.prompt import PromptInput
from tests.ui_helpers import make_app, ready, send, turn_running, wait_for


@pytest.fixture
def project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    return project


async def send_and_wait(project: Path, *texts: str) -> None:
    app = make_app(project, ScriptedProvider([{"text": "ok"} for _ in texts]))
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        for text in texts:
            await send(pilot, text)
            await wait_for(pilot, lambda: not turn_running(app) and not app._queue)


async def test_up_and_ctrl_r_after_a_restart_recall_what_was_sent_in_this_work_dir(
    project: Path,
) -> None:
    await send_and_wait(project, "first question", "second question")
    app = make_app(project, ScriptedProvider([]))
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        prompt = app.screen.query_one(PromptInput)
        await pilot.press("up")
        assert prompt.text == "second question"
        await pilot.press("up")
        assert prompt.text == "first question"
        prompt.clear()
        await pilot.press("ctrl+r", *"first", "enter")
        await pilot.pause()
        assert prompt.text == "first question" and not prompt.searching


async def test_the_history_of_one_work_dir_is_not_offered_in_another(
    project: Path, tmp_path: Path
) -> None:
    await send_and_wait(project, "only here")
    other = tmp_path / "other"
    other.mkdir()
    app = make_app(other, ScriptedProvider([]))
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        prompt = app.screen.query_one(PromptInput)
        assert prompt.input_history == []
        await pilot.press("up")
        assert prompt.text == ""


async def test_the_history_file_is_private_and_masks_api_keys(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-test-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    await send_and_wait(project, f"why does {secret} fail?")
    path = prompt_history.history_file(project)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    text = path.read_text()
    assert secret not in text
    assert marker("OPENAI_API_KEY") in json.loads(text.splitlines()[-1])["content"]


async def test_a_corrupt_history_file_loads_as_empty(
    project: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = prompt_history.history_file(project)
    path.parent.mkdir(parents=True)
    path.write_bytes(b'\xff\xfe not json\n{"content": 3}\n[1, 2]\n')
    app = make_app(project, ScriptedProvider([]))
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        assert app.screen.query_one(PromptInput).input_history == []
    warnings = [r.getMessage() for r in caplog.records if r.name == prompt_history.__name__]
    assert len(warnings) == 1 and "3 lines" in warnings[0]


def test_an_unreadable_history_file_is_an_empty_history_and_one_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "history.jsonl"
    path.mkdir()  # not a regular file: cannot be read as one
    assert prompt_history.load(path) == []
    assert len(caplog.records) == 1 and "cannot be read" in caplog.records[0].getMessage()


def test_a_torn_last_line_costs_only_that_entry(tmp_path: Path) -> None:
    path = tmp_path / "h" / "history.jsonl"
    prompt_history.append(path, "kept")
    with path.open("ab") as file:
        file.write(b'{"content": "tor')
    prompt_history.append(path, "after the crash")
    assert prompt_history.load(path) == ["kept", "after the crash"]
    assert "kept" in path.read_text()


def test_the_history_keeps_the_newest_entries_up_to_the_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(prompt_history, "MAX_ENTRIES", 3)
    path = tmp_path / "h" / "history.jsonl"
    for n in range(5):
        prompt_history.append(path, f"entry {n}\nwith a second line")
    expected = [f"entry {n}\nwith a second line" for n in (2, 3, 4)]
    assert prompt_history.load(path) == expected
    assert len(path.read_text().splitlines()) == 3
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert prompt_history.load(path) == expected


def test_a_huge_history_file_is_read_from_its_end_and_huge_entries_are_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(prompt_history, "MAX_BYTES", 200)
    path = tmp_path / "h" / "history.jsonl"
    for n in range(20):
        prompt_history.append(path, f"entry {n:02}")
    prompt_history.append(path, "x" * (prompt_history.MAX_ENTRY_CHARS + 1))
    entries = prompt_history.load(path)
    assert entries[-1] == "entry 19" and "entry 00" not in entries
    assert prompt_history.load(path) == entries  # the file was cut to what was read
