"""Image parts in context.jsonl as Kimi CLI 1.52 stores them: its own Context restores a context
holding ours (a prompt's image, a ReadMediaFile result), and we read the lines its Context writes
for a pasted image byte for byte.

Needs a Python with kimi-cli installed, as tests/test_kimi_compat.py; skips without one.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from kode_tui.humanize import format_size
from kode_tui.message import FunctionBody as Body
from kode_tui.message import Message, TextPart, ToolCall, dump_record, media_chips, parse_record
from kode_tui.session import Context
from kode_tui.tools.base import ToolEnv
from kode_tui.tools.images import prepare_image
from kode_tui.tools.media import ReadMediaFile, ReadMediaFileParams
from kode_tui.tools.toolset import tool_message
from tests.test_kimi_compat import KIMI_PYTHON, kimi_view

pytestmark = pytest.mark.skipif(
    KIMI_PYTHON is None,
    reason="kimi-cli is not installed (run ../shared/bench/setup_kimi.sh, "
    "or set KODE_TUI_KIMI_PYTHON to a Python that has it)",
)

# argv: our context to restore, a path for Kimi's own, and an image file. Kimi writes a user
# message with the image as its shell does for a pasted one (placeholders.py: the part between
# `<image path=…>` and `</image>`), then prints both histories as its Context restores them.
KIMI_IMAGES = textwrap.dedent(
    """
    import asyncio, base64, json, sys
    from pathlib import Path
    from kimi_cli.soul.context import Context
    from kimi_cli.utils.media_tags import wrap_media_part
    from kosong.message import ImageURLPart, Message, TextPart

    def history(context):
        return [m.model_dump(mode="json", exclude_none=True) for m in context.history]

    async def main():
        ours = Context(Path(sys.argv[1]))
        await ours.restore()
        theirs = Context(Path(sys.argv[2]))
        image = Path(sys.argv[3])
        url = "data:image/png;base64," + base64.b64encode(image.read_bytes()).decode()
        part = ImageURLPart(image_url=ImageURLPart.ImageURL(url=url, id="img-1"))
        content = [
            TextPart(text="What is wrong here? "),
            *wrap_media_part(part, tag="image", attrs={"path": str(image)}),
            TextPart(text=" Thanks ✓"),
        ]
        await theirs.append_message(Message(role="user", content=content))
        print(json.dumps({"ours": history(ours), "theirs": history(theirs)}))

    asyncio.run(main())
    """
)


def run_kimi_images(ours: Path, theirs: Path, image: Path) -> dict[str, Any]:
    done = subprocess.run(
        [KIMI_PYTHON or "", "-c", KIMI_IMAGES, str(ours), str(theirs), str(image)],
        capture_output=True,
        text=True,
        timeout=300,
        env={"HOME": str(ours.parent), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


async def test_kimi_restores_our_image_parts_and_we_read_its_own(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    shot = work / "shot.png"
    Image.new("RGB", (40, 30), "green").save(shot)
    Image.new("RGB", (3000, 100), "white").save(work / "wide.png")
    prompt = Message(
        role="user",
        content=[
            TextPart(text="Look at this: "),
            TextPart(text=f'<image path="{shot}">'),
            prepare_image(shot, "shot.png").part(),
            TextPart(text="</image>"),
        ],
    )
    call = ToolCall(id="c1", function=Body(name="ReadMediaFile", arguments='{"path":"wide.png"}'))
    result = await ReadMediaFile().run(
        ReadMediaFileParams(path="wide.png"), ToolEnv(work_dir=work), "c1"
    )
    live = tmp_path / "session" / "context.jsonl"
    async with Context(live) as context:
        await context.append_message(prompt)
        await context.append_message(Message(role="assistant", content="", tool_calls=[call]))
        await context.append_message(tool_message("c1", result))
        ours = [json.loads(message.to_json()) for message in context.history]

    (tmp_path / "kimi").mkdir()
    kimi = run_kimi_images(live, tmp_path / "kimi" / "context.jsonl", shot)

    assert kimi["ours"] == kimi_view({"history": ours})["history"]
    restored_tool = kimi["ours"][2]["content"]
    assert [part["type"] for part in restored_tool] == ["text", "text", "image_url", "text"]
    assert "sent scaled down to 2048x68px" in restored_tool[0]["text"]
    # Kimi's own line, read and written back by us: the same bytes, and the image's chip.
    (line,) = (tmp_path / "kimi" / "context.jsonl").read_text(encoding="utf-8").splitlines()
    record = parse_record(line)
    assert dump_record(record) == line
    assert isinstance(record, Message)
    text, chips = media_chips(record.text, [p for p in record.parts if p.type == "image_url"])
    assert text == "What is wrong here?  Thanks ✓"
    assert chips == [f"image · {shot} · {format_size(shot.stat().st_size)}"]
