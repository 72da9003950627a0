"""What the soul tells the user when the session's files fail it, and the user's text made
safe to store: messages of the storage layer's failures (a full disk, a damaged line)."""

from __future__ import annotations

import errno

from kode_tui.message import ContentPart, TextPart
from kode_tui.pathnames import scrub_text
from kode_tui.session import Context
from kode_tui.session.context import ContextWriteError


def encodable_input(user_input: str | list[ContentPart]) -> str | list[ContentPart]:
    """The user's message with bytes that are not UTF-8 (an argv or a pipe in another encoding)
    shown as `\\xHH`: a lone surrogate would fail every write and request of the session."""
    if isinstance(user_input, str):
        return scrub_text(user_input)
    return [
        p.model_copy(update={"text": scrub_text(p.text)}) if isinstance(p, TextPart) else p
        for p in user_input
    ]


def damaged_notice(context: Context) -> list[str]:
    """The one line telling the user that opening the context skipped damaged lines."""
    count = len(context.warnings)
    if not count:
        return []
    lines = "1 damaged line was" if count == 1 else f"{count} damaged lines were"
    return [f"{context.path.name}: {lines} skipped (kept on disk; details in the log)"]


def storage_message(error: OSError) -> str:
    if isinstance(error, ContextWriteError):
        return str(error)
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return (
            "disk full: the session could not be saved, so the last change was not saved and "
            "the session is as it was before it (nothing was lost); free some space and try again"
        )
    where = f": {error.filename}" if error.filename else ""
    return f"could not write the session: {error.strerror or error}{where}"
