"""Odd answers and odd files, handled explicitly: an empty answer, two tool calls with one id,
and a context with damaged lines (the user is told once)."""

from __future__ import annotations

from pathlib import Path

from kode_tui.wire import events as ev
from tests.session.test_context_steps import assert_paired
from tests.soul_helpers import make_rig


async def test_an_empty_answer_adds_nothing_and_the_user_is_told_once(tmp_path: Path) -> None:
    rig = await make_rig(tmp_path, [{}, {"text": "Here now."}])

    result = await rig.soul.run("hello?")
    await rig.settle()

    assert result.stop_reason == "done"
    assert [m.role for m in rig.context.history] == ["user"]
    assert [w.message for w in rig.of(ev.Warning)] == [
        "the model returned an empty answer; nothing was added"
    ]
    await rig.soul.run("again")
    assert_paired(rig.provider.requests[-1].history)
    assert [m.role for m in rig.context.history] == ["user", "user", "assistant"]


async def test_two_tool_calls_with_one_id_both_run_and_each_gets_its_own_result(
    tmp_path: Path,
) -> None:
    rig = await make_rig(
        tmp_path,
        [
            {
                "tool_calls": [
                    {"id": "same", "name": "Echo", "arguments": {"text": "first"}},
                    {"id": "same", "name": "Echo", "arguments": {"text": "second"}},
                ]
            },
            {"text": "Done."},
        ],
    )

    await rig.soul.run("echo both")
    await rig.settle()

    assistant = next(m for m in rig.context.history if m.tool_calls)
    assert assistant.tool_calls is not None
    ids = [c.id for c in assistant.tool_calls]
    assert len(ids) == 2 and len(set(ids)) == 2 and ids[0] == "same"
    outputs = {r.tool_call_id: r.output for r in rig.of(ev.ToolResult)}
    assert outputs == {ids[0]: "first", ids[1]: "second"}
    assert {c.id for c in rig.of(ev.ToolCall)} == set(ids)
    assert_paired(rig.provider.requests[-1].history)


def damaged_session(tmp_path: Path) -> None:
    path = tmp_path / "session" / "context.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(
        b'{"role":"user","content":"one"}\n'
        b"not json at all\n"
        b'{"role":"assistant","content":"fine"}\n'
        b'{"role":"user","content":' + b"[" * 1000 + b"]" * 1000 + b"}\n"
    )


async def test_damaged_lines_of_an_opened_session_are_told_in_one_warning_event(
    tmp_path: Path,
) -> None:
    damaged_session(tmp_path)
    rig = await make_rig(tmp_path, [{"text": "a"}, {"text": "b"}])

    await rig.soul.run("first")
    await rig.soul.run("second")
    await rig.settle()

    warnings = rig.of(ev.Warning)
    assert [w.message for w in warnings] == [
        "context.jsonl: 2 damaged lines were skipped (kept on disk; details in the log)"
    ]
    # Sent inside the first turn, so print mode (subscribed just before it) shows it.
    first_turn = rig.events.index(rig.of(ev.TurnBegin)[0])
    assert rig.events.index(warnings[0]) == first_turn + 1


async def test_a_front_end_can_take_the_warning_at_open_and_it_is_not_sent_again(
    tmp_path: Path,
) -> None:
    damaged_session(tmp_path)
    rig = await make_rig(tmp_path, [{"text": "a"}])

    rig.soul.send_notices()
    await rig.settle()
    assert len(rig.of(ev.Warning)) == 1
    await rig.soul.run("first")
    await rig.settle()
    assert len(rig.of(ev.Warning)) == 1


async def test_lone_surrogates_in_an_answer_are_shown_and_the_step_is_kept(tmp_path: Path) -> None:
    # JSON may carry `\ud83d` alone (an emoji split between two chunks by a server): the step's
    # write failed with a serialization error, the answer was lost and the turn crashed.
    rig = await make_rig(
        tmp_path,
        [
            {"think": "plan \udfff", "text": "pair \ud83d\ude00, alone \ud800 and \udce9"},
            {"tool_calls": [{"id": "c\ud800", "name": "Echo", "arguments": '{"text": "x\ud834"}'}]},
            {"text": "Done."},
        ],
    )

    first = await rig.soul.run("one")
    second = await rig.soul.run("two")

    assert first.stop_reason == second.stop_reason == "done"
    assistant = rig.context.history[1]
    assert assistant.text == "pair 😀, alone \ufffd and \\xe9"
    rig.context.path.read_bytes().decode("utf-8")  # every line was written, as valid UTF-8
    (call,) = next(m for m in rig.context.history if m.tool_calls).tool_calls or []
    assert call.id == "c\ufffd" and call.function.arguments == '{"text": "x\ufffd"}'
    assert_paired(rig.provider.requests[-1].history)
