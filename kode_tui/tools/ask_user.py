"""AskUserQuestion: the model asks the user questions with options (Kimi CLI 1.52's tool, with its
parameters and its three results: answered, dismissed, and unsupported where no one can be asked).

The question goes on the wire as a `QuestionRequest`, which a front end answers as it answers an
approval: the TUI with a dialog, print mode and ACP with `unsupported()`.
"""

# Annotations are evaluated as the module loads, not postponed: pydantic compiles and evaluates
# each field's annotation from its string otherwise (issue 31: ~6 ms for the models a session
# loads before its first request).

import json
import uuid
from typing import ClassVar

from pydantic import BaseModel, Field

from kode_tui.tools.base import Tool, ToolEnv, ToolError, ToolOutput
from kode_tui.wire.events import QuestionItem, QuestionOption, QuestionRequest, QuestionUnsupported

UNSUPPORTED = (
    "The connected client does not support interactive questions. Do NOT call this tool again. "
    "Ask the user directly in your text response instead."
)
"""Kimi's words, which keep the model from asking again."""

DISMISSED = '{"answers": {}, "note": "User dismissed the question without answering."}'


class QuestionOptionParam(BaseModel):
    label: str = Field(
        description="Concise display text (1-5 words). If recommended, append '(Recommended)'."
    )
    description: str = Field(
        default="",
        description="Brief explanation of trade-offs or implications of choosing this option.",
    )


class QuestionParam(BaseModel):
    question: str = Field(description="A specific, actionable question. End with '?'.")
    header: str = Field(
        default="", description="Short category tag (max 12 chars, e.g. 'Auth', 'Style')."
    )
    options: list[QuestionOptionParam] = Field(
        description=(
            "2-4 meaningful, distinct options. Do NOT include an 'Other' option — "
            "the system adds one automatically."
        ),
        min_length=2,
        max_length=4,
    )
    multi_select: bool = Field(
        default=False, description="Whether the user can select multiple options."
    )


class AskUserParams(BaseModel):
    questions: list[QuestionParam] = Field(
        description="The questions to ask the user (1-4 questions).", min_length=1, max_length=4
    )


class AskUserQuestion(Tool[AskUserParams]):
    name: ClassVar[str] = "AskUserQuestion"
    description: ClassVar[str] = (
        "Use this tool when you need to ask the user questions with structured options during "
        "execution. This allows you to:\n"
        "1. Collect user preferences or requirements before proceeding\n"
        "2. Resolve ambiguous or underspecified instructions\n"
        "3. Let the user decide between implementation approaches as you work\n"
        "4. Present concrete options when multiple valid directions exist\n\n"
        "**When NOT to use:**\n"
        "- When you can infer the answer from context — be decisive and proceed\n"
        "- Trivial decisions that don't materially affect the outcome\n\n"
        "Overusing this tool interrupts the user's flow. Only use it when the user's input "
        "genuinely changes your next action.\n\n"
        "**Usage notes:**\n"
        '- Users always have an "Other" option for custom input — don\'t create one yourself\n'
        "- Use multi_select to allow multiple answers to be selected for a question\n"
        "- Keep option labels concise (1-5 words), use descriptions for trade-offs and details\n"
        "- Each question should have 2-4 meaningful, distinct options\n"
        "- You can ask 1-4 questions at a time; group related questions to minimize "
        "interruptions\n"
        '- If you recommend a specific option, list it first and append "(Recommended)" to '
        "its label"
    )
    params = AskUserParams

    async def run(self, params: AskUserParams, env: ToolEnv, tool_call_id: str) -> ToolOutput:
        if env.bus is None:
            raise ToolError(UNSUPPORTED, brief="Client unsupported")
        request = QuestionRequest(
            id=str(uuid.uuid4()),
            tool_call_id=tool_call_id,
            questions=[
                QuestionItem(
                    question=q.question,
                    header=q.header,
                    options=[
                        QuestionOption(label=o.label, description=o.description) for o in q.options
                    ],
                    multi_select=q.multi_select,
                )
                for q in params.questions
            ],
        )
        env.bus.send(request)
        try:
            answers = await request.wait()
        except QuestionUnsupported:
            raise ToolError(UNSUPPORTED, brief="Client unsupported") from None
        if not answers:
            return ToolOutput(
                output=DISMISSED,
                message="User dismissed the question without answering.",
                brief="User dismissed",
            )
        return ToolOutput(
            output=json.dumps({"answers": answers}, ensure_ascii=False),
            message="User has answered.",
            brief="User answered",
        )
