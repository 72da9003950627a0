"""Masking the values of API keys in everything kode-tui sends or writes (DESIGN.md §13).

The secrets are the values of the credential variables kode-tui knows: every `*_API_KEY`,
`*_TOKEN`, `*_SECRET` and `*_SECRET_KEY` in the environment (the providers' keys,
ANTHROPIC_AUTH_TOKEN, GOOGLE_API_KEY, the tokens litellm reads for other providers),
the cloud credentials litellm reads (`CREDENTIAL_VARS`), each configured model's `api_key_env`
(`watch_env`) and values handed to `register`. Values shorter than `MIN_LENGTH` are ignored:
masking `true` or a port number everywhere would mangle ordinary text.

A value is replaced by a marker naming its variable, `[masked: OPENAI_API_KEY]`, both as it is
and as a JSON string spells it (`"` and `\\` escaped, non-ASCII escaped or not), so a JSON line
that quotes it loses it too. The session writers (context.jsonl, wire.jsonl, state.json,
rotations.jsonl, kode.json, each MCP server's stderr log), the log handler and the soul (every
request) call this module; the blob store, which keeps file images for revert, does not.

The set of secrets is taken from the environment on first use and again at each `refresh()`
(an agent opening, each turn and request): reading the environment costs microseconds, so it is
not done on every write, and a write with no secret in it costs one substring search per form of
each value.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

MIN_LENGTH = 8
KEY_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET", "_SECRET_KEY")
"""Variables named so hold credentials: OPENAI_API_KEY, ANTHROPIC_AUTH_TOKEN, GOOGLE_API_KEY,
and those litellm reads for other providers (HF_TOKEN, GITHUB_TOKEN, DATABRICKS_TOKEN,
AZURE_CLIENT_SECRET...) when a model names no `api_key_env`. Not `*_PASSWORD`: a development
setup's `POSTGRES_PASSWORD=postgres` would mask a common word everywhere."""
CREDENTIAL_VARS = (
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
    "AZURE_AD_TOKEN",
)
"""Other credential variables litellm reads (Bedrock, Azure): named otherwise."""

_MARKER = re.compile(r"\[masked: ([A-Za-z_][A-Za-z0-9_]*)\]")

T = TypeVar("T")


def marker(name: str) -> str:
    """What a value of variable `name` is replaced by."""
    return f"[masked: {name}]"


@dataclass(frozen=True, slots=True)
class _Table:
    """The secrets of one refresh, in the forms they are searched in."""

    values: Mapping[str, str]
    """Variable name -> value."""
    text_needles: tuple[str, ...]
    """Each form of each value, longest first."""
    byte_needles: tuple[bytes, ...]
    json_needles: tuple[bytes, ...]
    """Each form as a JSON line spells it: once (a string) or twice (JSON in a string, a tool
    call's arguments) escaped."""
    replace_text: Callable[[str], str]
    """Replaces every needle found by its marker."""
    replace_bytes: Callable[[bytes], bytes]


def _forms(value: str) -> list[str]:
    """`value` as it is and as JSON strings spell it (escaped, ASCII-escaped)."""
    return list(
        dict.fromkeys([value, json.dumps(value, ensure_ascii=False)[1:-1], json.dumps(value)[1:-1]])
    )


def _build(values: Mapping[str, str]) -> _Table:
    text_names: dict[str, str] = {}
    for name, value in values.items():
        for form in _forms(value):
            text_names.setdefault(form, marker(name))
    # Longest first, so a key that contains another is replaced whole.
    needles = sorted(text_names, key=len, reverse=True)
    byte_names = {form.encode(): text_names[form].encode() for form in needles}
    text_pattern = re.compile("|".join(map(re.escape, needles)))
    byte_pattern = re.compile(b"|".join(map(re.escape, byte_names)))
    in_json = {twice.encode() for form in needles for twice in _forms(form)}
    return _Table(
        values=dict(values),
        text_needles=tuple(needles),
        byte_needles=tuple(byte_names),
        json_needles=tuple(in_json),
        replace_text=partial(text_pattern.sub, lambda found: text_names[found.group()]),
        replace_bytes=partial(byte_pattern.sub, lambda found: byte_names[found.group()]),
    )


class _Secrets:
    """The process's secrets; one instance, reached through the module functions."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watched: set[str] = set(CREDENTIAL_VARS)
        self._registered: dict[str, str] = {}
        self._table: _Table | None = None

    def table(self) -> _Table:
        table = self._table
        return table if table is not None else self.refresh()

    def refresh(self) -> _Table:
        env = os.environ
        with self._lock:
            names = self._watched | {name for name in env if name.endswith(KEY_SUFFIXES)}
            # A value held by two variables is shown under the first name (see `_build`).
            values = {name: env.get(name, "") for name in sorted(names)}
            values = {name: value for name, value in values.items() if len(value) >= MIN_LENGTH}
            for name, value in self._registered.items():
                values.setdefault(name, value)
            if self._table is None or self._table.values != values:
                self._table = _build(values)  # a new table: the cache of `mask_each` is void
            return self._table

    def watch(self, names: Iterable[str]) -> None:
        with self._lock:
            self._watched.update(name for name in names if name)
        self.refresh()

    def register(self, name: str, value: str) -> None:
        if len(value) < MIN_LENGTH:
            return
        with self._lock:
            self._registered[name] = value
        self.refresh()

    def forget(self, name: str) -> None:
        with self._lock:
            self._registered.pop(name, None)
            self._watched.discard(name)
        self.refresh()


_SECRETS = _Secrets()


def watch_env(names: Iterable[str]) -> None:
    """Treat the values of environment variables `names` as secrets too (a model's
    `api_key_env`), from now on."""
    _SECRETS.watch(names)


def register(name: str, value: str) -> None:
    """Treat `value` as a secret, shown as `[masked: name]` (ignored when too short)."""
    _SECRETS.register(name, value)


def forget(name: str) -> None:
    """Undo `register(name, ...)` and `watch_env([name])`."""
    _SECRETS.forget(name)


def refresh() -> None:
    """Read the credential variables of the environment again (it may have changed)."""
    _SECRETS.refresh()


def names() -> list[str]:
    """The names of the variables whose values are masked now."""
    return list(_SECRETS.table().values)


def mask(text: str) -> str:
    """`text` with every secret replaced by its marker; `text` itself when it holds none."""
    return _mask_text(text, _SECRETS.table())


def mask_head(text: str) -> str:
    """`text`, the start of something longer that is not kept, with every secret masked and
    without the start of a secret it may end with (the rest of that secret was cut off)."""
    table = _SECRETS.table()
    masked = _mask_text(text, table)
    cut = 0
    for needle in table.text_needles:
        for length in range(min(len(needle) - 1, len(masked)), cut, -1):
            if masked.endswith(needle[:length]):
                cut = length
                break
    return masked[: len(masked) - cut]


def mask_bytes(data: bytes) -> bytes:
    """`data` (UTF-8 lines, JSON lines above all) with every secret replaced by its marker.

    A line that is JSON is masked inside the strings it holds and written again, so it stays
    the JSON it was: replacing bytes could stop inside an escape (a key ending with `\\`, met
    before a `"`) and leave a line no reader can parse, a record lost. Other lines are masked
    as text."""
    table = _SECRETS.table()
    if not any(needle in data for needle in table.json_needles):
        return data
    return b"\n".join(
        _mask_line(line, table) if any(needle in line for needle in table.json_needles) else line
        for line in data.split(b"\n")
    )


def _mask_line(line: bytes, table: _Table) -> bytes:
    try:
        value = json.loads(line)
    except ValueError:  # not JSON (nor UTF-8): the secret's forms as text
        return table.replace_bytes(line)
    masked = _mask_json(value, table)
    try:
        return json.dumps(masked, ensure_ascii=False).encode()
    except UnicodeEncodeError:  # a lone surrogate the line held escaped: escaped it stays
        return json.dumps(masked).encode()


def mask_json(value: Any) -> Any:
    """`value`, what `json.loads` gives (dicts, lists, strings...), with every secret masked in
    its strings, the keys of its dicts too: masked before it is encoded, it encodes to valid
    JSON (state.json, kode.json)."""
    return _mask_json(value, _SECRETS.table())


def _mask_json(value: Any, table: _Table) -> Any:
    if isinstance(value, str):
        return _mask_text(value, table)
    if isinstance(value, list | tuple):
        return [_mask_json(item, table) for item in value]
    if isinstance(value, dict):
        return {_mask_json(k, table): _mask_json(v, table) for k, v in value.items()}
    return value


def _mask_text(text: str, table: _Table) -> str:
    # One substring search per form of each value: the common case, nothing found, stays cheap.
    for needle in table.text_needles:
        if needle in text:
            return table.replace_text(text)
    return text


def mask_value(value: T) -> T:
    """`value` (a string, or pydantic models, lists, dicts and tuples holding strings) with every
    secret masked; the objects that hold none are returned as they are, not copied."""
    table = _SECRETS.table()
    if not table.values:
        return value
    masked: T = _mask_any(value, table)
    return masked


def mask_each(items: Iterable[T]) -> list[T]:
    """`mask_value` of each item. The results of the last call are remembered by identity: a
    history sent again with a few more messages costs a lookup per old message, not a walk
    through it (the soul never changes a message in place, it copies)."""
    global _last_each
    table = _SECRETS.table()
    if not table.values:
        return list(items)
    last_table, last = _last_each
    known = last if last_table is table else {}
    seen: dict[int, tuple[Any, Any]] = {}
    masked: list[T] = []
    for item in items:
        hit = known.get(id(item))
        result = hit[1] if hit is not None and hit[0] is item else _mask_any(item, table)
        seen[id(item)] = (item, result)
        masked.append(result)
    _last_each = (table, seen)  # only the latest call's items: nothing outlives its history
    return masked


_last_each: tuple[_Table | None, dict[int, tuple[Any, Any]]] = (None, {})


def _mask_any(value: Any, table: _Table) -> Any:
    kind = _KINDS.get(value.__class__)
    if kind is None:
        kind = _KINDS[value.__class__] = _kind(value.__class__)
    if kind == _TEXT:
        return _mask_text(value, table)
    if kind == _MODEL:
        update: dict[str, Any] | None = None
        fields = value.__dict__.items()
        if value.__pydantic_extra__:  # an unknown part keeps what it was given
            fields = [*fields, *value.__pydantic_extra__.items()]
        for name, item in fields:
            masked = _mask_any(item, table)
            if masked is not item:
                update = update or {}
                update[name] = masked
        return value if update is None else value.model_copy(update=update)
    if kind == _SEQUENCE:
        items = [_mask_any(item, table) for item in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return items if isinstance(value, list) else tuple(items)
    if kind == _MAPPING:
        pairs = {key: _mask_any(item, table) for key, item in value.items()}
        if all(pairs[key] is item for key, item in value.items()):
            return value
        return pairs
    return value


_TEXT, _MODEL, _SEQUENCE, _MAPPING, _OTHER = range(5)
_KINDS: dict[type, int] = {}
"""Each class met, classified once: `isinstance(x, BaseModel)` is slow (an ABC check) and a long
history is walked through one object at a time."""


def _kind(cls: type) -> int:
    # Imported here: the first frame of the app needs this module, not pydantic (~40 ms).
    from pydantic import BaseModel

    if issubclass(cls, str):
        return _TEXT
    if issubclass(cls, BaseModel):
        return _MODEL
    if issubclass(cls, list | tuple):
        return _SEQUENCE
    if issubclass(cls, dict):
        return _MAPPING
    return _OTHER


class MaskingFormatter(logging.Formatter):
    """A formatter whose lines (message, arguments, traceback) have every secret masked."""

    def format(self, record: logging.LogRecord) -> str:
        return mask(super().format(record))


def unmask_json(text: str, *, only_in: str) -> str:
    """`text`, JSON (a tool call's arguments), with each marker of a secret that `only_in` holds
    replaced by that secret spelled as a JSON string: a file writer puts back the key a model
    only saw masked where the file already has it (rewriting a `.env`, say)."""
    if "[masked: " not in text:
        return text
    values = _SECRETS.table().values

    def value(found: re.Match[str]) -> str:
        secret = values.get(found.group(1))
        if secret is None or secret not in only_in:
            return found.group()
        return json.dumps(secret, ensure_ascii=False)[1:-1]

    return _MARKER.sub(value, text)
