"""The model process started as kode-tui starts: it reads the config to know its library, and
the first request is served by it, not by a process of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from kode_tui import model_launch
from kode_tui.message import Message, TextPart
from kode_tui.soul.llm import process
from kode_tui.soul.llm.process import ProcessProvider
from kode_tui.soul.llm.worker import _configured_library
from tests.llm_server import KEY_ENV, LLMServer, write_loopback_config


def write_config(folder: Path, model: str) -> Path:
    config = folder / "config.toml"
    config.write_text(f'default_model = "main"\n[models.main]\nmodel = "{model}"\n')
    return config


@pytest.mark.parametrize(
    ("model", "flag", "library"),
    [
        ("openai/gpt-4.1", None, "openai"),
        ("anthropic/claude-sonnet-4-5", None, "litellm"),
        ("anthropic/claude-sonnet-4-5", "openai/local", "openai"),
        ("openai/gpt-4.1", "demo", None),
    ],
)
def test_the_early_process_imports_the_library_of_the_model_the_config_chooses(
    home: Path, tmp_path: Path, model: str, flag: str | None, library: str | None
) -> None:
    arguments = ["--config", str(write_config(tmp_path, model))]
    if flag is not None:
        arguments += ["--model", flag]
    assert _configured_library(arguments) == library


def test_no_config_or_a_broken_one_imports_nothing_early(home: Path, tmp_path: Path) -> None:
    assert _configured_library([]) is None  # no model configured, no key: the demo
    broken = tmp_path / "broken.toml"
    broken.write_text("default_model = \n")
    assert _configured_library(["--config", str(broken)]) is None


async def test_the_process_started_early_serves_the_first_request(
    home: Path, server: LLMServer
) -> None:
    process.stop()
    write_loopback_config(home, server, KEY_ENV)
    model_launch.start_early(None, None)
    early = process.worker_pid()
    assert early is not None
    server.reply_text("From the early one.")

    provider = ProcessProvider("openai/test-model", api_base=server.url, api_key_env=KEY_ENV)
    items = [i async for i in provider.stream("sys", [Message(role="user", content="hi")], [])]

    # The stream may split the text where its chunks arrive.
    assert "".join(i.text for i in items if isinstance(i, TextPart)) == "From the early one."
    assert process.worker_pid() == early


def test_an_early_process_nobody_took_ends_when_stopped(home: Path) -> None:
    model_launch.start_early(None, None)
    early = model_launch._early
    assert early is not None and model_launch.early_pid() == early.pid

    model_launch.stop_early()

    assert early.wait(timeout=60) == 0
    assert model_launch.early_pid() is None
