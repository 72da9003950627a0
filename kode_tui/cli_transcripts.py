"""`kode-tui --search TEXT [--all]` and `kode-tui --export ID [--format md|jsonl] [-o FILE]`.

Search prints one line per message holding the text: session id, file, checkpoint, who said it
and the words around it (exit 0; 1 with one line when nothing matches). Export writes a
session's transcript (`kode_tui.session.export`) to stdout, or crash-safely to a file.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from kode_tui.errors import UserError
from kode_tui.fsutil import atomic_write_bytes
from kode_tui.safetext import visible, visible_json
from kode_tui.session.catalog import list_sessions
from kode_tui.session.export import ExportImages, export_jsonl, export_markdown
from kode_tui.session.search import Match, search_sessions
from kode_tui.session.session import Session


async def run_search(work_dir: Path, query: str, *, everywhere: bool) -> int:
    if not query.strip():
        raise UserError("--search needs some text to look for.")
    sessions = await list_sessions(work_dir, everywhere=everywhere)
    sessions.sort(key=lambda session: session.updated_at, reverse=True)
    found = 0

    def search() -> None:
        nonlocal found
        for match in search_sessions(sessions, query):
            print(match_line(match, with_work_dir=everywhere))
            found += 1

    await asyncio.to_thread(search)
    if not found:
        where = "any work dir" if everywhere else visible(str(work_dir), multiline=False)
        print(f"No message in the sessions of {where} holds {visible(query, multiline=False)}.")
        return 1
    return 0


def match_line(match: Match, *, with_work_dir: bool = False) -> str:
    """`ID  FILE  #CHECKPOINT  ROLE  SNIPPET`, every piece safe to print."""
    checkpoint = "-" if match.checkpoint is None else f"#{match.checkpoint}"
    head = f"{visible(match.session.id, multiline=False)}  {match.file}  {checkpoint}"
    work_dir = match.session.work_dir
    if with_work_dir and work_dir is not None:
        head = f"{visible(str(work_dir), multiline=False)}  {head}"
    return f"{head}  {match.role}: {match.snippet}"


async def run_export(session: Session, form: str, output: str | None) -> int:
    """Write `session`'s transcript as `form` (md or jsonl) to `output`, or to stdout; a
    Markdown file gets its images beside it, in `<name>_images/`."""
    target = None if output is None else Path(output).expanduser()
    if target is not None and target.is_dir():
        raise UserError(f"{output} is a folder; -o needs a file name.")
    images = None if target is None else ExportImages(f"{target.stem}_images")

    def render() -> bytes:
        if form == "jsonl":
            return b"".join(export_jsonl(session))
        return "".join(export_markdown(session, images)).encode()

    data = await asyncio.to_thread(render)
    if output is None and form == "jsonl":
        # The records as they are, but for a terminal: what they hold raw inside their strings
        # (a model's bidi overrides, C1 controls) becomes escapes; a file (-o) gets the bytes.
        data = visible_json(data.decode("utf-8", "surrogateescape")).encode(
            "utf-8", "surrogateescape"
        )
    if target is None:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return 0
    await asyncio.to_thread(_write_export, target, data, images)
    return 0


def _write_export(target: Path, data: bytes, images: ExportImages | None) -> None:
    """The images first, so that the Markdown never links a file not written yet."""
    for name, image in (images.files if images is not None else {}).items():
        path = target.parent / name
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, image)
    atomic_write_bytes(target, data)
