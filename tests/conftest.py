"""Every test runs with its own KODE_TUI_HOME and never sees the real home dir or the network."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.llm_server import KEY_ENV, LLMServer


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto` (`make test`): one worker more than the cores. Part of the suite waits (on
    subprocesses, pseudo-terminals, loopback servers), and a spare worker keeps the cores busy
    meanwhile: 2 min 27 s instead of 3 min on 2 cores, idle."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (cores or 1) + 1


# A real session folder written by Kimi CLI 1.52 (read-only: tests work on copies).
KIMI_FIXTURE = Path(__file__).parent / "fixtures" / "kimi-session"
# More, made by bench/gen_kimi_fixtures.py (tests/fixtures/README.md says what each holds).
KIMI_DEFAULT_FIXTURE = KIMI_FIXTURE.with_name("kimi-default")
KIMI_OKABE_FIXTURE = KIMI_FIXTURE.with_name("kimi-okabe")
KIMI_OKABE_COMPACTED_FIXTURE = KIMI_FIXTURE.with_name("kimi-okabe-compacted")
KIMI_FIXTURES = (
    KIMI_FIXTURE,
    KIMI_DEFAULT_FIXTURE,
    KIMI_OKABE_FIXTURE,
    KIMI_OKABE_COMPACTED_FIXTURE,
)

API_KEY_ENV_VARS = (
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "MOONSHOT_API_KEY",
    "GEMINI_API_KEY",
    "DEEPSEEK_API_KEY",
    "OPENROUTER_API_KEY",
)


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("KODE_TUI_HOME", str(home))
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    # No test may find a real local Ollama or a real API key.
    monkeypatch.setenv("KODE_TUI_OLLAMA_URL", "")
    for key in API_KEY_ENV_VARS:
        monkeypatch.delenv(key, raising=False)
    return home


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A work dir holding only a README (a test file may define its own)."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "README.md").write_text("# Tiny project\n")
    return project


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[LLMServer]:
    """A loopback model server whose key is in `KEY_ENV` (a test file may define its own)."""
    from kode_tui.soul.llm import process

    monkeypatch.setenv(KEY_ENV, "sk-test-not-a-secret")
    with LLMServer() as server:
        yield server
    process.stop()  # the next test's model process starts with the next test's environment
