"""How counts, ages and sizes read on screen: one rule each, for every front end.

Token counts: `999`, `1k`, `1.2k`, `12.9k`, `129k`, `1.2M` (three significant digits at most,
a trailing `.0` dropped). Ages: `just now`, `5m ago`, `3h ago`, `2d ago`, then the date. Sizes:
`850 B`, `4.2 KiB`, `12 KiB`, `3.0 MiB`. Dollars: `$0`, `<$0.001`, `$0.042`, `$1.23`. Counted
nouns: `1 file`, `2 files`. (How a tool call reads: `kode_tui.wire.readings`.)

This module imports nothing of the project but `safetext`, and neither Textual nor pydantic,
so every layer can use it.
"""

from __future__ import annotations

import time

from kode_tui.safetext import visible


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


def agrees(n: int, verb: str) -> str:
    """The present tense of `verb` (its plural form, `come`) agreeing with `n` things: `1
    message comes`, `2 messages come`."""
    return verb + "s" if n == 1 else verb


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
