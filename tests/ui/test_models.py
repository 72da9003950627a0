"""`/model`: a name is checked before the switch, a real model puts the demo notice away, and
`/model` alone opens a picker."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kode_tui.config import Config, ModelConfig, check_model
from kode_tui.errors import ConfigError
from kode_tui.soul.llm import process
from kode_tui.soul.llm.demo import DemoProvider
from kode_tui.soul.llm.model_map import model_options
from kode_tui.ui.app import KodeApp
from kode_tui.ui.screens.models import ModelPicker
from tests.ui_helpers import make_app, ready, screen_text, send, wait_for

CONFIG = Config(
    models={
        "local": ModelConfig(
            model="openai/local-model", api_base="http://127.0.0.1:9/v1", max_context_size=32_000
        ),
        "work": ModelConfig(model="anthropic/claude-sonnet-4-5", api_key_env="KODE_TEST_WORK_KEY"),
    }
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    return project


@pytest.fixture(autouse=True)
def no_model_process() -> Iterator[None]:
    """A switch to a real model starts the model process; it is stopped after each test."""
    yield
    process.stop()


def notices(app: KodeApp) -> list[str]:
    return [notice.message for notice in app._notifications]


async def test_an_unknown_model_is_refused_in_one_line_and_the_model_stays(project: Path) -> None:
    app = make_app(project, DemoProvider(delay=0), CONFIG)
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        await send(pilot, "/model nosuch")
        await wait_for(pilot, lambda: any("nosuch" in n for n in notices(app)))
        [said] = [n for n in notices(app) if "nosuch" in n]
        assert "\n" not in said and "unknown model" in said and "local" in said
        assert app.choice.is_demo and "demo" in app.sub_title
        assert "Offline demo" in screen_text(app)


async def test_an_alias_whose_key_is_not_set_names_the_variable_and_the_model_stays(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KODE_TEST_WORK_KEY", raising=False)
    app = make_app(project, DemoProvider(delay=0), CONFIG)
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        await send(pilot, "/model work")
        await wait_for(pilot, lambda: any("KODE_TEST_WORK_KEY" in n for n in notices(app)))
        assert app.choice.is_demo and "work" not in app.sub_title


async def test_a_real_model_puts_the_demo_notice_away(project: Path) -> None:
    app = make_app(project, DemoProvider(delay=0), CONFIG)
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        assert "Offline demo" in screen_text(app)
        await send(pilot, "/model local")
        await wait_for(pilot, lambda: app.choice.name == "local")
        await wait_for(pilot, lambda: "Offline demo" not in screen_text(app))
        assert "local" in app.sub_title


async def test_model_alone_opens_a_picker_and_enter_switches_to_the_alias(project: Path) -> None:
    app = make_app(project, DemoProvider(delay=0), CONFIG)
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        await send(pilot, "/model")
        await wait_for(pilot, lambda: isinstance(app.screen, ModelPicker))
        shown = screen_text(app)
        assert "local" in shown and "32k context" in shown
        assert "set KODE_TEST_WORK_KEY" in shown
        await pilot.press("home", "enter")  # `local`, the first row
        await wait_for(pilot, lambda: not isinstance(app.screen, ModelPicker))
        await wait_for(pilot, lambda: app.choice.name == "local")
        assert "local" in app.sub_title


async def test_escape_closes_the_picker_and_keeps_the_model(project: Path) -> None:
    app = make_app(project, DemoProvider(delay=0), CONFIG)
    async with app.run_test(size=(140, 40)) as pilot:
        await ready(pilot)
        await send(pilot, "/model")
        await wait_for(pilot, lambda: isinstance(app.screen, ModelPicker))
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, ModelPicker))
        assert app.choice.is_demo


def test_a_provider_whose_key_is_set_offers_its_models_with_size_and_price() -> None:
    names = [o.name for o in model_options(CONFIG, env={})]
    assert names == ["local", "work", "demo"]
    offered = {o.name: o for o in model_options(CONFIG, env={"OPENAI_API_KEY": "k"})}
    gpt = offered["openai/gpt-5"]
    assert gpt.context_size and gpt.context_size > 100_000
    assert gpt.input_price and gpt.output_price and gpt.output_price > gpt.input_price
    assert not any(name.startswith("anthropic/") for name in offered)


def test_a_hosted_model_without_its_key_or_a_bare_unknown_name_is_refused() -> None:
    with pytest.raises(ConfigError, match="set ANTHROPIC_API_KEY"):
        check_model(CONFIG, "anthropic/claude-sonnet-4-5", env={})
    with pytest.raises(ConfigError, match="unknown model 'gpt5'"):
        check_model(CONFIG, "gpt5", env={})
    assert check_model(CONFIG, "openai/gpt-5", env={"OPENAI_API_KEY": "k"}).model == "openai/gpt-5"
    assert check_model(CONFIG, "ollama_chat/qwen3", env={}).model == "ollama_chat/qwen3"
    assert check_model(CONFIG, "demo", env={}).is_demo
