"""Whether a model takes images: the alias's `vision = true|false` in config.toml when set, else
litellm's map (`supports_vision`). A model the map does not know (a local server's, most often)
is sent images: only its server can tell, and its refusal is one clear error, where not sending
would silently drop them; `vision = false` on its alias stops it. A model that takes none is
sent a note in each image's place (`IMAGE_NOT_SENT`), ReadMediaFile tells the model it cannot
look at one, and a prompt with images is refused with one line.
"""

from __future__ import annotations

from kode_tui.config import ModelChoice
from kode_tui.soul.llm import ChatProvider
from kode_tui.soul.llm.litellm_provider import LiteLLMProvider
from kode_tui.soul.llm.model_map import map_entry


def supports_images(choice: ModelChoice) -> bool:
    """Whether `choice` takes images (never the demo)."""
    if choice.is_demo:
        return False
    if choice.vision is not None:
        return choice.vision
    entry = map_entry(choice.model)
    return entry is None or entry.supports_vision is True


def takes_images(provider: ChatProvider) -> bool:
    """Whether the model `provider` calls is sent images (the demo and scripted ones are not)."""
    return isinstance(provider, LiteLLMProvider) and provider.images
