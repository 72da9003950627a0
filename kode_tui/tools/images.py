"""An image file made ready for a model: its format and size read by Pillow, scaled down when
large, and given as Kimi CLI's image part (a `data:` URL).

One place for what ReadMediaFile sends and what an image attached to a prompt sends. Pillow
reads the format from the bytes, never from the file name, so a `.png` that is a JPEG is sent
as the JPEG it is, and a text file named `.png` is refused.
"""

from __future__ import annotations

import base64
import html
import io
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from kode_tui.message import ContentPart, ImageURL, ImageURLPart, TextPart

if TYPE_CHECKING:  # Pillow loads at the first image, not with the tool set
    from PIL import Image

MAX_FILE_BYTES = 100 << 20
"""The largest image file read (Kimi CLI's ReadMediaFile cap, 100 MB)."""

MAX_SIDE = 2048
"""Images whose longer side is larger are scaled down to it before they are sent: providers
scale larger ones down themselves (Anthropic to 1568, OpenAI to 2048) after charging the upload,
and refuse some outright."""

MAX_SENT_BYTES = 5 << 20
"""The most image data sent per image (Anthropic's per-image limit); a larger PNG is sent as a
JPEG instead."""

_SENT_AS_IS = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}
"""Formats every vision provider takes: sent unchanged when small enough."""


class ImageError(ValueError):
    """A file that cannot be sent as an image; the message is one sentence for the model or user."""


class NotAnImage(ImageError):
    """A file Pillow does not read as an image (text, a video, a broken file)."""


class PreparedImage(msgspec.Struct, frozen=True):
    """An image as it is sent: its bytes and type, and the sizes before and after scaling."""

    data: bytes
    mime_type: str
    file_format: str
    """The format Pillow found in the file (`PNG`, `JPEG`...)."""
    file_size: int
    width: int
    height: int
    """The file's own size in pixels."""
    sent_width: int
    sent_height: int

    @property
    def file_mime_type(self) -> str:
        """The MIME type of the file itself (the data sent may be another: a BMP goes as PNG)."""
        from PIL import Image

        return Image.MIME.get(self.file_format, self.mime_type)

    @property
    def scaled(self) -> bool:
        """Whether the image is sent smaller than the file is."""
        return (self.sent_width, self.sent_height) != (self.width, self.height)

    def part(self) -> ImageURLPart:
        """The image as Kimi CLI stores and sends it: an `image_url` part with a `data:` URL."""
        encoded = base64.b64encode(self.data).decode("ascii")
        return ImageURLPart(image_url=ImageURL(url=f"data:{self.mime_type};base64,{encoded}"))

    def wrapped(self, path: str) -> list[ContentPart]:
        """The image as Kimi CLI puts it in a message: `<image path="…">`, the part, `</image>`
        (its `wrap_media_part`), so the model can tell which file each image is."""
        opening = f'<image path="{html.escape(path, quote=True)}">'
        return [TextPart(text=opening), self.part(), TextPart(text="</image>")]

    def size_note(self) -> str:
        """`original size 4000x3000px, sent scaled down to 2048x1536px` (or without the second
        half): what the model and the user are told of the sizes."""
        note = f"original size {self.width}x{self.height}px"
        if self.scaled:
            note += f", sent scaled down to {self.sent_width}x{self.sent_height}px"
        return note


def prepare_image(path: Path, shown: str) -> PreparedImage:
    """Read the image at `path` (`shown` names it in errors) and make it ready to send.

    Blocking (it decodes the image): run it in a thread.
    """
    size = path.stat().st_size
    if size == 0:
        raise ImageError(f"`{shown}` is empty.")
    if size > MAX_FILE_BYTES:
        raise ImageError(
            f"`{shown}` is {size} bytes, which exceeds the max {MAX_FILE_BYTES >> 20}MB bytes "
            "for media files."
        )
    data = path.read_bytes()
    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            # A decompression bomb (a few KB that decode to gigapixels) is refused, not decoded.
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as image:
                return _prepared(image, data)
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise ImageError(f"`{shown}` has too many pixels to be read as an image.") from None
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as error:
        # Pillow raises SyntaxError for some broken files (a truncated PNG chunk).
        raise NotAnImage(f"`{shown}` is not an image Pillow can read: {error}.") from None


def _prepared(image: Image.Image, data: bytes) -> PreparedImage:
    file_format = image.format or "PNG"
    width, height = image.size
    mime = _SENT_AS_IS.get(file_format)
    if mime is not None and max(width, height) <= MAX_SIDE and len(data) <= MAX_SENT_BYTES:
        image.verify()  # a file cut short fails here, not at the provider
        return PreparedImage(data, mime, file_format, len(data), width, height, width, height)
    image.load()
    if max(width, height) > MAX_SIDE:
        from PIL import Image

        image.thumbnail((MAX_SIDE, MAX_SIDE), Image.Resampling.LANCZOS)
    sent, mime = _encoded(image, photo=file_format == "JPEG")
    return PreparedImage(sent, mime, file_format, len(data), width, height, *image.size)


def _encoded(image: Image.Image, *, photo: bool) -> tuple[bytes, str]:
    """A photo (a JPEG) stays a JPEG; anything else is a PNG when that is small enough
    (lossless, keeps transparency), else a JPEG."""
    if not photo:
        if image.mode not in ("RGB", "RGBA", "L", "LA"):
            image = image.convert("RGBA" if "transparency" in image.info else "RGB")
        out = io.BytesIO()
        image.save(out, format="PNG", optimize=True)
        if out.tell() <= MAX_SENT_BYTES:
            return out.getvalue(), "image/png"
    out = io.BytesIO()
    image.convert("RGB").save(out, format="JPEG", quality=85)
    return out.getvalue(), "image/jpeg"
