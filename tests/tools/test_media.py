"""ReadMediaFile: real PNG and JPEG files made with Pillow, read as Kimi CLI 1.52 gives them to
the model, scaled down when large, confined like ReadFile."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import pytest
from PIL import Image

from kode_tui.message import ImageURLPart, TextPart
from kode_tui.tools.base import ToolEnv, ToolError
from kode_tui.tools.images import MAX_SIDE
from kode_tui.tools.media import ReadMediaFile, ReadMediaFileParams
from kode_tui.tools.toolset import tool_message


def make_image(path: Path, size: tuple[int, int], fmt: str, color: str = "red") -> Path:
    Image.new("RGB", size, color).save(path, format=fmt)
    return path


def sent_image(part: object) -> Image.Image:
    """The image a part carries, decoded from its data URL."""
    assert isinstance(part, ImageURLPart)
    header, _, data = part.image_url.url.partition(";base64,")
    assert header.startswith("data:image/")
    image = Image.open(io.BytesIO(base64.b64decode(data)))
    image.load()
    return image


async def read_media(env: ToolEnv, path: str) -> tuple[str, list[object]]:
    result = await ReadMediaFile().run(ReadMediaFileParams(path=path), env, "c1")
    return result.message, list(result.parts)


async def test_a_png_comes_back_in_kimis_form(tmp_path: Path) -> None:
    png = make_image(tmp_path / "shot.png", (64, 32), "PNG")
    env = ToolEnv(work_dir=tmp_path)
    result = await ReadMediaFile().run(ReadMediaFileParams(path="shot.png"), env, "c1")
    size = png.stat().st_size
    assert result.message.startswith(
        f"Loaded image file `{png}` (image/png, {size} bytes, original size 64x32px)."
    )
    content = tool_message("c1", result).parts
    assert [type(p) for p in content] == [TextPart, TextPart, ImageURLPart, TextPart]
    assert content[1] == TextPart(text=f'<image path="{png}">')
    assert content[3] == TextPart(text="</image>")
    # Sent unchanged: the very bytes of the file.
    assert sent_image(content[2]).size == (64, 32)
    assert isinstance(content[2], ImageURLPart)
    assert content[2].image_url.url.endswith(base64.b64encode(png.read_bytes()).decode())
    event = result.event("c1")
    assert event.output == f'<image path="{png}"></image>' and len(event.parts) == 1


async def test_a_large_jpeg_is_scaled_down_and_the_note_says_so(tmp_path: Path) -> None:
    make_image(tmp_path / "big.jpg", (4000, 1000), "JPEG", "blue")
    message, parts = await read_media(ToolEnv(work_dir=tmp_path), "big.jpg")
    assert "image/jpeg" in message
    assert f"original size 4000x1000px, sent scaled down to {MAX_SIDE}x512px" in message
    image = sent_image(parts[1])
    assert image.size == (MAX_SIDE, 512) and image.format == "JPEG"
    assert image.getpixel((10, 10))[2] > 200  # still blue


async def test_the_format_is_read_from_the_bytes_not_the_name(tmp_path: Path) -> None:
    make_image(tmp_path / "photo.png", (10, 10), "JPEG")
    message, parts = await read_media(ToolEnv(work_dir=tmp_path), "photo.png")
    assert "(image/jpeg," in message
    assert isinstance(parts[1], ImageURLPart)
    assert parts[1].image_url.url.startswith("data:image/jpeg;base64,")


async def test_a_bmp_is_sent_as_png_and_the_note_names_the_files_type(tmp_path: Path) -> None:
    make_image(tmp_path / "old.bmp", (20, 10), "BMP")
    message, parts = await read_media(ToolEnv(work_dir=tmp_path), "old.bmp")
    assert "(image/bmp," in message
    assert sent_image(parts[1]).format == "PNG"


@pytest.mark.parametrize(
    ("name", "body", "expected"),
    [
        ("notes.png", b"just text\n", "is a text file. Use ReadFile to read text files."),
        ("broken.png", b"\x89PNG\r\n\x1a\n\0\0garbage", "is not an image Pillow can read"),
        ("empty.png", b"", "is empty."),
    ],
)
async def test_what_is_not_an_image_gets_one_clear_error(
    tmp_path: Path, name: str, body: bytes, expected: str
) -> None:
    (tmp_path / name).write_bytes(body)
    with pytest.raises(ToolError) as caught:
        await read_media(ToolEnv(work_dir=tmp_path), name)
    assert expected in caught.value.message


async def test_a_missing_file_and_a_folder_are_refused_as_readfile_refuses_them(
    tmp_path: Path,
) -> None:
    (tmp_path / "dir").mkdir()
    env = ToolEnv(work_dir=tmp_path)
    with pytest.raises(ToolError, match="does not exist"):
        await read_media(env, "nope.png")
    with pytest.raises(ToolError, match="is a directory"):
        await read_media(env, "dir")


async def test_an_image_outside_the_work_dir_asks_like_readfile(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    outside = make_image(tmp_path / "out.png", (5, 5), "PNG")
    make_image(work / "in.png", (5, 5), "PNG")
    env = ToolEnv(work_dir=work)
    tool = ReadMediaFile()
    assert await tool.permission(ReadMediaFileParams(path="in.png"), env) is None
    (work / "link.png").symlink_to(outside)
    for path in (str(outside), "link.png"):
        asked = await tool.permission(ReadMediaFileParams(path=path), env)
        assert asked is not None and asked.outside_work_dir
        assert asked.scope == f"read:{tmp_path}"
