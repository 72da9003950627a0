"""A checkpoint's size in the timeline (issue 28, item 10): what the request after it carried,
as the gauge showed it then; before the model reported any count (checkpoint 1 of a new
session) the prompt and the messages estimated, not 0."""

from __future__ import annotations

from pathlib import Path

from kode_tui.config import Config, ModelChoice
from kode_tui.message import Message
from kode_tui.soul.facade import AgentSession
from kode_tui.soul.llm.scripted import ScriptedProvider, request_tokens
from kode_tui.wire import events as ev

SCRIPTED = ModelChoice(name="scripted", model="scripted", source="flag")


def is_reminder(message: Message) -> bool:
    return message.role == "user" and message.text.startswith("<system-reminder>")


async def test_a_checkpoint_s_size_is_the_gauge_s_before_the_request_after_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "README.md").write_text("# Tiny\n\n" + "A line of the README here.\n" * 50)
    provider = ScriptedProvider([{"text": "One. " * 100}, {"text": "Two."}])
    agent = await AgentSession.open(tmp_path)
    await agent.start(Config(), SCRIPTED, provider=provider, yolo=True)
    seen: list[ev.Event] = []
    agent.bus.subscribe(callback=seen.append)
    await agent.run("first")
    await agent.run("second")
    # The gauge once each turn's message was added, as its first step began.
    stepped = [i for i, event in enumerate(seen) if isinstance(event, ev.StepBegin)]
    gauge = [
        next(e for e in reversed(seen[:i]) if isinstance(e, ev.StatusUpdate)).context_tokens
        for i in stepped
    ]
    # Each turn's checkpoint, then its step's (1 and 3), before the request.
    steps = [c for c in agent.travel.timeline().checkpoints if c.id in (1, 3)]

    first, second = (agent.travel.checkpoint_size(c) for c in steps)

    assert steps[0].token_count == 0  # the model reported nothing before the first request
    assert (first.tokens, first.estimated) == (gauge[0], gauge[0])
    # The first request's count (the scripted model reports its estimate) and the messages since.
    assert second.tokens == gauge[1] and 0 < second.estimated < second.tokens
    # Near what the first request carried (the reminders sent with it aside, as the gauge does).
    sent = provider.requests[0]
    carried = request_tokens(
        sent.system_prompt, [m for m in sent.history if not is_reminder(m)], sent.tools
    )
    assert abs(first.tokens - carried) <= carried // 100
    await agent.close()
