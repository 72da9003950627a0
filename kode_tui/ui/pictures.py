"""Pictures of the images in a conversation: a data URL decoded once into a small thumbnail,
and the widget that draws it with textual-image (kitty's graphics protocol, sixel, or coloured
half blocks, which every terminal draws).

textual-image picks a protocol when its `renderable` and `widget` packages are imported, by
writing queries to the terminal and reading stdin for the answers (up to 0.1 s each when none
comes). Once Textual runs it owns stdin, and before, the queries would delay the first frame;
so the protocol is chosen here from the environment (`choose_protocol`), and textual-image's
drawing modules are loaded without their packages' start-up code (`_drawers`), when the first
picture is drawn.
"""

from __future__ import annotations

import importlib
import importlib.util
import io
import sys
import types
import warnings
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from threading import Lock
from typing import TYPE_CHECKING, Literal, NamedTuple, Protocol, runtime_checkable

from kode_tui.message import data_url_bytes

if TYPE_CHECKING:
    from PIL.Image import Image
    from textual.widget import Widget

    from kode_tui.config import PictureSetting

Drawing = Literal["kitty", "sixel", "halfblocks"]

PICTURE_ROWS = 12
"""The most rows a picture takes: a screenshot stays a thumbnail beside the text."""
PICTURE_COLUMNS = 60
THUMBNAIL_PIXELS = 640
"""The longer side of a decoded picture: enough for PICTURE_ROWS rows of 20-pixel cells, and
a 4000-pixel photo is held in memory at a fortieth of its size."""
_CACHED = 32
DEFAULT_CELL = (10, 20)
"""A cell's size in pixels when the terminal does not say (a VT340's, as textual-image)."""

_SIXEL_TERMINALS = ("iTerm.app", "WezTerm", "mlterm", "contour")
"""TERM_PROGRAM values of terminals that draw sixel (iTerm2 since 3.3): textual-image has no
iTerm2 image protocol, and sixel is the one iTerm2 and WezTerm draw with its placement."""


@runtime_checkable
class PictureHost(Protocol):
    """An app that says how pictures are drawn (`KodeApp` reads its config)."""

    @property
    def pictures(self) -> PictureSetting: ...


class PictureError(ValueError):
    """An image that cannot be drawn; the message is one line."""


class Thumbnail(NamedTuple):
    """A decoded image, scaled down, and the size of the image itself."""

    image: Image
    width: int
    height: int


def choose_protocol(setting: PictureSetting, environ: Mapping[str, str]) -> Drawing | None:
    """How pictures are drawn (None: not at all). `auto` reads the terminal from the
    environment, never by asking it: kitty and Ghostty take kitty's graphics protocol; iTerm2,
    WezTerm, foot, mlterm, contour and Konsole sixel; every other terminal, and any terminal
    inside tmux or screen (they do not pass graphics through as textual-image writes them),
    coloured half blocks."""
    if setting == "off":
        return None
    if setting != "auto":
        return setting
    if environ.get("TMUX") or environ.get("STY") or environ.get("TERM", "").startswith("screen"):
        return "halfblocks"
    term, program = environ.get("TERM", ""), environ.get("TERM_PROGRAM", "")
    if term in ("xterm-kitty", "xterm-ghostty") or "KITTY_WINDOW_ID" in environ:
        return "kitty"
    if program in _SIXEL_TERMINALS or term.startswith(("foot", "mlterm")):
        return "sixel"
    if "KONSOLE_VERSION" in environ:
        return "sixel"
    return "halfblocks"


def picture_cells(width: int, height: int, columns: int, cell: tuple[int, int]) -> tuple[int, int]:
    """The columns and rows a picture of a `width` x `height` image takes: its own size in
    cells, scaled down (never up) to fit `columns` and PICTURE_ROWS, its shape kept."""
    natural_columns, natural_rows = width / cell[0], height / cell[1]
    scale = min(1.0, columns / natural_columns, PICTURE_ROWS / natural_rows)
    return max(1, round(natural_columns * scale)), max(1, round(natural_rows * scale))


# --- decoding, off the event loop ---------------------------------------------------------------

_thumbnails: OrderedDict[str, Thumbnail | PictureError] = OrderedDict()
"""By URL: a block's factory keeps its URL string, so looking it up again hashes nothing."""
_thumbnails_lock = Lock()


def cached_thumbnail(url: str) -> Thumbnail | PictureError | None:
    """What `thumbnail` made of `url` before (its picture or why there is none); None when it
    was not decoded yet, or not lately."""
    with _thumbnails_lock:
        found = _thumbnails.get(url)
        if found is not None:
            _thumbnails.move_to_end(url)
        return found


def thumbnail(url: str) -> Thumbnail:
    """The picture of a `data:` URL, decoded and scaled down once (the newest _CACHED are kept,
    broken ones too: a block scrolled back into view draws again without decoding). Blocking:
    run it in a thread. PictureError says why an image cannot be drawn."""
    made = cached_thumbnail(url)
    if made is None:
        try:
            made = _decode(url)
        except PictureError as error:
            made = error
        with _thumbnails_lock:
            _thumbnails[url] = made
            while len(_thumbnails) > _CACHED:
                _thumbnails.popitem(last=False)
    if isinstance(made, PictureError):
        raise PictureError(str(made))  # a fresh one: a raise adds to the traceback it holds
    return made


def _decode(url: str) -> Thumbnail:
    from PIL import Image as PILImage
    from PIL import UnidentifiedImageError

    data = data_url_bytes(url)
    if data is None:
        raise PictureError("not an image held in the session (no data: URL)")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", PILImage.DecompressionBombWarning)
            opened = PILImage.open(io.BytesIO(data))
            width, height = opened.size
            opened.draft("RGB", (THUMBNAIL_PIXELS, THUMBNAIL_PIXELS))  # JPEG decodes smaller
            opened.thumbnail((THUMBNAIL_PIXELS, THUMBNAIL_PIXELS))
            image = opened.convert("RGBA" if "A" in opened.getbands() else "RGB")
    except (UnidentifiedImageError, OSError, ValueError, PILImage.DecompressionBombError) as error:
        kind = "too large" if "decompression bomb" in str(error).lower() else "not a readable image"
        raise PictureError(kind) from None
    except PILImage.DecompressionBombWarning:
        raise PictureError("too large") from None
    if width < 1 or height < 1:
        raise PictureError("an empty image")
    return Thumbnail(image, width, height)


# --- drawing: textual-image -------------------------------------------------------------------


def cell_size() -> tuple[int, int]:
    """A terminal cell's size in pixels, from the terminal's window size (no query)."""
    try:
        import fcntl
        import struct
        import termios

        for stream in (sys.__stderr__, sys.__stdout__):
            if stream is None or not stream.isatty():
                continue
            packed = fcntl.ioctl(stream.fileno(), termios.TIOCGWINSZ, b"\0" * 8)
            rows, columns, x_pixels, y_pixels = struct.unpack("HHHH", packed)
            if rows and columns and x_pixels and y_pixels:
                return x_pixels // columns, y_pixels // rows
    except (ImportError, OSError, ValueError):
        pass
    return DEFAULT_CELL


@dataclass(frozen=True)
class _Drawers:
    kitty: Callable[..., Widget]
    sixel: Callable[..., Widget]
    halfblocks: Callable[..., Widget]


@cache
def _drawers() -> _Drawers:
    """textual-image's picture widgets, one per protocol. Its `renderable` and `widget`
    packages query the terminal when imported (see the module's docstring): they are put in
    place as bare packages, so only the modules that draw are loaded; and its cached cell size
    is set, so that drawing never asks the terminal either."""
    spec = importlib.util.find_spec("textual_image")
    if spec is None or spec.origin is None:
        raise ImportError("textual-image is not installed")
    root = Path(spec.origin).parent
    for name in ("renderable", "widget"):
        full = f"textual_image.{name}"
        if full not in sys.modules:
            package = types.ModuleType(full)
            package.__path__ = [str(root / name)]
            sys.modules[full] = package
    terminal = importlib.import_module("textual_image._terminal")
    # get_cell_size caches its answer on itself; an answer there is never asked for.
    terminal.get_cell_size._result = terminal.CellSize(*cell_size())
    base = importlib.import_module("textual_image.widget._base").Image
    sixel = importlib.import_module("textual_image.widget.sixel").Image
    tgp = importlib.import_module("textual_image.renderable.tgp").Image
    halfcell = importlib.import_module("textual_image.renderable.halfcell").Image

    # What textual-image's own `widget` package does for its TGPImage and HalfcellImage.
    kitty = types.new_class("KittyPicture", (base,), {"Renderable": tgp})
    halfblocks = types.new_class("HalfblockPicture", (base,), {"Renderable": halfcell})
    return _Drawers(kitty=kitty, sixel=sixel, halfblocks=halfblocks)


def picture_widget(protocol: Drawing, made: Thumbnail, columns: int, rows: int) -> Widget:
    """A widget drawing `made` in `columns` x `rows` cells with `protocol`."""
    drawer: Callable[..., Widget] = getattr(_drawers(), protocol)
    widget = drawer(made.image, classes="picture")
    widget.styles.width = columns
    widget.styles.height = rows
    return widget
