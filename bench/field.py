"""The field: how kode-tui, kimi-cli and each peer is started against `FieldServer` (issue 31).

Each `Contestant` knows how to write its scratch home's configuration for a server, its command,
its environment (`env -i`-style: PATH, TERM, LANG, HOME and what it needs, as
`../shared/peers.md` says) and how its screen reads "the prompt takes keys". Peers are found
under a folder given by `--peers DIR` or `$KODE_BENCH_PEERS` (default `/tmp/peers`): npm packages
in `DIR/npm` (`npm install --prefix DIR/npm @anthropic-ai/claude-code@2.1.332 @openai/codex@0.171.0
opencode-ai@1.18.33`) and Mistral Vibe in a Python 3.12 venv `DIR/vibe` (`pip install
mistral-vibe==3.0.2`); a contestant whose program is missing is skipped with that reason.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from field_server import MAIN_MODEL, SMALL_MODEL, FieldServer

PEERS_ENV = "KODE_BENCH_PEERS"
DEFAULT_PEERS = Path("/tmp/peers")
KEY = "sk-bench-0123456789abcdefghijklmnopqrstuvwxyz"
KIMI_MAIN = (
    "import sys; from kimi_cli.__main__ import run_original_cli; "
    "sys.exit(run_original_cli(sys.argv[1:]))"
)
CODEX_BIN = "@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"
# What a new session's panes show once drawn: each pane's title and the body a new session has.
# The gauge's figures come with the agent, in place on the same rows: its body is either.
PANES_DRAWN = (
    "Conversation",
    "Context",
    "Checkpoints",
    "no checkpoints yet",
    "History",
    "no rotated contexts",
)
GAUGE_DRAWN = ("no token count yet", "compacts at")


def panes_drawn(screen: str) -> bool:
    """Whether `screen` shows every pane of a new kode-tui session."""
    return all(part in screen for part in PANES_DRAWN) and any(g in screen for g in GAUGE_DRAWN)


@dataclass
class Contestant:
    """One program of the field, set up in `home` to talk to `server` about `work`."""

    name: str
    argv: list[str]
    env: dict[str, str]
    ready: Callable[[str], bool]
    """True once the screen shows a prompt that takes keys."""
    missing: str | None = None
    """Why it cannot run here (then it is skipped), or None."""
    panes: Callable[[str], bool] | None = None
    """True once every pane shows its content (kode-tui: Conversation, Checkpoints, History)."""
    launch_only: bool = False
    """Only the launch rows are measured (the bare Textual app: it has no model)."""


def base_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment every contestant gets (peers.md): nothing of ours leaks in."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "TERM": "xterm-256color",
        "LANG": "C.UTF-8",
        "HOME": str(home),
        **extra,
    }


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def kode(home: Path, work: Path, server: FieldServer) -> Contestant:
    _write(
        home / "config.toml",
        f'default_model = "local"\n[models.local]\nmodel = "openai/{MAIN_MODEL}"\n'
        f'api_base = "{server.url}"\napi_key_env = "BENCH_MODEL_KEY"\n',
    )
    program = str(Path(sys.executable).parent / "kode-tui")
    # The code of this checkout (a worktree's, too), not the one the venv was installed from.
    env = base_env(
        home,
        KODE_TUI_HOME=str(home),
        KODE_TUI_OLLAMA_URL="",
        BENCH_MODEL_KEY=KEY,
        PYTHONPATH=str(Path(__file__).resolve().parent.parent),
    )
    return Contestant(
        "kode-tui",
        [program, str(work)],
        env,
        lambda s: "palette" in s,
        panes=panes_drawn,
    )


def bare_textual(home: Path, work: Path, server: FieldServer) -> Contestant:
    """The issue's reference for the first full screen: Header, TextArea, Footer."""
    program = [sys.executable, str(Path(__file__).resolve().parent / "minimal_app.py")]
    return Contestant(
        "bare Textual app", program, base_env(home), lambda s: "palette" in s, launch_only=True
    )


def kimi(home: Path, work: Path, server: FieldServer, python: Path | None) -> Contestant:
    config = home / "kimi.toml"
    _write(
        config,
        'default_model = "local"\ntelemetry = false\n'
        f'[providers.local]\ntype = "openai_legacy"\nbase_url = "{server.url}"\n'
        f'api_key = "{KEY}"\n[models.local]\nprovider = "local"\n'
        f'model = "{MAIN_MODEL}"\nmax_context_size = 128000\n',
    )
    env = base_env(home, KIMI_SHARE_DIR=str(home / "kimi"), KIMI_CLI_NO_AUTO_UPDATE="1")
    argv = [str(python), "-c", KIMI_MAIN, "--config-file", str(config), "-w", str(work)]
    found = python is not None and os.access(python, os.X_OK)
    return Contestant(
        "kimi-cli",
        argv,
        env,
        lambda s: " input " in s,
        missing=None if found else "no kimi-cli (--kimi PYTHON, ../shared/bench/setup_kimi.sh)",
    )


def vibe(home: Path, work: Path, server: FieldServer, peers: Path) -> Contestant:
    program = peers / "vibe" / "bin" / "vibe"
    _write(
        home / ".vibe" / "config.toml",
        'active_model = "fake"\nenable_telemetry = false\nenable_update_checks = false\n'
        "enable_auto_update = false\nenable_notifications = false\n"
        f'[[providers]]\nname = "local"\napi_base = "{server.url}"\n'
        'api_key_env_var = "FAKE_KEY"\napi_style = "openai"\nbackend = "generic"\n'
        f'[[models]]\nname = "{MAIN_MODEL}"\nprovider = "local"\nalias = "fake"\n',
    )
    env = base_env(home, FAKE_KEY=KEY)
    return Contestant(
        "Vibe",
        [str(program)],
        env,
        lambda s: ">" in s and "fake" in s,
        missing=None if program.exists() else f"not installed ({program})",
    )


def claude(home: Path, work: Path, server: FieldServer, peers: Path) -> Contestant:
    program = peers / "npm" / "node_modules" / ".bin" / "claude"
    state = {
        "hasCompletedOnboarding": True,
        "theme": "dark",
        "customApiKeyResponses": {"approved": [KEY[-20:]], "rejected": []},
        "projects": {str(work): {"hasTrustDialogAccepted": True}},
    }
    _write(home / ".claude.json", json.dumps(state))
    env = base_env(
        home,
        ANTHROPIC_BASE_URL=server.root,
        ANTHROPIC_API_KEY=KEY,
        ANTHROPIC_MODEL=MAIN_MODEL,
        ANTHROPIC_SMALL_FAST_MODEL=SMALL_MODEL,
        ANTHROPIC_DEFAULT_HAIKU_MODEL=SMALL_MODEL,
        DISABLE_AUTOUPDATER="1",
        DISABLE_TELEMETRY="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
    )
    return Contestant(
        "Claude Code",
        [str(program)],
        env,
        lambda s: "\u276f" in s and "shift+tab" in s,
        missing=None if program.exists() else f"not installed ({program})",
    )


def codex(home: Path, work: Path, server: FieldServer, peers: Path) -> Contestant:
    program = peers / "npm" / "node_modules" / CODEX_BIN
    _write(
        home / ".codex" / "config.toml",
        f'model = "{MAIN_MODEL}"\nmodel_provider = "local"\ncheck_for_update_on_startup = false\n'
        f'[model_providers.local]\nname = "local"\nbase_url = "{server.url}"\n'
        'env_key = "FAKE_KEY"\nwire_api = "responses"\n'
        f'[projects."{work}"]\ntrust_level = "trusted"\n[analytics]\nenabled = false\n',
    )
    env = base_env(home, FAKE_KEY=KEY)
    return Contestant(
        "Codex",
        [str(program), "--disable", "daemon_auto_start"],
        env,
        lambda s: "\u203a " in s and "for shortcuts" in s,
        missing=None if program.exists() else f"not installed ({program})",
    )


def opencode(home: Path, work: Path, server: FieldServer, peers: Path) -> Contestant:
    program = peers / "npm" / "node_modules" / ".bin" / "opencode"
    config = {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "model": f"local/{MAIN_MODEL}",
        "small_model": f"local/{SMALL_MODEL}",
        "provider": {
            "local": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "local",
                "options": {"baseURL": server.url, "apiKey": KEY},
                "models": {MAIN_MODEL: {"name": MAIN_MODEL}, SMALL_MODEL: {"name": SMALL_MODEL}},
            }
        },
    }
    _write(home / ".config" / "opencode" / "opencode.json", json.dumps(config))
    # Its first start in a new HOME installs the provider's npm package (seconds): the cache is
    # kept beside the peers, as a user's is after their first run.
    env = base_env(
        home,
        OPENCODE_DISABLE_MODELS_FETCH="1",
        OPENCODE_DISABLE_AUTOUPDATE="1",
        XDG_CACHE_HOME=str(peers / "cache"),
    )
    return Contestant(
        "OpenCode",
        [str(program)],
        env,
        lambda s: "ctrl+p" in s or "tab agents" in s,
        missing=None if program.exists() else f"not installed ({program})",
    )


PEERS = (vibe, claude, codex, opencode)


def peers_dir(given: Path | None) -> Path:
    """Where the peers are installed: `--peers`, else $KODE_BENCH_PEERS, else /tmp/peers."""
    if given is not None:
        return given
    return Path(os.environ[PEERS_ENV]) if os.environ.get(PEERS_ENV) else DEFAULT_PEERS
