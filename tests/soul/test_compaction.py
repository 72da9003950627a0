"""KLIP-13 compaction: the summary, tool result hiding, hiding-then-summary and the loader."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from kode_tui.config import Config, ConfigError
from kode_tui.message import FunctionBody, ImageURL, ImageURLPart, Message, TextPart, ThinkPart
from kode_tui.message import ToolCall as Call
from kode_tui.soul import prompts
from kode_tui.soul.compaction import (
    COMPACTION_OUTPUT_PREFIX,
    COMPACTION_SYSTEM_PROMPT,
    HIDDEN_TOOL_RESULT,
    CompactionContext,
    CompactionStrategy,
    HidingThenSummaryCompaction,
    LLMSummaryCompaction,
    ToolResultHidingCompaction,
    load_strategy,
    strategy_name,
)
from kode_tui.soul.llm import ChatProvider, LLMError, LLMStatusError
from kode_tui.soul.llm.scripted import ScriptedProvider

HIDDEN = f"<system>{HIDDEN_TOOL_RESULT}</system>"


def user(text: str) -> Message:
    return Message(role="user", content=text)


def checkpoint(n: int) -> Message:
    return Message(role="user", content=[TextPart(text=f"<system>CHECKPOINT {n}</system>")])


def assistant(text: str, *call_ids: str) -> Message:
    calls = [
        Call(id=i, function=FunctionBody(name="Shell", arguments=f'{{"command": "run {i}"}}'))
        for i in call_ids
    ]
    return Message(role="assistant", content=[TextPart(text=text)], tool_calls=calls or None)


def tool(call_id: str, output: str | None = None) -> Message:
    body = output if output is not None else f"output of {call_id}"
    return Message(
        role="tool",
        content=[TextPart(text="<system>Command executed.</system>"), TextPart(text=body)],
        tool_call_id=call_id,
    )


def context(
    history: Sequence[Message],
    llm: ChatProvider | None = None,
    instruction: str | None = None,
) -> CompactionContext:
    return CompactionContext(
        history=history,
        token_count=90_000,
        max_context_size=128_000,
        reserved_context_size=50_000,
        llm=llm if llm is not None else ScriptedProvider([]),
        instruction=instruction,
    )


def request_text(provider: ScriptedProvider, number: int = 0) -> str:
    (message,) = provider.requests[number].history
    assert message.role == "user"
    return message.text


def tool_calls_answered_in_order(history: Sequence[Message]) -> bool:
    """Every tool message answers a call some earlier assistant message made."""
    called: set[str] = set()
    for message in history:
        if message.role == "assistant":
            called.update(call.id for call in message.tool_calls or ())
        elif message.role == "tool" and message.tool_call_id not in called:
            return False
    return True


def eight_groups() -> list[Message]:
    """A session of 8 tool steps (step 3 runs 3 calls in parallel), with the CHECKPOINT user
    messages the soul injects before every step and two things the user said."""
    history = [checkpoint(0), user("Fix the failing test.")]
    for step in range(1, 9):
        history.append(checkpoint(step))
        ids = [f"c{step}a", f"c{step}b", f"c{step}c"] if step == 3 else [f"c{step}"]
        history.append(assistant(f"Step {step}.", *ids))
        history.extend(tool(i) for i in ids)
        if step == 5:
            history.append(checkpoint(100))
            history.append(user("Also update the docs."))
    history.append(assistant("All done."))
    return history


# --- tool result hiding ------------------------------------------------------------------------


async def test_hiding_keeps_the_newest_five_groups_and_hides_the_three_older_ones() -> None:
    history = eight_groups()
    before = [m.model_copy(deep=True) for m in history]

    result = await ToolResultHidingCompaction().compact(context(history))

    assert result is not None
    hidden = {m.tool_call_id for m in result if m.role == "tool" and m.text == HIDDEN}
    assert hidden == {"c1", "c2", "c3a", "c3b", "c3c"}
    assert len(result) == len(history)
    assert [m.role for m in result] == [m.role for m in history]
    assert [m.tool_call_id for m in result] == [m.tool_call_id for m in history]
    assert tool_calls_answered_in_order(result)
    for old, new in zip(history, result, strict=True):
        if new.role != "tool":
            assert new is old
        elif new.tool_call_id not in hidden:
            assert new.content == old.content
        else:
            assert new.content == [TextPart(text=HIDDEN)]
    # The input history is left as it was.
    assert [m.to_json() for m in history] == [m.to_json() for m in before]


async def test_hiding_again_after_hiding_changes_nothing() -> None:
    hiding = ToolResultHidingCompaction()
    once = await hiding.compact(context(eight_groups()))
    assert once is not None

    assert await hiding.compact(context(once)) is None


async def test_a_hidden_tool_message_keeps_every_other_key() -> None:
    old = Message.model_validate(
        {"role": "tool", "content": "big output", "tool_call_id": "c1", "name": "Shell", "x": 1}
    )
    history = [assistant("", "c1"), old, assistant("", "c2"), tool("c2")]

    result = await ToolResultHidingCompaction(preserve_recent_n=1).compact(context(history))

    assert result is not None
    assert result[1].to_json() == (
        '{"role":"tool","name":"Shell","content":[{"type":"text","text":"'
        + HIDDEN
        + '"}],"tool_call_id":"c1","x":1}'
    )


async def test_parallel_calls_are_one_group_kept_or_hidden_together() -> None:
    history = [
        assistant("", "a1", "a2"),
        tool("a1"),
        tool("a2"),
        assistant("", "b1", "b2", "b3"),
        tool("b1"),
        tool("b2"),
        tool("b3"),
    ]

    result = await ToolResultHidingCompaction(preserve_recent_n=1).compact(context(history))

    assert result is not None
    assert [m.text == HIDDEN for m in result if m.role == "tool"] == [True] * 2 + [False] * 3


async def test_hiding_with_no_more_groups_than_kept_is_a_no_op() -> None:
    history = eight_groups()

    assert await ToolResultHidingCompaction(preserve_recent_n=8).compact(context(history)) is None
    assert await ToolResultHidingCompaction().compact(context([user("hi")])) is None


async def test_hiding_nothing_recent_hides_every_tool_result() -> None:
    result = await ToolResultHidingCompaction(preserve_recent_n=0).compact(context(eight_groups()))

    assert result is not None
    assert all(m.text == HIDDEN for m in result if m.role == "tool")


async def test_an_orphan_tool_result_is_hidden_before_the_oldest_kept_group_only() -> None:
    history = [
        tool("lost-1"),  # before every group
        assistant("", "c1"),
        tool("c1"),
        assistant("", "c2"),
        tool("lost-2"),  # after the oldest kept group (c2)
        tool("c2"),
        assistant("", "c3"),
        tool("c3"),
    ]

    result = await ToolResultHidingCompaction(preserve_recent_n=2).compact(context(history))

    assert result is not None
    assert {m.tool_call_id for m in result if m.text == HIDDEN} == {"lost-1", "c1"}


async def test_orphans_in_a_history_without_tool_calls_are_hidden() -> None:
    history = [user("hi"), tool("lost")]

    result = await ToolResultHidingCompaction().compact(context(history))

    assert result is not None
    assert result[1].text == HIDDEN


async def test_a_reused_call_id_belongs_to_the_latest_call_before_its_result() -> None:
    history = [assistant("", "call_0"), tool("call_0"), assistant("", "call_0"), tool("call_0")]

    result = await ToolResultHidingCompaction(preserve_recent_n=1).compact(context(history))

    assert result is not None
    assert [m.text == HIDDEN for m in result if m.role == "tool"] == [True, False]


# --- LLM summary -------------------------------------------------------------------------------


async def test_summary_replaces_the_older_messages_and_keeps_the_newest_two() -> None:
    history = [user("Write a.py"), assistant("Done."), user("Now b.py"), assistant("Writing.")]
    provider = ScriptedProvider([{"text": "<current_focus>b.py</current_focus>"}])

    result = await LLMSummaryCompaction().compact(context(history, provider))

    assert result is not None
    assert len(result) == 3
    assert result[0].role == "user"
    assert result[0].content == [
        TextPart(text=f"<system>{COMPACTION_OUTPUT_PREFIX}</system>"),
        TextPart(text="<current_focus>b.py</current_focus>"),
    ]
    assert result[1] is history[2] and result[2] is history[3]
    (request,) = provider.requests
    assert request.system_prompt == COMPACTION_SYSTEM_PROMPT
    assert request.tools == []
    text = request_text(provider)
    assert text.startswith("## Message 1\nRole: user\nContent:\nWrite a.py")
    assert "\n\n## Message 2\nRole: assistant\nContent:\nDone." in text
    assert "Now b.py" not in text
    assert text.endswith(prompts.load("compact"))


async def test_the_prompt_asks_for_kimis_priorities_and_sections() -> None:
    prompt = prompts.load("compact")

    for tag in (
        "current_focus",
        "environment",
        "completed_tasks",
        "active_issues",
        "code_state",
        "file",
        "important_context",
    ):
        assert f"<{tag}>" in prompt and f"</{tag}>" in prompt
    for priority in ("Current task state", "Errors and their solutions", "Code evolution"):
        assert priority in prompt
    assert "20 lines" in prompt


async def test_summary_input_leaves_thinking_out_and_shows_tool_calls_and_results() -> None:
    history = [
        user("List the files."),
        Message(
            role="assistant",
            content=[ThinkPart(think="secret reasoning"), TextPart(text="Listing.")],
            tool_calls=[Call(id="c1", function=FunctionBody(name="Glob", arguments='{"p":"*"}'))],
        ),
        tool("c1", "a.py\nb.py"),
        Message(
            role="user",
            content=[
                TextPart(text="Look:"),
                ImageURLPart(image_url=ImageURL(url="data:image/png;base64,AAAA")),
            ],
        ),
        user("Thanks."),
        assistant("You're welcome."),
    ]
    provider = ScriptedProvider([{"think": "Let me summarise.", "text": "Summary."}])

    result = await LLMSummaryCompaction().compact(context(history, provider))

    text = request_text(provider)
    assert "secret reasoning" not in text
    assert 'Listing.\n[Tool call c1: Glob {"p":"*"}]' in text
    assert "Role: tool\nContent:\n[Result of tool call c1]\n" in text
    assert "a.py\nb.py" in text
    assert "Look:[image]" in text and "base64" not in text
    # The summary model's own thinking stays out of the summary too.
    assert result is not None
    assert result[0].text.endswith("</system>Summary.")


async def test_summary_input_ends_with_the_users_instruction() -> None:
    history = [user("a"), assistant("b"), user("c"), assistant("d")]
    provider = ScriptedProvider([{"text": "Summary."}])

    await LLMSummaryCompaction().compact(
        context(history, provider, instruction="  the database schema ")
    )

    text = request_text(provider)
    assert prompts.load("compact") in text
    assert text.rstrip().endswith(
        "The user asked to keep in particular: the database schema\n"
        "Give this priority over the defaults above."
    )


async def test_summary_never_keeps_a_tool_result_without_its_call() -> None:
    # An injected user message between a call and its result must not split them.
    history = [
        user("Go."),
        assistant("Two checks.", "c1", "c2"),
        tool("c1"),
        checkpoint(1),
        tool("c2"),
        assistant("Both passed."),
    ]
    provider = ScriptedProvider([{"text": "Summary."}])

    result = await LLMSummaryCompaction().compact(context(history, provider))

    assert result is not None
    assert list(result[1:]) == history[1:]
    assert tool_calls_answered_in_order(result)
    assert "Two checks." not in request_text(provider)


async def test_summary_with_nothing_left_to_compact_after_the_fix_is_a_no_op() -> None:
    history = [assistant("Two checks.", "c1"), checkpoint(1), tool("c1"), assistant("Passed.")]
    provider = ScriptedProvider([])

    assert await LLMSummaryCompaction().compact(context(history, provider)) is None
    assert provider.requests == []


@pytest.mark.parametrize("history", [[], [user("hi")], [user("hi"), assistant("hello")]])
async def test_summary_with_nothing_to_compact_calls_no_model(history: list[Message]) -> None:
    provider = ScriptedProvider([])

    assert await LLMSummaryCompaction().compact(context(history, provider)) is None
    assert provider.requests == []


async def test_summary_keeping_nothing_summarises_everything() -> None:
    history = [user("a"), assistant("b")]
    provider = ScriptedProvider([{"text": "Summary."}])

    result = await LLMSummaryCompaction(max_preserved_messages=0).compact(
        context(history, provider)
    )

    assert result is not None and len(result) == 1
    assert "## Message 2\nRole: assistant" in request_text(provider)


async def test_a_failed_summary_call_raises_the_llm_error() -> None:
    history = [user("a"), assistant("b"), user("c"), assistant("d")]
    provider = ScriptedProvider([{"error": {"status": 500, "message": "overloaded"}}])

    with pytest.raises(LLMStatusError, match="overloaded"):
        await LLMSummaryCompaction().compact(context(history, provider))


async def test_an_empty_summary_is_an_llm_error_not_a_lost_context() -> None:
    history = [user("a"), assistant("b"), user("c"), assistant("d")]
    provider = ScriptedProvider([{"think": "Hmm.", "text": ""}])

    with pytest.raises(LLMError, match="empty summary"):
        await LLMSummaryCompaction().compact(context(history, provider))


def test_negative_sizes_are_refused() -> None:
    with pytest.raises(ValueError):
        LLMSummaryCompaction(-1)
    with pytest.raises(ValueError):
        ToolResultHidingCompaction(-1)


# --- hiding, then summary ----------------------------------------------------------------------


async def test_hiding_then_summary_hides_first_then_summarises_the_hidden_history() -> None:
    provider = ScriptedProvider([{"text": "<current_focus>docs</current_focus>"}])
    strategy = HidingThenSummaryCompaction()

    hidden = await strategy.compact(context(eight_groups(), provider))
    assert hidden is not None
    assert provider.requests == []

    summarised = await strategy.compact(context(hidden, provider))

    assert summarised is not None
    assert len(provider.requests) == 1
    text = request_text(provider)
    assert text.startswith("## Message 1\nRole: user\nContent:\n<system>CHECKPOINT 0</system>")
    assert f"Role: tool\nContent:\n[Result of tool call c1]\n{HIDDEN}" in text
    assert prompts.load("compact") in text
    assert summarised[0].text.endswith("<current_focus>docs</current_focus>")
    # The newest two user/assistant messages: step 8's call (with its result) and the answer.
    assert list(summarised[1:]) == hidden[-3:]
    assert tool_calls_answered_in_order(summarised)


# --- loading from the config -------------------------------------------------------------------

WriteModule = Callable[[str, str], str]


@pytest.fixture
def write_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[WriteModule]:
    """Writes `<name>.py` where imports find it; forgets the imported modules afterwards."""
    monkeypatch.syspath_prepend(str(tmp_path))
    names: list[str] = []

    def write(name: str, source: str) -> str:
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
        names.append(name)
        return name

    yield write
    for name in names:
        sys.modules.pop(name, None)


def config_error(path: str, dependencies: dict[type, object] | None = None) -> str:
    with pytest.raises(ConfigError) as caught:
        load_strategy(path, dependencies or {})
    message = str(caught.value)
    assert f"'{path}'" in message
    assert "\n" not in message and message.endswith(".")
    return message


@pytest.mark.parametrize(
    "path", ["kode_tui.soul.compaction", "a:b:c", ":Summary", "module:", "a b:C", "m:C.method"]
)
def test_a_path_not_shaped_module_colon_class_is_refused(path: str) -> None:
    assert "should look like 'module:ClassName'" in config_error(path)


def test_a_missing_module_is_named() -> None:
    message = config_error("kode_no_such_module.sub:Strategy")

    assert "there is no module named 'kode_no_such_module.sub'" in message


def test_a_module_that_raises_on_import_shows_its_error(write_module: WriteModule) -> None:
    write_module("kode_boom_strategy", "raise RuntimeError('boom at import\\nsecond line')\n")
    write_module("kode_needs_missing", "import kode_not_installed_dependency\n")

    boom = config_error("kode_boom_strategy:S")
    missing = config_error("kode_needs_missing:S")

    assert "importing 'kode_boom_strategy' failed: boom at import second line." in boom
    assert "No module named 'kode_not_installed_dependency'" in missing
    assert "there is no module" not in missing


def test_a_missing_class_is_named(write_module: WriteModule) -> None:
    write_module("kode_empty_strategy", "X = 1\n")

    assert "module 'kode_empty_strategy' has no class 'Nope'" in config_error(
        "kode_empty_strategy:Nope"
    )


def test_a_name_that_is_not_a_class_is_refused(write_module: WriteModule) -> None:
    write_module("kode_function_strategy", "async def compact(ctx): return None\n")

    assert "'compact' is not a class" in config_error("kode_function_strategy:compact")


@pytest.mark.parametrize(
    ("module", "body"),
    [
        ("kode_no_compact", "pass"),
        ("kode_sync_compact", "def compact(self, ctx): return None"),
        ("kode_compact_attribute", "compact = 3"),
    ],
)
def test_a_class_without_an_async_compact_is_not_a_strategy(
    write_module: WriteModule, module: str, body: str
) -> None:
    name = write_module(module, f"class S:\n    {body}\n")

    assert "class 'S' is not a compaction strategy" in config_error(f"{name}:S")


def test_a_required_parameter_matching_no_dependency_is_named(write_module: WriteModule) -> None:
    write_module(
        "kode_clock_strategy",
        """
        from kode_tui.soul.llm import ChatProvider

        class Clock: ...

        class S:
            def __init__(self, llm: ChatProvider, clock: Clock) -> None: ...
            async def compact(self, ctx): return None
        """,
    )
    dependencies: dict[type, object] = {ChatProvider: ScriptedProvider([]), Config: Config()}

    message = config_error("kode_clock_strategy:S", dependencies)

    assert "parameter 'clock' (Clock) of S.__init__ matches no dependency" in message
    assert "(available: ChatProvider, Config)" in message


def test_an_unresolvable_annotation_is_a_config_error(write_module: WriteModule) -> None:
    write_module(
        "kode_unresolved_strategy",
        """
        from __future__ import annotations

        class S:
            def __init__(self, llm: Missing) -> None: ...
            async def compact(self, ctx): return None
        """,
    )

    assert "annotations of S.__init__ cannot be resolved" in config_error(
        "kode_unresolved_strategy:S"
    )


def test_a_constructor_that_raises_is_a_config_error(write_module: WriteModule) -> None:
    write_module(
        "kode_raising_strategy",
        """
        class S:
            def __init__(self) -> None:
                raise ValueError("window too small")
            async def compact(self, ctx): return None
        """,
    )

    assert "creating S failed: window too small." in config_error("kode_raising_strategy:S")


def test_positional_parameters_are_injected_by_annotation(write_module: WriteModule) -> None:
    write_module(
        "kode_injected_strategy",
        """
        from __future__ import annotations

        from kode_tui.config import Config
        from kode_tui.soul.llm import ChatProvider

        class S:
            def __init__(self, llm: ChatProvider, config: Config, *, keep: int = 3) -> None:
                self.llm, self.config, self.keep = llm, config, keep
            async def compact(self, ctx): return None
        """,
    )
    provider, config = ScriptedProvider([]), Config(theme="plain")

    strategy: Any = load_strategy(
        "kode_injected_strategy:S", {Config: config, ChatProvider: provider}
    )

    assert strategy.llm is provider and strategy.config is config and strategy.keep == 3
    assert isinstance(strategy, CompactionStrategy)
    assert strategy_name(strategy) == "S"


def test_a_dependency_matches_a_parameter_typed_as_its_own_class(
    write_module: WriteModule,
) -> None:
    write_module(
        "kode_subclass_strategy",
        """
        from kode_tui.soul.llm.scripted import ScriptedProvider

        class S:
            def __init__(self, llm: ScriptedProvider) -> None:
                self.llm = llm
            async def compact(self, ctx): return None
        """,
    )
    provider = ScriptedProvider([])

    strategy: Any = load_strategy("kode_subclass_strategy:S", {ChatProvider: provider})

    assert strategy.llm is provider


def test_a_parameter_with_a_default_and_no_dependency_keeps_it(write_module: WriteModule) -> None:
    write_module(
        "kode_default_strategy",
        """
        from kode_tui.config import Config

        class S:
            def __init__(self, window: int = 7, config: Config | None = None, *args: int) -> None:
                self.window, self.config = window, config
            async def compact(self, ctx): return None
        """,
    )
    config = Config()

    alone: Any = load_strategy("kode_default_strategy:S", {})
    injected: Any = load_strategy("kode_default_strategy:S", {Config: config})

    assert (alone.window, alone.config) == (7, None)
    # A later parameter is still injected, by keyword, past the one that kept its default.
    assert (injected.window, injected.config) == (7, config)


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("LLMSummaryCompaction", LLMSummaryCompaction),
        ("ToolResultHidingCompaction", ToolResultHidingCompaction),
        ("HidingThenSummaryCompaction", HidingThenSummaryCompaction),
    ],
)
def test_the_built_in_strategies_load_without_dependencies(name: str, kind: type) -> None:
    strategy = load_strategy(f"kode_tui.soul.compaction:{name}", {})

    assert type(strategy) is kind
    assert strategy_name(strategy) == name


def test_the_built_in_strategies_keep_their_defaults_when_loaded() -> None:
    dependencies: dict[type, object] = {ChatProvider: ScriptedProvider([]), Config: Config()}

    summary: Any = load_strategy("kode_tui.soul.compaction:LLMSummaryCompaction", dependencies)
    both: Any = load_strategy("kode_tui.soul.compaction:HidingThenSummaryCompaction", dependencies)

    assert summary.max_preserved_messages == 2
    assert both.hiding.preserve_recent_n == 5 and both.summary.max_preserved_messages == 2


async def test_a_compactor_works_with_the_collaborators_it_is_given_no_soul(tmp_path: Path) -> None:
    """The live compaction's owner: a context, a bus, the hooks, a strategy, the model a
    strategy calls; after the swap it lets its owner know (`swapped`) and sends the status."""
    from kode_tui.session import Context
    from kode_tui.soul.compacting import Compactor
    from kode_tui.soul.context_report import PromptParts
    from kode_tui.soul.hooks import Hooks
    from kode_tui.wire import events as ev
    from kode_tui.wire.bus import WireBus

    context = Context(tmp_path / "context.jsonl")
    await context.restore()
    for n in range(3):
        await context.checkpoint()
        await context.append_message([user(f"question {n}"), assistant(f"answer {n}")])
    bus = WireBus()
    seen: list[ev.Event] = []
    shown = bus.subscribe(callback=seen.append)
    swaps: list[int] = []
    status = ev.StatusUpdate(context_tokens=1, max_context_tokens=100)

    async def measure_prompt() -> PromptParts:
        return PromptParts("You help.", [("system prompt", 30)], tool_count=1, tool_tokens=10)

    compactor = Compactor(
        context,
        bus,
        Hooks(),
        LLMSummaryCompaction(max_preserved_messages=2),
        llm=lambda step: ScriptedProvider([{"text": "THE SUMMARY"}]),
        reserved=lambda: 0,
        checkpoint_notes=False,
        swapped=lambda: swaps.append(context.n_checkpoints),
        status=lambda: status,
        measure_prompt=measure_prompt,
    )

    assert await compactor.compact("keep the answers", step=0)
    await shown.join()
    shown.close()

    assert swaps == [1]  # once, with the new context's one checkpoint
    assert "THE SUMMARY" in context.history[0].text
    assert [m.text for m in context.history[1:]] == ["question 2", "answer 2"]
    kinds = [type(event) for event in seen]
    assert kinds == [ev.CompactionBegin, ev.CheckpointCreated, ev.CompactionEnd, ev.StatusUpdate]
    assert seen[-1] is status
    # "After": the prompt measured (system prompt and tools) and the new context's messages.
    [end] = [event for event in seen if isinstance(event, ev.CompactionEnd)]
    assert end.tokens_after == 40 + sum(m.estimated_tokens() for m in context.history)
    await context.close()
