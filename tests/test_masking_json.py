"""Masking a key never breaks a JSON line, whatever characters the key holds: a line no reader
can parse is a record lost. And a key is masked however deep the JSON quotes it (a tool call's
arguments are JSON inside a JSON string)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kode_tui import masking
from kode_tui.fsutil import append_line, atomic_write_json
from kode_tui.message import FunctionBody, Message, TextPart, ToolCall
from kode_tui.session import Context
from kode_tui.wire import WireBus
from kode_tui.wire import events as ev
from kode_tui.wire.recorder import WireRecorder

VAR = "ODD_API_KEY"
MARKER = f"[masked: {VAR}]"

KEYS = [
    "sk-ends-with-a-backslash\\",
    'sk-"quoted"\\back-é-0123456789',
    "sk/with+slash/and=plus==",
    "ключ-юникод-0123456789",
    "sk-tab\tand-newline\n-0123",
]


@pytest.fixture(params=KEYS, ids=["backslash-end", "quote-backslash", "slash", "cyrillic", "ctl"])
def key(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    value: str = request.param
    monkeypatch.setenv(VAR, value)
    masking.refresh()
    return value


def texts_around(key: str) -> list[str]:
    """Text holding the key, and text holding all of it but its last character: a quote or a
    backslash right after a prefix of the key is where a byte replacement broke the line."""
    stem = key[:-1]
    return [
        f"my key is {key}.",
        f'{stem}" and {stem}\\ and {stem}',
        json.dumps({"command": f"curl -H 'Bearer {key}'"}),  # JSON in a string
        f'{key}"{key}\\"',
    ]


def strings_in(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for item in value for s in strings_in(item)]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [k, *strings_in(v)]]
    return []


def assert_no_key(value: object, key: str) -> None:
    for text in strings_in(value):
        for form in {key, json.dumps(key)[1:-1], json.dumps(key, ensure_ascii=False)[1:-1]}:
            assert form not in text, f"{form!r} in {text!r}"


@pytest.mark.parametrize("ensure_ascii", [False, True])
def test_masking_a_json_line_keeps_it_valid_json_whatever_the_key_holds(
    key: str, ensure_ascii: bool
) -> None:
    for text in texts_around(key):
        record = {"message": {"role": "user", "content": text}, "n": 1}
        line = (json.dumps(record, ensure_ascii=ensure_ascii) + "\n").encode()

        masked = masking.mask_bytes(line)

        assert masked.endswith(b"\n") and masked.count(b"\n") == 1
        decoded = json.loads(masked)
        assert_no_key(decoded, key)
        assert decoded["n"] == 1
    # Text that only looks like the key's start is left as it was.
    near = json.dumps({"t": f'{key[:-1]}"'}).encode()
    assert json.loads(masking.mask_bytes(near)) == {"t": f'{key[:-1]}"'}


async def test_every_session_writer_keeps_its_records_whole_with_an_odd_key(
    tmp_path: Path, key: str
) -> None:
    texts = texts_around(key)
    context = Context(tmp_path / "context.jsonl")
    for text in texts:
        await context.append_message(Message(role="user", content=text))
    await context.append_message(
        Message(
            role="assistant",
            content=[TextPart(text=texts[1])],
            tool_calls=[
                ToolCall(
                    id="c1",
                    function=FunctionBody(name="Shell", arguments=json.dumps({"k": texts[3]})),
                )
            ],
        )
    )
    await context.append_message(Message(role="tool", tool_call_id="c1", content=texts[2]))
    await context.close()

    bus = WireBus()
    async with WireRecorder(bus, tmp_path / "wire.jsonl") as recorder:
        for text in texts:
            bus.send(ev.TurnBegin(user_input=text))
            bus.send(ev.ContentPart(part=TextPart(text=text[:5])))
            bus.send(ev.ContentPart(part=TextPart(text=text[5:])))
        await recorder.flush()

    atomic_write_json(tmp_path / "state.json", {"title": texts[1], texts[3]: texts})
    for text in texts:
        append_line(tmp_path / "rotations.jsonl", json.dumps({"reason": text}))

    for name, count in [("context.jsonl", 6), ("wire.jsonl", 1 + 2 * 4), ("rotations.jsonl", 4)]:
        lines = (tmp_path / name).read_text().splitlines()
        assert len(lines) == count, name
        for line in lines:
            decoded = json.loads(line)  # every line whole
            assert_no_key(decoded, key)
            for text in strings_in(decoded):
                if text.startswith("{"):
                    assert_no_key(json.loads(text), key)  # the arguments still parse too
    state = json.loads((tmp_path / "state.json").read_text())
    assert_no_key(state, key)
    reopened = Context(tmp_path / "context.jsonl")
    await reopened.restore()
    assert len(reopened.history) == 6
    await reopened.close()


async def test_print_mode_masks_a_key_a_server_error_or_a_tool_line_quotes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kode_tui.soul.llm.scripted import ScriptedProvider
    from tests.soul_helpers import print_turn

    key = "sk-live-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    masking.refresh()
    project = tmp_path / "project"
    project.mkdir()
    provider = ScriptedProvider(
        [
            {"text": "Let me look.", "tool_calls": [{"name": "Nope", "arguments": {"k": key}}]},
            # Servers and proxies quote the key they were given in their error messages.
            {"error": {"status": 401, "message": f"Incorrect API key provided: {key}"}},
        ]
    )
    printed = await print_turn(project, provider)

    assert printed.status == 1
    assert key not in printed.out and key not in printed.err
    assert "Incorrect API key provided: [masked: OPENAI_API_KEY]" in printed.err
    assert '"k": "[masked: OPENAI_API_KEY]"' in printed.out


@pytest.mark.parametrize(
    "name", ["HF_TOKEN", "GITHUB_TOKEN", "AWS_BEARER_TOKEN_BEDROCK", "AZURE_CLIENT_SECRET"]
)
def test_the_tokens_litellm_reads_for_other_providers_are_masked(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A model such as `huggingface/...` with no `api_key_env` makes litellm read these itself.
    monkeypatch.setenv(name, "credential-value-0123456789")
    masking.refresh()

    assert masking.mask("use credential-value-0123456789") == f"use [masked: {name}]"
