"""The images attached to the prompt being written: a row of chips just above it, one a line
(`[image 1 · shot.png · 1280x720 · 84 KiB] ✕`), and the ways images come in: a pasted (dropped)
file path, the clipboard (Ctrl+V), an `@` mention. Files are looked up and decoded off the UI
thread; what goes wrong is one line.

The prompt owns the row (`PromptInput.image_chips`) and sends its images with the text. The
domain (`soul.attachments`, through the facade) reads and scales the images; it loads after the
first frame, so it is imported here when an image comes, not with the prompt.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import events, work
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.reactive import reactive
from textual.widgets import Static

from kode_tui.safetext import visible

if TYPE_CHECKING:
    from kode_tui.soul.facade import CommandPrompt, ImageAttachment

Images = tuple["ImageAttachment", ...]
"""The images of one prompt, in the order they were attached."""

MAX_PATHS_PASTE = 64 * 1024
"""A paste longer than this is text, never files (`pasted_paths` looks no further)."""


def names_image(name: str) -> bool:
    """Whether a file name ends as an image's does (`shot.PNG`)."""
    from kode_tui.soul.facade import IMAGE_SUFFIXES

    return Path(name).suffix.lower() in IMAGE_SUFFIXES


def may_name_images(pasted: str) -> bool:
    """Whether a paste may be image files' paths (a drop), so it is worth looking them up;
    any other paste goes in as text at once."""
    from kode_tui.soul.facade import IMAGE_SUFFIXES

    lowered = pasted.lower()
    return len(pasted) < MAX_PATHS_PASTE and any(suffix in lowered for suffix in IMAGE_SUFFIXES)


def may_mention_images(text: str) -> bool:
    """Whether a prompt's text may `@` mention an image file (then it is looked up on send)."""
    return "@" in text and may_name_images(text)


def queued_line(text: str | CommandPrompt, images: Images) -> str:
    """A queued message as its row shows it: what was typed, and how many images go with it."""
    typed = text if isinstance(text, str) else text.typed
    if not images:
        return typed
    return f"{typed} [+{len(images)} image{'s' if len(images) > 1 else ''}]"


def _one_line(error: OSError, path: Path) -> str:
    return f"{visible(path.name, multiline=False)} could not be read: {error.strerror or error}."


class _Remove(Static):
    """The ✕ that takes its chip off."""

    def __init__(self, index: int) -> None:
        super().__init__("✕", classes="remove")
        self.tooltip = "Remove this image"
        self.index = index

    def on_click(self, event: events.Click) -> None:
        event.stop()
        for row in self.ancestors:
            if isinstance(row, ImageChips):
                row.remove_image(self.index)


class ImageChips(VerticalScroll, can_focus=False):
    """The chips of the images attached to the prompt; hidden while there are none. Numbered
    from 1 in order, so a removal renumbers the rest."""

    DEFAULT_CSS: ClassVar[str] = """
    ImageChips {
        display: none;
        height: auto;
        max-height: 4;
        padding: 0 1;
        scrollbar-size-vertical: 1;
        &.-shown { display: block; }
        Horizontal { height: 1; width: auto; }
        Static { width: auto; }
        .chip { color: $text-accent; }
        .remove {
            color: $text-muted;
            padding: 0 1;
            &:hover { color: $error; text-style: bold; }
        }
    }
    """

    images: reactive[Images] = reactive((), recompose=True)
    """The images attached, in order."""

    def __init__(self) -> None:
        super().__init__()
        self._in_order = asyncio.Lock()
        """Held while images are attached: two drops in a row keep their order."""

    def compose(self) -> ComposeResult:
        for index, image in enumerate(self.images):
            with Horizontal():
                # A file name is the user's, but may hold markup or escape codes: plain text,
                # shown visibly.
                chip = visible(image.chip(index + 1), multiline=False)
                yield Static(Content(chip), classes="chip")
                yield _Remove(index)

    def watch_images(self, images: Images) -> None:
        self.set_class(bool(images), "-shown")
        # Past four chips the row scrolls: the one just attached stays in sight.
        self.call_after_refresh(self.scroll_end, animate=False)

    @property
    def chips(self) -> list[str]:
        """The chips as shown, in order."""
        return [image.chip(number) for number, image in enumerate(self.images, start=1)]

    def add(self, images: Sequence[ImageAttachment]) -> None:
        """Attach `images` after those there (a file attached already is not attached again)."""
        self.images = _once((*self.images, *images))

    def put_back(self, images: Images) -> None:
        """Attach `images` again, before those attached since (a prompt that did not go)."""
        self.images = _once((*images, *self.images))

    def remove_image(self, index: int) -> None:
        """Take the image at `index` (from 0) off."""
        if 0 <= index < len(self.images):
            self.images = self.images[:index] + self.images[index + 1 :]

    @property
    def attaching(self) -> bool:
        """Whether an image is being read (a drop, Ctrl+V): a send waits for it."""
        return self._in_order.locked()

    def take(self) -> Images:
        """The images attached, the row left empty (they are being sent)."""
        images, self.images = self.images, ()
        return images

    async def attach_files(self, paths: Sequence[Path]) -> str | None:
        """Attach the images at `paths` (all or none); why not, in one line, or None."""
        async with self._in_order:
            return await self._attach_now(paths)

    async def _attach_now(self, paths: Sequence[Path]) -> str | None:
        from kode_tui.soul.facade import ImageError, attach_image

        attached = []
        for path in paths:
            try:
                attached.append(await attach_image(path))
            except ImageError as error:
                return visible(str(error), multiline=False)
            except OSError as error:
                return _one_line(error, path)
        self.add(attached)
        return None

    @work(group="image-chips", exit_on_error=False)
    async def attach_later(self, paths: Sequence[Path]) -> None:
        """Attach the images at `paths` in the background; one line says why not."""
        failure = await self.attach_files(paths)
        if failure is not None:
            self.notify(failure, severity="warning")

    async def attach_pasted(self, text: str, work_dir: Path) -> bool:
        """Attach the images a paste names when it is nothing but image files' paths (as a
        terminal pastes files dropped on it); False, attaching nothing, for anything else."""
        from kode_tui.soul.facade import pasted_paths

        async with self._in_order:
            paths = await asyncio.to_thread(pasted_paths, text, work_dir)
            return bool(paths) and await self._attach_now(paths or []) is None

    async def paste_clipboard(self) -> str | None:
        """Attach the clipboard's image; why there is none, in one line, or None."""
        from kode_tui.ui.clipboard import ClipboardError, paste_image

        async with self._in_order:
            try:
                path = await asyncio.to_thread(paste_image)
            except ClipboardError as error:
                return str(error)
            except OSError as error:  # the attachments folder could not be written
                return f"The clipboard's image could not be kept: {error.strerror or error}."
            return await self._attach_now([path])

    async def attach_mentions(self, text: str, work_dir: Path, images: Images) -> str | None:
        """Attach `images` again, then the work dir's image files that `@` mentions in `text`
        name; why the prompt cannot go as it is, in one line, or None. A mention of an image
        outside the work dir is refused: `@` completes the work dir's files, and ReadMediaFile
        asks before it reads elsewhere (a dropped or pasted file is attached from anywhere)."""
        from kode_tui.soul.facade import mentioned_images

        async with self._in_order:
            self.put_back(images)
            mentions = await asyncio.to_thread(mentioned_images, text, work_dir)
            if mentions.outside:
                shown = visible(mentions.outside[0], multiline=False)
                return (
                    f"@{shown} is outside the work dir: not attached (paste or drop the file "
                    "to attach it, or take the @ off)."
                )
            return await self._attach_now(mentions.inside)


def _once(images: Sequence[ImageAttachment]) -> Images:
    """`images` with each file once, in order."""
    seen: set[Path] = set()
    kept = []
    for image in images:
        if image.path not in seen:
            seen.add(image.path)
            kept.append(image)
    return tuple(kept)
