"""Where a streamed answer goes on in a new block: long answers are several blocks, so that
the start of a very long one can leave the DOM (`block_window.py`) and a burst of text is a
few widgets, not one per paragraph (`conversation.py`)."""

from __future__ import annotations

import bisect
import itertools
import re

SPLIT_CHARS = 2000
"""A streamed answer continues in a new block after this many characters (at a paragraph
break outside code), so that the start of a very long answer can leave the DOM too."""
_BREAK = re.compile(r"\n\n(?=[^\W\d_]|[\[(\"'])")
"""A paragraph break before a paragraph's words. Not before indented text (it goes on with a
list item or code above it), nor before a heading, list, table, quote, fence or rule: those
have a margin above them, which would stack on the margin below the block ending there (two
blank lines where one paragraph follows another in one block)."""
_FENCE = re.compile(r"^ {0,3}(?:```|~~~)", re.MULTILINE)


def split_answer(block: str, new: str, limit: int = SPLIT_CHARS) -> list[str]:
    """`new`, streamed after `block` (what the answer's current block holds), cut where the
    answer goes on in a new block: at a paragraph break outside code (`_BREAK`), once the
    block holds `limit` characters. The first piece goes on with `block` (it may be empty);
    each of the others starts a block. A break at the very end of the text is cut only once
    what follows it is known."""
    text = block + new
    fences = [match.start() for match in _FENCE.finditer(text)]
    cuts: list[int] = []
    start = 0
    for match in _BREAK.finditer(text, max(0, len(block) - 2)):
        cut = match.end()
        if cut < len(block) or cut - start < limit:
            continue
        if bisect.bisect_left(fences, cut) % 2 == 0:  # outside code: every fence closed
            cuts.append(cut)
            start = cut
    bounds = [len(block), *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]
