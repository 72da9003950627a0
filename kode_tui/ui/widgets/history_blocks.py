"""The blocks of a stored conversation: what `Conversation.load_history` shows of a context's
messages, with the briefs and diffs the wire recorded for its tool calls and the runs of hooks
(a call's after its block; a turn's before its message, or at its end)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from kode_tui.message import (
    ContentPart,
    Message,
    TextPart,
    ThinkPart,
    image_urls,
    is_checkpoint_note,
    is_system_note,
    media_chips,
)
from kode_tui.safetext import visible_model
from kode_tui.soul.facade import PastResults, read_record, stored_result
from kode_tui.ui.widgets.blocks import (
    AnswerBlock,
    BlockFactory,
    DetailBlock,
    PictureBlock,
    ThinkingBlock,
    UserBlock,
    divider,
    hook_block,
)
from kode_tui.ui.widgets.tool_block import ToolBlock
from kode_tui.ui.widgets.tool_state import ToolState
from kode_tui.ui.widgets.tool_views import TodoBoard, todo_items
from kode_tui.wire import events as ev
from kode_tui.wire.readings import TODO_LISTS, is_task_notification, read_system_note


def user_text(content: str | Sequence[ContentPart]) -> str:
    """The text of a user message; its images, audio and video follow it as chips, as in a
    tool result: `[audio · talk.mp3 · 12 KiB]` (the `<audio path=…>` tags Kimi CLI wraps them
    in give the path)."""
    if isinstance(content, str):
        return content
    text = "".join(part.text for part in content if isinstance(part, TextPart))
    media = [part for part in content if not isinstance(part, TextPart | ThinkPart)]
    text, chips = media_chips(text, media)
    return " ".join([text, *(f"[{chip}]" for chip in chips)]).strip()


def page_blocks(
    messages: Sequence[Message],
    start: int,
    stop: int,
    past: PastResults | None = None,
    todos: TodoBoard | None = None,
) -> list[BlockFactory]:
    """The blocks of `messages[start:stop]`, oldest first; `past` gives tool blocks the brief and
    diffs the wire recorded, `todos` which todo list shows (the newest of the pages read).

    Tool results belong to the call before them: those at `start` were shown with the page
    before, and those right after `stop` are read to complete this page's last calls. Only the
    page's messages are parsed, so a long history is read a page at a time.
    """
    past = past or PastResults()
    todos = todos or TodoBoard()
    results: dict[str, Message] = {}
    # Visible here, where stored text enters the pane, as live events do in the pane.
    shown = [visible_model(messages[index]) for index in range(start, stop)]
    after = stop
    while after < len(messages) and messages[after].role == "tool":
        shown.append(visible_model(messages[after]))
        after += 1
    # Read from the end, as a result comes after its call: ids repeat in long sessions, and
    # each call takes the nearest result after it.
    groups: list[list[BlockFactory]] = []
    if stop == len(messages):  # the end of the last turn, and what ran after it
        groups.append(
            [hook_block(run) for run in (*_ended(messages, stop, past), *past.last_hooks)]
        )
    for offset in range(len(shown) - 1, -1, -1):
        message = shown[offset]
        if message.role == "tool":
            if message.tool_call_id is not None:
                results[message.tool_call_id] = message
            continue
        groups.append(_message_blocks(message, results, past, (todos, start + offset)))
        if _turn_of(messages[start + offset]) is not None:
            groups.append([hook_block(run) for run in _ended(messages, start + offset, past)])
    return [block for group in reversed(groups) for block in group]


def _turn_of(message: Message) -> str | None:
    """The text of the user's message that began a turn; None for any other message."""
    if message.role != "user" or read_record(message) is not None:
        return None
    text = message.text
    if is_checkpoint_note(text) or is_system_note(text) or is_task_notification(text):
        return None
    return text


def _ended(messages: Sequence[Message], index: int, past: PastResults) -> list[ev.HookRan]:
    """The hook runs of the turn that ended before `messages[index]`, and those before the
    turn that begins there."""
    before = _turn_of(messages[index]) if index < len(messages) else None
    runs = past.hooks_before(before) if before is not None else []
    for earlier in range(index - 1, -1, -1):
        text = _turn_of(messages[earlier])
        if text is not None:
            return [*past.hooks_within(text), *runs]
    return runs


def _message_blocks(
    message: Message,
    results: dict[str, Message],
    past: PastResults,
    todos: tuple[TodoBoard, int],
) -> list[BlockFactory]:
    if message.role == "user":
        return _user_blocks(message)
    if message.role != "assistant":
        return []
    blocks: list[BlockFactory] = []
    thinking = "\n\n".join(p.think for p in message.parts if isinstance(p, ThinkPart) and p.think)
    if thinking:
        blocks.append(partial(ThinkingBlock, thinking))
    if message.text.strip():
        blocks.append(partial(AnswerBlock, message.text))
    for position, call in enumerate(message.tool_calls or ()):
        state = ToolState(call.id, call.function.name, call.function.arguments or "")
        state.status = "unknown"
        stored = results.pop(call.id, None)
        if stored is not None:
            state.apply_result(stored_result(stored))
            recorded = past.find(call.id, state.arguments)
            if recorded is not None:
                recorded = visible_model(recorded)
                # The wire has what the context lacks: the brief and the display blocks.
                state.brief = next(
                    (b.text for b in recorded.display if isinstance(b, ev.BriefBlock)), ""
                )
                state.display = [b for b in recorded.display if not isinstance(b, ev.BriefBlock)]
        # Only a call that shows a list takes the board: one that read the list (Kimi CLI's
        # SetTodoList without `todos`) or failed leaves the list shown before as it was.
        if state.name in TODO_LISTS and todo_items(state) is not None:
            todos[0].add_stored(state, todos[1], position)
        blocks.append(partial(ToolBlock, state))
        blocks += pictures(stored.parts if stored is not None else ())
        blocks += [hook_block(run) for run in past.hooks_of_call(call.id)]
    return blocks


def _user_blocks(message: Message) -> list[BlockFactory]:
    shell = read_record(message)
    if shell is not None:  # `!cmd`: the line typed and the Shell call it ran, as shown live
        state = ToolState("", "Shell", shell.arguments)
        state.apply_result(shell.result())
        return [partial(UserBlock, f"!{shell.command}"), partial(ToolBlock, state)]
    text = user_text(message.content or "")
    if is_checkpoint_note(text):
        return []
    note = read_system_note(text)
    if note is not None:
        return [partial(DetailBlock, divider(note.title), note.text, kind=note.kind)]
    return [partial(UserBlock, text), *pictures(message.parts)]


def pictures(parts: Sequence[ContentPart]) -> list[BlockFactory]:
    """A picture block for each image among `parts`, below the block showing their chips."""
    return [partial(PictureBlock, url) for url in image_urls(parts)]
