"""API keys never leave the machine nor reach a session file or the log (DESIGN.md §13): the key
in the environment is masked in requests, context.jsonl, wire.jsonl, rotations, state.json and
the log, while the blobs that keep file images for revert keep the real bytes."""

from __future__ import annotations

import json
import logging
import random
import string
from collections.abc import Iterator
from pathlib import Path

import pytest

from kode_tui import masking
from kode_tui.cli import _start_logging
from kode_tui.config import API_KEY_ENV_VARS, OTHER_KEY_VARS, Config
from kode_tui.fsutil import append_line, atomic_write_bytes, atomic_write_json
from kode_tui.message import Message, TextPart, ToolCall, UnknownPart
from kode_tui.paths import Paths
from kode_tui.session import Context, Session
from kode_tui.soul.agent import Agent, open_agent
from kode_tui.wire import events as ev
from kode_tui.wire.records import sidecar_path
from tests.llm_server import LLMServer, loopback_choice
from tests.soul_helpers import call, make_rig, record_events

VAR = "OPENAI_API_KEY"
MARKER = f"[masked: {VAR}]"


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh fake key in OPENAI_API_KEY: no two tests share one."""
    value = "sk-test-" + "".join(random.choices(string.ascii_letters + string.digits, k=24))
    monkeypatch.setenv(VAR, value)
    masking.refresh()
    return value


@pytest.fixture
def server(key: str) -> Iterator[LLMServer]:
    with LLMServer() as server:
        yield server


@pytest.fixture
def project(tmp_path: Path, key: str) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / ".env").write_text(f"DEBUG=1\n{VAR}={key}\nPORT=8000\n")
    return project


async def start(project: Path, server: LLMServer) -> tuple[Agent, list[ev.Event]]:
    session = await Session.create(project)
    choice = loopback_choice(server, VAR)
    agent = await open_agent(session, Config(), choice)
    return agent, record_events(agent.bus, "approve_for_session")


def files_holding(directory: Path, secret: str) -> list[str]:
    """The files under `directory`, blobs aside, that hold `secret` (raw or JSON-escaped)."""
    needles = {secret.encode(), json.dumps(secret)[1:-1].encode()}
    return sorted(
        str(path.relative_to(directory))
        for path in directory.rglob("*")
        if path.is_file()
        and "blobs" not in path.relative_to(directory).parts
        and any(needle in path.read_bytes() for needle in needles)
    )


# --- the attacks of the issue, through the whole agent ---------------------------------------


async def test_a_mentioned_env_file_reaches_neither_the_model_nor_a_session_file(
    project: Path, server: LLMServer, key: str
) -> None:
    server.reply_text("The port is 8000.")
    agent, _ = await start(project, server)

    result = await agent.soul.run("Which port does @.env set?")
    await agent.close()

    assert result.stop_reason == "done", result.error
    sent = json.dumps(server.requests)
    assert key not in sent
    assert MARKER in sent and "PORT=8000" in sent  # the model still reads the rest of the file
    assert files_holding(agent.session.dir, key) == []
    # The reminder, recorded masked (in the sidecar: Kimi CLI has no type for reminders).
    assert MARKER in sidecar_path(agent.session.wire_file).read_text()


async def test_an_edit_of_env_shows_no_key_while_blobs_keep_it_for_a_revert(
    project: Path, server: LLMServer, key: str
) -> None:
    original = (project / ".env").read_bytes()
    edit = {"path": ".env", "edit": {"old": "PORT=8000", "new": "PORT=9000"}}
    server.reply_tool_calls([("call_e", "StrReplaceFile", json.dumps(edit))])
    server.reply_text("Moved to 9000.")
    agent, events = await start(project, server)

    assert (await agent.soul.run("Use port 9000")).stop_reason == "done"
    assert (project / ".env").read_text() == f"DEBUG=1\n{VAR}={key}\nPORT=9000\n"
    outcome = await agent.soul.travel.revert(0, files=True)
    await agent.close()

    # The diff the user approved showed the key's line, masked in the recording.
    approval = next(e for e in events if isinstance(e, ev.ApprovalRequest))
    assert key in json.dumps(approval.model_dump(mode="json"))  # the screen shows the truth
    wire = agent.session.wire_file.read_text()
    assert key not in wire and f"{VAR}={MARKER}" in wire
    assert files_holding(agent.session.dir, key) == []
    blobs = [path.read_bytes() for path in (agent.session.dir / "blobs").iterdir()]
    assert original in blobs and all(key.encode() in blob for blob in blobs)
    assert outcome.files_restored == [".env"]
    assert (project / ".env").read_bytes() == original


async def test_a_model_writing_back_the_marker_keeps_the_real_key_in_the_file(
    project: Path, server: LLMServer, key: str
) -> None:
    rewrite = {"path": ".env", "content": f"DEBUG=0\n{VAR}={MARKER}\nPORT=8000\n"}
    server.reply_tool_calls([("call_w", "WriteFile", json.dumps(rewrite))])
    server.reply_text("Debug is off.")
    agent, _ = await start(project, server)

    assert (await agent.soul.run("Turn DEBUG off in .env")).stop_reason == "done"
    await agent.close()

    assert (project / ".env").read_text() == f"DEBUG=0\n{VAR}={key}\nPORT=8000\n"
    assert files_holding(agent.session.dir, key) == []


async def test_a_marker_written_to_a_file_without_the_key_stays_a_marker(
    project: Path, server: LLMServer, key: str
) -> None:
    leak = {"path": "settings.py", "content": f'KEY = "{MARKER}"\n'}
    server.reply_tool_calls([("call_w", "WriteFile", json.dumps(leak))])
    server.reply_text("Written.")
    agent, _ = await start(project, server)

    assert (await agent.soul.run("Put the key in settings.py")).stop_reason == "done"
    await agent.close()

    assert (project / "settings.py").read_text() == f'KEY = "{MARKER}"\n'


async def test_a_key_the_user_typed_stays_out_of_requests_compaction_and_state(
    project: Path, server: LLMServer, key: str
) -> None:
    command = f"echo {key} | wc -c"
    server.reply_tool_calls([("call_s", "Shell", json.dumps({"command": command}))])
    server.reply_text("It has 33 characters.")
    server.reply_text("The user asked how long their key is.")  # the compaction's summary
    agent, _ = await start(project, server)

    assert (await agent.soul.run(f"How long is {key}?")).stop_reason == "done"
    assert await agent.soul.compact()
    await agent.close()

    # The session approval of that exact command is kept, without the key, in state.json.
    assert [s for s in agent.session.state.session_approvals if s.startswith("shell-exact:")]
    assert MARKER in (agent.session.dir / "state.json").read_text()
    assert len(server.requests) == 3 and key not in json.dumps(server.requests)
    assert (agent.session.dir / "rotations.jsonl").exists()
    assert files_holding(agent.session.dir, key) == []


async def test_a_library_users_own_provider_never_sees_the_key(tmp_path: Path, key: str) -> None:
    rig = await make_rig(
        tmp_path,
        [
            {"tool_calls": [call("Echo", text=f"key={key}")]},
            {"text": "Echoed."},
        ],
    )

    assert (await rig.soul.run(f"Echo {key}")).stop_reason == "done"

    requests = rig.provider.requests
    assert len(requests) == 2
    seen = json.dumps([[m.model_dump(mode="json") for m in r.history] for r in requests])
    assert key not in seen and MARKER in seen
    assert key not in rig.context.path.read_text()
    # What the user typed stays theirs in memory; only what leaves the process is masked.
    assert key in str(rig.context.history[0].content)


async def test_a_key_set_after_the_soul_started_is_masked_from_its_next_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    masking.refresh()  # what the environment held before the key was set
    rig = await make_rig(tmp_path, [{"text": "Noted."}])
    late = "sk-test-late-" + "".join(random.choices(string.ascii_letters, k=20))
    monkeypatch.setenv(VAR, late)

    assert (await rig.soul.run(f"My key is {late}")).stop_reason == "done"

    assert late not in rig.context.path.read_text()
    assert late not in json.dumps([m.model_dump() for m in rig.provider.requests[0].history])


def test_the_log_file_masks_messages_arguments_and_tracebacks(home: Path, key: str) -> None:
    logger = logging.getLogger("kode_tui")
    before = list(logger.handlers)
    _start_logging()
    try:
        logger.warning("request failed for %s", key)
        try:
            raise ValueError(f"bad key {key}")
        except ValueError:
            logger.exception("unexpected error")
    finally:
        for handler in logger.handlers[len(before) :]:
            handler.close()
            logger.removeHandler(handler)

    text = Paths.current().log_file.read_text()
    assert key not in text
    assert f"request failed for {MARKER}" in text and f"ValueError: bad key {MARKER}" in text


# --- the writers -----------------------------------------------------------------------------


def test_json_files_and_log_lines_are_masked_but_blobs_keep_real_bytes(
    tmp_path: Path, key: str
) -> None:
    atomic_write_json(tmp_path / "state.json", {"approvals": [f'shell:curl -H "{key}"']})
    append_line(tmp_path / "rotations.jsonl", json.dumps({"source": key}))
    atomic_write_bytes(tmp_path / "blob", f"{VAR}={key}\n".encode())

    assert json.loads((tmp_path / "state.json").read_text()) == {
        "approvals": [f'shell:curl -H "{MARKER}"']
    }
    assert json.loads((tmp_path / "rotations.jsonl").read_text()) == {"source": MARKER}
    assert (tmp_path / "blob").read_text() == f"{VAR}={key}\n"


async def test_a_system_prompt_holding_a_key_can_still_be_replaced(
    tmp_path: Path, key: str
) -> None:
    context = Context(tmp_path / "session" / "context.jsonl")
    await context.restore()
    await context.write_system_prompt(f"Deploy with {key}.")
    await context.append_message(Message(role="user", content="hi"))
    await context.write_system_prompt("Be brief.")
    await context.close()

    lines = [json.loads(line) for line in context.path.read_text().splitlines()]
    assert lines == [
        {"role": "_system_prompt", "content": "Be brief."},
        {"role": "user", "content": "hi"},
    ]
    rotated = (tmp_path / "session" / "context_1.jsonl").read_text()
    assert key not in rotated and f"Deploy with {MARKER}." in rotated


# --- the masking itself ----------------------------------------------------------------------


def test_a_key_is_masked_as_it_is_and_as_json_spells_it(monkeypatch: pytest.MonkeyPatch) -> None:
    odd = 'sk-"quoted"\\back-é-0123456789'
    monkeypatch.setenv("ODD_API_KEY", odd)
    masking.refresh()
    marker = "[masked: ODD_API_KEY]"

    assert masking.mask(f"raw {odd}.") == f"raw {marker}."
    assert masking.mask(json.dumps({"k": odd})) == json.dumps({"k": marker})
    assert masking.mask_bytes(json.dumps({"k": odd}).encode()) == json.dumps({"k": marker}).encode()
    line = json.dumps({"k": odd}, ensure_ascii=False).encode()
    assert json.loads(masking.mask_bytes(line)) == {"k": marker}


def test_short_values_and_unrelated_variables_are_left_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TINY_API_KEY", "abc1234")
    monkeypatch.setenv("KODE_TEST_NOT_A_KEY", "plain-value-123456")
    masking.refresh()

    text = "abc1234 plain-value-123456"
    assert masking.mask(text) is text
    assert "TINY_API_KEY" not in masking.names()


def test_every_key_variable_kode_tui_reads_is_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    variables = {*API_KEY_ENV_VARS, *(v for vs in OTHER_KEY_VARS.values() for v in vs)}
    for n, name in enumerate(sorted(variables)):
        monkeypatch.setenv(name, f"secret-value-{n:04d}-xyz")
    masking.refresh()

    assert variables <= set(masking.names())


def test_a_configured_api_key_env_and_a_registered_value_are_masked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TEAM_LLM_CREDENTIAL", "team-credential-0001")
    masking.watch_env(["TEAM_LLM_CREDENTIAL"])
    masking.register("SESSION_TOKEN", "runtime-token-0002")
    try:
        assert masking.mask("team-credential-0001 runtime-token-0002") == (
            "[masked: TEAM_LLM_CREDENTIAL] [masked: SESSION_TOKEN]"
        )
    finally:
        masking.forget("TEAM_LLM_CREDENTIAL")
        masking.forget("SESSION_TOKEN")
    assert masking.mask("runtime-token-0002") == "runtime-token-0002"


def test_messages_are_copied_only_where_they_hold_a_key(key: str) -> None:
    clean = Message(role="user", content="hello")
    secret = Message(
        role="assistant",
        content=[TextPart(text="ok")],
        tool_calls=[
            ToolCall.model_validate(
                {"id": "c1", "function": {"name": "Shell", "arguments": json.dumps({"k": key})}}
            )
        ],
    )

    odd = Message(role="user", content=[UnknownPart.model_validate({"type": "audio", "k": key})])

    masked = masking.mask_value([clean, secret, odd])

    assert masked[0] is clean
    assert masked[1].tool_calls is not None
    assert masked[1].tool_calls[0].function.arguments == json.dumps({"k": MARKER})
    assert secret.tool_calls is not None and key in str(secret.tool_calls[0].function.arguments)
    assert masked[1].model_dump(exclude_unset=True)["content"] == [{"type": "text", "text": "ok"}]
    assert masked[2].model_dump()["content"] == [{"type": "audio", "k": MARKER}]


def test_a_marker_becomes_the_key_again_only_where_the_text_holds_that_key(key: str) -> None:
    arguments = json.dumps({"content": f"{VAR}={MARKER}\nOTHER=[masked: NOT_KNOWN]\n"})

    assert json.loads(masking.unmask_json(arguments, only_in=f"{VAR}={key}")) == {
        "content": f"{VAR}={key}\nOTHER=[masked: NOT_KNOWN]\n"
    }
    assert masking.unmask_json(arguments, only_in="DEBUG=1") == arguments


async def test_a_compacted_context_written_in_one_swap_holds_no_key(
    tmp_path: Path, key: str
) -> None:
    context = Context(tmp_path / "context.jsonl")
    await context.append_message(Message(role="user", content=f"my key is {key}"))
    # A strategy that keeps messages verbatim (tool-result hiding) hands them back as they are.
    await context.replace_all(
        [Message(role="user", content=f"my key is {key}")], reason="compaction"
    )
    await context.close()

    assert files_holding(tmp_path, key) == []
    assert MARKER in (tmp_path / "context.jsonl").read_text()
