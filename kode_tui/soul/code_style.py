"""The code style a project declares in its config files: the `codeStyle` block of the project
context.

`code_style` reads the work dir's Python (pyproject.toml, ruff, setup.cfg, flake8, mypy, pytest),
EditorConfig, JavaScript (package.json, tsconfig.json, Prettier, ESLint), Go and Rust configs;
`STYLE_FILES` names every file it looks at, so a watcher knows when the block is out of date.

JSON files are read as strict JSON and YAML files with PyYAML: a tsconfig.json with comments
is shown as "TypeScript" without its options, since reading JSONC took a hand-written parser
for two details the model can read from the file itself.
"""

from __future__ import annotations

import configparser
import json
import logging
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kode_tui.soul.project_files import read_text

log = logging.getLogger(__name__)

PRETTIER_FILES = (
    ".prettierrc",
    ".prettierrc.json",
    ".prettierrc.json5",
    ".prettierrc.yaml",
    ".prettierrc.yml",
    ".prettierrc.toml",
    ".prettierrc.js",
    ".prettierrc.cjs",
    ".prettierrc.mjs",
    "prettier.config.js",
    "prettier.config.cjs",
    "prettier.config.mjs",
)
ESLINT_FILES = (
    "eslint.config.js",
    "eslint.config.mjs",
    "eslint.config.cjs",
    "eslint.config.ts",
    ".eslintrc",
    ".eslintrc.json",
    ".eslintrc.js",
    ".eslintrc.cjs",
    ".eslintrc.yaml",
    ".eslintrc.yml",
)
STYLE_FILES = (
    "pyproject.toml",
    "ruff.toml",
    ".ruff.toml",
    "setup.cfg",
    ".flake8",
    "mypy.ini",
    "pytest.ini",
    ".editorconfig",
    "package.json",
    "tsconfig.json",
    "go.mod",
    "Cargo.toml",
    *PRETTIER_FILES,
    *ESLINT_FILES,
)


def code_style(work_dir: Path) -> str | None:
    """One line per tool or language whose config the work dir holds, or None if it holds none.

    Blocking; never raises: a config that cannot be read or parsed is left out.
    """
    lines: list[str] = []
    for detect in (_python_style, _editorconfig_style, _js_style, _go_style, _rust_style):
        try:
            lines.extend(detect(work_dir))
        except Exception:
            log.debug("code style: %s failed", detect.__name__, exc_info=True)
    return "\n".join(lines) or None


def _load_toml(path: Path) -> dict[str, Any] | None:
    text = read_text(path)
    if text is None:
        return None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        log.debug("bad TOML in %s", path, exc_info=True)
        return None


def _load_ini(path: Path) -> configparser.ConfigParser | None:
    text = read_text(path)
    if text is None:
        return None
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text, source=str(path))
    except configparser.Error:
        log.debug("bad INI in %s", path, exc_info=True)
        return None
    return parser


def _table(data: Any, *keys: str) -> dict[str, Any]:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else {}


def _python_style(work_dir: Path) -> Iterator[str]:
    tool = _table(_load_toml(work_dir / "pyproject.toml"), "tool")
    setup_cfg = _load_ini(work_dir / "setup.cfg")
    tools: list[str] = []

    ruff = tool.get("ruff")
    for name in ("ruff.toml", ".ruff.toml"):
        if not isinstance(ruff, dict):
            ruff = _load_toml(work_dir / name)
    if isinstance(ruff, dict):
        details = []
        if "line-length" in ruff:
            details.append(f"line length {ruff['line-length']}")
        select = _table(ruff, "lint").get("select", ruff.get("select"))
        if isinstance(select, list) and select:
            details.append("rules " + ", ".join(map(str, select)))
        tools.append(_with_details("ruff", details))

    black = tool.get("black")
    if isinstance(black, dict):
        length = black.get("line-length")
        tools.append(_with_details("black", [f"line length {length}"] if length else []))

    for ini in (setup_cfg, _load_ini(work_dir / ".flake8")):
        if ini is not None and ini.has_section("flake8"):
            length = ini["flake8"].get("max-line-length") or ini["flake8"].get("max_line_length")
            tools.append(_with_details("flake8", [f"max line length {length}"] if length else []))
            break

    mypy = tool.get("mypy")
    for ini in (_load_ini(work_dir / "mypy.ini"), setup_cfg):
        if not isinstance(mypy, dict) and ini is not None and ini.has_section("mypy"):
            mypy = {"strict": ini["mypy"].getboolean("strict", fallback=False)}
    if isinstance(mypy, dict):
        tools.append("mypy strict" if mypy.get("strict") is True else "mypy")

    if (
        "pytest" in tool
        or (work_dir / "pytest.ini").is_file()
        or (setup_cfg is not None and setup_cfg.has_section("tool:pytest"))
    ):
        tools.append("pytest")

    if tools:
        yield "- Python: " + ", ".join(tools)


def _with_details(name: str, details: list[str]) -> str:
    return f"{name} ({'; '.join(details)})" if details else name


def _editorconfig_style(work_dir: Path) -> Iterator[str]:
    text = read_text(work_dir / ".editorconfig")
    if text is None:
        return
    sections: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
        elif current is not None and "=" in line:
            key, value = line.split("=", 1)
            current[key.strip().lower()] = value.strip()
    # "[*]" first: it applies to everything; a few more sections say what differs.
    ordered = sorted(sections, key=lambda name: name != "*")
    shown = 0
    for name in ordered:
        details = _editorconfig_details(sections[name])
        if details and shown < 4:
            shown += 1
            yield f"- EditorConfig [{name}]: {', '.join(details)}"


def _editorconfig_details(keys: dict[str, str]) -> list[str]:
    details = []
    style, size = keys.get("indent_style", "").lower(), keys.get("indent_size")
    if style == "tab":
        details.append("indent with tabs")
    elif style == "space":
        details.append(f"indent {size} spaces" if size else "indent with spaces")
    elif size:
        details.append(f"indent size {size}")
    if keys.get("max_line_length"):
        details.append(f"max line length {keys['max_line_length']}")
    return details


def _js_style(work_dir: Path) -> Iterator[str]:
    package = _load_json(work_dir / "package.json")
    package = package if isinstance(package, dict) else {}

    prettier_line = _prettier_style(work_dir, package)
    if prettier_line:
        yield prettier_line

    tsconfig = work_dir / "tsconfig.json"
    if tsconfig.is_file():
        options = _table(_load_json(tsconfig), "compilerOptions")
        details = []
        if options.get("strict") is True:
            details.append("strict mode")
        if options.get("target"):
            details.append(f"target {options['target']}")
        yield "- TypeScript" + (f": {', '.join(details)}" if details else "")

    for name in ESLINT_FILES:
        path = work_dir / name
        if path.is_file():
            yield _eslint_line(_load(path), name)
            break
    else:
        if isinstance(package.get("eslintConfig"), dict):
            yield _eslint_line(package["eslintConfig"], "package.json")


def _eslint_line(config: Any, source: str) -> str:
    extends = config.get("extends") if isinstance(config, dict) else None
    if isinstance(extends, str):
        extends = [extends]
    if isinstance(extends, list) and extends:
        return f"- ESLint (extends {', '.join(map(str, extends))})"
    return f"- ESLint ({source})"


def _prettier_style(work_dir: Path, package: dict[str, Any]) -> str | None:
    options: Any = None
    source = ""
    for name in PRETTIER_FILES:
        path = work_dir / name
        if path.is_file():
            options, source = _load(path), name
            break
    if not source:
        if "prettier" not in package:
            return None
        options, source = package["prettier"], "package.json"
    if isinstance(options, str):
        return f"- Prettier (shared config {options})"
    details = _prettier_details(options) if isinstance(options, dict) else []
    return "- Prettier" + (f": {', '.join(details)}" if details else f" ({source})")


def _prettier_details(options: dict[str, Any]) -> list[str]:
    details = []
    if "semi" in options:
        details.append("semicolons" if options["semi"] else "no semicolons")
    if "singleQuote" in options:
        details.append("single quotes" if options["singleQuote"] else "double quotes")
    if options.get("useTabs") is True:
        details.append("tabs")
    if "tabWidth" in options:
        details.append(f"tab width {options['tabWidth']}")
    if "printWidth" in options:
        details.append(f"print width {options['printWidth']}")
    if "trailingComma" in options:
        details.append(f"trailing commas {options['trailingComma']}")
    return details


def _go_style(work_dir: Path) -> Iterator[str]:
    text = read_text(work_dir / "go.mod")
    if text is None:
        return
    details = []
    for line in text.splitlines():
        words = line.split()
        if len(words) == 2 and words[0] in {"module", "go"}:
            details.append(f"{words[0]} {words[1]}")
    yield "- Go" + (f": {', '.join(details)}" if details else "") + " (gofmt)"


def _rust_style(work_dir: Path) -> Iterator[str]:
    cargo = _load_toml(work_dir / "Cargo.toml")
    if cargo is None:
        return
    edition = _table(cargo, "package").get("edition") or _table(cargo, "workspace", "package").get(
        "edition"
    )
    yield "- Rust" + (f": edition {edition}" if edition else "") + " (rustfmt)"


def _load(path: Path) -> Any:
    """The data of a TOML, JSON or YAML config, by its name, else None (a JS config is code)."""
    if path.suffix == ".toml":
        return _load_toml(path)
    if path.suffix in {".json", ".json5"}:
        return _load_json(path)
    if path.suffix in {".yaml", ".yml"}:
        return _load_yaml(path)
    if not path.suffix:  # ".prettierrc" and ".eslintrc" hold JSON or YAML
        data = _load_json(path)
        return data if data is not None else _load_yaml(path)
    return None


def _load_json(path: Path) -> Any:
    text = read_text(path)
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        log.debug("bad JSON in %s", path, exc_info=True)
        return None


def _load_yaml(path: Path) -> Any:
    text = read_text(path)
    if text is None:
        return None
    import yaml  # here: only a project with a YAML config pays the 20 ms this import takes

    # libyaml's safe loader only: it caps the nesting, while PyYAML's pure-Python parser spends
    # seconds on each kilobyte of nested brackets a hostile repo can write.
    safe_loader = getattr(yaml, "CSafeLoader", None)
    if safe_loader is None:
        log.debug("PyYAML has no libyaml: %s not read", path)
        return None
    try:
        # An alias repeats a node without repeating its text: a small file of nested aliases
        # prints as gigabytes. No Prettier or ESLint config needs one.
        if any(isinstance(event, yaml.AliasEvent) for event in yaml.parse(text, safe_loader)):
            log.debug("YAML aliases in %s: not read", path)
            return None
        return yaml.load(text, safe_loader)
    except yaml.YAMLError:
        log.debug("bad YAML in %s", path, exc_info=True)
        return None
