"""AskUserQuestion: its question reaches the front end on the wire, and the answer (or its absence)
comes back to the model in Kimi CLI 1.52's form."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kode_tui.tools.ask_user import AskUserQuestion
from kode_tui.wire import events as ev
from tests.soul_helpers import call, make_rig, print_turn

ASK = call(
    "AskUserQuestion",
    questions=[
        {
            "question": "Which database?",
            "header": "Storage",
            "options": [
                {"label": "Postgres (Recommended)", "description": "the one in prod"},
                {"label": "SQLite"},
            ],
        },
        {
            "question": "Which checks?",
            "options": [{"label": "ruff"}, {"label": "mypy"}, {"label": "pytest"}],
            "multi_select": True,
        },
    ],
)


def result_of(lines: list[dict[str, Any]]) -> dict[str, Any]:
    [tool] = [line for line in lines if line.get("role") == "tool"]
    return tool


async def test_the_question_reaches_the_bus_and_the_answer_returns_in_kimis_form(
    tmp_path: Path,
) -> None:
    rig = await make_rig(
        tmp_path,
        [{"tool_calls": [ASK]}, {"text": "Postgres it is."}],
        tools=[AskUserQuestion()],
    )
    asked: list[ev.QuestionRequest] = []

    def answer(request: ev.QuestionRequest) -> None:
        asked.append(request)
        request.resolve(
            {"Which database?": "Postgres (Recommended)", "Which checks?": "ruff, mypy"}
        )

    rig.bus.subscribe(ev.QuestionRequest, callback=answer)

    await rig.soul.run("set it up")

    [request] = asked
    assert request.tool_call_id == rig.of(ev.ToolCall)[0].id
    first, second = request.questions
    assert (first.question, first.header) == ("Which database?", "Storage")
    assert [(o.label, o.description) for o in first.options] == [
        ("Postgres (Recommended)", "the one in prod"),
        ("SQLite", ""),
    ]
    assert second.multi_select and [o.label for o in second.options] == ["ruff", "mypy", "pytest"]
    [result] = rig.of(ev.ToolResult)
    assert not result.is_error
    assert json.loads(result.output) == {
        "answers": {"Which database?": "Postgres (Recommended)", "Which checks?": "ruff, mypy"}
    }
    assert result.message == "User has answered."
    assert "User has answered." in json.dumps(result_of(rig.lines()))


async def test_no_answer_is_a_dismissal_the_model_reads_as_such(tmp_path: Path) -> None:
    rig = await make_rig(
        tmp_path, [{"tool_calls": [ASK]}, {"text": "I will pick."}], tools=[AskUserQuestion()]
    )
    rig.bus.subscribe(ev.QuestionRequest, callback=lambda request: request.resolve({}))

    await rig.soul.run("set it up")

    [result] = rig.of(ev.ToolResult)
    assert not result.is_error
    assert json.loads(result.output) == {
        "answers": {},
        "note": "User dismissed the question without answering.",
    }


async def test_print_mode_answers_a_question_as_unsupported(tmp_path: Path) -> None:
    from kode_tui.soul.llm.scripted import ScriptedProvider

    provider = ScriptedProvider([{"tool_calls": [ASK]}, {"text": "Which database do you want?"}])

    printed = await print_turn(tmp_path, provider, output_format="stream-json")

    assert printed.status == 0, printed.err
    values = [json.loads(line) for line in printed.out.splitlines()]
    [asked] = [value for value in values if value["type"] == "question_request"]
    assert asked["questions"][0]["question"] == "Which database?"
    [result] = [value for value in values if value["type"] == "tool_result"]
    assert result["is_error"]
    assert result["message"] == (
        "The connected client does not support interactive questions. Do NOT call this tool "
        "again. Ask the user directly in your text response instead."
    )
    assert values[-1]["type"] == "result"
