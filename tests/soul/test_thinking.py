"""Which models take a thinking effort: the alias's `reasoning` when set, else litellm's map."""

from __future__ import annotations

from kode_tui.config import ModelChoice
from kode_tui.soul.thinking import next_level, parse_level, supports_thinking


def choice(model: str, reasoning: bool | None = None) -> ModelChoice:
    return ModelChoice(name=model, model=model, source="flag", reasoning=reasoning)


def test_the_map_says_which_models_reason_and_an_alias_may_say_otherwise() -> None:
    assert supports_thinking(choice("anthropic/claude-sonnet-4-5"))
    assert supports_thinking(choice("openai/o3"))
    assert not supports_thinking(choice("openai/gpt-4.1"))
    assert not supports_thinking(choice("openai/my-local-qwen"))
    assert supports_thinking(choice("openai/my-local-qwen", reasoning=True))
    assert not supports_thinking(choice("openai/o3", reasoning=False))
    assert not supports_thinking(choice("demo", reasoning=True))


def test_levels_parse_in_any_case_and_cycle_back_to_off() -> None:
    assert parse_level(" High ") == "high" and parse_level("max") is None
    assert [next_level(level) for level in ("off", "low", "medium", "high")] == [
        "low",
        "medium",
        "high",
        "off",
    ]
