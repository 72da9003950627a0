"""Text from a model, a tool or a file, made safe to show on a terminal.

Such text may hold escape sequences (`ESC [ 8 m` hides what follows, OSC sets the window title),
8-bit controls (U+009B is a CSI on some terminals), carriage returns and backspaces that overwrite
what was shown, bidirectional overrides that show code in another order than it runs (Trojan
Source), and invisible characters that make two different texts look alike. None of them reaches
the terminal: `visible()` shows each as a printable stand-in, so the user sees that it is there.

- ESC is `␛` (so `ESC [ 8 m` reads `␛[8m`), the other C0 controls their control pictures
  (`␇`, `␈`, `␍`, `␀`, ...), DEL `␡`;
- C1 controls, bidirectional controls, line and paragraph separators and invisible format
  characters are their code in Python's notation: `\\x9b`, `\\u202e`, `\\U000e0041`;
- a lone surrogate (a byte of a file name that is not UTF-8, decoded with `surrogateescape`) is
  the byte it stands for, `\\xe9`.

In multi-line text (the default) line feeds and tabs stay, and a carriage return right before a
line feed is dropped (CRLF files): it hides nothing. In a one-line label a line feed is `↵` and
a tab `␉`. Zero-width joiner and non-joiner stay: emoji and several scripts need them.

This module imports nothing of the project or of Textual, so every layer can use it.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from pydantic import BaseModel


# Everything shown escaped whatever the mode; one character class, so that text without any of
# them (nearly all text, streamed at hundreds of tokens a second) costs one regex search.
_ALWAYS = (
    "\x00-\x08\x0b-\x1f\x7f-\x9f"  # C0 but tab and line feed, DEL, C1
    "\u00ad"  # soft hyphen: invisible on most terminals
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # bidirectional marks and controls
    "\u115f\u1160\u3164\uffa0"  # Hangul fillers: letters that show as nothing
    "\u180e\u200b\u2060-\u206f\ufeff"  # zero-width and invisible format characters
    # The rest of Unicode's default-ignorable characters: a terminal draws them as nothing.
    "\u034f\u17b4\u17b5\u180b-\u180f\ufff0-\ufff8\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\u2028\u2029"  # line and paragraph separators: Python splits lines there, terminals do not
    "\ud800-\udfff"  # lone surrogates: not text, and they cannot be encoded
    "\ufff9-\ufffb"  # interlinear annotation
    # Tag characters ("ASCII smuggling"), variation selectors 17-256 (data hidden after an
    # emoji) and the unassigned rest of the plane's first block: all default-ignorable.
    "\U000e0000-\U000e0fff"
)
_HIDDEN = re.compile(f"[{_ALWAYS}]")
_MULTILINE = re.compile(f"\r\n|[{_ALWAYS}]")
_ONE_LINE = re.compile(f"[\n\t{_ALWAYS}]")

_SHOWN: dict[str, str] = {"\x1b": "␛", "\x7f": "␡", "\r\n": "\n"}
_SHOWN_ONE_LINE: dict[str, str] = {"\n": "↵", "\t": "␉"}


def _stand_in(character: str) -> str:
    code = ord(character)
    if code < 0x20:
        return chr(0x2400 + code)  # the control pictures block: ␀ ␁ ... ␟
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"  # the byte `surrogateescape` kept
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _replace(match: re.Match[str]) -> str:
    found = match.group()
    shown = _SHOWN.get(found)
    if shown is None:
        shown = _SHOWN[found] = _stand_in(found)
    return shown


def _replace_one_line(match: re.Match[str]) -> str:
    found = match.group()
    return _SHOWN_ONE_LINE.get(found) or _replace(match)


def visible(text: str, *, multiline: bool = True) -> str:
    """`text` with every control, escape, bidirectional or invisible character shown as a
    printable stand-in (see the module's docstring); `text` itself when it holds none.

    With `multiline=False` line breaks and tabs are shown too (`↵`, `␉`), for one-line labels.
    """
    if multiline:
        if _MULTILINE.search(text) is None:
            return text
        return _MULTILINE.sub(_replace, text)
    if _ONE_LINE.search(text) is None:
        return text
    return _ONE_LINE.sub(_replace_one_line, text)


def has_hidden(text: str) -> bool:
    """Whether `text` holds a character `visible()` replaces, line feeds and tabs aside (a
    carriage return before a line feed counts: a shell takes it as part of the command)."""
    return _HIDDEN.search(text) is not None


def json_line(value: Any) -> str:
    """`value` as one line of JSON (no line feed) whose text shows on a terminal as it is:
    non-ASCII letters stay, and every character `visible()` replaces is a `\\u` escape, which
    any JSON reader turns back into the character."""
    return visible_json(json.dumps(value, ensure_ascii=False))


def visible_json(text: str) -> str:
    """JSON `text` with every character `visible()` replaces spelt as a `\\u` escape: the same
    JSON to any reader, nothing a terminal acts on (a record written as it is, say)."""
    return _HIDDEN.sub(_json_escape, text)


def _json_escape(match: re.Match[str]) -> str:
    # json.dumps spells C0 controls itself; these are the others, valid only inside strings,
    # which is the only place they can be in a JSON text.
    return json.dumps(match.group())[1:-1]


Model = TypeVar("Model", bound="BaseModel")


def visible_model(model: Model) -> Model:
    """A copy of `model` whose strings, in nested models, lists and dicts too, are `visible()`;
    `model` itself when none needed a change. For events and messages on their way to a display:
    a field added later is covered without anyone remembering it."""
    changes: dict[str, Any] = {}
    for name in type(model).model_fields:
        value = getattr(model, name)
        shown = _visible_value(value)
        if shown is not value:
            changes[name] = shown
    return model.model_copy(update=changes) if changes else model


def _visible_value(value: Any) -> Any:
    # Imported here: the first frame of the app needs this module, not pydantic (~40 ms).
    from pydantic import BaseModel

    if isinstance(value, str):
        return visible(value)
    if isinstance(value, BaseModel):
        return visible_model(value)
    if isinstance(value, list | tuple):
        items = [_visible_value(item) for item in value]
        if all(new is old for new, old in zip(items, value, strict=True)):
            return value
        return type(value)(items)
    if isinstance(value, dict):
        pairs = [(_visible_value(k), _visible_value(v)) for k, v in value.items()]
        if all(
            k is old_k and v is old_v
            for (k, v), (old_k, old_v) in zip(pairs, value.items(), strict=True)
        ):
            return value
        return dict(pairs)
    return value
