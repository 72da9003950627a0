"""`kode-tui --search` and `kode-tui --export`, run as a user types them."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kode_tui.session import Context, Session
from kode_tui.session.export import export_markdown
from tests.cli_helpers import Kode, in_process
from tests.conftest import KIMI_DEFAULT_FIXTURE
from tests.session_helpers import assistant_with_tool_call, session_with_turns, user, write_turns


@pytest.fixture
def kode(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Kode:
    """`kode-tui ARGS`, run in this process (tests/cli_helpers.py)."""
    return in_process(capsys, monkeypatch)


async def _reverted_session(tmp_path: Path) -> tuple[Path, Session]:
    """Two turns, a revert to the second turn's first checkpoint, and a new turn after it: the
    words of the reverted turn are only in context_1.jsonl."""
    project, session = await session_with_turns(tmp_path, 2)
    async with Context(session.context_file) as context:
        await context.revert_to(2)
        await context.checkpoint()
        await context.append_message(user("a Zebra \x1b[31mstripe"))
    return project, session


async def test_search_finds_words_in_rotated_generations_with_file_and_checkpoint(
    tmp_path: Path,
    kode: Kode,
) -> None:
    project, session = await _reverted_session(tmp_path)
    result = await asyncio.to_thread(kode, "--search", "TURN 1", str(project))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines == [f"{session.id}  context_1.jsonl  #2  user: turn 1"]

    result = await asyncio.to_thread(kode, "--search", "zebra", str(project))
    assert result.returncode == 0
    # Control characters in the snippet are shown, not sent to the terminal.
    assert "\x1b" not in result.stdout
    assert f"{session.id}  context.jsonl  #2  user: a Zebra ␛[31mstripe" in result.stdout


async def test_search_matches_what_was_said_not_the_json_around_it(
    tmp_path: Path, kode: Kode
) -> None:
    project, _ = await _reverted_session(tmp_path)
    # "role" and "tool_call_id" are in every line's JSON, never in what anyone said.
    result = await asyncio.to_thread(kode, "--search", "tool_call_id", str(project))
    assert result.returncode == 1
    assert result.stdout.strip().startswith("No message in the sessions of")
    assert len(result.stdout.splitlines()) == 1


async def test_search_all_looks_in_every_work_dir(tmp_path: Path, kode: Kode) -> None:
    project, session = await _reverted_session(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    alone = await asyncio.to_thread(kode, "--search", "zebra", str(elsewhere))
    assert alone.returncode == 1
    result = await asyncio.to_thread(kode, "--search", "zebra", "--all", str(elsewhere))
    assert result.returncode == 0
    assert result.stdout.startswith(f"{project}  {session.id}  context.jsonl")


def test_search_without_text_is_one_sentence_and_exit_2(tmp_path: Path, kode: Kode) -> None:
    result = kode("--search", "  ", str(tmp_path))
    assert result.returncode == 2
    assert result.stderr == "kode-tui: --search needs some text to look for.\n"


def test_options_without_their_command_are_one_sentence_and_exit_2(
    tmp_path: Path, kode: Kode
) -> None:
    for args, said in (
        (["--all"], "--all goes with --search TEXT."),
        (["-o", "out.md"], "--format and -o go with --export ID."),
        (["--format", "jsonl"], "--format and -o go with --export ID."),
        (["--search", "a", "--export", "b"], "--search and --export go one at a time."),
    ):
        result = kode(*args, str(tmp_path))
        assert (result.returncode, result.stderr) == (2, f"kode-tui: {said}\n")


async def test_export_markdown_folds_tools_and_marks_the_revert(tmp_path: Path, kode: Kode) -> None:
    project, session = await _reverted_session(tmp_path)
    result = await asyncio.to_thread(kode, "--export", session.id[:8], str(project))
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "## User\n\nturn 0" in text
    assert "<details><summary>Tool call: Shell {&quot;command&quot;: &quot;ls&quot;}" not in text
    assert '<details><summary>Tool call: Shell {"command": "ls"}</summary>' in text
    assert "<details><summary>Result</summary>" in text
    assert "**⟲ Reverted to checkpoint 2**" in text
    # The revert kept turn 0: it is written once, and the talk after it follows the marker.
    assert text.count("turn 0") == 1
    assert text.index("turn 1") < text.index("Reverted") < text.index("a Zebra ␛[31mstripe")


async def test_export_jsonl_keeps_every_record_of_every_generation_in_order(
    tmp_path: Path,
    kode: Kode,
) -> None:
    project, session = await _reverted_session(tmp_path)
    out = tmp_path / "out.jsonl"
    result = await asyncio.to_thread(
        kode, "--export", session.id, "--format", "jsonl", "-o", str(out), str(project)
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    lines = out.read_bytes().splitlines()
    rotated = (session.dir / "context_1.jsonl").read_bytes().splitlines()
    live = session.context_file.read_bytes().splitlines()
    assert json.loads(lines[0]) == {
        "role": "_export_file",
        "file": "context_1.jsonl",
        "reason": "revert",
    }
    assert lines[1 : 1 + len(rotated)] == rotated
    assert json.loads(lines[1 + len(rotated)]) == {"role": "_export_file", "file": "context.jsonl"}
    assert lines[2 + len(rotated) :] == live


async def test_export_masks_api_keys(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    session = await Session.create(project)
    secret = "sk-test-0123456789abcdef0123"
    async with Context(session.context_file) as context:
        await write_turns(context, 1)
        await context.append_message(user(f"my key is {secret}"))
    env_key = {"TEST_EXPORT_API_KEY": secret}
    for form in ("md", "jsonl"):
        result = subprocess.run(
            [sys.executable, "-m", "kode_tui", "--export", session.id, "--format", form,
             str(project)],
            capture_output=True, text=True, timeout=60, env={**os.environ, **env_key},
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert "my key is" in result.stdout
        assert secret not in result.stdout
        assert "[masked: TEST_EXPORT_API_KEY]" in result.stdout


def test_export_of_an_unknown_session_is_one_sentence_and_exit_2(
    tmp_path: Path, kode: Kode
) -> None:
    result = kode("--export", "nope", str(tmp_path))
    assert result.returncode == 2
    assert result.stderr.startswith("kode-tui: there is no session nope in ")
    assert len(result.stderr.splitlines()) == 1


async def test_export_of_a_kimi_session_marks_its_compactions_and_clear_from_the_files() -> None:
    # Kimi CLI notes no reasons: the markers come from what its files show.
    session = await Session.from_dir(KIMI_DEFAULT_FIXTURE)
    text = "".join(export_markdown(session))
    markers = [line for line in text.splitlines() if line.startswith("**⟲")]
    # "After": what the next request held, as the model reported it (Kimi's own `_usage`
    # estimate counts the messages alone); unknown while no request followed the compaction.
    assert markers == [
        "**⟲ Compacted: 1406 → 700 tokens** (the context before it: context_1.jsonl)",
        "**⟲ Cleared** (the context before it: context_2.jsonl)",
        "**⟲ Compacted** (the context before it: context_3.jsonl)",
    ]
    assert "<details><summary>Compaction summary</summary>\n\n```\nThe user said hello" in text
    assert "Previous context has been compacted" not in text


async def test_search_shows_tool_call_arguments_as_their_text(tmp_path: Path, kode: Kode) -> None:
    project = tmp_path / "project"
    project.mkdir()
    session = await Session.create(project)
    async with Context(session.context_file) as context:
        await context.checkpoint()
        await context.append_message(assistant_with_tool_call("call_1", "echo first\necho zebra"))
    result = await asyncio.to_thread(kode, "--search", "zebra", str(project))
    assert result.returncode == 0
    assert result.stdout.endswith("assistant: …ing it. Shell echo first echo zebra\n")


async def test_each_match_finds_its_own_message_again_a_tool_results_its_calls(
    tmp_path: Path,
) -> None:
    from kode_tui.session.search import message_index, search_file
    from tests.session_helpers import tool_result

    _, session = await session_with_turns(tmp_path, 0)
    messages = [
        user("the Zebra"),
        assistant_with_tool_call("call_1", "ls zoo"),
        tool_result("call_1", "zebra.txt"),
        user("one more zebra"),
    ]
    async with Context(session.context_file) as context:
        await context.checkpoint()
        await context.append_message(messages)

    matches = list(search_file(session, session.context_file, "ZEBRA"))
    assert [message_index(messages, match) for match in matches] == [0, 1, 3]


async def test_export_jsonl_to_the_terminal_spells_hidden_characters_as_escapes(
    tmp_path: Path, kode: Kode
) -> None:
    """Records keep a model's bidi overrides and C1 controls raw (valid JSON): written to
    stdout they are `\\u` escapes, the same JSON to a reader, nothing a terminal acts on."""
    project = tmp_path / "project"
    project.mkdir()
    session = await Session.create(project)
    hostile = "abc \u202eevil\u202c \x9b31m red \x7f"
    async with Context(session.context_file) as context:
        await context.append_message(user(hostile))
    assert "\u202e" in session.context_file.read_text(encoding="utf-8")

    result = await asyncio.to_thread(
        kode, "--export", session.id, "--format", "jsonl", str(project)
    )

    assert result.returncode == 0, result.stderr
    assert not {"\u202e", "\u202c", "\x9b", "\x7f"} & set(result.stdout)
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["content"] for r in records if r.get("role") == "user"] == [hostile]
