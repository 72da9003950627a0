"""A Shell command line split as bash splits it: words, operators and simple commands.

`shlex` follows bash's quoting rules; operators (`;`, `&&`, `|`, `>`, `(`, a newline, …) come out
as words of their own, so a caller can tell where one simple command ends and the next begins.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator

OPERATOR_CHARS = "();<>|&\n"
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def split_words(command: str) -> list[str] | None:
    """`command` split as bash would split its words, operators apart; None if it cannot be
    (an unclosed quote, a control character)."""
    if _CONTROL.search(command):
        return None
    lexer = shlex.shlex(command, posix=True, punctuation_chars=OPERATOR_CHARS)
    lexer.whitespace = " \t"  # a newline separates commands, a carriage return does not
    lexer.whitespace_split = True
    lexer.commenters = ""  # bash's `#` rules differ: keep every character in view
    try:
        return list(lexer)
    except ValueError:  # an unclosed quote
        return None


def is_operator(word: str) -> bool:
    """Whether `word` (from `split_words`) is an operator or a redirection, not a word."""
    return bool(word) and all(ch in OPERATOR_CHARS for ch in word)


def simple_commands(words: list[str]) -> Iterator[list[str]]:
    """The words of each simple command in `words` (the parts between operators)."""
    command: list[str] = []
    for word in [*words, ";"]:
        if not is_operator(word):
            command.append(word)
        elif command:
            yield command
            command = []
