"""Pinned notes (`/pin`, `/pins`): the block of the system prompt that carries them.

Pins live in the session's state.json, never in its messages, so no compaction strategy can
summarise or drop them: every request gets them verbatim. Their block comes after the base
prompt and the project context, the last part of the system prompt, so adding or editing a pin
leaves the prefix before it unchanged and the provider's prompt cache still holds for it.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["PINNED_BLOCK", "pinned_block", "with_pins"]

PINNED_BLOCK = "pinned"
"""The block's name in the system prompt and in `/context`."""

_INTRO = (
    "The user pinned these notes. They hold for the whole conversation, whatever was "
    "compacted: keep to them."
)


def pinned_block(pins: Sequence[str]) -> str:
    """The pins as one `<context name="pinned">` block, numbered; "" when there are none."""
    if not pins:
        return ""
    items = "\n".join(
        f"{number}. " + text.strip().replace("\n", "\n   ")
        for number, text in enumerate(pins, start=1)
    )
    return f'\n\n<context name="{PINNED_BLOCK}">{_INTRO}\n{items}</context>'


def with_pins(
    system_prompt: str, blocks: list[tuple[str, int]], pins: Sequence[str]
) -> tuple[str, list[tuple[str, int]]]:
    """`system_prompt` with the pinned block appended, and `blocks` with its row (estimated
    tokens: characters // 4, as the other blocks)."""
    block = pinned_block(pins)
    if not block:
        return system_prompt, blocks
    return system_prompt + block, [*blocks, (f"pinned notes ({len(pins)})", len(block) // 4)]
