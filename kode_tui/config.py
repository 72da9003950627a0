"""The config file (DESIGN.md §8) and the choice of model.

`load_config` reads `$KODE_TUI_HOME/config.toml` (or `--config FILE`) into frozen pydantic models.
Every table forbids unknown keys, so a typo such as `max_step_per_run` is an error rather than a
setting silently ignored. A malformed file raises `ConfigError`, whose message is one line of the
form `FILE:LINE: KEY: what is wrong`; the CLI prints it and exits 2.

`resolve_model` picks the model for a run: `--model` > `default_model` > the first provider whose
API key is in the environment > a reachable local Ollama > the offline `demo` model.

`kode_tui.config_save` writes one setting back (`/theme`, `/model`).

This module sits at the bottom of the layers: standard library and pydantic only.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Annotated, Any, Literal, get_args, get_origin

import msgspec
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails

from kode_tui.errors import ConfigError as ConfigError
from kode_tui.humanize import plural
from kode_tui.paths import Paths

# The same literal as kode_tui.session.state.ApprovalMode; config may not import session.
ApprovalMode = Literal["ask", "auto-edit", "plan", "sandbox", "yolo"]
PictureSetting = Literal["auto", "kitty", "sixel", "halfblocks", "off"]
"""How the conversation draws images (`kode_tui.ui.pictures`), or `off`: their chips only."""

DEMO_MODEL = "demo"
DEFAULT_STRATEGY = "kode_tui.soul.compaction:LLMSummaryCompaction"
DEFAULT_OLLAMA_URL = "http://127.0.0.1:11434"
OLLAMA_URL_ENV = "KODE_TUI_OLLAMA_URL"

_STRATEGY_SHAPE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*")
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
MAX_SERVER_NAME = 32
_SERVER_NAME = re.compile(rf"[A-Za-z0-9_-]{{1,{MAX_SERVER_NAME}}}")
_TOML_POSITION = re.compile(r"\s*\(at (?:line (\d+), column (\d+)|end of document)\)\s*$")


class _Table(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class ModelConfig(_Table):
    """One `[models.ALIAS]` table: a litellm model and how to reach it."""

    model: str = Field(min_length=1)
    """A litellm model string, e.g. `anthropic/claude-sonnet-4-5`."""
    max_context_size: int | None = Field(default=None, gt=0)
    api_base: str | None = None
    api_key_env: str | None = Field(default=None, min_length=1)
    """The environment variable holding the key; keys never live in the file."""
    reasoning: bool | None = None
    """Whether the model takes a thinking effort (`/think`); unset: as litellm's map says."""
    vision: bool | None = None
    """Whether the model takes images; unset: as litellm's map says (`supports_vision`)."""


class LoopControl(_Table):
    """`[loop_control]`: limits of the agent loop."""

    max_steps_per_run: int = Field(default=100, ge=1)
    max_retries_per_step: int = Field(default=10, ge=1)
    """Attempts of one model call in all (1: never retry); Claude Code makes up to 10."""
    max_retry_wait: float = Field(default=60, gt=0)
    """The longest wait before a retry, in seconds; a server asking for more (`Retry-After`)
    ends the turn instead, saying so."""
    max_total_retry_wait: float = Field(default=300, gt=0)
    """The longest the waits of one model call may add up to, in seconds."""
    reserved_context_size: int = Field(default=50_000, ge=0)
    compaction_trigger_ratio: float = Field(default=0.85, gt=0, le=1)
    request_timeout: float = Field(default=120, gt=0)
    """Seconds an answer may go silent once it streams (and to connect)."""
    first_token_timeout: float = Field(default=300, gt=0)
    """Seconds to wait for the first part of an answer: a local model may think for minutes."""


class CompactionConfig(_Table):
    """`[compaction]`: the strategy class, as `module:ClassName` (loaded by the soul)."""

    strategy: str = DEFAULT_STRATEGY
    review: bool = False
    """Show an automatic compaction for review in the TUI before it applies (the turn waits);
    off by default, so an unattended turn never stalls. `/compact` always shows it."""

    @field_validator("strategy")
    @classmethod
    def _module_colon_class(cls, value: str) -> str:
        # Only the shape is checked here: importing the class is the soul's job (layering).
        if not _STRATEGY_SHAPE.fullmatch(value):
            raise ValueError(f"should look like 'module:ClassName', e.g. '{DEFAULT_STRATEGY}'")
        return value


class ContextConfig(_Table):
    """`[context]`: the team's custom context and the reminder budget."""

    custom: str = ""
    max_reminders_per_session: int = Field(default=50, ge=0)


class ToolsConfig(_Table):
    """`[tools]`: optional tools."""

    dmail: bool = True
    snapshot_max_bytes: int = Field(default=1 << 20, ge=0)
    """Files over this size are not snapshotted: a revert cannot undo a Shell edit of them."""
    snapshot_max_files: int = Field(default=50_000, ge=0)
    """A work dir with more files is not snapshotted at all (a home folder, say)."""


class SandboxConfig(_Table):
    """`[sandbox]`: what the model's Shell commands may do in the sandbox (not in yolo)."""

    enabled: bool = True
    """False runs commands without the sandbox, with approvals alone (and no `sandbox` mode)."""
    network: bool = False
    """Whether commands reach the network."""
    hide: list[str] = Field(default_factory=list)
    """More paths to hide from commands, besides `~/.ssh`, `~/.aws` and the others."""
    writable: list[str] = Field(default_factory=list)
    """More paths commands may write, besides the work dir and their /tmp."""


SearchProvider = Literal["kimi", "tavily"]
"""The search services SearchWeb can call (`[web] search`)."""

SEARCH_KEY_ENV: Mapping[str, str] = MappingProxyType(
    {"kimi": "KIMI_API_KEY", "tavily": "TAVILY_API_KEY"}
)
"""Where each search provider's API key is read from unless `[web] search_key_env` says."""

SEARCH_URL: Mapping[str, str] = MappingProxyType(
    {"kimi": "https://api.kimi.com/coding/v1/search", "tavily": "https://api.tavily.com/search"}
)
"""Each provider's endpoint unless `[web] search_url` says (Kimi Code's search service, Tavily's
Search API)."""


class WebConfig(_Table):
    """`[web]`: what FetchURL may read without asking, its caps, and SearchWeb's provider."""

    allow: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    """Hosts FetchURL reads without asking: `docs.python.org`, or `*.python.org` for every
    subdomain. A private or loopback address still asks (every mode but yolo)."""
    max_bytes: int = Field(default=5_000_000, gt=0)
    """The most of a page FetchURL reads; a longer one is cut here, with a note saying so."""
    timeout: float = Field(default=30, gt=0)
    """Seconds one FetchURL call may take, redirects and the whole body included."""
    search: SearchProvider | None = None
    """The search service SearchWeb calls; without one SearchWeb is not offered."""
    search_key_env: str | None = Field(default=None, min_length=1)
    """The environment variable holding the provider's API key (default: `SEARCH_KEY_ENV`)."""
    search_url: str | None = Field(default=None, min_length=1)
    """The provider's endpoint, when not its usual one (a proxy, a regional service)."""


class NotificationsConfig(_Table):
    """`[notifications]`: tell the user a long turn ended or an approval waits."""

    when: Literal["unfocused", "always", "never"] = "unfocused"
    """`unfocused`: only while the terminal window does not have the focus."""
    turn_seconds: float = Field(default=15, ge=0)
    """A turn that ran at least this long notifies when it ends."""
    method: Literal["osc9", "osc777", "bell"] = "osc9"
    """A desktop notification (OSC 9, or OSC 777 for foot and urxvt), or the terminal's bell."""


HookEvent = Literal[
    "PreToolUse",
    "PostToolUse",
    "UserPromptSubmit",
    "Stop",
    "PreCompact",
    "PostCompact",
    "SessionStart",
    "SubagentStart",
    "SubagentStop",
]
TOOL_HOOK_EVENTS = ("PreToolUse", "PostToolUse")
"""The hook events that concern one tool call."""
MATCHED_HOOK_EVENTS = (*TOOL_HOOK_EVENTS, "SubagentStart", "SubagentStop")
"""The hook events a `matcher` applies to: a tool's name, or a subagent's type (Kimi's)."""


class HookConfig(_Table):
    """One `[[hooks]]` entry: a command run when `event` happens (`kode_tui.soul.hooks`)."""

    event: HookEvent
    matcher: str | None = None
    """A regular expression the whole tool name must match (`Shell`, `Write.*|StrReplace.*`),
    or for SubagentStart/SubagentStop the subagent's type (`explore`); unset or `*`: every
    one. Those events only."""
    command: str = Field(min_length=1)
    """Run by bash (else /bin/sh) in the work dir, the event as JSON on its stdin."""
    timeout: float = Field(default=60, gt=0, le=3600)
    """Seconds before the command's whole process group is killed."""

    @field_validator("matcher")
    @classmethod
    def _tool_regex(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        if "event" in info.data and info.data["event"] not in MATCHED_HOOK_EVENTS:
            raise ValueError(
                "a matcher applies only to PreToolUse, PostToolUse, SubagentStart and "
                "SubagentStop hooks"
            )
        if value != "*":
            try:
                re.compile(value)
            except re.error as error:
                raise ValueError(f"not a valid regular expression: {error}") from None
        return value


def _server_name(name: str) -> str:
    # The name becomes part of the tool names (`mcp__NAME__TOOL`), which model APIs restrict.
    if not _SERVER_NAME.fullmatch(name):
        raise ValueError(
            "an MCP server's name may hold only letters, digits, '_' and '-' "
            f"(at most {MAX_SERVER_NAME} characters)"
        )
    # `mcp__a__b__c` would be server `a`'s tool `b__c` and server `a__b`'s tool `c` alike (and
    # `a_`'s `x`, `a`'s `_x`): without `__` inside and `_` at the end, a name has one reading.
    if "__" in name or name.endswith("_"):
        raise ValueError(
            "an MCP server's name may not hold '__' or end with '_' (its tools are named "
            "mcp__SERVER__TOOL, and two servers' tools could get the same name)"
        )
    return name


class McpServerConfig(_Table):
    """One `[mcp.servers.NAME]` table: a `command` run over stdio, or a streamable HTTP `url`.

    A value of `env` or `headers` written `"$VAR"` is read from the environment when the server
    starts, so a token need not live in the file."""

    command: str | None = Field(default=None, min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    enabled: bool = True
    """`false` keeps the table but does not start the server."""

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("should be an http:// or https:// URL")
        return value

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give either command (a stdio server) or url (streamable HTTP)")
        if self.url is not None and (self.args or self.env):
            raise ValueError("args and env belong to a command; a url server takes headers")
        if self.command is not None and self.headers:
            raise ValueError("headers belong to a url; a command server takes args and env")
        return self


class McpConfig(_Table):
    """`[mcp]`: the MCP servers whose tools the agent gets."""

    startup_timeout: float = Field(default=10, gt=0)
    """Seconds a server may take to start; a request waits this long for one still starting."""
    tool_timeout: float = Field(default=120, gt=0)
    """Seconds one tool call may take before it is an error for the model."""
    servers: dict[Annotated[str, AfterValidator(_server_name)], McpServerConfig] = Field(
        default_factory=dict
    )


class Config(_Table):
    """The whole config file; every key has a default, so an empty file is a valid config."""

    default_model: str | None = Field(default=None, min_length=1)
    """An alias from `models`, `demo`, or a raw litellm model string."""
    theme: str = "kode-dark"
    pictures: PictureSetting = "auto"
    approval_mode: ApprovalMode = "ask"
    models: dict[str, ModelConfig] = Field(default_factory=dict)
    loop_control: LoopControl = Field(default_factory=LoopControl)
    compaction: CompactionConfig = Field(default_factory=CompactionConfig)
    context: ContextConfig = Field(default_factory=ContextConfig)
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    notifications: NotificationsConfig = Field(default_factory=NotificationsConfig)
    hooks: list[HookConfig] = Field(default_factory=list)
    mcp: McpConfig = Field(default_factory=McpConfig)
    web: WebConfig = Field(default_factory=WebConfig)


def load_config(path: Path | None = None) -> Config:
    """Read the config file; `None` means `$KODE_TUI_HOME/config.toml`.

    A missing default file gives the defaults; a missing file named explicitly (`--config`), an
    unreadable file, invalid TOML or an invalid value raise `ConfigError`.
    """
    explicit = path is not None
    file = path if path is not None else Paths.current().config_file
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        if explicit:
            raise ConfigError(f"{file}: no such config file") from None
        return Config()
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read the config file: {exc.strerror}") from None
    text, data = _parse_toml(file, raw)
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_validation_error(file, text, data, exc)) from None


def _parse_toml(file: Path, raw: bytes) -> tuple[str, dict[str, Any]]:
    """The text of a config file and its TOML data; ConfigError saying where it is wrong
    (tomllib's errors carry the line and column)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{file}: not a UTF-8 text file") from None
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(_syntax_error(file, text, exc)) from None


def _syntax_error(file: Path, text: str, exc: tomllib.TOMLDecodeError) -> str:
    # tomllib only puts the position into its message ("Invalid value (at line 3, column 7)").
    message = str(exc)
    position = _TOML_POSITION.search(message)
    if position is None:
        return f"{file}: invalid TOML: {message}"
    reason = message[: position.start()]
    line = position.group(1) or str(len(text.rstrip("\n").split("\n")))
    column = f" (column {position.group(2)})" if position.group(2) else " (at the end)"
    return f"{file}:{line}: invalid TOML: {reason}{column}"


def _validation_error(file: Path, text: str, data: dict[str, Any], exc: ValidationError) -> str:
    errors = exc.errors()
    first = errors[0]
    loc = first["loc"]
    line = _line_of(text, data, loc)
    where = f"{file}:{line}" if line is not None else str(file)
    key = _dotted(loc) or "(top level)"
    more = len(errors) - 1
    others = f" (and {plural(more, 'more error')})" if more else ""
    return f"{where}: {key}: {_describe(first)}{others}"


def _describe(error: ErrorDetails) -> str:
    kind = error["type"]
    if kind == "extra_forbidden":
        what = "table" if isinstance(error["input"], dict) else "key"
        name = str(error["loc"][-1])
        close = difflib.get_close_matches(name, _known_keys(error["loc"][:-1]), n=1)
        return f"unknown {what}; did you mean '{close[0]}'?" if close else f"unknown {what}"
    if kind == "missing":
        return "required key is missing"
    if kind in ("model_type", "dict_type"):
        return "should be a table"
    if kind == "value_error" and "ctx" in error:
        return str(error["ctx"]["error"])
    return error["msg"]


def _known_keys(table: Sequence[int | str]) -> list[str]:
    """The keys allowed in the table at `table`, for "did you mean" hints."""
    model: type[BaseModel] = Config
    parts = list(table)
    while parts:
        field = model.model_fields.get(str(parts.pop(0)))
        annotation = field.annotation if field is not None else None
        if get_origin(annotation) in (dict, list):  # [models.ALIAS], [[hooks]]: skip the key
            annotation = get_args(annotation)[-1]
            if not parts:
                return []
            parts.pop(0)
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return []
        model = annotation
    return list(model.model_fields)


def _dotted(loc: Sequence[int | str]) -> str:
    parts = []
    for part in loc:
        if part == "[key]":  # pydantic's mark of an error in a table's key (a server's name)
            continue
        if isinstance(part, int):
            parts.append(f"[{part}]")
        elif _BARE_KEY.fullmatch(part):
            parts.append(part)
        else:
            parts.append(json.dumps(part))
    return ".".join(parts).replace(".[", "[")


def _line_of(text: str, data: dict[str, Any], loc: Sequence[int | str]) -> int | None:
    """The line defining `loc`, or the table around it when the key itself is missing.

    Rather than re-implement TOML's dotted keys, quoted keys, inline tables and table headers,
    this asks tomllib: the key is defined by the first statement whose prefix of the file
    contains it. Only runs on the error path, where O(lines²) on a config file is nothing.
    """
    path = list(loc)
    while path and not _contains(data, path):
        path.pop()
    if not path:
        return None
    # TOML lines end at "\n" only; str.splitlines would also split at \x0c, \u2028, ...
    lines = text.split("\n")
    last_complete = 0  # the longest prefix (in lines) known to parse
    for end in range(1, len(lines) + 1):
        try:
            prefix = tomllib.loads("\n".join(lines[:end]) + "\n")
        except tomllib.TOMLDecodeError:
            continue  # inside a multi-line string or array
        if _contains(prefix, path):
            # The statement starts after the previous complete prefix, past blanks and comments.
            for number in range(last_complete + 1, end + 1):
                stripped = lines[number - 1].strip()
                if stripped and not stripped.startswith("#"):
                    return number
            return end
        last_complete = end
    return None


def _contains(data: Any, path: Sequence[int | str]) -> bool:
    node = data
    for part in path:
        if isinstance(node, dict) and isinstance(part, str):
            found = part in node
        elif isinstance(node, list) and isinstance(part, int):
            found = 0 <= part < len(node)
        else:
            found = False
        if not found:
            return False
        node = node[part]
    return True


# --- The choice of model ----------------------------------------------------------------------

API_KEY_ENV_VARS = (
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "MOONSHOT_API_KEY",
    "GEMINI_API_KEY",
    "DEEPSEEK_API_KEY",
    "OPENROUTER_API_KEY",
)
"""Provider keys looked for when no model is configured, in order of preference."""

# Names as litellm 1.106.2's model cost map spells them, so it knows their context size.
# OpenRouter's models are not in that map: the size is given here instead.
DEFAULT_MODELS: Mapping[str, ModelConfig] = MappingProxyType(
    {
        "ANTHROPIC_API_KEY": ModelConfig(model="anthropic/claude-sonnet-4-5"),
        "OPENAI_API_KEY": ModelConfig(model="openai/gpt-5"),
        "MOONSHOT_API_KEY": ModelConfig(model="moonshot/kimi-k2.5"),
        "GEMINI_API_KEY": ModelConfig(model="gemini/gemini-2.5-pro"),
        "DEEPSEEK_API_KEY": ModelConfig(model="deepseek/deepseek-chat"),
        "OPENROUTER_API_KEY": ModelConfig(
            model="openrouter/anthropic/claude-sonnet-4.5", max_context_size=200_000
        ),
    }
)
"""The model used for each key of `API_KEY_ENV_VARS` when that key is the one found."""


class ModelChoice(msgspec.Struct, frozen=True):
    """The model a run uses and why it was chosen."""

    name: str
    """What the user sees: the alias, or the raw model string."""
    model: str
    """The litellm model string, or `demo`."""
    source: str
    """`flag`, `config`, `env:VAR` (the key that was found), `ollama` or `demo`."""
    api_base: str | None = None
    api_key_env: str | None = None
    max_context_size: int | None = None
    reasoning: bool | None = None
    """The alias's `reasoning`: whether `/think` applies; None lets litellm's map decide."""
    vision: bool | None = None
    """The alias's `vision`: whether images are sent; None lets litellm's map decide."""

    @property
    def is_demo(self) -> bool:
        """Whether this is the offline scripted model rather than a real one."""
        return self.model == DEMO_MODEL


def resolve_model(
    config: Config,
    flag: str | None = None,
    *,
    env: Mapping[str, str] | None = None,
    ollama: Callable[[], str | None] | None = None,
) -> ModelChoice:
    """Choose the model: `flag` > `default_model` > an API key in `env` > Ollama > demo.

    A name is an alias of `config.models`, `demo`, or else a raw litellm model string; a name
    without a provider prefix that is close to an alias raises `ConfigError` with a suggestion.
    `env` defaults to `os.environ`; `ollama` defaults to probing the local Ollama, which blocks
    for up to a fraction of a second, so call this from a thread when a UI is running.
    """
    env = os.environ if env is None else env
    if flag is not None:
        return _named(config, flag, "flag", "--model")
    if config.default_model is not None:
        return _named(config, config.default_model, "config", "default_model")
    for var in API_KEY_ENV_VARS:
        if env.get(var):
            default = DEFAULT_MODELS[var]
            return ModelChoice(
                name=default.model,
                model=default.model,
                source=f"env:{var}",
                api_key_env=var,
                max_context_size=default.max_context_size,
            )
    url = _ollama_url(env)
    local = ollama() if ollama is not None else probe_ollama(url)
    if local is not None:
        return ModelChoice(name=local, model=local, source="ollama", api_base=url or None)
    return ModelChoice(name=DEMO_MODEL, model=DEMO_MODEL, source="demo")


def _named(config: Config, name: str, source: str, given_by: str) -> ModelChoice:
    if not name.strip():
        raise ConfigError(f"{given_by} needs a model name")
    entry = config.models.get(name)
    if entry is not None:
        return ModelChoice(
            name=name,
            model=entry.model,
            source=source,
            api_base=entry.api_base,
            api_key_env=entry.api_key_env,
            max_context_size=entry.max_context_size,
            reasoning=entry.reasoning,
            vision=entry.vision,
        )
    if name != DEMO_MODEL and "/" not in name:
        close = difflib.get_close_matches(name, [*config.models, DEMO_MODEL], n=1, cutoff=0.7)
        if close:
            raise ConfigError(
                f"unknown model '{name}' given by {given_by}; did you mean '{close[0]}'? "
                f"(a litellm model needs its provider prefix, e.g. 'openai/{name}')"
            )
    return ModelChoice(name=name, model=name, source=source)


OTHER_KEY_VARS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "ANTHROPIC_API_KEY": ("ANTHROPIC_AUTH_TOKEN",),
        "GEMINI_API_KEY": ("GOOGLE_API_KEY",),
    }
)
"""Other variables litellm takes a provider's credentials from."""


def key_variable(model: str, api_key_env: str | None = None) -> str:
    """The variable that holds `model`'s key: `api_key_env` when given, else the provider's
    usual one (`openai/gpt-5` → `OPENAI_API_KEY`; a bare Claude name is Anthropic's)."""
    if api_key_env:
        return api_key_env
    provider = model.split("/", 1)[0] if "/" in model else ""
    if not provider and "claude" in model.lower():
        provider = "anthropic"
    return f"{provider.upper()}_API_KEY" if provider else "the API key"


def missing_key(
    model: str,
    api_key_env: str | None = None,
    api_base: str | None = None,
    env: Mapping[str, str] | None = None,
) -> str | None:
    """The variable to set when `model` has no key in `env` (default `os.environ`), or None.

    A model with its own `api_key_env` needs that variable; a hosted provider's model without
    one (and without an `api_base` of its own) needs the provider's usual variable or one of
    `OTHER_KEY_VARS`; any other model (a local server, an unknown provider) needs none."""
    env = os.environ if env is None else env
    if model == DEMO_MODEL:
        return None
    var = key_variable(model, api_key_env)
    if api_key_env:
        return None if env.get(var) else var
    if api_base is not None or var not in API_KEY_ENV_VARS:
        return None
    names = (var, *OTHER_KEY_VARS.get(var, ()))
    return None if any(env.get(name) for name in names) else var


def check_model(config: Config, name: str, env: Mapping[str, str] | None = None) -> ModelChoice:
    """The model `/model NAME` switches to; ConfigError (one sentence) when `name` is neither an
    alias, `demo`, nor a `provider/model` string, or when its key is not set."""
    name = name.strip()
    if name not in config.models and name != DEMO_MODEL and "/" not in name:
        known = ", ".join([*config.models, DEMO_MODEL])
        close = difflib.get_close_matches(name, [*config.models, DEMO_MODEL], n=1, cutoff=0.7)
        hint = f"did you mean '{close[0]}'? " if close else ""
        raise ConfigError(
            f"unknown model '{name}': {hint}use an alias ({known}) "
            f"or a litellm model with its provider, e.g. 'openai/{name}'"
        )
    choice = _named(config, name, "flag", "/model")
    var = missing_key(choice.model, choice.api_key_env, choice.api_base, env)
    if var is not None:
        raise ConfigError(f"no API key for {choice.name}: set {var}")
    return choice


def _ollama_url(env: Mapping[str, str]) -> str:
    """Where Ollama is looked for; an empty string means "do not look"."""
    return env.get(OLLAMA_URL_ENV, DEFAULT_OLLAMA_URL).strip()


def probe_ollama(url: str | None = None, timeout: float = 0.3) -> str | None:
    """The litellm name of a model served by a local Ollama (`ollama_chat/NAME`), or None.

    `url` defaults to `$KODE_TUI_OLLAMA_URL`, else `http://127.0.0.1:11434`; an empty value
    disables the probe without any connection. Blocking: run it in a thread.
    """
    base = _ollama_url(os.environ) if url is None else url.strip()
    if not base:
        return None
    # Imported here: urllib pulls in ssl and http, which the app's start-up never needs.
    import urllib.request
    from http.client import HTTPException

    # A proxy from http_proxy must not see (or break) a request meant for this machine.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"{base.rstrip('/')}/api/tags", timeout=timeout) as response:
            tags = json.loads(response.read(1_000_000))
        names = [str(model["name"]) for model in tags["models"]]
    except (OSError, HTTPException, ValueError, KeyError, TypeError):
        return None
    # Embedding models are listed too, but cannot chat.
    chat = [name for name in names if "embed" not in name]
    return f"ollama_chat/{chat[0]}" if chat else None
