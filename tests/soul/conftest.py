"""Fixtures of the soul's tests that talk to a loopback model through litellm."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kode_tui.soul.llm.litellm_provider import load_litellm
from tests.llm_server import LLMServer

KEY_ENV = "KODE_TEST_LLM_KEY"


@pytest.fixture(scope="module")
def litellm() -> Any:
    return load_litellm()


@pytest.fixture
def server(litellm: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[LLMServer]:
    """A loopback model whose key is in `KEY_ENV`; it must have seen no bad request."""
    monkeypatch.setenv(KEY_ENV, "sk-test")
    with LLMServer() as server:
        yield server
    assert server.errors == []
