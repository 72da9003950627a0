"""The palette's "Save screenshot": an SVG in kode-tui's home, and a notice saying where.

Textual's own action writes to the Downloads folder, which a server or a container may not
have, and says nothing where it wrote; the work dir is not a place to drop files either.
"""

from __future__ import annotations

import time
from pathlib import Path

from textual.app import App

from kode_tui.fsutil import atomic_write_bytes, make_private_dir
from kode_tui.paths import Paths, tilde

__all__ = ["Screenshots"]


class Screenshots(App[None]):
    """Mixed into the app: the palette's Screenshot command and the screenshot action (both
    call `deliver_screenshot`) save into `Paths.screenshots_dir`."""

    def deliver_screenshot(
        self, filename: str | None = None, path: str | None = None, time_format: str | None = None
    ) -> str | None:
        """Save an SVG of the screen; None (nothing is delivered to a browser)."""
        folder = Path(path) if path else Paths.current().screenshots_dir
        target = folder / (filename or time.strftime("kode-tui-%Y-%m-%d-%H%M%S.svg"))
        try:
            make_private_dir(folder)
            atomic_write_bytes(target, self.export_screenshot().encode())
        except OSError as error:
            reason = error.strerror or type(error).__name__
            self.notify(
                f"Could not save the screenshot in {tilde(folder)}: {reason}", severity="error"
            )
            return None
        self.notify(f"Screenshot saved to {tilde(target)}", timeout=6)
        return None
