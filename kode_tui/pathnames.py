"""File names as text, and the one confinement rule: is a path, symlinks resolved, inside a root.

On POSIX a file name is bytes. Python decodes the bytes that are not UTF-8 as lone surrogates
(`surrogateescape`), which no JSON encoder, terminal or model accepts. Every name kode-tui shows
or sends goes through `escape_name`, and every path a model or user sends back goes through
`unescape_name`, so the same file is named the same way in both directions:

* a byte that is not part of valid UTF-8 is written `\\xHH` (`caf\\xe9.txt`);
* a control character (U+0001-U+001F, U+007F: a line feed, ESC, a tab) is written `\\xHH`
  too, so a name never breaks a listing into forged lines nor reaches a terminal raw;
* a real backslash that is followed by `x` and two hex digits is written `\\x5c`, so the
  name `caf\\xe9.txt` (with a real backslash) reads `caf\\x5cxe9.txt` and never collides;
* every other character, backslashes included, is left as it is.

`unescape_name` turns `\\x5c` back into a backslash, `\\x01`…`\\x1f` and `\\x7f` back into
those control characters and `\\x80`…`\\xff` back into raw bytes;
any other `\\x..` stays as typed. The two are inverse: `unescape_name(escape_name(n)) == n`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_NEEDS_ESCAPE = re.compile(r"[\ud800-\udfff\x01-\x1f\x7f]|\\(?=x[0-9a-fA-F]{2})")
_PLAIN = re.compile(r"[^\\\ud800-\udfff\x01-\x1f\x7f]*")
_ESCAPED = re.compile(r"\\x([0-9a-fA-F]{2})")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _escape_one(match: re.Match[str]) -> str:
    char = match.group()
    if char == "\\":
        return "\\x5c"
    code = ord(char)
    if code < 0x20 or code == 0x7F:
        return f"\\x{code:02x}"
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"
    return "\ufffd"  # a surrogate no file name can hold (it came from elsewhere)


def escape_name(name: str | bytes) -> str:
    """`name` (a path or a file name, as bytes or as `os.fsdecode` gives it) as valid text."""
    if isinstance(name, bytes):
        name = name.decode("utf-8", "surrogateescape")
    if _PLAIN.fullmatch(name):
        return name
    return _NEEDS_ESCAPE.sub(_escape_one, name)


def _unescape_one(match: re.Match[str]) -> str:
    code = int(match.group(1), 16)
    if code == 0x5C:
        return "\\"
    if code >= 0x80:
        return chr(0xDC00 + code)
    if code >= 0x01 and (code < 0x20 or code == 0x7F):
        return chr(code)
    return match.group()  # `\\x00` (no name holds a NUL) and printable ASCII stay as typed


def unescape_name(text: str) -> str:
    """The real name (with `surrogateescape` characters) of a name `escape_name` wrote."""
    if "\\x" not in text:
        return text
    raw = _ESCAPED.sub(_unescape_one, text)
    try:
        # `\xc3\xa9` is the same file as `é`: give it the one spelling Python uses for it.
        return os.fsdecode(os.fsencode(raw))
    except UnicodeError:
        return raw


def scrub_text(text: str) -> str:
    """`text` with every lone surrogate made visible (`\\xHH`, or U+FFFD): safe to encode.

    The last guard before text leaves the process (requests, tool results): names should have
    been escaped already, but a surrogate that slipped through must not break a request.
    """
    # `isascii` is a flag CPython keeps: most text (code, tool output) skips the scan.
    if text.isascii() or not _SURROGATE.search(text):
        return text
    return _SURROGATE.sub(_escape_one, text)


def is_within(path: Path, root: Path) -> bool:
    """Whether `path`, with every symlink resolved, lies in `root` (also resolved).

    The confinement rule for every read kode-tui makes by itself or for the model: a path that
    cannot be resolved (a symlink loop, an invalid name) counts as outside.
    """
    try:
        return path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError, ValueError):
        return False


class InsideChecker:
    """`is_within(path, root)` for many paths of one tree, at about one `lstat` per path.

    The real location of each directory is worked out once, from its parent's, so listings
    (git's, a walk's) of thousands of names need not resolve every component of every one.
    """

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self._real: dict[Path, Path | None] = {}

    def __call__(self, path: Path) -> bool:
        real = self._real_dir(path.parent)
        if real is None:
            return False
        if os.path.islink(path):
            return is_within(path, self.root)
        return (real / path.name).is_relative_to(self.root)

    def _real_dir(self, folder: Path) -> Path | None:
        """`folder` with its symlinks resolved (None when that fails), remembered."""
        if folder in self._real:
            return self._real[folder]
        real: Path | None
        try:
            if folder.parent == folder or os.path.islink(folder):
                real = folder.resolve()
            else:
                parent = self._real_dir(folder.parent)
                real = None if parent is None else parent / folder.name
        except (OSError, RuntimeError, ValueError):
            real = None
        self._real[folder] = real
        return real
