"""Images attached to a prompt (`@shot.png`, a pasted path, the clipboard): read and scaled once
when attached (`tools/images.py`), shown as a chip, and sent in the user's message as Kimi CLI's
shell sends a pasted image, so the context stays readable by kimi-cli.

The user's own files: no approval, wherever they are (the user named them).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import shlex
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import unquote, urlparse

import msgspec

from kode_tui.fsutil import atomic_write_bytes, make_private_dir
from kode_tui.humanize import format_size
from kode_tui.message import ContentPart, TextPart
from kode_tui.pathnames import is_within, unescape_name
from kode_tui.paths import home
from kode_tui.tools.images import PreparedImage, prepare_image


class ImageAttachment(msgspec.Struct, frozen=True):
    """One image attached to the prompt being written."""

    path: Path
    image: PreparedImage

    def chip(self, number: int) -> str:
        """`[image 1 · shot.png · 1280x720 · 84 KiB]`: what the prompt shows for it."""
        image = self.image
        fields = [f"image {number}", self.path.name, f"{image.width}x{image.height}"]
        fields.append(format_size(image.file_size))
        if image.scaled:
            fields.append(f"sent at {image.sent_width}x{image.sent_height}")
        return f"[{' · '.join(fields)}]"


def attachments_dir() -> Path:
    """Where images that come without a file (the clipboard's, an ACP client's) are kept, so
    the `<image path=…>` a prompt stores names a file that exists (Kimi CLI keeps pasted
    images in its share dir's `prompt-cache` likewise)."""
    return home() / "attachments"


def save_attachment(data: bytes, suffix: str) -> Path:
    """`data` kept as a file in `attachments_dir`, named by its content (the same image twice
    is one file). Blocking: run it in a thread."""
    folder = attachments_dir()
    make_private_dir(folder)
    path = folder / f"{hashlib.sha256(data).hexdigest()[:16]}{suffix}"
    if not path.exists():
        atomic_write_bytes(path, data)
    return path


async def attach_image(path: Path) -> ImageAttachment:
    """The image at `path` (absolute) read for a prompt; `ImageError` (one sentence) when it is
    not one, OSError when it cannot be read."""
    image = await asyncio.to_thread(prepare_image, path, str(path))
    return ImageAttachment(path, image)


MAX_PASTED_PATHS = 20
"""A paste naming more files than this is text, not a drop of files (nothing is looked up)."""


def pasted_paths(text: str, work_dir: Path) -> list[Path] | None:
    """The files a paste names when it is nothing but paths of existing files, as a terminal
    pastes files dropped on it (shell-quoted, or `file://` URIs); None for any other text.

    Blocking (it looks the files up): run it in a thread. Which are images `attach_image` says.
    """
    if len(text) > MAX_PASTED_PATHS * 4096:  # longer than that many paths can be: text
        return None
    try:
        words = shlex.split(text.strip())
    except ValueError:  # an unclosed quote: text
        return None
    if not words or len(words) > MAX_PASTED_PATHS:
        return None
    paths: list[Path] = []
    for word in words:
        if word.startswith("file://"):
            word = unquote(urlparse(word).path)
        path = Path(os.path.expanduser(word))
        path = path if path.is_absolute() else work_dir / path
        if not path.is_file():
            return None
        paths.append(path)
    return paths


IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".tif", ".tiff"})
"""The names an `@` mention is taken as an image by (the file must be one, as Pillow reads it)."""

_MENTION = re.compile(r"(?:^|(?<=\s))@(\S+)")
_TRAILING = ",;:!?)]}\"'."
"""Punctuation after a mention (`look at @shot.png.`) that is not part of the name."""


class Mentions(msgspec.Struct, frozen=True):
    """The image files a prompt's `@name` mentions name."""

    inside: list[Path]
    """In the work dir: attached to the prompt (its text keeps the mention)."""
    outside: list[str]
    """Mentions (as typed) of image files outside the work dir: a prompt attaches none of them
    (a work dir's `@` names only its own files; ReadMediaFile asks before it reads outside)."""


def mentioned_images(text: str, work_dir: Path) -> Mentions:
    """The existing image files (by name: `IMAGE_SUFFIXES`) that `@` mentions in `text` name,
    each once. Blocking (it looks the files up): run it in a thread."""
    found = Mentions([], [])
    for match in _MENTION.finditer(text):
        typed = match.group(1).rstrip(_TRAILING)
        if Path(typed).suffix.lower() not in IMAGE_SUFFIXES:
            continue
        path = Path(os.path.expanduser(unescape_name(typed)))
        path = Path(os.path.normpath(path if path.is_absolute() else work_dir / path))
        if not path.is_file():
            continue  # a name in the text, not a file: it stays text
        if not is_within(path, work_dir):
            found.outside.append(typed)
        elif path not in found.inside:
            found.inside.append(path)
    return found


def prompt_content(text: str, images: Sequence[ImageAttachment]) -> str | list[ContentPart]:
    """The user's message: the text alone, or the text then each image in Kimi's wrapper."""
    if not images:
        return text
    parts: list[ContentPart] = [TextPart(text=text)] if text else []
    for attachment in images:
        parts.extend(attachment.image.wrapped(str(attachment.path)))
    return parts
