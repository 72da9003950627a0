"""How kode-tui reads the files a project ships (README, AGENTS.md, style configs, commands).

A hostile repository chooses these files: each is read only when it is a regular file, only its
head, never blocking, and never through a symlink that leads out of its folder. Their data is
parsed here, once for every reader, so a file that cannot be read as data gives one reason
(`DataError`) whatever went wrong: bad syntax, nesting deep enough to exhaust Python's stack,
YAML aliases that repeat a node without repeating its text, bytes that are not UTF-8.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from kode_tui.fsutil import read_regular
from kode_tui.pathnames import is_within

READ_MAX_BYTES = 1 << 20
"""Of a project file (README, AGENTS.md, package.json, ...), only this much is read: a 2 GB
sparse README must not cost gigabytes and seconds at every start."""
MAX_DEPTH = 64
"""Nesting a config's data may have: real ones stay under ten levels."""


_LONG_NUMBER = "holds a number too long to read"


def scalar_text(value: object) -> str | None:
    """The text of a string, number or flag read from a file; None for anything else (a list,
    a map) and for an int too long to write out (Python refuses past 4,300 digits)."""
    if not isinstance(value, str | int | float | bool):
        return None
    try:
        return str(value)
    except ValueError:
        return None


class DataError(ValueError):
    """Why a file's data is not read, as the end of a sentence naming it
    (`is not valid JSON (line 2)`)."""

    def __init__(self, why: str, *, syntax: bool = False) -> None:
        super().__init__(why)
        self.syntax = syntax
        """The text was not read as data at all (bad syntax, or no parser for it), so a simpler
        reading may still apply; False for data refused as too deep or too repetitive."""


def read_text(path: Path) -> str | None:
    """The text of a file in the work dir or in one of its parents (docs), else None.

    A symlink is read only when its target lies in the folder that holds the link: a hostile
    repo's README.md linked to `~/.ssh/id_rsa` must not land in the system prompt.
    """
    if not is_within(path, path.parent):
        return None
    data = read_regular(path, READ_MAX_BYTES)
    return None if data is None else data.decode("utf-8", errors="replace")


def read_data_text(path: Path) -> str | None:
    """The text of a data file (a config) as `read_text` finds it, whole: None when there is
    no such file; DataError when it is one but too large, or not UTF-8, to parse."""
    if not is_within(path, path.parent):
        raise DataError("leads outside its folder")
    data = read_regular(path, READ_MAX_BYTES + 1)
    if data is None:
        return None
    if len(data) > READ_MAX_BYTES:
        raise DataError(f"is over {READ_MAX_BYTES >> 20} MiB")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise DataError("is not UTF-8 text") from None


def parse_json(text: str) -> Any:
    """The JSON value `text` holds; DataError saying why there is none."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise DataError(f"is not valid JSON (line {error.lineno})", syntax=True) from None
    except ValueError:  # Python's cap on the digits of an int
        raise DataError(_LONG_NUMBER) from None
    except RecursionError:
        raise DataError("is nested too deeply to read") from None


def parse_toml(text: str) -> dict[str, Any]:
    """The TOML table `text` holds; DataError saying why there is none."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise DataError(f"is not valid TOML ({error})", syntax=True) from None
    except ValueError:
        raise DataError(_LONG_NUMBER) from None
    except RecursionError:  # tomllib parses nested arrays and inline tables recursively
        raise DataError("is nested too deeply to read") from None


def parse_yaml(text: str, *, first_line: int = 1) -> Any:
    """The YAML value `text` holds (its first line is the file's `first_line`); DataError
    saying why there is none.

    Only libyaml reads it: PyYAML's pure-Python parser recurses once per level of nesting and
    spends seconds on each kilobyte of nested brackets, while libyaml caps the nesting. Its
    events are checked before anything is built: aliases are refused (a few lines of them
    print as gigabytes), and so is nesting deeper than `MAX_DEPTH`.
    """
    import yaml  # here: only a project with YAML to read pays the 20 ms this import takes

    loader = getattr(yaml, "CSafeLoader", None)
    if loader is None:
        raise DataError(
            "is YAML, which is read only with PyYAML's libyaml (not installed)", syntax=True
        )
    try:
        depth = 0
        for event in yaml.parse(text, loader):
            if isinstance(event, yaml.AliasEvent):
                raise DataError("uses YAML aliases")
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    raise DataError(f"is nested deeper than {MAX_DEPTH} levels")
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
        return yaml.load(text, loader)
    except DataError:
        raise
    except yaml.MarkedYAMLError as error:
        if "nesting depth" in str(error.problem):  # libyaml's own cap, met while scanning
            raise DataError(f"is nested deeper than {MAX_DEPTH} levels") from None
        mark = error.problem_mark
        where = f" (line {mark.line + first_line})" if mark is not None else ""
        raise DataError(f"is not valid YAML{where}", syntax=True) from None
    except yaml.YAMLError:
        raise DataError("is not valid YAML", syntax=True) from None
    except ValueError:
        raise DataError(_LONG_NUMBER) from None
    except (RecursionError, MemoryError):
        raise DataError("is nested too deeply to read") from None
