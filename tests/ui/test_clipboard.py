"""Ctrl+V's image: read from the clipboard with wl-paste or xclip (stub scripts on PATH that
serve a real PNG made with Pillow), kept under $KODE_TUI_HOME/attachments; one line when no tool
or no image is there."""

from __future__ import annotations

import io
import stat
from pathlib import Path

import pytest
from PIL import Image

from kode_tui.soul.facade import attachments_dir
from kode_tui.ui.clipboard import ClipboardError, paste_image

# A clipboard tool: `TYPES` lists what it holds; asked for `image/png` it prints `PNG`.
STUB = """#!/bin/sh
case "$*" in
  *--list-types*|*TARGETS*) printf '%s\\n' $TYPES ;;
  *image/png*) cat "$PNG" ;;
  *) exit 1 ;;
esac
"""


def install(folder: Path, name: str) -> None:
    folder.mkdir(exist_ok=True)
    tool = folder / name
    tool.write_text(STUB)
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)


@pytest.fixture
def png(tmp_path: Path) -> Path:
    path = tmp_path / "clip.png"
    Image.new("RGB", (12, 7), "red").save(path)
    return path


@pytest.mark.parametrize(
    ("tool", "display"), [("wl-paste", "WAYLAND_DISPLAY"), ("xclip", "DISPLAY")]
)
def test_the_clipboards_png_is_kept_as_a_file_under_home(
    tmp_path: Path, png: Path, tool: str, display: str
) -> None:
    install(tmp_path / "bin", tool)
    env = {
        "PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin",
        display: ":0",
        "TYPES": "text/plain image/png",
        "PNG": str(png),
    }
    saved = paste_image(env)
    assert saved.parent == attachments_dir()
    assert saved.read_bytes() == png.read_bytes()
    assert Image.open(io.BytesIO(saved.read_bytes())).size == (12, 7)
    assert paste_image(env) == saved  # the same image again: the same file


def test_no_image_on_the_clipboard_and_no_tool_are_one_line_each(tmp_path: Path) -> None:
    install(tmp_path / "bin", "xclip")
    env = {"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin", "DISPLAY": ":0", "TYPES": "UTF8_STRING"}
    with pytest.raises(ClipboardError, match=r"^The clipboard holds no image\.$"):
        paste_image(env)
    with pytest.raises(ClipboardError) as caught:
        paste_image({"PATH": str(tmp_path / "empty")})
    assert "wl-paste" in str(caught.value) and "\n" not in str(caught.value)
