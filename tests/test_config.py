"""The config file (DESIGN.md §8): defaults, one-line errors that point at the key, model choice."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from kode_tui.config import (
    API_KEY_ENV_VARS,
    DEFAULT_MODELS,
    CompactionConfig,
    Config,
    ConfigError,
    LoopControl,
    ModelChoice,
    ModelConfig,
    check_model,
    load_config,
    probe_ollama,
    resolve_model,
)

FULL_EXAMPLE = """\
default_model = "sonnet"          # an alias below, or a raw litellm model string
theme = "kode-light"
approval_mode = "auto-edit"

[models.sonnet]
model = "anthropic/claude-sonnet-4-5"
max_context_size = 200000
api_base = "https://llm.example.com"
api_key_env = "WORK_ANTHROPIC_KEY"

[models."gpt-4.1"]
model = "openai/gpt-4.1"

[loop_control]
max_steps_per_run = 40
max_retries_per_step = 5
reserved_context_size = 30000
compaction_trigger_ratio = 0.7

[compaction]
strategy = "kode_tui.soul.compaction:ToolResultHidingCompaction"

[context]
custom = \"\"\"
Team conventions: tabs.
\"\"\"
max_reminders_per_session = 10

[tools]
dmail = false
"""


def write(tmp_path: Path, text: str, name: str = "config.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def error_of(path: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    return str(caught.value)


def no_ollama() -> str | None:
    return None


# --- Loading -------------------------------------------------------------------------------------


def test_no_config_file_gives_the_defaults(home: Path) -> None:
    assert not (home / "config.toml").exists()

    config = load_config()

    assert config == Config()
    assert config.default_model is None
    assert config.theme == "kode-dark"
    assert config.approval_mode == "ask"
    assert config.models == {}
    assert config.loop_control == LoopControl(
        max_steps_per_run=100,
        max_retries_per_step=10,
        reserved_context_size=50_000,
        compaction_trigger_ratio=0.85,
        max_retry_wait=60,
        max_total_retry_wait=300,
    )
    assert config.compaction.strategy == "kode_tui.soul.compaction:LLMSummaryCompaction"
    assert config.context.custom == ""
    assert config.context.max_reminders_per_session == 50
    assert config.tools.dmail is True


def test_the_default_file_lives_in_kode_tui_home(home: Path) -> None:
    home.mkdir()
    write(home, 'theme = "nord"\n')

    assert load_config().theme == "nord"


def test_a_full_example_file_parses(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, FULL_EXAMPLE))

    assert config.default_model == "sonnet"
    assert config.theme == "kode-light"
    assert config.approval_mode == "auto-edit"
    assert config.models == {
        "sonnet": ModelConfig(
            model="anthropic/claude-sonnet-4-5",
            max_context_size=200_000,
            api_base="https://llm.example.com",
            api_key_env="WORK_ANTHROPIC_KEY",
        ),
        "gpt-4.1": ModelConfig(model="openai/gpt-4.1"),
    }
    assert config.loop_control == LoopControl(
        max_steps_per_run=40,
        max_retries_per_step=5,
        reserved_context_size=30_000,
        compaction_trigger_ratio=0.7,
    )
    assert config.compaction == CompactionConfig(
        strategy="kode_tui.soul.compaction:ToolResultHidingCompaction"
    )
    assert config.context.custom == "Team conventions: tabs.\n"
    assert config.context.max_reminders_per_session == 10
    assert config.tools.dmail is False


def test_a_model_alias_may_say_whether_it_takes_a_thinking_effort(tmp_path: Path) -> None:
    toml = '[models.qwen]\nmodel = "openai/qwen3"\napi_base = "http://127.0.0.1:9/v1"\n'
    config = load_config(write(tmp_path, toml + "reasoning = true\n"))

    assert check_model(config, "qwen", env={}).reasoning is True
    assert check_model(config, "openai/o3", env={"OPENAI_API_KEY": "k"}).reasoning is None


def test_an_empty_file_gives_the_defaults(tmp_path: Path) -> None:
    assert load_config(write(tmp_path, "# nothing set yet\n")) == Config()


def test_config_is_frozen() -> None:
    config = Config()

    with pytest.raises(ValidationError):
        config.theme = "other"
    with pytest.raises(ValidationError):
        config.loop_control.max_steps_per_run = 1


def test_a_missing_file_given_explicitly_is_an_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"

    assert error_of(missing) == f"{missing}: no such config file"


def test_an_unreadable_file_is_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "config.toml"
    folder.mkdir()

    message = error_of(folder)

    assert message.startswith(f"{folder}: cannot read the config file")
    assert "\n" not in message


def test_a_file_that_is_not_utf8_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_bytes(b'theme = "\xff"\n')

    assert error_of(path) == f"{path}: not a UTF-8 text file"


# --- Every error names file, line and key -------------------------------------------------------


def test_a_toml_syntax_error_names_file_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, 'theme = "x"\n[loop_control]\nmax_steps_per_run = \n')

    assert error_of(path) == f"{path}:3: invalid TOML: Invalid value (column 21)"


def test_an_unterminated_string_points_at_the_end(tmp_path: Path) -> None:
    path = write(tmp_path, 'theme = "x"\n[context]\ncustom = """never closed\n')

    assert error_of(path) == f"{path}:3: invalid TOML: Unterminated string (at the end)"


def test_a_wrong_type_in_a_table_names_its_line_and_key(tmp_path: Path) -> None:
    path = write(tmp_path, 'theme = "x"\n\n[loop_control]\n# steps\nmax_steps_per_run = "many"\n')

    message = error_of(path)

    assert message.startswith(f"{path}:5: loop_control.max_steps_per_run: ")
    assert "valid integer" in message


def test_an_unknown_key_is_an_error_with_a_suggestion(tmp_path: Path) -> None:
    path = write(tmp_path, "[loop_control]\nmax_steps_per_run = 3\nmax_step_per_run = 3\n")

    assert error_of(path) == (
        f"{path}:3: loop_control.max_step_per_run: unknown key; did you mean 'max_steps_per_run'?"
    )


def test_an_unknown_key_in_a_model_table_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, '[models.sonnet]\nmodel = "a/b"\napi_key = "sk-..."\n')

    assert error_of(path) == (
        f"{path}:3: models.sonnet.api_key: unknown key; did you mean 'api_key_env'?"
    )


def test_an_unknown_top_level_table_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, 'theme = "x"\n\n[loop_controls]\nmax_steps_per_run = 3\n')

    assert error_of(path) == (
        f"{path}:3: loop_controls: unknown table; did you mean 'loop_control'?"
    )


def test_a_ratio_out_of_range_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, "[loop_control]\ncompaction_trigger_ratio = 1.5\n")

    assert error_of(path) == (
        f"{path}:2: loop_control.compaction_trigger_ratio: Input should be less than or equal to 1"
    )


def test_a_zero_ratio_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, "[loop_control]\ncompaction_trigger_ratio = 0\n")

    assert error_of(path).startswith(f"{path}:2: loop_control.compaction_trigger_ratio: ")


@pytest.mark.parametrize(
    "strategy", ["kode_tui.soul.compaction", "compaction:", ":Summary", "a b:C", "m:C.method"]
)
def test_a_strategy_not_shaped_module_colon_class_is_an_error(
    tmp_path: Path, strategy: str
) -> None:
    path = write(tmp_path, f'[compaction]\nstrategy = "{strategy}"\n')

    assert error_of(path) == (
        f"{path}:2: compaction.strategy: should look like 'module:ClassName', "
        "e.g. 'kode_tui.soul.compaction:LLMSummaryCompaction'"
    )


def test_a_model_entry_without_model_points_at_its_table(tmp_path: Path) -> None:
    path = write(tmp_path, 'default_model = "sonnet"\n\n[models.sonnet]\napi_base = "http://x"\n')

    assert error_of(path) == f"{path}:3: models.sonnet.model: required key is missing"


def test_an_error_inside_an_inline_table_points_at_its_line(tmp_path: Path) -> None:
    path = write(
        tmp_path, 'theme = "x"\nmodels = { sonnet = { model = "a/b", max_context_size = 0 } }\n'
    )

    assert error_of(path) == (
        f"{path}:2: models.sonnet.max_context_size: Input should be greater than 0"
    )


def test_an_error_in_a_dotted_key_points_at_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, 'theme = "x"\nloop_control.max_retries_per_step = 0\n')

    assert error_of(path) == (
        f"{path}:2: loop_control.max_retries_per_step: Input should be greater than or equal to 1"
    )


def test_a_quoted_alias_is_quoted_in_the_key(tmp_path: Path) -> None:
    path = write(tmp_path, '[models."gpt-4.1"]\nmodel = "openai/gpt-4.1"\nmax_context_size = -1\n')

    assert error_of(path) == (
        f'{path}:3: models."gpt-4.1".max_context_size: Input should be greater than 0'
    )


def test_lines_inside_a_multiline_string_are_not_mistaken_for_keys(tmp_path: Path) -> None:
    text = '[context]\ncustom = """\n[tools]\ndmail = 1\n"""\n\n[tools]\ndmail = "maybe"\n'
    path = write(tmp_path, text)

    assert error_of(path).startswith(f"{path}:8: tools.dmail: ")


def test_a_table_given_as_a_value_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, "theme = 'x'\nloop_control = 5\n")

    assert error_of(path) == f"{path}:2: loop_control: should be a table"


def test_a_bad_approval_mode_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, 'approval_mode = "never"\n')

    assert error_of(path) == (
        f"{path}:1: approval_mode: Input should be 'ask', 'auto-edit', 'plan', 'sandbox' or 'yolo'"
    )


def test_several_errors_report_the_first_and_count_the_rest(tmp_path: Path) -> None:
    path = write(tmp_path, "[loop_control]\nmax_steps_per_run = 0\nmax_retries_per_step = 0\n")

    assert error_of(path) == (
        f"{path}:2: loop_control.max_steps_per_run: Input should be greater than or equal to 1"
        " (and 1 more error)"
    )


# --- Choosing the model ------------------------------------------------------------------------

CONFIG = Config(
    default_model="sonnet",
    models={
        "sonnet": ModelConfig(
            model="anthropic/claude-sonnet-4-5",
            max_context_size=200_000,
            api_base="https://llm.example.com",
            api_key_env="WORK_ANTHROPIC_KEY",
        ),
        "kimi": ModelConfig(model="moonshot/kimi-k2.5"),
    },
)


def test_the_flag_beats_default_model() -> None:
    choice = resolve_model(CONFIG, "kimi", env={}, ollama=no_ollama)

    assert choice == ModelChoice(name="kimi", model="moonshot/kimi-k2.5", source="flag")


def test_default_model_names_an_alias_with_its_settings() -> None:
    choice = resolve_model(CONFIG, env={"OPENAI_API_KEY": "sk-test"}, ollama=no_ollama)

    assert choice == ModelChoice(
        name="sonnet",
        model="anthropic/claude-sonnet-4-5",
        source="config",
        api_base="https://llm.example.com",
        api_key_env="WORK_ANTHROPIC_KEY",
        max_context_size=200_000,
    )
    assert not choice.is_demo


def test_a_name_that_is_no_alias_is_a_raw_litellm_model() -> None:
    by_flag = resolve_model(CONFIG, "openai/gpt-4o", env={}, ollama=no_ollama)
    by_config = resolve_model(Config(default_model="gpt-4o"), env={}, ollama=no_ollama)

    assert by_flag == ModelChoice(name="openai/gpt-4o", model="openai/gpt-4o", source="flag")
    assert by_config == ModelChoice(name="gpt-4o", model="gpt-4o", source="config")


def test_demo_can_be_asked_for_by_name() -> None:
    choice = resolve_model(CONFIG, "demo", env={}, ollama=no_ollama)

    assert choice.is_demo
    assert choice.source == "flag"


def test_an_alias_typo_is_an_error_with_a_suggestion() -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_model(CONFIG, "sonet", env={}, ollama=no_ollama)

    assert str(caught.value).startswith(
        "unknown model 'sonet' given by --model; did you mean 'sonnet'?"
    )


def test_a_default_model_typo_says_where_it_came_from() -> None:
    with pytest.raises(ConfigError, match="'kim' given by default_model; did you mean 'kimi'"):
        resolve_model(Config(default_model="kim", models=CONFIG.models), env={})


def test_an_empty_model_flag_is_an_error() -> None:
    with pytest.raises(ConfigError, match="--model needs a model name"):
        resolve_model(CONFIG, "", env={}, ollama=no_ollama)


@pytest.mark.parametrize("index", range(len(API_KEY_ENV_VARS)))
def test_the_first_key_in_the_environment_picks_its_provider(index: int) -> None:
    found = API_KEY_ENV_VARS[index]
    # Every later key is present too: only the order decides.
    env = {var: "key" for var in API_KEY_ENV_VARS[index:]}

    def ollama() -> str | None:
        raise AssertionError("Ollama is not probed when a key is found")

    choice = resolve_model(Config(), env=env, ollama=ollama)

    assert choice.source == f"env:{found}"
    assert choice.api_key_env == found
    assert choice.model == DEFAULT_MODELS[found].model
    assert choice.name == choice.model
    assert not choice.is_demo


def test_an_empty_key_does_not_count() -> None:
    env = {"ANTHROPIC_API_KEY": "", "GEMINI_API_KEY": "key"}

    assert resolve_model(Config(), env=env, ollama=no_ollama).source == "env:GEMINI_API_KEY"


def test_the_environment_defaults_to_the_process_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "key")

    choice = resolve_model(Config(), ollama=no_ollama)

    assert choice.model == "deepseek/deepseek-chat"
    assert choice.source == "env:DEEPSEEK_API_KEY"


def test_ollama_is_used_when_no_key_is_found() -> None:
    choice = resolve_model(
        Config(),
        env={"KODE_TUI_OLLAMA_URL": "http://127.0.0.1:5555"},
        ollama=lambda: "ollama_chat/llama3.2",
    )

    assert choice == ModelChoice(
        name="ollama_chat/llama3.2",
        model="ollama_chat/llama3.2",
        source="ollama",
        api_base="http://127.0.0.1:5555",
    )


def test_demo_comes_last() -> None:
    choice = resolve_model(Config(), env={}, ollama=no_ollama)

    assert choice == ModelChoice(name="demo", model="demo", source="demo")
    assert choice.is_demo


def test_every_provider_key_has_a_default_model() -> None:
    assert tuple(DEFAULT_MODELS) == API_KEY_ENV_VARS
    assert API_KEY_ENV_VARS == (
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "MOONSHOT_API_KEY",
        "GEMINI_API_KEY",
        "DEEPSEEK_API_KEY",
        "OPENROUTER_API_KEY",
    )


def test_default_models_are_in_litellms_local_cost_map() -> None:
    # Read the JSON next to the package without importing litellm (seconds, and a layer above).
    spec = importlib.util.find_spec("litellm")
    assert spec is not None and spec.origin is not None
    cost_map = json.loads(
        (Path(spec.origin).parent / "model_prices_and_context_window_backup.json").read_text()
    )
    for default in DEFAULT_MODELS.values():
        if default.model.startswith("openrouter/"):
            # The map lists no OpenRouter models; the default carries its own context size.
            assert default.max_context_size is not None
            continue
        provider, _, name = default.model.partition("/")
        entry = cost_map.get(default.model) or cost_map.get(name)
        assert entry is not None, default.model
        assert entry["litellm_provider"] == provider
        assert entry["mode"] == "chat"
        assert entry["supports_function_calling"] is True


def test_tests_never_see_a_real_provider_key() -> None:
    assert not [var for var in API_KEY_ENV_VARS if var in os.environ]


# --- Probing a local Ollama ---------------------------------------------------------------------


class _Tags(BaseHTTPRequestHandler):
    body: bytes = b""

    def do_GET(self) -> None:
        if self.path != "/api/tags":
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def serve_tags() -> Iterator[Callable[[object], str]]:
    """Start a loopback server answering /api/tags with the given JSON; returns its URL."""
    servers: list[HTTPServer] = []

    def start(payload: object) -> str:
        handler = type("Handler", (_Tags,), {"body": json.dumps(payload).encode()})
        server = HTTPServer(("127.0.0.1", 0), handler)
        servers.append(server)
        threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True).start()
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def tags(*names: str) -> dict[str, Any]:
    return {"models": [{"name": name, "model": name, "size": 1} for name in names]}


def test_probe_ollama_names_the_first_model(serve_tags: Callable[[object], str]) -> None:
    url = serve_tags(tags("llama3.2:latest", "qwen2.5-coder:7b"))

    assert probe_ollama(url) == "ollama_chat/llama3.2:latest"


def test_probe_ollama_skips_embedding_models(serve_tags: Callable[[object], str]) -> None:
    url = serve_tags(tags("nomic-embed-text:latest", "qwen2.5-coder:7b"))

    assert probe_ollama(url + "/") == "ollama_chat/qwen2.5-coder:7b"


def test_probe_ollama_without_models_is_none(serve_tags: Callable[[object], str]) -> None:
    assert probe_ollama(serve_tags(tags())) is None
    assert probe_ollama(serve_tags({"unexpected": True})) is None


def test_probe_ollama_reads_its_url_from_the_environment(
    serve_tags: Callable[[object], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = serve_tags(tags("llama3.2"))
    monkeypatch.setenv("KODE_TUI_OLLAMA_URL", url)

    assert probe_ollama() == "ollama_chat/llama3.2"
    assert resolve_model(Config()) == ModelChoice(
        name="ollama_chat/llama3.2", model="ollama_chat/llama3.2", source="ollama", api_base=url
    )


def test_probe_ollama_ignores_http_proxies(
    serve_tags: Callable[[object], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = serve_tags(tags("llama3.2"))
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")
    monkeypatch.setenv("no_proxy", "")

    assert probe_ollama(url) == "ollama_chat/llama3.2"


def test_probe_ollama_on_a_closed_port_is_none() -> None:
    with socket.socket() as placeholder:
        placeholder.bind(("127.0.0.1", 0))
        port = placeholder.getsockname()[1]
    # Nothing listens there any more: the connection is refused.

    assert probe_ollama(f"http://127.0.0.1:{port}") is None


def test_an_empty_ollama_url_disables_the_probe_without_connecting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def connect(*args: object, **kwargs: object) -> socket.socket:
        raise AssertionError("no connection may be attempted")

    monkeypatch.setattr(socket, "create_connection", connect)
    assert os.environ["KODE_TUI_OLLAMA_URL"] == ""  # set by conftest for every test

    assert probe_ollama() is None
    assert probe_ollama("") is None
    assert resolve_model(Config()).is_demo


def test_lines_are_counted_as_toml_counts_them(tmp_path: Path) -> None:
    path = write(tmp_path, 'theme = "a\u2028b\x85c"\r\n[tools]\r\ndmail = 7\r\n')

    assert error_of(path).startswith(f"{path}:3: tools.dmail: ")
