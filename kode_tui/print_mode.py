"""Print mode: one turn, headless (`kode-tui -p "prompt" --print`).

The answer streams to stdout, with one line per tool call; what the user should know but a pipe
should not get (retries, the session id, why it failed) goes to stderr. Approvals are rejected
unless `--yolo` (or the configured approval mode lets the call through). The exit status is 0
when the turn finished, 1 when it failed or stopped, 130 on Ctrl+C.
"""

from __future__ import annotations

import json
import sys
from typing import TextIO

from kode_tui.config import Config, ModelChoice
from kode_tui.session import Context, Session
from kode_tui.soul.agent import open_agent
from kode_tui.soul.llm import LLMError
from kode_tui.soul.llm.demo import DemoProvider
from kode_tui.soul.soul import ContextReport, KodeSoul
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

    def __call__(self, event: ev.Event) -> None:
        match event:
            case ev.ContentPart(part=part) if getattr(part, "type", None) == "text":
                self._write(getattr(part, "text", ""))
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
            case ev.StepRetry():
                self._note(
                    f"{event.error}; retrying in {event.wait_s:.1f} s "
                    f"(attempt {event.attempt} of {event.max_attempts})"
                )
            case ev.ContextReverted(reason="dmail"):
                self._note(f"D-Mail: the context went back to checkpoint {event.checkpoint_id}")
            case ev.CompactionEnd(rotated_file=str()):
                self._note(f"compacted the context: {event.tokens_before} → {event.tokens_after}")
            case ev.Warning():
                self._note(event.message)
            case _:
                pass

    def finish(self) -> None:
        if not self._at_line_start:
            self._write("\n")

    def _write(self, text: str) -> None:
        if text:
            self._out.write(text)
            self._out.flush()
            self._at_line_start = text.endswith("\n")

    def _tool_line(self, result: ev.ToolResult) -> None:
        call = self._calls.get(result.tool_call_id)
        name = call.function.name if call is not None else "tool"
        arguments = _short(self._arguments.get(result.tool_call_id, ""))
        brief = next((b.text for b in result.display if isinstance(b, ev.BriefBlock)), "")
        status = brief or next(iter(result.message.splitlines()), "")
        mark = "✗" if result.is_error else "✓"
        if not self._at_line_start:
            self._write("\n")
        self._write(f"· {name} {arguments}  {mark} {status}".rstrip() + "\n")

    def _note(self, text: str) -> None:
        self._err.write(f"kode-tui: {text}\n")
        self._err.flush()


def _short(arguments: str) -> str:
    try:
        compact = json.dumps(json.loads(arguments), ensure_ascii=False)
    except ValueError:
        compact = arguments
    return compact if len(compact) <= ARGUMENT_WIDTH else compact[: ARGUMENT_WIDTH - 1] + "…"


async def run_print(
    session: Session,
    context: Context | None,
    config: Config,
    choice: ModelChoice,
    prompt: str,
    *,
    yolo: bool = False,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Run one turn of `session` for `prompt`; the exit status."""
    out = out or sys.stdout
    err = err or sys.stderr
    provider = None
    if choice.is_demo:
        err.write(
            "kode-tui: no model is configured, so this is the offline demo: "
            "a scripted agent, not an LLM.\n"
        )
        provider = DemoProvider(delay=0)  # pacing is for eyes on a screen, not for a pipe
    agent = await open_agent(
        session,
        config,
        choice,
        context=context,
        provider=provider,
        approval_override="yolo" if yolo else None,
    )
    view = PrintView(out, err)
    shown = agent.bus.subscribe(callback=view)
    try:
        if prompt.startswith("/"):
            return await _command(agent.soul, prompt, out, err)
        result = await agent.soul.run(prompt)
    finally:
        await shown.join()
        view.finish()
        await agent.close()
    if result.stop_reason == "rejected":
        err.write("kode-tui: the turn stopped at a rejected tool call.\n")
    elif result.stop_reason != "done":
        err.write(f"kode-tui: {result.error}\n")
    err.write(f"kode-tui: resume this session with: {session.resume_command()}\n")
    return 0 if result.stop_reason == "done" else 1


COMMANDS = ("/compact [instruction]", "/context [refresh]")


async def _command(soul: KodeSoul, line: str, out: TextIO, err: TextIO) -> int:
    """A slash command instead of a message; the exit status."""
    name, _, argument = line.strip().partition(" ")
    argument = argument.strip()
    if name == "/compact":
        before = soul.context.token_count_with_pending
        try:
            changed = await soul.compact(argument or None)
        except LLMError as error:
            err.write(f"kode-tui: compaction failed: {soul.provider.model_name}: {error}\n")
            return 1
        if not changed:
            out.write("Nothing to compact.\n")
        else:
            after = soul.context.token_count_with_pending
            out.write(f"Compacted the context: {before:,} → {after:,} tokens.\n")
        return 0
    if name == "/context":
        if argument == "refresh" and soul.project is not None:
            await soul.project.refresh()
        elif argument:
            err.write("kode-tui: /context takes no argument but `refresh`.\n")
            return 2
        out.write(format_report(await soul.context_report()))
        return 0
    err.write(f"kode-tui: unknown command {name}; print mode knows {', '.join(COMMANDS)}.\n")
    return 2


def format_report(report: ContextReport) -> str:
    """`/context` as text: the sizes, the reminders of the last request, the system prompt."""
    lines = [
        f"Context: {report.context_tokens:,} of {report.max_context_tokens:,} tokens "
        f"(compacts at {report.trigger_tokens:,})",
        "",
        "What the model is given (estimated tokens):",
    ]
    width = max((len(name) for name, _ in report.blocks), default=0)
    lines += [f"  {name:<{width}}  {tokens:>7,}" for name, tokens in report.blocks]
    lines += ["", "Reminders of the last request:"]
    lines += [f"  [{r.kind}] {r.text.splitlines()[0]}" for r in report.reminders] or ["  none"]
    lines += ["", "System prompt:", "", report.system_prompt, ""]
    return "\n".join(lines)
