"""Compaction (DESIGN.md §5, KLIP-13): the strategies that shrink a context, and their loader.

A strategy turns the live history into a shorter one, or returns None when it has nothing to do.
The soul decides when (its trigger) and applies the result: the old context is rotated (reason
`compaction`), a checkpoint is made and the new messages are appended.

Built in:

* `LLMSummaryCompaction`: Kimi CLI's SimpleCompaction. The model summarises all but the newest
  user/assistant messages (prompt in `prompts/compact.md`).
* `ToolResultHidingCompaction`: no model call. The results of all but the newest tool-call groups
  are replaced by a fixed placeholder.
* `HidingThenSummaryCompaction`: hiding, and the summary once hiding has nothing left to hide.

`[compaction] strategy = "module:ClassName"` picks one; `load_strategy` imports it.
"""

from __future__ import annotations

import importlib
import inspect
import re
import typing
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import msgspec

from kode_tui.errors import ConfigError
from kode_tui.message import COMPACTION_OUTPUT_PREFIX as COMPACTION_OUTPUT_PREFIX
from kode_tui.message import ImageURLPart, Message, TextPart, ThinkPart, system
from kode_tui.soul import prompts
from kode_tui.soul.llm import ChatProvider, LLMError

COMPACTION_SYSTEM_PROMPT = "You are a helpful assistant that compacts conversation context."
HIDDEN_TOOL_RESULT = "Earlier tool result hidden to save context."
"""What a hidden tool result says instead (inside `<system>` tags). It must stay byte-stable:
a tool message holding exactly it counts as already hidden."""

_MODULE_COLON_CLASS = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*")


class CompactionContext(msgspec.Struct, frozen=True):
    """What a strategy is given: the history and the numbers behind the soul's trigger."""

    history: Sequence[Message]
    token_count: int
    max_context_size: int
    reserved_context_size: int
    llm: ChatProvider
    instruction: str | None = None
    """What the user asked to keep (`/compact <instruction>`)."""


@runtime_checkable
class CompactionStrategy(Protocol):
    """Rewrites a history into a shorter one. It may drop, replace or merge messages but keeps
    their causal order, and every tool message it keeps keeps its `tool_call_id`."""

    async def compact(self, ctx: CompactionContext) -> Sequence[Message] | None:
        """The new history, or None when nothing changes."""
        ...


def strategy_name(strategy: CompactionStrategy) -> str:
    """The name rotations.jsonl records for a strategy: its class name."""
    return type(strategy).__name__


# --- LLM summary -------------------------------------------------------------------------------


class LLMSummaryCompaction:
    """Kimi CLI's SimpleCompaction: the model summarises everything before the newest
    `max_preserved_messages` user/assistant messages, which are kept as they are.

    The result is one user message (`<system>Previous context has been compacted...</system>`
    and the summary) followed by the kept tail. `max_preserved_messages=0` summarises it all.
    """

    def __init__(self, max_preserved_messages: int = 2) -> None:
        if max_preserved_messages < 0:
            raise ValueError("max_preserved_messages cannot be negative")
        self.max_preserved_messages = max_preserved_messages

    def prepare(self, history: Sequence[Message]) -> tuple[list[Message], list[Message]] | None:
        """The history as (to_compact, to_preserve); None when nothing would be compacted."""
        start = self._preserve_start(history)
        if start is None:
            return None
        start = _include_callers(history, start)
        if start == 0:
            return None
        return list(history[:start]), list(history[start:])

    def _preserve_start(self, history: Sequence[Message]) -> int | None:
        if self.max_preserved_messages == 0:
            return len(history)
        seen = 0
        for index in range(len(history) - 1, -1, -1):
            if history[index].role in ("user", "assistant"):
                seen += 1
                if seen == self.max_preserved_messages:
                    return index
        return None

    async def compact(self, ctx: CompactionContext) -> Sequence[Message] | None:
        """Summarise the older messages with `ctx.llm`; LLMError when the call fails."""
        split = self.prepare(ctx.history)
        if split is None:
            return None
        to_compact, to_preserve = split
        request = compaction_input(to_compact, ctx.instruction)
        pieces: list[str] = []
        async for item in ctx.llm.stream(COMPACTION_SYSTEM_PROMPT, [request], []):
            # Thinking is the model's scratch work, not part of the summary.
            if isinstance(item, TextPart):
                pieces.append(item.text)
        summary = "".join(pieces)
        if not summary.strip():
            # Applying an empty summary would silently throw the older context away.
            raise LLMError("The model returned an empty summary, so the context was not compacted.")
        head = Message(
            role="user", content=[system(COMPACTION_OUTPUT_PREFIX), TextPart(text=summary)]
        )
        return [head, *to_preserve]


def compaction_input(messages: Sequence[Message], instruction: str | None = None) -> Message:
    """The one user message the summary model reads: every message under a `## Message i`
    header, then the compaction prompt, then the user's instruction if there is one.

    It is a single text part, which every provider accepts as plain string content.
    """
    pieces: list[str] = []
    for number, message in enumerate(messages, start=1):
        separator = "\n\n" if number > 1 else ""
        pieces.append(f"{separator}## Message {number}\nRole: {message.role}\nContent:\n")
        pieces.append(_render_content(message))
    pieces.append("\n\n" + prompts.load("compact"))
    if instruction and instruction.strip():
        pieces.append(
            "\n\nThe user asked to keep in particular: "
            f"{instruction.strip()}\nGive this priority over the defaults above."
        )
    return Message(role="user", content=[TextPart(text="".join(pieces))])


def _render_content(message: Message) -> str:
    pieces: list[str] = []
    if message.role == "tool" and message.tool_call_id:
        # Tells the summary which call this result answers.
        pieces.append(f"[Result of tool call {message.tool_call_id}]\n")
    for part in message.parts:
        if isinstance(part, TextPart):
            pieces.append(part.text)
        elif isinstance(part, ThinkPart):
            continue
        elif isinstance(part, ImageURLPart):
            # The pixels (often a huge data: URL) would cost more than they tell a summary.
            pieces.append("[image]")
        else:
            pieces.append(f"[{part.type} content]")
    for call in message.tool_calls or ():
        arguments = call.function.arguments or "{}"
        pieces.append(f"\n[Tool call {call.id}: {call.function.name} {arguments}]")
    return "".join(pieces)


def _include_callers(history: Sequence[Message], start: int) -> int:
    """Move the split point back until every kept tool message keeps the assistant message that
    made its call: providers reject a tool result whose call they never saw."""
    caller = _callers(history)
    for index in range(len(history) - 1, -1, -1):
        if index < start:
            break
        owner = caller.get(index)
        if owner is not None and owner < start:
            # Scanning downwards, the messages now included are still visited.
            start = owner
    return start


def _callers(history: Sequence[Message]) -> dict[int, int]:
    """Tool message index -> index of the assistant message whose call it answers (the latest
    one before it with that id, should a provider reuse ids). Orphans are left out."""
    latest: dict[str, int] = {}
    caller: dict[int, int] = {}
    for index, message in enumerate(history):
        if message.role == "assistant":
            for call in message.tool_calls or ():
                latest[call.id] = index
        elif message.role == "tool" and message.tool_call_id in latest:
            caller[index] = latest[message.tool_call_id]
    return caller


# --- tool result hiding ------------------------------------------------------------------------


class ToolResultHidingCompaction:
    """Hides old tool results without a model call (KLIP-13 §3).

    A group is one assistant message with tool calls (parallel calls make one group). The tool
    messages answering the newest `preserve_recent_n` groups are kept; every older one keeps its
    role, `tool_call_id` and other keys, but its content becomes the `HIDDEN_TOOL_RESULT`
    placeholder (in `<system>` tags).
    Groups, not user messages, mark the boundary: the soul injects `role=user` messages
    (`<system>CHECKPOINT n</system>`) that are not the user speaking.

    A tool message answering no earlier call (an orphan) is hidden when it comes before the oldest
    kept group, and kept after it. Nothing is ever added, removed or reordered.
    """

    def __init__(self, preserve_recent_n: int = 5) -> None:
        if preserve_recent_n < 0:
            raise ValueError("preserve_recent_n cannot be negative")
        self.preserve_recent_n = preserve_recent_n

    async def compact(self, ctx: CompactionContext) -> Sequence[Message] | None:
        """The history with old tool results hidden; None when none was left to hide."""
        return self.hide(ctx.history)

    def hide(self, history: Sequence[Message]) -> list[Message] | None:
        """The synchronous work of `compact`."""
        group_starts: list[int] = []  # the assistant message's index, per group, oldest first
        latest: dict[str, int] = {}  # call id -> group of its latest call so far
        group_of: dict[int, int | None] = {}  # tool message index -> its group (None: orphan)
        for index, message in enumerate(history):
            if message.role == "assistant" and message.tool_calls:
                for call in message.tool_calls:
                    latest[call.id] = len(group_starts)
                group_starts.append(index)
            elif message.role == "tool":
                call_id = message.tool_call_id
                group_of[index] = latest.get(call_id) if call_id is not None else None

        first_kept = max(0, len(group_starts) - self.preserve_recent_n)
        oldest_kept_start = (
            group_starts[first_kept] if first_kept < len(group_starts) else len(history)
        )
        result = list(history)
        changed = False
        for index, group in group_of.items():
            old = group < first_kept if group is not None else index < oldest_kept_start
            if old and not _is_hidden(history[index]):
                result[index] = history[index].model_copy(
                    update={"content": [system(HIDDEN_TOOL_RESULT)]}
                )
                changed = True
        return result if changed else None


def _is_hidden(message: Message) -> bool:
    parts = message.parts
    placeholder = system(HIDDEN_TOOL_RESULT).text
    return len(parts) == 1 and isinstance(parts[0], TextPart) and parts[0].text == placeholder


# --- hiding, then summary ----------------------------------------------------------------------


class HidingThenSummaryCompaction:
    """KLIP-13 §4: hide old tool results; once hiding changes nothing, summarise instead.

    Hiding needs no model call, so it goes first; when the context still grows past the trigger
    after it, the next compaction finds nothing left to hide and falls back to the summary.
    """

    def __init__(self, preserve_recent_n: int = 5, max_preserved_messages: int = 2) -> None:
        self.hiding = ToolResultHidingCompaction(preserve_recent_n)
        self.summary = LLMSummaryCompaction(max_preserved_messages)

    async def compact(self, ctx: CompactionContext) -> Sequence[Message] | None:
        """Hiding's result, else the summary's (LLMError when the model call fails)."""
        hidden = await self.hiding.compact(ctx)
        if hidden is not None:
            return hidden
        return await self.summary.compact(ctx)


# --- loading from the config -------------------------------------------------------------------


def load_strategy(path: str, dependencies: Mapping[type, object]) -> CompactionStrategy:
    """The strategy `module:ClassName` names, built with constructor injection (KLIP-13 §2).

    If the class has its own `__init__`, its positional parameters are filled from
    `dependencies` by type annotation: the dependency registered under exactly that type, else
    the first one that is an instance of it. Injection stops at the first keyword-only parameter
    (or `*args`); an unmatched parameter with a default keeps it. Every failure is a
    `ConfigError` of one sentence naming `path`.
    """
    if not _MODULE_COLON_CLASS.fullmatch(path):
        raise ConfigError(
            f"Compaction strategy '{path}' should look like 'module:ClassName', "
            "e.g. 'kode_tui.soul.compaction:LLMSummaryCompaction'."
        )
    module_name, class_name = path.split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and _is_module_or_parent(exc.name, module_name):
            raise ConfigError(
                f"Compaction strategy '{path}': there is no module named '{module_name}'."
            ) from exc
        raise ConfigError(
            f"Compaction strategy '{path}': importing '{module_name}' failed: {_one_line(exc)}."
        ) from exc
    except Exception as exc:
        raise ConfigError(
            f"Compaction strategy '{path}': importing '{module_name}' failed: {_one_line(exc)}."
        ) from exc

    cls = getattr(module, class_name, None)
    if cls is None:
        raise ConfigError(
            f"Compaction strategy '{path}': module '{module_name}' has no class '{class_name}'."
        )
    if not inspect.isclass(cls):
        raise ConfigError(f"Compaction strategy '{path}': '{class_name}' is not a class.")
    # The runtime protocol check only looks for the name; a strategy's compact must be awaitable.
    if not inspect.iscoroutinefunction(getattr(cls, "compact", None)):
        raise ConfigError(
            f"Compaction strategy '{path}': class '{class_name}' is not a compaction strategy "
            "(it has no async 'compact' method)."
        )

    args, kwargs = _inject(path, cls, dependencies)
    try:
        strategy = cls(*args, **kwargs)
    except Exception as exc:
        raise ConfigError(
            f"Compaction strategy '{path}': creating {class_name} failed: {_one_line(exc)}."
        ) from exc
    return typing.cast(CompactionStrategy, strategy)


def _inject(
    path: str, cls: type, dependencies: Mapping[type, object]
) -> tuple[list[object], dict[str, object]]:
    """The constructor's (args, kwargs): its positional parameters filled by annotation."""
    # Read off the class (mypy objects to that for a bare `type`): the function, `self` first.
    init: Any = typing.cast(Any, cls).__init__
    if init is object.__init__:
        return [], {}
    try:
        parameters = list(inspect.signature(init).parameters.values())[1:]  # after self
    except (TypeError, ValueError):
        return [], {}  # a C-level __init__ without a signature: nothing to inject
    try:
        hints = typing.get_type_hints(init)
    except Exception as exc:
        raise ConfigError(
            f"Compaction strategy '{path}': the annotations of {cls.__name__}.__init__ "
            f"cannot be resolved: {_one_line(exc)}."
        ) from exc

    args: list[object] = []
    kwargs: dict[str, object] = {}
    skipped = False  # once a parameter keeps its default, later ones can only go by keyword
    for parameter in parameters:
        if parameter.kind not in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD):
            break
        annotation = hints.get(parameter.name)
        found, value = _match(annotation, dependencies)
        if found:
            if not skipped:
                args.append(value)
            elif parameter.kind is parameter.POSITIONAL_OR_KEYWORD:
                kwargs[parameter.name] = value
            continue
        if parameter.default is not parameter.empty:
            skipped = True
            continue
        available = ", ".join(_type_name(t) for t in dependencies) or "none"
        wanted = _type_name(annotation) if annotation is not None else "no annotation"
        raise ConfigError(
            f"Compaction strategy '{path}': parameter '{parameter.name}' ({wanted}) of "
            f"{cls.__name__}.__init__ matches no dependency (available: {available})."
        )
    return args, kwargs


def _match(annotation: Any, dependencies: Mapping[type, object]) -> tuple[bool, object]:
    if annotation is None:
        return False, None
    try:
        if annotation in dependencies:
            return True, dependencies[annotation]
    except TypeError:  # an unhashable annotation cannot be a key
        pass
    for value in dependencies.values():
        try:
            if isinstance(value, annotation):
                return True, value
        except TypeError:
            # Not a class isinstance can check (a plain Protocol, a generic alias).
            return False, None
    return False, None


def _is_module_or_parent(missing: str, module_name: str) -> bool:
    return module_name == missing or module_name.startswith(missing + ".")


def _type_name(annotation: Any) -> str:
    return getattr(annotation, "__name__", None) or repr(annotation)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()).rstrip(".")
    return text or type(exc).__name__
