"""The code style a project declares in its config files: the `codeStyle` block of the project
context.

`code_style` reads the work dir's Python (pyproject.toml, ruff, setup.cfg, flake8, mypy, pytest),
EditorConfig, JavaScript (package.json, tsconfig.json, Prettier, ESLint), Go and Rust configs;
`STYLE_FILES` names every file it looks at, so a watcher knows when the block is out of date.

JSON files are read as strict JSON and YAML files with libyaml (`project_files`). A file that
cannot be read as data (a tsconfig.json with comments, which took a hand-written parser for
two details the model can read from the file itself; a hostile repo's nesting or aliases) is
one line of the block saying so; the other files are read as if it were absent.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kode_tui.soul.project_files import (
    DataError,
    parse_json,
    parse_toml,
    parse_yaml,
    read_data_text,
    read_text,
    scalar_text,
)

if TYPE_CHECKING:
    import configparser

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


MAX_VALUE_CHARS = 80
"""A value quoted from a config (`target ES2022`) is a word or two; a longer one is left out."""


def code_style(work_dir: Path) -> str | None:
    """One line per tool or language whose config the work dir holds, then one per config that
    could not be read (`- tsconfig.json not read: it is not valid JSON (line 2)`); None if it
    holds none.

    Blocking; never raises.
    """
    configs = _Configs(work_dir)
    lines: list[str] = []
    for detect in (_python_style, _editorconfig_style, _js_style, _go_style, _rust_style):
        try:
            lines.extend(detect(configs))
        except Exception:
            log.debug("code style: %s failed", detect.__name__, exc_info=True)
    lines += [f"- {name} not read: it {why}" for name, why in configs.refused.items()]
    return "\n".join(lines) or None


class _Configs:
    """The config files of one work dir, each parsed once; those that could not be are kept in
    `refused` with the reason."""

    def __init__(self, work_dir: Path) -> None:
        self.work_dir = work_dir
        self.refused: dict[str, str] = {}
        self._parsed: dict[str, Any] = {}

    def exists(self, name: str) -> bool:
        return (self.work_dir / name).is_file()

    def text(self, name: str) -> str | None:
        """The file's text for a line-by-line reading (`.editorconfig`, `go.mod`)."""
        return read_text(self.work_dir / name)

    def data(self, name: str) -> Any:
        """The data of a TOML, JSON or YAML config, by its name; None when the file is absent,
        is JavaScript (code, not data) or could not be read (then it is in `refused`)."""
        if name not in self._parsed:
            self._parsed[name] = self._read(name)
        return self._parsed[name]

    def table(self, name: str) -> dict[str, Any] | None:
        data = self.data(name)
        return data if isinstance(data, dict) else None

    def ini(self, name: str) -> configparser.ConfigParser | None:
        text = self.text(name)
        if text is None:
            return None
        import configparser  # for a repo with a setup.cfg or a .editorconfig alone (~1 ms)

        parser = configparser.ConfigParser(interpolation=None, strict=False)
        try:
            parser.read_string(text, source=name)
        except configparser.Error as error:
            self.refused[name] = f"is not a valid INI file ({error.__class__.__name__})"
            return None
        return parser

    def _read(self, name: str) -> Any:
        suffix = Path(name).suffix
        parse: Callable[[str], Any]
        if suffix == ".toml":
            parse = parse_toml
        elif suffix in {".json", ".json5"}:
            parse = parse_json
        elif suffix in {".yaml", ".yml"}:
            parse = parse_yaml
        elif not suffix:  # ".prettierrc" and ".eslintrc" hold JSON or YAML
            parse = _json_or_yaml
        else:
            return None
        try:
            text = read_data_text(self.work_dir / name)
            return None if text is None else parse(text)
        except DataError as error:
            log.info("%s not read: it %s", self.work_dir / name, error)
            self.refused[name] = str(error)
            return None


def _json_or_yaml(text: str) -> Any:
    try:
        return parse_json(text)
    except DataError as error:
        if not error.syntax:
            raise
    return parse_yaml(text)


def _table(data: Any, *keys: str) -> dict[str, Any]:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else {}


def _word(value: Any) -> str | None:
    """A config's value as a word of the block: a number, a flag or a short string (a repo's
    config may put a list of a million items where a line length goes)."""
    text = scalar_text(value)
    return text if text is not None and len(text) <= MAX_VALUE_CHARS else None


def _words(value: Any) -> list[str]:
    """A list of words (`rules E, F`); a single word is a list of one."""
    items = value if isinstance(value, list) else [value]
    return [word for word in map(_word, items[:50]) if word]


def _python_style(configs: _Configs) -> Iterator[str]:
    tool = _table(configs.data("pyproject.toml"), "tool")
    setup_cfg = configs.ini("setup.cfg")
    tools: list[str] = []

    ruff = tool.get("ruff")
    for name in ("ruff.toml", ".ruff.toml"):
        if not isinstance(ruff, dict):
            ruff = configs.table(name)
    if isinstance(ruff, dict):
        details = []
        length = _word(ruff.get("line-length"))
        if length:
            details.append(f"line length {length}")
        select = _words(_table(ruff, "lint").get("select", ruff.get("select")))
        if select:
            details.append("rules " + ", ".join(select))
        tools.append(_with_details("ruff", details))

    black = tool.get("black")
    if isinstance(black, dict):
        length = _word(black.get("line-length"))
        tools.append(_with_details("black", [f"line length {length}"] if length else []))

    for ini in (setup_cfg, configs.ini(".flake8")):
        if ini is not None and ini.has_section("flake8"):
            section = ini["flake8"]
            length = _word(section.get("max-line-length") or section.get("max_line_length"))
            tools.append(_with_details("flake8", [f"max line length {length}"] if length else []))
            break

    mypy = tool.get("mypy")
    for ini in (configs.ini("mypy.ini"), setup_cfg):
        if not isinstance(mypy, dict) and ini is not None and ini.has_section("mypy"):
            try:
                strict = ini["mypy"].getboolean("strict", fallback=False)
            except ValueError:
                strict = False
            mypy = {"strict": strict}
    if isinstance(mypy, dict):
        tools.append("mypy strict" if mypy.get("strict") is True else "mypy")

    if (
        "pytest" in tool
        or configs.exists("pytest.ini")
        or (setup_cfg is not None and setup_cfg.has_section("tool:pytest"))
    ):
        tools.append("pytest")

    if tools:
        yield "- Python: " + ", ".join(tools)


def _with_details(name: str, details: list[str]) -> str:
    return f"{name} ({'; '.join(details)})" if details else name


def _editorconfig_style(configs: _Configs) -> Iterator[str]:
    text = configs.text(".editorconfig")
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
    style, size = keys.get("indent_style", "").lower(), _word(keys.get("indent_size"))
    if style == "tab":
        details.append("indent with tabs")
    elif style == "space":
        details.append(f"indent {size} spaces" if size else "indent with spaces")
    elif size:
        details.append(f"indent size {size}")
    length = _word(keys.get("max_line_length"))
    if length:
        details.append(f"max line length {length}")
    return details


def _js_style(configs: _Configs) -> Iterator[str]:
    package = configs.table("package.json") or {}

    prettier_line = _prettier_style(configs, package)
    if prettier_line:
        yield prettier_line

    if configs.exists("tsconfig.json"):
        options = _table(configs.data("tsconfig.json"), "compilerOptions")
        details = []
        if options.get("strict") is True:
            details.append("strict mode")
        target = _word(options.get("target"))
        if target:
            details.append(f"target {target}")
        yield "- TypeScript" + (f": {', '.join(details)}" if details else "")

    for name in ESLINT_FILES:
        if configs.exists(name):
            yield _eslint_line(configs.data(name), name)
            break
    else:
        if isinstance(package.get("eslintConfig"), dict):
            yield _eslint_line(package["eslintConfig"], "package.json")


def _eslint_line(config: Any, source: str) -> str:
    extends = _words(config.get("extends")) if isinstance(config, dict) else []
    if extends:
        return f"- ESLint (extends {', '.join(extends)})"
    return f"- ESLint ({source})"


def _prettier_style(configs: _Configs, package: dict[str, Any]) -> str | None:
    options: Any = None
    source = ""
    for name in PRETTIER_FILES:
        if configs.exists(name):
            options, source = configs.data(name), name
            break
    if not source:
        if "prettier" not in package:
            return None
        options, source = package["prettier"], "package.json"
    if isinstance(options, str):
        shared = _word(options)
        return f"- Prettier (shared config {shared})" if shared else f"- Prettier ({source})"
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
    for key, label in (
        ("tabWidth", "tab width"),
        ("printWidth", "print width"),
        ("trailingComma", "trailing commas"),
    ):
        value = _word(options.get(key))
        if value:
            details.append(f"{label} {value}")
    return details


def _go_style(configs: _Configs) -> Iterator[str]:
    text = configs.text("go.mod")
    if text is None:
        return
    details = []
    for line in text.splitlines():
        words = line.split()
        if len(words) == 2 and words[0] in {"module", "go"} and _word(words[1]):
            details.append(f"{words[0]} {words[1]}")
    yield "- Go" + (f": {', '.join(details)}" if details else "") + " (gofmt)"


def _rust_style(configs: _Configs) -> Iterator[str]:
    cargo = configs.table("Cargo.toml")
    if cargo is None:
        return
    edition = _word(
        _table(cargo, "package").get("edition")
        or _table(cargo, "workspace", "package").get("edition")
    )
    yield "- Rust" + (f": edition {edition}" if edition else "") + " (rustfmt)"
