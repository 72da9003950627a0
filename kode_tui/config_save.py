"""Writing one top-level setting of the config file back (`/theme`, `/model`), the rest of the
file kept as the user wrote it.

This module sits at the bottom of the layers, beside `kode_tui.config`: standard library,
pydantic and tomlkit only.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from kode_tui.config import Config, ConfigError, _describe, _parse_toml
from kode_tui.fsutil import atomic_write_bytes, make_private_dir
from kode_tui.paths import Paths

if TYPE_CHECKING:
    from tomlkit import TOMLDocument

__all__ = ["save_setting"]


def save_setting(key: str, value: str, path: Path | None = None) -> None:
    """Set the top-level string setting `key` (`theme`, `default_model`, ...) to `value` in the
    config file (default `$KODE_TUI_HOME/config.toml`), keeping the rest of the file as written.

    tomlkit edits the file as a document, so comments, layout and the other keys stay as they
    were. An existing `key = ...` is replaced in place (a comment at the end of its line stays);
    otherwise the setting goes after the last top-level setting, or before the first table and
    the comments right above it. A missing file is created (0600, folder 0700). The file is
    replaced atomically, so a crash leaves the old or the new file, never a mix; a symlinked
    file (dotfiles) is written where the link points.

    Raises ValueError when `key` is not a top-level setting or `value` is not valid for it,
    ConfigError when the file is not valid TOML (it is left untouched), OSError when it cannot
    be read or written.
    """
    if key not in Config.model_fields:
        raise ValueError(f"'{key}' is not a top-level setting of the config file")
    try:
        Config.model_validate({key: value})
    except ValidationError as exc:
        raise ValueError(f"{key}: {_describe(exc.errors()[0])}") from None
    file = Path(os.path.realpath(path if path is not None else Paths.current().config_file))
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        raw = b""
    text, before = _parse_toml(file, raw)
    # Imported here: only saving needs it, and start-up reads the config with tomllib.
    import tomlkit

    document = tomlkit.parse(text)
    cannot = ConfigError(f"{file}: cannot set {key} here without rewriting the file; edit it")
    if document.as_string() != text:
        # tomlkit regroups a table split around an array of tables: the layout would change.
        raise cannot
    _set_top_level(document, key, value, "\r\n" if "\r\n" in text else "\n")
    new_text = document.as_string()
    after = tomllib.loads(new_text)
    if after.get(key) != value or {**after, key: None} != {**before, key: None}:
        raise cannot
    make_private_dir(file.parent)
    atomic_write_bytes(file, new_text.encode("utf-8"))


def _set_top_level(document: TOMLDocument, key: str, value: str, newline: str) -> None:
    import tomlkit
    from tomlkit.items import AoT, Comment, Table

    if key in document:
        document[key] = value
        return
    body = document.body
    tables = [i for i, (_, item) in enumerate(body) if isinstance(item, Table | AoT)]
    first_table = tables[0] if tables else len(body)
    settings = [i for i, (name, _) in enumerate(body[:first_table]) if name is not None]
    item = tomlkit.item(value)
    item.trivia.trail = newline
    if settings:
        at = settings[-1] + 1
    elif tables:
        at = first_table
        # The comments right above a table describe it: the setting goes above them.
        while at > 0 and isinstance(body[at - 1][1], Comment):
            at -= 1
        item.trivia.trail += newline
    else:
        document.append(key, item)
        return
    # tomlkit's public append would put the setting below the comments above the first table;
    # _insert_at is the method append itself uses, at the place chosen here.
    document._insert_at(at, key, item)
