"""Print mode: one turn, headless (`kode-tui -p "prompt" --print`).

The answer streams to stdout, with one line per tool call; what the user should know but a pipe
should not get (retries, warnings, the session id, why it failed) goes to stderr, one line each.
Approvals are rejected unless `--yolo` (or the configured approval mode lets the call through).
The exit status is 0 when the turn finished, 1 when it failed or stopped (a hook blocked the
prompt or `/compact`, too), 130 on Ctrl+C. The user's hooks run as in the TUI; a run that warns or
blocks is one line on stderr.

Nothing the model, a tool or a file says reaches the terminal as it is: control characters and
escape sequences are shown as `kode_tui.safetext.visible` shows them (`␛[8m`). Nor does an API
key: stdout and stderr often end up in a CI log, and a server's error message may quote the key
it was given; both are masked as the session files are (`kode_tui.masking`).

When a step's model call fails midway and is tried again, what that attempt said is void. On a
terminal it has been seen already: the note on stderr says so and the new attempt starts on a
new line. Into a pipe or a file, a step's text is written once its model call has ended, so the
output holds only what the final attempt said.
"""

from __future__ import annotations

import sys
from typing import TextIO

from kode_tui.config import Config, ModelChoice
from kode_tui.humanize import compact_arguments
from kode_tui.masking import mask
from kode_tui.safetext import visible
from kode_tui.soul.facade import (
    AgentSession,
    ChatProvider,
    CommandProblem,
    CommandPrompt,
    CompactionBlocked,
    ContextReport,
    DemoProvider,
    LLMError,
    cost_lines,
    row_lines,
)
from kode_tui.wire import events as ev

ARGUMENT_WIDTH = 80


class PrintView:
    """Writes the wire events of a turn as plain text."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self._out = out
        self._err = err
        self._calls: dict[str, ev.ToolCall] = {}
        self._arguments: dict[str, str] = {}
        self._at_line_start = True
        self._live = _is_terminal(out)
        """Whether text is written as it arrives (else once the model call that said it ended)."""
        self._attempt: list[str] = []
        """What the running model call said so far (written already when live)."""
        self.note_compactions = True
        """Note a compaction on stderr; off for `/compact`, whose result goes to stdout."""

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
                self._calls[event.id] = event
                self._arguments[event.id] = event.function.arguments or ""
            case ev.ToolCallPart():
                self._arguments[event.id] = (
                    self._arguments.get(event.id, "") + event.arguments_delta
                )
            case ev.ToolResult():
                self._tool_line(event)
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
            case ev.ContextReverted(reason="dmail"):
                self._note(f"D-Mail: the context went back to checkpoint {event.checkpoint_id}")
            case ev.CompactionEnd(rotated_file=str()) if self.note_compactions:
                before, after = event.tokens_before, event.tokens_after
                self._note(f"compacted the context: {before:,} → {after:,} tokens")
            case ev.HookRan(outcome="warning" | "blocked"):
                self._note(f"{event.hook_event} hook `{event.command}`: {event.note}")
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
            f"{event.error}; retrying in {event.wait_s:.1f} s "
            f"(attempt {event.attempt} of {event.max_attempts})"
            + ("; the text above from the failed attempt is void" if void and self._live else "")
        )

    def _write(self, text: str) -> None:
        if text:
            self._out.write(visible(mask(text)))
            self._out.flush()
            self._at_line_start = text.endswith("\n")

    def _tool_line(self, result: ev.ToolResult) -> None:
        call = self._calls.get(result.tool_call_id)
        name = call.function.name if call is not None else "tool"
        arguments = compact_arguments(self._arguments.get(result.tool_call_id, ""), ARGUMENT_WIDTH)
        brief = next((b.text for b in result.display if isinstance(b, ev.BriefBlock)), "")
        # Visible before splitting: only a line feed ends the status line.
        status = brief or next(iter(visible(result.message).splitlines()), "")
        mark = "✗" if result.is_error else "✓"
        if not self._at_line_start:
            self._write("\n")
        line = f"· {visible(name, multiline=False)} {arguments}  {mark} "
        self._write((line + visible(status, multiline=False)).rstrip() + "\n")

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
    out: TextIO | None = None,
    err: TextIO | None = None,
    provider: ChatProvider | None = None,
) -> int:
    """Run one turn of the `opened` session for `prompt`; the exit status. `provider` answers
    instead of the model `choice` names (a scripted one, say)."""
    out = out or sys.stdout
    err = err or sys.stderr
    if provider is None and choice.is_demo:
        why = "no model is configured, so this is" if choice.source == "demo" else "this is"
        err.write(f"kode-tui: {why} the offline demo: a scripted agent, not an LLM.\n")
        provider = DemoProvider(delay=0)  # pacing is for eyes on a screen, not for a pipe
    view = PrintView(out, err)
    shown = opened.bus.subscribe(callback=view)
    try:
        await opened.start(config, choice, provider=provider, yolo=yolo)
        custom = _custom_command(opened, prompt)
        if isinstance(custom, CommandPrompt):
            result = await opened.run_command(custom)
        elif prompt.startswith("/"):
            view.note_compactions = False  # one figure, on stdout
            return await _command(opened, prompt, out, err)
        else:
            result = await opened.run(prompt)
    finally:
        await shown.join()
        view.finish()
        await opened.close()
    if result.stop_reason == "blocked":
        return 1  # nothing was sent or saved; the hook's line said why
    if result.stop_reason == "rejected":
        note(err, "the turn stopped at a rejected tool call.")
    elif result.stop_reason != "done":
        note(err, str(result.error))
    note(err, f"resume this session with: {opened.resume_command()}")
    return 0 if result.stop_reason == "done" else 1


COMMANDS = ("/compact [instruction]", "/context [refresh]", "/cost")


def _custom_command(opened: AgentSession, line: str) -> CommandPrompt | CommandProblem | None:
    """The custom command `line` runs (`/review src/`), when it is not one of `COMMANDS`."""
    if not line.startswith("/"):
        return None
    name, _, argument = line.strip().partition(" ")
    if name.lower() in (usage.split()[0] for usage in COMMANDS):
        return None
    return opened.command_prompt(name, argument)


async def _command(opened: AgentSession, line: str, out: TextIO, err: TextIO) -> int:
    """A slash command instead of a message; the exit status."""
    name, _, argument = line.strip().partition(" ")
    argument = argument.strip()
    if name == "/compact":
        before = opened.token_count()
        try:
            changed = await opened.compact(argument or None)
        except LLMError as error:
            note(err, f"compaction failed: {opened.model_name}: {error}")
            return 1
        except OSError as error:  # a session file could not be written (a full disk, say)
            note(err, f"compaction failed: {error}")
            return 1
        except CompactionBlocked:  # the hook's line said why
            return 1
        if not changed:
            out.write("Nothing to compact.\n")
        else:
            out.write(f"Compacted the context: {before:,} → {opened.token_count():,} tokens.\n")
        return 0
    if name == "/context":
        if argument and argument != "refresh":
            err.write("kode-tui: /context takes no argument but `refresh`.\n")
            return 2
        await opened.mcp_ready()  # their tools are part of what the model is given
        report = await opened.context_report(refresh=argument == "refresh")
        assert report is not None  # the agent is up
        # The system prompt holds the project's files (README.md, AGENTS.md) as they are.
        out.write(visible(mask(format_report(report))))
        return 0
    if name == "/cost":
        out.write(visible("\n".join(cost_lines(opened.cost())) + "\n"))
        return 0
    custom = _custom_command(opened, line)
    if isinstance(custom, CommandProblem):
        note(err, custom.message)
        return 2
    names = [c.name for c in opened.custom_commands().commands]
    known = ", ".join(COMMANDS) + (f" and the custom {', '.join(names)}" if names else "")
    note(err, f"unknown command {name}; print mode knows {known}.")
    return 2


def format_report(report: ContextReport) -> str:
    """`/context` as text: the rows that add up to the context's size, the reminders of the
    last request, the system prompt."""
    lines = [
        f"Context: {report.context_tokens:,} of {report.max_context_tokens:,} tokens "
        f"(compacts at {report.trigger_tokens:,})",
        "",
        "What the model is given (tokens):",
        *row_lines(report),
    ]
    lines += ["", "Reminders of the last request:"]
    lines += [f"  [{r.kind}] {r.text.splitlines()[0]}" for r in report.reminders] or ["  none"]
    lines += ["", "System prompt:", "", report.system_prompt, ""]
    return "\n".join(lines)
