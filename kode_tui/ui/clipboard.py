"""The clipboard's image, for Ctrl+V in the prompt: read with the desktop's own tool (`wl-paste`
on Wayland, `xclip` on X11, `osascript` on macOS, where `pbpaste` gives text only) and kept as a
file in `soul.attachments.attachments_dir()`.

Blocking (it runs the tools): call it in a thread. No Textual here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from kode_tui.soul.facade import save_attachment

TIMEOUT = 5
"""Seconds a clipboard tool gets (one that hangs, an X server that does not answer)."""

_MAC_PNG = "set f to (the clipboard as «class PNGf»)\nreturn f"


class ClipboardError(Exception):
    """Why there is no image to paste, in one line for the user."""


def paste_image(env: Mapping[str, str] | None = None) -> Path:
    """The clipboard's image saved as a file (named by its content, so pasting it twice keeps
    one); ClipboardError when there is no tool to read it or it holds no image."""
    return save_attachment(_clipboard_image(os.environ if env is None else env), ".png")


def _clipboard_image(env: Mapping[str, str]) -> bytes:
    if env.get("WAYLAND_DISPLAY") and shutil.which("wl-paste", path=env.get("PATH")):
        types = _run(["wl-paste", "--list-types"], env).decode(errors="replace").split()
        return _run(["wl-paste", "--no-newline", "--type", _image_type(types)], env)
    if env.get("DISPLAY") and shutil.which("xclip", path=env.get("PATH")):
        clipboard = ["xclip", "-selection", "clipboard", "-o"]
        types = _run([*clipboard, "-t", "TARGETS"], env).decode(errors="replace").split()
        return _run([*clipboard, "-t", _image_type(types)], env)
    if sys.platform == "darwin" and shutil.which("osascript", path=env.get("PATH")):
        return _mac_png(_run(["osascript", "-e", _MAC_PNG], env))
    raise ClipboardError(
        "Ctrl+V pastes an image with wl-paste (Wayland) or xclip (X11): neither was found; "
        "install wl-clipboard or xclip, or paste the image's path."
    )


def _image_type(types: list[str]) -> str:
    """The clipboard's image type to ask for: PNG when offered, else the first image type."""
    images = [kind for kind in types if kind.startswith("image/")]
    if not images:
        raise ClipboardError("The clipboard holds no image.")
    return "image/png" if "image/png" in images else images[0]


def _mac_png(output: bytes) -> bytes:
    """osascript prints the PNG as `«data PNGf89504E47…»`."""
    text = output.decode(errors="replace").strip()
    if not text.startswith("«data PNGf"):
        raise ClipboardError("The clipboard holds no image.")
    return bytes.fromhex(text.removeprefix("«data PNGf").removesuffix("»"))


def _run(command: list[str], env: Mapping[str, str]) -> bytes:
    try:
        done = subprocess.run(
            command, capture_output=True, timeout=TIMEOUT, env=dict(env), check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise ClipboardError(f"{command[0]} failed: {error}") from None
    if done.returncode != 0:
        # wl-paste and osascript fail when the clipboard holds nothing of the asked type.
        raise ClipboardError("The clipboard holds no image.")
    return done.stdout
