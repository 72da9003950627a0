"""`--export`'s images: Markdown links each image of a message or tool result to a file written
beside it (`<name>_images/`); a broken one, or an export to stdout, is a line saying so."""

from __future__ import annotations

import asyncio
import base64
import io
import re
from pathlib import Path

import pytest
from PIL import Image

from kode_tui.message import ImageURL, ImageURLPart, Message, TextPart
from kode_tui.session import Context, Session
from tests.cli_helpers import Kode, in_process
from tests.session_helpers import assistant_with_tool_call


@pytest.fixture
def kode(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Kode:
    return in_process(capsys, monkeypatch)


def data_url(image_format: str, colour: tuple[int, int, int]) -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (32, 16), colour).save(buffer, image_format)
    mime = "image/png" if image_format == "PNG" else "image/jpeg"
    return f"data:{mime};base64,{base64.b64encode(buffer.getvalue()).decode()}"


def wrapped(path: str, url: str) -> list[TextPart | ImageURLPart]:
    """An image part as Kimi CLI keeps it: inside `<image path="…">` text parts."""
    image = ImageURLPart(image_url=ImageURL(url=url))
    return [TextPart(text=f'<image path="{path}">'), image, TextPart(text="</image>")]


async def _session_with_images(tmp_path: Path) -> tuple[Path, Session]:
    project = tmp_path / "project"
    project.mkdir()
    session = await Session.create(project)
    prompt = Message(
        role="user",
        content=[
            TextPart(text="what is on it?"),
            *wrapped("/shots/shot.png", data_url("PNG", (255, 0, 0))),
            *wrapped("/shots/broken.png", "data:image/png;base64,AAAA"),
        ],
    )
    result = Message(
        role="tool",
        tool_call_id="call_0",
        content=[
            TextPart(text="<system>Loaded image file `photo.jpg`.</system>"),
            *wrapped("/p/photo.jpg", data_url("JPEG", (0, 0, 255))),
        ],
    )
    async with Context(session.context_file) as context:
        await context.checkpoint()
        await context.append_message([prompt, assistant_with_tool_call("call_0", "ls"), result])
    return project, session


async def test_markdown_export_writes_each_image_beside_it_and_links_it(
    tmp_path: Path, kode: Kode
) -> None:
    project, session = await _session_with_images(tmp_path)
    out = tmp_path / "out" / "notes.md"
    out.parent.mkdir()
    result = await asyncio.to_thread(kode, "--export", session.id, "-o", str(out), str(project))
    assert result.returncode == 0, result.stderr

    text = out.read_text()
    links = dict(re.findall(r"!\[([^\]]*)\]\(([^)]*)\)", text))
    assert set(links) == {"shot.png", "photo.jpg"}
    assert links["shot.png"].startswith("notes_images/") and links["shot.png"].endswith(".png")
    assert links["photo.jpg"].endswith(".jpg")
    with Image.open(out.parent / links["shot.png"]) as shot:
        assert (shot.format, shot.size, shot.convert("RGB").getpixel((3, 3))) == (
            "PNG",
            (32, 16),
            (255, 0, 0),
        )
    with Image.open(out.parent / links["photo.jpg"]) as photo:
        red, _, blue = photo.convert("RGB").getpixel((3, 3))
        assert photo.format == "JPEG" and blue > 200 and red < 40
    assert "*[image broken.png: not a readable image]*" in text
    assert text.index("what is on it?") < text.index("![shot.png]")
    assert "<image" not in text and "data:image" not in text


async def test_markdown_export_to_stdout_names_each_image_in_a_line(
    tmp_path: Path, kode: Kode
) -> None:
    project, session = await _session_with_images(tmp_path)
    result = await asyncio.to_thread(kode, "--export", session.id, str(project))
    assert result.returncode == 0, result.stderr

    assert "*[image shot.png: written beside the file with -o FILE only]*" in result.stdout
    assert "*[image photo.jpg: written beside the file with -o FILE only]*" in result.stdout
    assert "data:image" not in result.stdout
