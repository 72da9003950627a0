"""ReadMediaFile: the model looks at an image file (Kimi CLI 1.52's tool: name, parameter and
result form).

The path is confined and approved as ReadFile's is. The result is Kimi's: a `<system>` status
saying the type, the size in bytes and the size in pixels, then the image part between
`<image path="…">` and `</image>` text parts, so kimi-cli restores and sends it as its own.
Large images are scaled down first (`tools/images.py`) and the status says so. Videos, which
Kimi uploads to its own platform, are not read.
"""

# Annotations are evaluated as the module loads, not postponed: pydantic compiles and evaluates
# each field's annotation from its string otherwise (issue 31: ~6 ms for the models a session
# loads before its first request).

import asyncio

from pydantic import BaseModel, Field

from kode_tui.tools.base import Permission, Tool, ToolEnv, ToolError, ToolOutput
from kode_tui.tools.files import read_outside_permission
from kode_tui.tools.images import (
    MAX_FILE_BYTES,
    ImageError,
    NotAnImage,
    PreparedImage,
    prepare_image,
)
from kode_tui.tools.textfile import SNIFF_BYTES, check_readable, check_text_head

_COORDINATES_NOTE = (
    " If you need to output coordinates, output relative coordinates first and compute "
    "absolute coordinates using the original image size; if you generate or edit "
    "images/videos via commands or scripts, read the result back immediately before continuing."
)
"""Kimi CLI's words after the status, kept so a model tuned on Kimi reads what it expects."""


class ReadMediaFileParams(BaseModel):
    path: str = Field(
        description=(
            "The path to the file to read, relative to the working directory or absolute. "
            "Files outside the working directory need the user's approval."
        )
    )


class ReadMediaFile(Tool[ReadMediaFileParams]):
    """Gives the model an image file to look at."""

    name = "ReadMediaFile"
    description = (
        "Read media content from a file: an image (PNG, JPEG, GIF, WebP and the other formats "
        "Pillow reads) comes back in a form you can directly view and understand, after a "
        "<system> note with its type and size. Images larger than 2048 pixels on a side are "
        "scaled down first; the note gives the original size. The maximum file size is "
        f"{MAX_FILE_BYTES >> 20}MB. Only images can be read: use ReadFile for text files, and "
        "Glob or Shell to list directories. Read several images in parallel when you need them."
    )
    params = ReadMediaFileParams
    needs_images = True

    async def permission(self, params: ReadMediaFileParams, env: ToolEnv) -> Permission | None:
        path = env.resolve(params.path)
        return read_outside_permission(env, path, f"ReadMediaFile {env.display_path(path)}")

    async def run(self, params: ReadMediaFileParams, env: ToolEnv, tool_call_id: str) -> ToolOutput:
        if not params.path:
            raise ToolError("File path cannot be empty.", brief="Empty file path")
        path = env.resolve(params.path)
        shown = env.display_path(path)
        check_readable(path, shown)
        if env.takes_images is not None and not env.takes_images():
            raise ToolError(
                "The current model does not support image input. "
                "Tell the user to use a model with image input capability.",
                brief="The model takes no images",
            )
        try:
            image = await asyncio.to_thread(prepare_image, path, shown)
        except OSError as error:
            raise ToolError(
                f"Failed to read `{shown}`: {error.strerror or error}.", brief="Read failed"
            ) from error
        except NotAnImage as error:
            raise _not_an_image(path.read_bytes()[:SNIFF_BYTES], shown, str(error)) from None
        except ImageError as error:
            raise ToolError(str(error), brief="Not read") from None
        return _loaded(image, str(path))


def _not_an_image(head: bytes, shown: str, why: str) -> ToolError:
    """Kimi's error for a text file (use ReadFile), else the reason Pillow gave."""
    try:
        check_text_head(head, shown)
    except ToolError:
        return ToolError(why, brief="Not an image")
    return ToolError(
        f"`{shown}` is a text file. Use ReadFile to read text files.",
        brief="Unsupported file type",
    )


def _loaded(image: PreparedImage, path: str) -> ToolOutput:
    message = (
        f"Loaded image file `{path}` ({image.file_mime_type}, {image.file_size} bytes, "
        f"{image.size_note()}).{_COORDINATES_NOTE}"
    )
    return ToolOutput(
        message=message,
        brief=f"{image.width}x{image.height}" + (" (scaled down)" if image.scaled else ""),
        parts=image.wrapped(path),
    )
