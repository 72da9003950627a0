"""Print mode: one turn, headless (`kode-tui -p "prompt" --print`).

The answer streams to stdout, with one line per tool call; what the user should know but a pipe
should not get (retries, warnings, the session id, why it failed) goes to stderr, one line each.
Approvals are rejected unless `--yolo` (or the configured approval mode lets the call through).
The exit status is 0 when the turn finished, 1 when it failed or stopped (a hook blocked the
prompt or `/compact`, too), 2 for a slash command that cannot run as typed, 130 on Ctrl+C. A
slash command is the domain's (`kode_tui.soul.facade.COMMANDS`, as in the TUI and over ACP),
else a custom one: its report goes to stdout. The user's hooks run as in the TUI; a run that
warns or blocks is one line on stderr.

Nothing the model, a tool or a file says reaches the terminal as it is: control characters and
escape sequences are shown as `kode_tui.safetext.visible` shows them (`␛[8m`). Nor does an API
key: stdout and stderr often end up in a CI log, and a server's error message may quote the key
it was given; both are masked as the session files are (`kode_tui.masking`).

When a step's model call fails midway and is tried again, what that attempt said is void. On a
terminal it has been seen already: the note on stderr says so and the new attempt starts on a
new line. Into a pipe or a file, a step's text is written once its model call has ended, so the
output holds only what the final attempt said.

`--output-format json` and `stream-json` write JSON instead (`JsonView`), and
`--input-format stream-json` takes one message a JSON line of stdin, each a turn of the same
session.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import io
import json
import mimetypes
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TextIO

import msgspec
from pydantic_core import to_jsonable_python

from kode_tui.config import ApprovalMode, Config, ModelChoice
from kode_tui.errors import UserError
from kode_tui.masking import mask, mask_json
from kode_tui.safetext import json_line, visible
from kode_tui.soul.facade import (
    COMMANDS,
    AgentSession,
    ChatProvider,
    CommandPrompt,
    CommandReport,
    DemoProvider,
    DomainCommand,
    ImageAttachment,
    StreamJson,
    Subscription,
    attach_image,
    save_attachment,
)
from kode_tui.wire import events as ev
from kode_tui.wire.readings import StreamedCall, hook_note, read_result, retry_text

OutputFormat = Literal["text", "json", "stream-json"]


class PrintView:
    """Writes the wire events of a turn as plain text."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self._out = out
        self._err = err
        self._calls: dict[str, StreamedCall] = {}
        self._at_line_start = True
        self._live = _is_terminal(out)
        """Whether text is written as it arrives (else once the model call that said it ended)."""
        self._attempt: list[str] = []
        """What the running model call said so far (written already when live)."""
        self.note_compactions = True
        """Note a compaction on stderr; off for `/compact`, whose result goes to stdout."""
        self.plan: str | None = None
        """The plan `ExitPlanMode` asked to approve in this turn (plan mode): its result."""
        self._plan_asks: str | None = None
        """A plan was shown and its approval request is next."""

    def __call__(self, event: ev.Event) -> None:
        if isinstance(event, ev.ContentPart):
            if getattr(event.part, "type", None) == "text":
                self._say(getattr(event.part, "text", ""))
            return
        if isinstance(event, ev.StepRetry):
            self._retry(event)
            return
        # Any other event of a step comes once its model call has ended (tool calls stream
        # within it, but are written only with their results).
        if not isinstance(event, ev.ToolCall | ev.ToolCallPart):
            self._end_attempt()
        match event:
            case ev.ToolCall():
                self._calls[event.id] = StreamedCall(
                    event.function.name, event.function.arguments or ""
                )
            case ev.ToolCallPart() if event.id in self._calls:
                self._calls[event.id].extend(event.arguments_delta)
            case ev.ToolResult():
                self._tool_line(event)
            case ev.PlanDisplay():
                self.plan = self._plan_asks = event.content
                if not self._at_line_start:
                    self._write("\n")
                self._write(event.content.rstrip("\n") + "\n")
            case ev.ApprovalRequest() if self._plan_asks is not None:
                # The plan's own request (it follows the plan): the plan is the turn's result.
                self._plan_asks = None
                event.resolve("reject")
            case ev.ApprovalRequest():
                event.resolve("reject")
                why = (
                    f"{event.always_ask}, so it asks even with --yolo"
                    if event.always_ask
                    else "--yolo allows every call"
                )
                self._note(
                    f"rejected {event.description}: it needs approval ({event.action}) and "
                    f"print mode asks no one; {why}"
                )
            case ev.QuestionRequest():
                event.unsupported()  # print mode asks no one: the model asks in its text
            case ev.ContextReverted(reason="dmail"):
                self._note(f"D-Mail: the context went back to checkpoint {event.checkpoint_id}")
            case ev.CompactionEnd(rotated_file=str()) if self.note_compactions:
                before, after = event.tokens_before, event.tokens_after
                self._note(f"compacted the context: {before:,} → {after:,} tokens")
            case ev.HookRan(outcome="warning" | "blocked"):
                self._note(hook_note(event))
            case ev.Warning():
                self._note(event.message)
            case _:
                pass

    def finish(self) -> None:
        self._end_attempt()
        if not self._at_line_start:
            self._write("\n")

    def _say(self, text: str) -> None:
        self._attempt.append(text)
        if self._live:
            self._write(text)

    def _end_attempt(self) -> None:
        said, self._attempt = self._attempt, []
        if not self._live:
            self._write("".join(said))

    def _retry(self, event: ev.StepRetry) -> None:
        void = "".join(self._attempt).strip()
        self._attempt = []
        if void and self._live and not self._at_line_start:
            self._write("\n")
        self._note(
            retry_text(event)
            + ("; the text above from the failed attempt is void" if void and self._live else "")
        )

    def _write(self, text: str) -> None:
        if text:
            self._out.write(visible(mask(text)))
            self._out.flush()
            self._at_line_start = text.endswith("\n")

    def _tool_line(self, result: ev.ToolResult) -> None:
        """`· Shell: make test  ✔ brief`: the call's title, status and summary."""
        call = self._calls.pop(result.tool_call_id, None)
        title = call.reading.title if call is not None else "tool"
        reading = read_result(result)
        if not self._at_line_start:
            self._write("\n")
        self._write(f"· {title}  {reading.label} {reading.summary}".rstrip() + "\n")

    def _note(self, text: str) -> None:
        note(self._err, text)


def note(err: TextIO, text: str) -> None:
    """Write `text` to stderr as one line, `kode-tui: ...`, whatever characters it holds."""
    err.write(f"kode-tui: {visible(mask(text), multiline=False)}\n")
    err.flush()


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream: treat it as a file
        return False


async def run_print(
    opened: AgentSession,
    config: Config,
    choice: ModelChoice,
    prompt: str,
    *,
    yolo: bool = False,
    mode: ApprovalMode | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
    provider: ChatProvider | None = None,
    output_format: OutputFormat = "text",
    messages: TextIO | None = None,
    images: Sequence[ImageAttachment] = (),
) -> int:
    """Run one turn of the `opened` session for `prompt` and the `images` attached to it (the
    work dir's images its `@` mentions name, as the TUI attaches them); the exit status.
    `provider` answers instead of the model `choice` names (a scripted one, say). With
    `output_format` `json` or `stream-json`, stdout gets JSON (`JsonView`); there, `messages`
    (stdin, for `--input-format stream-json`) gives one turn per JSON line instead of
    `prompt`. `mode`
    (`--permission-mode`) is the approval mode of this run; in `plan` a turn that ends asking
    to approve its plan ends with the plan as its result (`PLAN_STOP`), exit status 0."""
    out = out or sys.stdout
    err = err or sys.stderr
    if provider is None and choice.is_demo:
        why = "no model is configured, so this is" if choice.source == "demo" else "this is"
        err.write(f"kode-tui: {why} the offline demo: a scripted agent, not an LLM.\n")
        provider = DemoProvider(delay=0)  # pacing is for eyes on a screen, not for a pipe
    if output_format != "text":

        async def start() -> None:
            await opened.start(config, choice, provider=provider, yolo=yolo, mode=mode)
            _check_mode(opened, mode)

        json_view = JsonView(opened, out, err, stream=output_format == "stream-json")
        return await json_view.run(start, prompt, messages, images)
    view = PrintView(out, err)
    shown = opened.bus.subscribe(callback=view)
    try:
        await opened.start(config, choice, provider=provider, yolo=yolo, mode=mode)
        _check_mode(opened, mode)
        found = command_of(opened, prompt)
        if isinstance(found, CommandPrompt):
            result = await opened.custom.run(found)
        elif found is not None:
            view.note_compactions = False  # one figure, on stdout
            outcome = await _command(opened, prompt, found)
            out.write(visible(mask(outcome.result)))
            if outcome.error is not None and not outcome.told:
                note(err, outcome.error)
            return outcome.status
        else:
            result = await opened.run(prompt, images)
    finally:
        await shown.join()
        view.finish()
        await opened.close()
    if result.stop_reason == "blocked":
        return 1  # nothing was sent or saved; the hook's line (or no vision's) said why
    if result.stop_reason == "rejected" and view.plan is not None:
        note(err, "the plan above waits for approval (print mode asks no one).")
        note(err, f"resume this session with: {opened.resume_command()}")
        return 0
    if result.stop_reason == "rejected":
        note(err, "the turn stopped at a rejected tool call.")
    elif result.stop_reason != "done":
        note(err, str(result.error))
    note(err, f"resume this session with: {opened.resume_command()}")
    return 0 if result.stop_reason == "done" else 1


PLAN_STOP = "plan"
"""The `stop_reason` of a print-mode turn that ended asking to approve its plan."""


def _check_mode(opened: AgentSession, mode: ApprovalMode | None) -> None:
    """UserError when `mode` is not offered here (`sandbox` without a working sandbox)."""
    if mode is not None and opened.mode != mode:
        raise UserError(f"the {mode} mode needs the Shell sandbox, which is off here.")


def command_of(
    opened: AgentSession, line: str
) -> DomainCommand | CommandPrompt | CommandReport | None:
    """What a slash command `line` (`/compact`, `/review src/`) runs: a built-in command, a
    custom command's prompt, or a report of why it cannot run (an unknown name, a refused
    file); None for a message."""
    if not line.startswith("/"):
        return None
    name, _, argument = line.strip().partition(" ")
    found = COMMANDS.find(opened, name, argument)
    if found is not None:
        return found
    known = ", ".join(f"{c.name} {c.hint}".rstrip() for c in COMMANDS)
    custom = [entry.name for entry in COMMANDS.entries(opened) if entry.custom is not None]
    if custom:
        known += f" and the custom {', '.join(custom)}"
    return CommandReport(f"unknown command {name}; print mode knows {known}.", "refused")


@dataclass(slots=True)
class Outcome:
    """How a message of print mode ended: a turn, or a slash command."""

    status: int
    """The exit status it asks for: 0 done, 1 failed or stopped, 2 a usage error."""
    stop_reason: str
    result: str = ""
    """What goes to stdout: a command's report (a turn's answer streams as it comes)."""
    error: str | None = None
    told: bool = False
    """The error was told already (a hook's line said why): no second line for it."""
    data: dict[str, Any] = field(default_factory=dict)
    """A command's report as data, for the JSON formats (`context`, `cost`)."""


async def _command(
    opened: AgentSession, line: str, found: DomainCommand | CommandReport
) -> Outcome:
    """A slash command instead of a message: run the built-in one `found` names, or say why
    the line runs nothing."""
    if isinstance(found, DomainCommand):
        argument = line.strip().partition(" ")[2]
        found = await COMMANDS.run(opened, found, argument)
    return _outcome(found, line.strip().partition(" ")[0])


EXIT_STATUS = {"done": 0, "warning": 0, "failed": 1, "blocked": 1, "refused": 2}
"""A command's exit status by its outcome: 2 for a line that was wrong, as for bad flags."""


def _outcome(done: CommandReport, name: str) -> Outcome:
    """How a command's report ends print mode: its text on stdout (its data, for the JSON
    formats, under the command's name), or one line on stderr (none when a hook's line said
    why already)."""
    status = EXIT_STATUS[done.outcome]
    if done.ok:
        data = {} if done.data is None else {name.lstrip("/"): _jsonable(done.data)}
        return Outcome(status, "done", f"{done.text}\n" if done.text else "", data=data)
    # A line on stderr, as print mode's own: `kode-tui: compaction failed: ...`.
    error = done.text[:1].lower() + done.text[1:]
    blocked = done.outcome == "blocked"
    return Outcome(status, "blocked" if blocked else "error", error=error, told=blocked)


def _jsonable(data: object) -> Any:
    """A report's data as JSON values (what is not data, a session handle, as its name)."""

    def fallback(value: object) -> Any:
        if isinstance(value, msgspec.Struct):  # the domain's records (pydantic knows dataclasses)
            return {name: _jsonable(getattr(value, name)) for name in value.__struct_fields__}
        return type(value).__name__

    return to_jsonable_python(data, fallback=fallback)


def _failed(status: int, error: str) -> Outcome:
    return Outcome(status, "error", error=error)


# --- the JSON formats ----------------------------------------------------------------------------


class JsonView:
    """`--output-format json` and `stream-json`: the turns of print mode as JSON on stdout.

    `stream-json` writes one JSON object a line: the events of each turn (`StreamJson`), then
    its `result` object. `json` writes the result alone, with the turn's `messages` as
    context.jsonl holds them, once the turn is over; what text mode says on stderr (warnings,
    retries, rejected approvals, hooks that warned or blocked) it says there too. Every line
    is `safetext.json_line`: masked, and with no control character left raw.

    A result is `{"type": "result", "session_id", "is_error", "stop_reason", "result", "usage":
    {input, output, cache_read, cache_creation}, "cost_usd", "duration_s", "num_turns"}`, with
    `error` (also one line on stderr) when it failed; `stop_reason` is the turn's (`done`,
    `rejected`, `max_steps`, `error`, `blocked`), or `done`/`error` for a command; `result` is
    the final step's text, or a command's report (`/context` and `/cost` add it as data under
    `context` and `cost`); `cost_usd` is null when unknown (no call counted, or a call with no
    known price); `num_turns` counts the model calls. A message of stdin that is no user
    message is skipped: one line on stderr, an error result, and exit status 2 at the end
    (the status is the worst of the messages'). Errors before a session exists (a bad config,
    a session id that names none) print no result: stdout stays empty, stderr has one line,
    the status is 2, so every result names a session on disk.
    """

    def __init__(self, opened: AgentSession, out: TextIO, err: TextIO, *, stream: bool) -> None:
        self._opened = opened
        self._out = out
        self._err = err
        self._stream = stream
        self._events = StreamJson()
        self._notes = None if stream else PrintView(io.StringIO(), err)
        """Text mode's lines on stderr, for `json`; its stdout is dropped."""
        self._plan: str | None = None
        """The plan `ExitPlanMode` asked to approve in the running message."""
        self._between = False
        """A result was written and no message began since: a status update then (the session
        settling after a turn) would come after the result, which must end each message."""
        self._closing = False
        """The last result is written and the session closes: what closing reports (background
        tasks it kills) stays in the session's records, so the result is stdout's last line."""

    def __call__(self, event: ev.Event) -> None:
        if isinstance(event, ev.PlanDisplay):
            self._plan = event.content
        if self._notes is not None:
            self._notes(event)  # it rejects approvals, as text mode does
        elif isinstance(event, ev.ApprovalRequest):
            event.resolve("reject")  # print mode asks no one; `approval_resolved` follows
        elif isinstance(event, ev.QuestionRequest):
            event.unsupported()
        if self._closing or (self._between and isinstance(event, ev.StatusUpdate)):
            return
        for value in self._events.feed(event):
            self._write(value)

    def _write(self, value: dict[str, Any], *, final: bool = False) -> None:
        self._between = final
        if self._stream or final:
            self._out.write(json_line(mask_json(value)) + "\n")
            self._out.flush()

    async def run(
        self,
        start: Callable[[], Awaitable[None]],
        prompt: str,
        messages: TextIO | None,
        images: Sequence[ImageAttachment] = (),
    ) -> int:
        """Start the agent, run `prompt` (or each message of `messages`); the exit status, the
        worst of its messages' (a bad line of `messages` is 2)."""
        shown = self._opened.bus.subscribe(callback=self)
        status = 0
        try:
            await start()
            if messages is None:
                status = await self._message(shown, prompt, images)
            else:
                number = 0
                while line := await asyncio.to_thread(messages.readline):
                    number += 1
                    if not line.strip():
                        continue
                    try:
                        text, blocks = read_message(line)
                        attached = [await _attach_block(*block) for block in blocks]
                    except (ValueError, OSError) as error:  # ImageError is a ValueError
                        await self._bad_line(shown, f"line {number} of stdin: {error}")
                        status = 2
                        continue
                    status = max(status, await self._message(shown, text, attached))
        finally:
            self._closing = self._between  # a task ending now would follow the last result
            await shown.join()
            for value in self._events.end():
                self._write(value)
            self._closing = True
            await self._opened.close()
        return status

    async def _message(
        self,
        shown: Subscription[ev.Event],
        text: str,
        images: Sequence[ImageAttachment] = (),
    ) -> int:
        """Run one message (a turn or a command) and write its result; its exit status."""
        opened = self._opened
        began = time.monotonic()
        self._events.begin_turn()
        self._plan = None
        history = 0 if self._stream else len((await opened.messages())[0])
        steps = 0
        found = command_of(opened, text)
        if isinstance(found, CommandPrompt) or found is None:
            if isinstance(found, CommandPrompt):
                turn = await opened.custom.run(found)
            else:
                turn = await opened.run(text, images)
            steps = turn.steps
            outcome = Outcome(0 if turn.stop_reason == "done" else 1, turn.stop_reason)
            if turn.stop_reason == "rejected" and self._plan is not None:
                outcome = Outcome(0, PLAN_STOP, self._plan)
            elif turn.stop_reason == "blocked":
                outcome.error, outcome.told = turn.error or "a hook blocked the prompt", True
            elif turn.stop_reason == "rejected":
                outcome.error = "the turn stopped at a rejected tool call."
            elif turn.stop_reason != "done":
                outcome.error = str(turn.error)
        else:
            if self._notes is not None:
                self._notes.note_compactions = False  # `result` has the figure
            outcome = await _command(opened, text, found)
            if self._notes is not None:
                self._notes.note_compactions = True
        await shown.join()
        for value in self._events.end():
            self._write(value)
        result = self._result(outcome, time.monotonic() - began, steps)
        if not self._stream:
            stored, _ = await opened.messages()
            # A compaction or revert during the turn replaced the history: all of it is new.
            rotated = self._events.tally.rotated or len(stored) < history
            result["messages"] = [
                m.model_dump(mode="json", exclude_unset=True)
                for m in (stored if rotated else stored[history:])
            ]
        self._write(result, final=True)
        return outcome.status

    async def _bad_line(self, shown: Subscription[ev.Event], error: str) -> None:
        """A line of stdin that is no message: one line on stderr and an error result."""
        await shown.join()
        self._events.begin_turn()
        self._write(self._result(_failed(2, error), 0.0, 0), final=True)

    def _result(self, outcome: Outcome, duration_s: float, steps: int) -> dict[str, Any]:
        """The `result` object of a message (a JSON mode's error goes to stderr too)."""
        tally = self._events.tally
        result: dict[str, Any] = {
            "type": "result",
            "session_id": self._opened.id,
            "is_error": outcome.status != 0,
            "stop_reason": outcome.stop_reason,
            "result": outcome.result or tally.final_text,
            "usage": tally.usage(),
            "cost_usd": self._turn_cost(),
            "duration_s": round(duration_s, 3),
            "num_turns": steps,
        }
        if outcome.error is not None:
            result["error"] = outcome.error
            if not outcome.told:
                note(self._err, outcome.error)
        result.update(outcome.data)
        return result

    def _turn_cost(self) -> float | None:
        """What the turn's model calls cost; None when unknown (no call was counted, or one
        had no known price)."""
        if not self._events.tally.calls:
            return None
        turns = self._opened.cost().turns
        if not turns or turns[-1].unpriced:
            return None
        return turns[-1].usd


ImageBlock = tuple[str, str]
"""An image block of a stream-json message: its media type and its base64 data."""


def read_message(line: str) -> tuple[str, list[ImageBlock]]:
    """The text and the image blocks of a user message line of `--input-format stream-json`:
    Claude Code's `{"type": "user", "message": {"role": "user", "content": ...}}` or the plain
    `{"type": "user", "content": ...}`, the content a string or a list of text blocks and
    image blocks (`{"type": "image", "source": {"type": "base64", "media_type", "data"}}`, as
    Claude Code's SDK sends them). ValueError, with the reason, for anything else."""
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        raise ValueError("not JSON") from None
    if not isinstance(value, dict) or value.get("type") != "user":
        raise ValueError('not a user message ({"type": "user", ...})')
    message = value.get("message", value)
    content = message.get("content") if isinstance(message, dict) else None
    images: list[ImageBlock] = []
    if isinstance(content, list):
        texts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        images = [
            _image_block(b) for b in content if isinstance(b, dict) and b.get("type") == "image"
        ]
        if len(texts) + len(images) != len(content) or not all(isinstance(t, str) for t in texts):
            raise ValueError("only text and image blocks are taken in a message's content")
        content = "\n\n".join(str(t) for t in texts)
    if not isinstance(content, str):
        raise ValueError("the message has no content")
    if not content.strip() and not images:
        raise ValueError("the message is empty")
    return content, images


def _image_block(block: dict[str, Any]) -> ImageBlock:
    source = block.get("source")
    if not isinstance(source, dict) or source.get("type") != "base64":
        raise ValueError('an image block needs a base64 "source" (no URLs)')
    kind, data = source.get("media_type"), source.get("data")
    if not isinstance(kind, str) or not isinstance(data, str):
        raise ValueError('an image block\'s source needs "media_type" and "data"')
    return kind, data


async def _attach_block(media_type: str, data: str) -> ImageAttachment:
    """An image block kept as a file (the context names it, as an ACP client's image is kept)
    and read; ValueError (ImageError) or OSError when it is no image that can be read."""
    try:
        decoded = base64.b64decode(data, validate=True)
    except binascii.Error:
        raise ValueError("an image block's data is not base64") from None
    suffix = mimetypes.guess_extension(media_type) or ".img"
    return await attach_image(await asyncio.to_thread(save_attachment, decoded, suffix))
