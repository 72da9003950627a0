"""Markdown files with YAML front matter that a repo or the user supplies: agent definitions
(`subagents/definitions.py`), skills (`skills.py`) and custom commands (`custom_commands.py`)
search their folders (`SourceFolder`) and read them the same way.

Nothing in such a file is trusted: `read_confined` refuses one whose real path (symlinks
resolved) lies outside the folder it belongs to, that is not a regular file, is over its size
cap or is not UTF-8; `front_matter` refuses front matter that is not plain data (bad YAML,
nesting, aliases: `project_files.parse_yaml`). Each refusal is the end of a sentence naming the
file, so a listing reports one line per bad file and lists the others as usual.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from kode_tui.fsutil import read_regular
from kode_tui.pathnames import is_within
from kode_tui.paths import tilde
from kode_tui.safetext import visible
from kode_tui.soul.project_files import DataError, parse_yaml, scalar_text

__all__ = [
    "NotRead",
    "SourceFolder",
    "front_matter",
    "one_line",
    "read_confined",
    "text_field",
]

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*(?:\r?\n|\Z)", re.DOTALL | re.MULTILINE)


S = TypeVar("S", bound=str)


@dataclass(frozen=True)  # no slots: a frozen slotted generic dataclass cannot be made by alias
class SourceFolder(Generic[S]):
    """A folder files of one source are searched in, and what their real paths must lie in."""

    path: Path
    source: S
    confine: Path
    """The real path of a file found here must lie in this."""
    confine_shown: str

    def shown(self, path: Path, work_dir: Path) -> str:
        """`path` as a listing names it: from the work dir when it lies in it (a repo's
        folders), else from the home folder (the user's)."""
        if self.confine == work_dir:
            return visible(str(path.relative_to(work_dir)), multiline=False)
        return visible(tilde(path), multiline=False)


class NotRead(ValueError):
    """Why a file is refused, as the end of a sentence naming it (`is not UTF-8 text`)."""


def read_confined(path: Path, confine: Path, confine_shown: str, max_bytes: int) -> str:
    """The text of `path`, which must really lie in `confine` (`confine_shown` names it for
    people); NotRead saying why it is not read."""
    if not is_within(path, confine):
        raise NotRead(f"leads outside {confine_shown}")
    data = read_regular(path, max_bytes + 1)
    if data is None:
        raise NotRead("is not a readable regular file")
    if len(data) > max_bytes:
        raise NotRead(f"is over {max_bytes // 1024} KiB")
    try:
        return data.decode("utf-8-sig")  # an editor's byte order mark hides no front matter
    except UnicodeDecodeError:
        raise NotRead("is not UTF-8 text") from None


def front_matter(text: str) -> tuple[dict[str, Any], str]:
    """The front matter's data (empty when there is none) and the body after it; NotRead
    saying what is wrong with the front matter."""
    match = _FRONT_MATTER.match(text)
    if match is None:
        return {}, text
    try:
        loaded: Any = parse_yaml(match.group(1), first_line=2)
    except DataError as error:
        raise NotRead(f"has front matter that {error}") from None
    if loaded is None:
        loaded = {}
    if not isinstance(loaded, dict):
        raise NotRead("has front matter that is not `key: value` lines")
    return loaded, text[match.end() :]


def text_field(fields: dict[str, Any], key: str) -> str | None:
    """The field `key` as text, stripped (None when absent); NotRead when it is not text."""
    value = fields.get(key)
    if value is None:
        return None
    text = scalar_text(value)  # not str(): YAML makes small files into big structures
    if text is None:
        raise NotRead(f"has a `{key}:` that is not text")
    return text.strip()


def one_line(text: str, chars: int) -> str:
    """`text` as one line of at most `chars` characters, safe to show."""
    text = " ".join(text.split())
    if len(text) > chars:
        text = text[: chars - 1] + "…"
    return visible(text, multiline=False)
