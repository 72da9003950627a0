"""How counts, ages, sizes and tool calls read on screen: one rule each, for every front end.

Token counts: `999`, `1k`, `1.2k`, `12.9k`, `129k`, `1.2M` (three significant digits at most,
a trailing `.0` dropped). Ages: `just now`, `5m ago`, `3h ago`, `2d ago`, then the date. Sizes:
`850 B`, `4.2 KiB`, `12 KiB`, `3.0 MiB`. Dollars: `$0`, `<$0.001`, `$0.042`, `$1.23`. Counted
nouns: `1 file`, `2 files`. A tool call: its main argument on one line.

This module imports nothing of the project but `safetext`, and neither Textual nor pydantic,
so every layer can use it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

from kode_tui.safetext import visible

MAIN_ARGUMENTS = {
    "ReadFile": "path",
    "WriteFile": "path",
    "StrReplaceFile": "path",
    "Shell": "command",
    "Glob": "pattern",
    "Grep": "pattern",
}
"""The argument that says what a call of each of our tools is about."""

KEY_ARGUMENTS = ("path", "file_path", "command", "pattern", "url", "query", "description")
"""What another tool's call is most likely about (MCP tools, Kimi's other tools), in order."""

SUMMARY_CHARS = 80
"""The longest main argument a one-line summary shows."""

ARGUMENTS_CHARS = 60
"""The longest compact JSON a one-line summary shows, when no argument stands out."""

_TIMES = "\N{MULTIPLICATION SIGN}"


def format_tokens(count: int | None) -> str:
    """A token count, short: `999`, `1k`, `1.2k`, `12.9k`, `129k`, `1.2M`; `-` when unknown."""
    if count is None:
        return "-"
    if count < 1000:
        return str(count)
    # The bounds are where rounding would carry into the next form ("100.0k", "1000k").
    if count < 99_950:
        return _one_decimal(count / 1000) + "k"
    if count < 999_500:
        return f"{count / 1000:.0f}k"
    if count < 99_950_000:
        return _one_decimal(count / 1_000_000) + "M"
    return f"{count / 1_000_000:.0f}M"


def _one_decimal(value: float) -> str:
    return f"{value:.1f}".removesuffix(".0")


def format_usd(usd: float) -> str:
    """Dollars spent, short: `$0`, `<$0.001`, `$0.042` below a dollar, `$1.23`, `$1,234.50`."""
    if usd <= 0:
        return "$0"
    if usd < 0.001:
        return "<$0.001"
    if usd < 1:
        return f"${usd:.3f}"
    return f"${usd:,.2f}"


def format_age(timestamp: float, now: float | None = None) -> str:
    """How long ago `timestamp` was: `just now`, `5m ago`, `3h ago`, `2d ago`, then (from a
    week on) the date, `2026-11-01`."""
    seconds = (time.time() if now is None else now) - timestamp
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)}m ago"
    if seconds < 86_400:
        return f"{int(seconds // 3600)}h ago"
    if seconds < 7 * 86_400:
        return f"{int(seconds // 86_400)}d ago"
    return time.strftime("%Y-%m-%d", time.localtime(timestamp))


def plural(n: int, one: str, many: str | None = None) -> str:
    """A counted noun: `1 file`, `2 files`; `many` where adding an `s` is wrong (`matches`)."""
    if n == 1:
        return f"{n} {one}"
    return f"{n} {many if many is not None else one + 's'}"


def format_size(size: int) -> str:
    """A file size: `850 B`, `4.2 KiB`, `12 KiB`, `3.0 MiB`, `1.5 GiB`."""
    if size < 1024:
        return f"{size} B"
    value = size / 1024
    for unit in ("KiB", "MiB"):
        # 9.96 would read "10.0": from there on, whole units.
        if value < 1023.5:
            return f"{value:.1f} {unit}" if value < 9.95 else f"{value:.0f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB" if value < 9.95 else f"{value:.0f} GiB"


def cut(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, the last one `…` when it was longer."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def one_line(text: str, limit: int) -> str:
    """The first line of `text` (stripped, controls shown visibly) cut to `limit`, with ` …`
    after it when the text goes on."""
    stripped = visible(text).strip()
    first = stripped.splitlines()[0] if stripped else ""
    first = visible(first, multiline=False)
    if len(first) > limit:
        return first[: limit - 1] + "…"
    return first + (" …" if first != stripped else "")


def compact_arguments(arguments: str, limit: int) -> str:
    """A call's arguments as compact JSON on one line (as given when they are not JSON), cut to
    `limit`."""
    try:
        compact = json.dumps(json.loads(arguments), ensure_ascii=False)
    except (ValueError, RecursionError):  # not JSON, or nested too deep to parse
        compact = arguments
    # Visible before cutting, so that a cut never splits a stand-in from what it stands for.
    return cut(visible(compact, multiline=False), limit)


def tool_summary(name: str, arguments: str, limit: int = SUMMARY_CHARS) -> str | None:
    """What a call is about, on one line: its main argument (path, command, pattern; for other
    tools the first of `KEY_ARGUMENTS` they have), else its compact JSON; "" for no arguments;
    None while the arguments are not yet complete JSON (or still empty)."""
    try:
        parsed = json.loads(arguments)
    except (ValueError, RecursionError):  # not JSON, or nested too deep to parse
        return None
    if not isinstance(parsed, dict):
        return compact_arguments(arguments, min(limit, ARGUMENTS_CHARS))
    if name == "TodoWrite":  # the list itself is no title: what the call did to it is
        return "read todo list" if parsed.get("todos") is None else "updated todo list"
    key = MAIN_ARGUMENTS.get(name)
    if key and isinstance(parsed.get(key), str):
        return one_line(parsed[key], limit)
    for key in KEY_ARGUMENTS:
        value = parsed.get(key)
        if isinstance(value, str) and value.strip():
            return one_line(value, limit)
    if not parsed:
        return ""
    return compact_arguments(arguments, min(limit, ARGUMENTS_CHARS))


def calls_summary(calls: Sequence[tuple[str, str | None]], limit: int = 40) -> str:
    """One line for the calls of one step, given as (name, arguments): `ReadFile a.py` for one,
    `ReadFile ×2, Grep` for several."""  # noqa: RUF002
    if len(calls) == 1:
        name, arguments = calls[0]
        shown = one_line(name, limit) or "?"
        about = tool_summary(name, arguments or "", limit)
        return f"{shown} {about}" if about else shown
    counts: dict[str, int] = {}
    for name, _ in calls:
        shown = one_line(name, limit) or "?"
        counts[shown] = counts.get(shown, 0) + 1
    return ", ".join(name if n == 1 else f"{name} {_TIMES}{n}" for name, n in counts.items())
