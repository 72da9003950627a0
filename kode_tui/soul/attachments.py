"""Images attached to a prompt (`@shot.png`, a pasted path, the clipboard): read and scaled once
when attached (`tools/images.py`), shown as a chip, and sent in the user's message as Kimi CLI's
shell sends a pasted image, so the context stays readable by kimi-cli.

The user's own files: no approval, wherever they are (the user named them).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kode_tui.humanize import format_size
from kode_tui.message import ContentPart, TextPart
from kode_tui.tools.images import PreparedImage, prepare_image


@dataclass(frozen=True, slots=True)
class ImageAttachment:
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


async def attach_image(path: Path) -> ImageAttachment:
    """The image at `path` (absolute) read for a prompt; `ImageError` (one sentence) when it is
    not one, OSError when it cannot be read."""
    image = await asyncio.to_thread(prepare_image, path, str(path))
    return ImageAttachment(path, image)


def prompt_content(text: str, images: Sequence[ImageAttachment]) -> str | list[ContentPart]:
    """The user's message: the text alone, or the text then each image in Kimi's wrapper."""
    if not images:
        return text
    parts: list[ContentPart] = [TextPart(text=text)] if text else []
    for attachment in images:
        parts.extend(attachment.image.wrapped(str(attachment.path)))
    return parts
