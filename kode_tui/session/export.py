"""A session written out whole: a Markdown transcript, or its raw records as JSON lines.

Both walk the generations in order (every rotated `context_N.jsonl`, oldest first, then the
live `context.jsonl`). Markdown shows what each generation added to the one before it (a revert
or a D-Mail copies the messages before its checkpoint; those are not written twice) and a marked
line where each rotation happened and why (rotations.jsonl, or what the files show for Kimi
CLI's: `generations.infer_rotations`). JSON lines keep every record of every file as it is, each
file after a `{"role": "_export_file", ...}` line naming it: readers of context files skip
records whose role starts with `_` that they do not know.

Everything written is masked (API keys); Markdown also shows control characters as stand-ins.

Markdown links each image to a file written beside it (`ExportImages`: `<name>_images/`, each
file named by its content); written to stdout, an image is a line saying so. JSON lines keep
images as the records hold them (data: URLs).
"""

from __future__ import annotations

import hashlib
import html
import io
import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from urllib.parse import quote

from kode_tui.masking import mask, mask_bytes
from kode_tui.message import (
    COMPACTION_OUTPUT_PREFIX,
    ContentPart,
    ImageURLPart,
    Message,
    TextPart,
    ThinkPart,
    data_url_bytes,
    is_checkpoint_note,
    is_dmail_note,
    is_from_system,
    is_system_note,
    media_chips,
    split_tool_result,
    unwrap_system,
)
from kode_tui.safetext import visible
from kode_tui.session.generations import common_prefix, infer_rotations, read_generation
from kode_tui.session.history import History, SpanReader
from kode_tui.session.rotation import Rotation, list_rotations
from kode_tui.session.scan import scan
from kode_tui.session.session import Session

FORMATS = ("md", "jsonl")
_SUMMARY_WIDTH = 80
_IMAGE_TAG = re.compile(r"\s*(?:<image\b([^>]*)>|</image>)\s*")
"""A text part that is only Kimi CLI's wrapper around an image part (`<image path="…">`)."""
_PATH_ATTRIBUTE = re.compile(r'\bpath="([^"]*)"')
_EXTENSIONS = {"JPEG": "jpg", "PNG": "png", "GIF": "gif", "WEBP": "webp"}


class ExportImages:
    """The images of a Markdown export, kept to be written beside it: `files` maps a path
    relative to the Markdown file to the bytes of an image."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        """The folder for the images, relative to the Markdown file (`notes_images`)."""
        self.files: dict[str, bytes] = {}

    def link(self, url: str, name: str) -> str:
        """The Markdown showing the image of `url` (a `data:` URL): a link to its file, or a
        line saying why it has none."""
        from PIL import Image, UnidentifiedImageError

        data = data_url_bytes(url)
        if data is None:
            return _image_note(name, "not held in the session")
        try:
            with Image.open(io.BytesIO(data)) as image:
                extension = _EXTENSIONS.get(image.format or "", (image.format or "img").lower())
        except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError):
            return _image_note(name, "not a readable image")
        path = f"{self.folder}/{hashlib.sha256(data).hexdigest()[:16]}.{extension}"
        self.files[path] = data
        alt = re.sub(r"[\[\]\\]", "", _inline(name))
        return f"![{alt}]({quote(path)})\n\n"


def generations(session: Session) -> list[tuple[Path, Rotation | None]]:
    """Each context file in order, with the rotation that ended it (None for the live one)."""
    live = session.context_file
    rotations = infer_rotations(list_rotations(live), live)
    return [(rotation.path, rotation) for rotation in rotations] + [(live, None)]


def export_jsonl(session: Session) -> Iterator[bytes]:
    """Every record of every generation, raw and masked, one line each."""
    for path, rotation in generations(session):
        marker: dict[str, object] = {"role": "_export_file", "file": path.name}
        if rotation is not None and rotation.reason is not None:
            marker["reason"] = rotation.reason
        yield json.dumps(marker, ensure_ascii=False).encode() + b"\n"
        data = path.read_bytes()
        for line in data.splitlines():
            if line.strip():
                yield mask_bytes(line) + b"\n"


def export_markdown(session: Session, images: ExportImages | None = None) -> Iterator[str]:
    """The transcript, in pieces of Markdown; its images go to `images` (without, each is a
    line saying it was not written)."""
    yield f"# {_inline(session.title)}\n\n"
    yield f"Session `{_inline(session.id)}`"
    if session.work_dir is not None:
        yield f" in `{_inline(str(session.work_dir))}`"
    yield "\n\n"
    previous = None
    for path, rotation in generations(session):
        generation = read_generation(path)
        # What the file before this one handed on (a revert's or D-Mail's copy) is not repeated.
        skip = 0
        if previous is not None and generation is not None:
            skip = common_prefix(previous.messages, generation.messages)
        previous = generation
        yield from _messages(path, skip, images)
        if rotation is not None:
            yield _marker(rotation)


def _messages(path: Path, skip: int, images: ExportImages | None) -> Iterator[str]:
    data = path.read_bytes()
    found = scan(data, path.name)
    history = History(SpanReader(path), found.message_starts, found.message_ends,
                      found.message_flags)  # fmt: skip
    for index in range(skip, len(history)):
        yield from _message(history[index], images)


def _message(message: Message, images: ExportImages | None) -> Iterator[str]:
    if message.role == "tool":
        yield from _tool_result(message, images)
        return
    pictures = _pictures(message.parts, images)
    texts = [
        part.text
        for part in message.parts
        if isinstance(part, TextPart) and not (pictures and _IMAGE_TAG.fullmatch(part.text))
    ]
    texts = [text for text in texts if not is_checkpoint_note(text)]
    thinking = [part.think for part in message.parts if isinstance(part, ThinkPart)]
    if not (texts or thinking or message.tool_calls or pictures):
        return
    if message.role == "user" and texts and is_dmail_note(texts[0]):
        yield f"> **D-Mail**\n>\n{_quote(unwrap_system(texts[0]))}\n\n"
        return
    if message.role == "user" and texts and is_system_note(texts[0], COMPACTION_OUTPUT_PREFIX):
        # The summary a compaction left: the note, then the summary itself.
        summary = "\n\n".join(texts[1:]) or unwrap_system(texts[0])
        yield _details("Compaction summary", summary)
        return
    if message.role == "user" and texts and all(is_from_system(text) for text in texts):
        yield _details("System note", "\n\n".join(unwrap_system(text) for text in texts))
        return
    yield f"## {message.role.capitalize()}\n\n"
    for think in thinking:
        yield _details("Thinking", think)
    for text in texts:
        yield _text(text) + "\n\n"
    yield from pictures
    for call in message.tool_calls or ():
        arguments = call.function.arguments or ""
        summary = f"Tool call: {call.function.name} {_shorten(arguments)}"
        yield _details(summary, _pretty(arguments), "json")


def _tool_result(message: Message, images: ExportImages | None) -> Iterator[str]:
    is_error, status, output = split_tool_result(message.text)
    label = "Error" if is_error else "Result"
    summary = f"{label}: {status}" if status else label
    media = [part for part in message.parts if not isinstance(part, TextPart | ThinkPart)]
    output, _ = media_chips(output, media)
    yield _details(summary, output)
    yield from _pictures(message.parts, images)


def _pictures(parts: Sequence[ContentPart], images: ExportImages | None) -> list[str]:
    """A paragraph for each image among `parts`, named by the path in the `<image path=…>`
    text before it (Kimi CLI's wrapper), else `image N`."""
    shown: list[str] = []
    name = ""
    for part in parts:
        if isinstance(part, TextPart) and (tag := _IMAGE_TAG.fullmatch(part.text)):
            path = _PATH_ATTRIBUTE.search(tag.group(1) or "")
            name = html.unescape(path.group(1)) if path else name
        elif isinstance(part, ImageURLPart):
            label = Path(name).name if name else f"image {len(shown) + 1}"
            url = part.image_url.url
            if images is None:
                shown.append(_image_note(label, "written beside the file with -o FILE only"))
            else:
                shown.append(images.link(url, label))
            name = ""
    return shown


def _image_note(name: str, why: str) -> str:
    """A paragraph saying why an image is not linked."""
    return f"*[image {_inline(name)}: {why}]*\n\n"


def _marker(rotation: Rotation) -> str:
    reason, info = rotation.reason, rotation.info
    where = f" (the context before it: {rotation.path.name})"
    if reason in ("revert", "dmail"):
        name = "Reverted" if reason == "revert" else "D-Mail sent back"
        to = f" to checkpoint {rotation.checkpoint}" if rotation.checkpoint is not None else ""
        text = f"{name}{to}"
    elif reason == "compaction":
        before, after = info.get("tokens_before", rotation.tokens), info.get("tokens_after")
        sizes = f": {before} → {after} tokens" if isinstance(after, int) and before else ""
        text = f"Compacted{sizes}"
    elif reason == "restore":
        source = info.get("source")
        text = f"Restored {source}" if isinstance(source, str) else "Restored an earlier context"
    elif reason == "clear":
        text = "Cleared"
    elif reason == "system_prompt":
        text = "New system prompt"
    else:
        text = f"Rotated ({reason})" if reason else "Rotated"
    return f"---\n\n**⟲ {_inline(text)}**{_inline(where)}\n\n---\n\n"


def _details(summary: str, body: str, language: str = "") -> str:
    fence = _fence(body)
    return (
        f"<details><summary>{_html(_inline(summary))}</summary>\n\n"
        f"{fence}{language}\n{_block(body)}\n{fence}\n\n</details>\n\n"
    )


def _fence(body: str) -> str:
    """A code fence longer than any run of backticks in `body`."""
    longest = run = 0
    for character in body:
        run = run + 1 if character == "`" else 0
        longest = max(longest, run)
    return "`" * max(3, longest + 1)


def _pretty(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), indent=2, ensure_ascii=False)
    except (ValueError, RecursionError):
        return arguments


def _shorten(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SUMMARY_WIDTH else text[: _SUMMARY_WIDTH - 1] + "…"


def _text(text: str) -> str:
    return visible(mask(text)).strip()


def _block(text: str) -> str:
    return visible(mask(text)).rstrip("\n")


def _inline(text: str) -> str:
    return visible(mask(text), multiline=False)


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" for line in _text(text).splitlines())


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
