"""Text whose rows keep a gutter: a diff's line numbers, a field's name, stay in their column
while the rest of a long line wraps (or is cut) beside them.

Textual wraps a widget's `Content` at the widget's width, from the left edge: a wrapped diff
line would start under its line numbers. `Rows` is a Textual `Visual` that lays its rows out at
the width it is given (for its height and for drawing alike), so a block or a screen returns
it from `render()` and wraps as the terminal resizes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from textual.content import Content
from textual.css.styles import RulesMap
from textual.strip import Strip
from textual.style import Style
from textual.visual import RenderOptions, Visual


@dataclass(frozen=True, slots=True)
class Gutter:
    """A row in two columns: `gutter` (drawn on the first row only) and `body`, which folds
    onto more rows, each starting under the first (or, `clip`, is cut to one row with `…`);
    the rows it folds onto start with `rest` (blanks as wide as the gutter by default)."""

    gutter: Content
    body: Content
    clip: bool = False
    rest: Content | None = None


Row = Content | Gutter
"""A plain line (it wraps from the left edge, as Textual wraps text) or a two-column row."""


def lay_out(rows: Sequence[Row], width: int) -> list[Content]:
    """The rows as lines at most `width` cells wide (a plain line is left for Textual to wrap);
    continuation rows of a gutter row get a blank gutter."""
    lines: list[Content] = []
    for row in rows:
        if isinstance(row, Content):
            lines.append(row)
            continue
        room = width - row.gutter.cell_length
        if room < 4:  # too narrow for two columns: one line, wrapped as text
            lines.append(row.gutter + row.body)
        elif row.clip:
            lines.append(row.gutter + row.body.truncate(room, ellipsis=True))
        else:
            pieces = row.body.fold(room) or [Content("")]
            blank = row.rest if row.rest is not None else Content(" " * row.gutter.cell_length)
            lines.append(row.gutter + pieces[0])
            lines += [blank + piece for piece in pieces[1:]]
    return lines


class Rows(Visual):
    """Rows laid out at the width they are drawn at (see `lay_out`); the layout of the last
    width is kept, as Textual asks for the height and then draws at the same width."""

    def __init__(self, rows: Sequence[Row]) -> None:
        self.rows = list(rows)
        self._laid: tuple[int, Content] | None = None

    def __str__(self) -> str:
        return "\n".join(
            row.plain if isinstance(row, Content) else row.gutter.plain + row.body.plain
            for row in self.rows
        )

    def content(self, width: int) -> Content:
        """The rows as one `Content` laid out for `width` cells."""
        if self._laid is None or self._laid[0] != width:
            self._laid = (width, Content("\n").join(lay_out(self.rows, width)))
        return self._laid[1]

    def render_strips(
        self, width: int, height: int | None, style: Style, options: RenderOptions
    ) -> list[Strip]:
        return self.content(width).render_strips(width, height, style, options)

    def get_optimal_width(self, rules: RulesMap, container_width: int) -> int:
        return max(
            (
                row.cell_length
                if isinstance(row, Content)
                else row.gutter.cell_length + row.body.cell_length
                for row in self.rows
            ),
            default=0,
        )

    def get_height(self, rules: RulesMap, width: int) -> int:
        return self.content(width).get_height(rules, width)
