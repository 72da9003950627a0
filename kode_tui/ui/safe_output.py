"""What the app writes outside its widgets, made safe: the title, notifications and the crash
report never carry text raw (control characters shown, API keys masked).

Mixed into `KodeApp` (app.py); here so each part reads whole.
"""

from __future__ import annotations

from rich.segment import Segment, Segments
from textual.app import App
from textual.content import Content
from textual.notifications import SeverityLevel

from kode_tui import masking
from kode_tui.safetext import visible

__all__ = ["SafeOutput"]


class SafeOutput(App[None]):
    """The title, notifications and the crash report, with their text made visible."""

    def format_title(self, title: str, sub_title: str) -> Content:
        # Session titles come from the first message, and work dirs from the file system.
        return super().format_title(
            visible(title, multiline=False), visible(sub_title, multiline=False)
        )

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Every notification, the screens' and widgets' too: its text is never markup (errors
        and file names hold `[`) and shows control characters visibly."""
        super().notify(
            visible(message),
            title=visible(title, multiline=False),
            severity=severity,
            timeout=timeout,
            markup=False,
        )

    def _print_error_renderables(self) -> None:
        # A crash report quotes exception messages and, Textual's traceback showing locals, the
        # values of variables: text from a model or a file (escape sequences) and API keys.
        # Only the report's own styling reaches the terminal; its text is made visible and
        # masked, segment by segment (a string local is one segment).
        console = self.error_console
        self._exit_renderables[:] = [
            Segments(
                segment
                if segment.control
                else Segment(visible(masking.mask(segment.text)), segment.style)
                for segment in console.render(renderable, console.options)
            )
            for renderable in self._exit_renderables
        ]
        super()._print_error_renderables()
