"""What "approve for session" covers for a Shell command, and whether it reaches outside.

A session approval covers exactly what its label says. A command is widened to "`git log` with
any arguments inside the work dir" only when its words are plain and its arguments cannot carry
code: the command is split with `shlex` (bash's quoting rules, operators as their own tokens), and
anything else gets the scope "exactly this command":

- operators and redirections (`;`, `&&`, `|`, `&`, `>`, `<`, here-docs, newlines), command and
  process substitution, parameter expansion (`$`, backticks), globs and braces, assignments
  (`FOO=1 cmd`), shell keywords, control characters, and anything `shlex` cannot split;
- runners, whose arguments are another command (`sudo`, `env`, `xargs`, `bash`, `ssh`, `awk`,
  `sed`, …), and interpreters with inline code: an interpreter is widened only as
  `python3 script.py` or `python3 -m module`, so approving `python3 -V` never covers `python3 -c`;
- `git` with global options other than a few harmless ones (`-c`, `-C`, `--config-env`,
  `--exec-path`, `--git-dir`, …), aliases and subcommands not known to be safe (`config`,
  `submodule`, `rebase`, `fetch`, …), and options that run programs (`--upload-pack`, `-O`);
- options that run programs (`find -exec/-execdir/-ok/-okdir/-delete/-fprint*`, `rg --pre`,
  `tar -I/--to-command`, `rsync -e`, `make -f/--eval/VAR=value`, `fd -x`, `cmake -E`, and any
  long option whose name says exec, command, program, script, shell, eval, hook, pager, editor,
  filter, plugin, config…), also abbreviated as getopt_long and git take them (`--to-comm`,
  `git grep --open=sh`) and inside short bundles (`git grep -lOsh`);
- an argument that names a shell, interpreter or runner (`chrt 0 sh -c …`, `hyperfine 'sh …'`),
  except for programs whose arguments are only data (`grep`, `ls`, `git`, …);
- archive extraction and patches (`tar -x`, `tar -P`, `unzip`, `cpio`, `patch`): what they write
  is named inside the file; installers with arguments (`npm install PKG`, `pip install ./x`,
  `uv pip install …`): only the bare `npm install` is widened; `python3 -m` modules whose
  arguments are code (`timeit`, `pdb`, `pip`, …); commands that schedule others (`crontab`);
- a line continuation (backslash-newline), which bash removes before splitting words.

Separately, an argument that names a path outside the work dir (absolute, `~`, `..` that escapes,
a symlink that leads out, a glob that could) makes the call ask every time, whatever was approved,
and one that names a file that can make tools run code (`.git/hooks/…`, `.envrc`) asks every time
in every mode, as a WriteFile of it would; so does a command that writes git's config or hooks
without naming the file (`git config KEY VALUE`, `pre-commit install`, `husky`, `git lfs
install`). Paths are resolved as bash does: `link/..` goes through the link, and `$HOME`
(`${NAME}`) is replaced by its value.
The scope key is computed by `scope_of` both when an approval is remembered and when a later
command is checked, so a key stored by an older version (e.g. the broad `shell:python3`) only
covers commands this function gives that very key.
"""

from __future__ import annotations

import glob
import os
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kode_tui.tools.protected import holds_protected, is_protected

EXACT_PREFIX = "shell-exact:"
WIDE_PREFIX = "shell:"
EXACT_LABEL = "exactly this command"

_OPERATOR_CHARS = "();<>|&\n"
_EXPANSION = re.compile(r"[$`*?\[\]{}]")
_PLAIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+:@%-]*")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_URL = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")
_DOT_GLOB = re.compile(r"(^|/)\.+[*?\[]")

_KEYWORDS = frozenset(
    [
        "if",
        "then",
        "else",
        "elif",
        "fi",
        "for",
        "while",
        "until",
        "do",
        "done",
        "case",
        "esac",
        "function",
        "select",
        "time",
        "coproc",
        "[[",
        "]]",
        "{",
        "}",
        "!",
        "in",
    ]
)

RUNNERS = frozenset(
    {
        # privilege and process wrappers: what follows is the real command
        "sudo", "doas", "su", "pkexec", "runuser", "env", "xargs", "nohup", "time", "timeout",
        "nice", "ionice", "taskset", "stdbuf", "setsid", "chroot", "unshare", "nsenter", "flock",
        "watch", "parallel", "entr", "script", "strace", "ltrace", "gdb", "valgrind", "fakeroot",
        # shell builtins that run or change what runs
        "eval", "exec", "command", "builtin", "source", ".", "trap", "enable", "alias", "hash",
        # shells and remote shells
        "bash", "sh", "zsh", "dash", "ksh", "fish", "csh", "tcsh", "busybox", "ssh", "scp",
        "sftp", "socat",
        # programs whose arguments are a program
        "awk", "gawk", "mawk", "nawk", "sed", "gsed", "expect", "osascript",
        "sqlite3", "psql", "mysql", "vim", "vi", "nvim", "emacs", "ex", "open", "xdg-open",
        # download-and-run
        "npx", "bunx", "pnpx", "uvx", "pipx",
        # more wrappers that run the command in their arguments
        "chrt", "prlimit", "sg", "newgrp", "systemd-run", "run0", "hyperfine", "catchsegv",
        "firejail", "bwrap", "proot", "torsocks", "proxychains", "proxychains4", "rlwrap",
        "unbuffer", "chpst", "setpriv", "nocache", "eatmydata", "faketime", "daemonize",
        "start-stop-daemon", "dbus-run-session", "xvfb-run", "tmux", "screen", "perf", "rr",
        "lldb", "direnv", "mise", "asdf", "conda", "mamba", "micromamba", "pixi", "nvm", "rbenv",
        "pyenv", "cross-env", "dotenv", "env-cmd", "concurrently", "npm-run-all", "run-p",
        "run-s", "nodemon", "watchexec", "cgexec", "numactl", "cpulimit", "trickle", "gosu",
        "su-exec", "at", "batch", "nix", "nix-shell", "vagrant", "sshpass", "mosh", "chronic",
        "ifne", "pee", "lckdo", "mispipe", "runcon", "ssh-agent", "dbus-launch", "flatpak",
        # programs that schedule or install commands to run later
        "crontab", "systemctl", "launchctl",
        # programs that run their argument (`ldd` runs the binary) or run commands given there
        "ldd", "ansible", "duckdb", "clickhouse-local",
        # shells, and interpreters whose arguments are code
        "ash", "mksh", "yash", "posh", "hush", "osh", "ysh", "rc", "es", "xonsh", "nu", "elvish",
        "ipython", "ipython3", "bpython", "ptpython", "jupyter", "dc", "bc", "gnuplot", "octave",
        "m4", "ed", "jrunscript", "qjs", "rhino", "jjs", "ghc", "ghci", "runghc", "runhaskell",
        "clojure", "clj", "bb", "lein", "sbcl", "clisp", "ecl", "ocaml", "nim", "crystal", "zig",
        "dart", "kotlinc", "janet", "fennel", "hy",
        # archive and patch tools: what they write is named inside the archive or the patch
        "unzip", "cpio", "7z", "7za", "7zr", "unrar", "bsdtar", "pax", "ar", "patch",
    }
)  # fmt: skip
"""Commands whose arguments are (or can be) a command or code: never widened."""

_INTERPRETER = re.compile(
    r"(python|pypy|node|nodejs|ruby|perl|php|lua|luajit|rscript|r|pwsh|powershell|julia|tsx|"
    r"ts-node|java|jshell|groovy|scala|kotlin|swift|elixir|erl|escript|racket|guile|tclsh|"
    r"wish|raku|dotnet)[0-9.]*"
)
_PYTHON = re.compile(r"(python|pypy)[0-9.]*")
_INTERPRETER_VARIANT = re.compile(r"python|pypy|graalpy|node|ruby|perl|php|lua|julia|pwsh|tclsh")
"""Names that hold an interpreter's (`python3-dbg`, `micropython`, `python3.12d`, `nodejs22`):
scoped as interpreters too."""

_EXEC_WORDS = (
    "exec", "command", "cmd", "program", "script", "shell", "eval", "hook", "pager", "editor",
    "filter", "plugin", "preload", "rcfile", "init-file", "config", "rsh", "require", "import",
    "load", "wrapper", "interpreter", "action", "upload-pack", "receive-pack",
)  # fmt: skip
"""A long option whose name holds one of these may run a program: never widened."""

_EXEC_OPTIONS: dict[str, tuple[str, ...]] = {
    "find": ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fls"),
    "rg": ("--pre", "--hostname-bin"),
    "curl": ("-K", "--config"),
    "wget": ("-e", "--execute", "--config"),
    "tar": (
        "-I",
        "-F",
        "--to-command",
        "--use-compress-program",
        "--checkpoint-action",
        # extracting writes whatever names the archive holds (`-P`: absolute ones too)
        "--extract",
        "--get",
        "--absolute-names",
        "--info-script",
        "--new-volume-script",
    ),
    "rsync": ("-e", "--rsh", "--rsync-path"),
    "go": ("-exec", "-toolexec", "--exec", "--toolexec"),
    "make": ("-f", "--file", "--makefile", "-C", "--directory", "-E", "--eval", "-I"),
    "cmake": ("-E", "-P", "-C"),
    "fd": ("-x", "-X", "--exec", "--exec-batch"),
    "fdfind": ("-x", "-X", "--exec", "--exec-batch"),
    "less": ("-k", "--lesskey"),
    "pandoc": ("-F", "-L", "--filter", "--lua-filter"),
    **{
        compiler: ("-wrapper", "-fplugin", "-specs", "--specs", "-B", "-Xclang", "-fuse-ld")
        for compiler in ("gcc", "g++", "cc", "c++", "clang", "clang++", "gfortran")
    },
    "man": ("-P", "-H", "--pager", "--html"),
    "zip": ("-TT", "--unzip-command"),
    "git": ("-O", "--open-files-in-pager", "--upload-pack", "--receive-pack", "--exec"),
}
"""Options (as prefixes: `-fprint0`, `-Ifoo`) that make these programs run or write freely.
A long one also counts abbreviated (`--to-comm`): getopt_long and git accept any prefix."""

_EXEC_LETTERS = {"tar": "IFHxP", "rsync": "e", "git": "O", "fd": "xX", "fdfind": "xX"}
"""Short options that name a program (for tar: or extract), also inside a bundle
(`tar -xIzstd`, `rsync -avze`, `git grep -lOsh`)."""

_DATA_TOOLS = frozenset(
    {
        "cat", "grep", "egrep", "fgrep", "rg", "ag", "ack", "ls", "head", "tail", "wc", "which",
        "whereis", "type", "file", "stat", "echo", "printf", "man", "whatis", "apropos", "tree",
        "diff", "cmp", "touch", "mkdir", "rm", "rmdir", "mv", "cp", "ln", "realpath", "readlink",
        "basename", "dirname", "du", "uniq", "cut", "tr", "nl", "tac", "rev", "jq", "git",
    }
)  # fmt: skip
"""Programs whose arguments are only data (their program-running options are in the tables
above): to them an argument `python3` is a name, not a program to run."""

_GIT_SAFE_GLOBALS = frozenset(
    {"--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs", "--no-replace-objects"}
    | {"--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs"}
)
_GIT_WIDENED = frozenset(
    [
        "status",
        "log",
        "diff",
        "show",
        "blame",
        "annotate",
        "shortlog",
        "describe",
        "rev-parse",
        "rev-list",
        "ls-files",
        "ls-tree",
        "cat-file",
        "grep",
        "reflog",
        "branch",
        "tag",
        "add",
        "rm",
        "mv",
        "restore",
        "checkout",
        "switch",
        "stash",
        "commit",
        "reset",
        "clean",
        "merge-base",
        "name-rev",
        "show-ref",
        "for-each-ref",
        "count-objects",
        "whatchanged",
        "diff-tree",
        "diff-files",
        "diff-index",
        "range-diff",
        "cherry",
        "format-patch",
    ]
)
"""git subcommands whose arguments cannot name a program (hooks and drivers come from config,
which only asks: see `kode_tui.tools.protected`)."""

_SUBCOMMAND_TOOLS: dict[str, frozenset[str]] = {
    "npm": frozenset({"exec", "x", "explore", "init", "create", "dlx", "config", "set"}),
    "pnpm": frozenset({"exec", "dlx", "create", "x", "config"}),
    "yarn": frozenset({"exec", "dlx", "node", "create", "config"}),
    "bun": frozenset({"x", "exec", "create", "repl"}),
    "deno": frozenset({"eval", "repl", "run", "x"}),
    "cargo": frozenset({"config"}),
    "go": frozenset({"env", "run", "generate", "tool"}),
    "pip": frozenset({"config"}),
    "pip3": frozenset({"config"}),
    "gem": frozenset({"exec", "open"}),
    "uv": frozenset({"tool"}),
    "poetry": frozenset({"shell", "config"}),
    "docker": frozenset({"run", "exec", "create", "compose", "start", "debug"}),
    "podman": frozenset({"run", "exec", "create", "compose", "start"}),
    "kubectl": frozenset({"exec", "run", "debug", "attach", "cp"}),
}
"""Programs scoped with their subcommand; the subcommands listed run arbitrary programs."""

_NAMED_SUBCOMMANDS = frozenset({"run", "run-script", "task"})
"""`npm run build`: the script's name is part of the scope."""

_INSTALLS = frozenset(
    {"install", "i", "add", "ci", "update", "up", "upgrade", "get", "link", "rebuild", "pip"}
    | {"download", "wheel", "sync"}
)
"""`npm install`, `pip install`, `uv pip install`: with arguments (a package, a URL, `./x`, a
registry) they fetch and run code chosen there, so only the bare command is widened."""

_CODE_MODULES = frozenset(
    {"timeit", "pdb", "cprofile", "profile", "trace", "runpy", "code", "ipython", "pip"}
    | {"asyncio", "idlelib", "sqlite3", "xonsh", "ptpython", "bpython", "webbrowser"}
)
"""`python3 -m MODULE` whose arguments are code (`timeit 'stmt'`, `pdb -c '!cmd'`) or that
installs code (`pip`): never widened."""

_WRAPPERS = {
    "uv": "run",
    "poetry": "run",
    "pdm": "run",
    "pipenv": "run",
    "hatch": "run",
    "rye": "run",
    "bundle": "exec",
}
"""`uv run pytest -q`: scoped as `uv run` + the scope of the command it runs."""

_COPIERS = frozenset({"cp", "mv", "rsync", "ditto", "install", "gcp", "gmv", "rclone"})
"""Programs that write a directory's whole tree somewhere else."""

_SAFE_DEVICES = frozenset(
    {"/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/zero", "/dev/urandom"}
    | {"/dev/random"}
)
_GLOB_LIMIT = 200


@dataclass(frozen=True, slots=True)
class CommandScope:
    """What approving a command for the session would cover."""

    key: str
    """Remembered in state.json, e.g. `shell:git log` or `shell-exact:rm -rf build`."""
    label: str
    """The key in words, e.g. "`git log` with any arguments inside the work dir"."""
    exact: bool
    outside: bool
    """Some argument names a path outside the work dir: the call asks every time."""
    protected: bool = False
    """Some argument names a file that can make tools run code (`kode_tui.tools.protected`):
    the call asks every time, in every mode."""


def scope_of(command: str, work_dir: Path) -> CommandScope:
    """The scope of `command` (see the module docstring), run from `work_dir`."""
    stripped = command.strip()
    tokens = _tokens(stripped)
    # bash drops a backslash-newline (a line continuation) before it splits words; shlex keeps
    # it in a word. Such a command is never widened, and both readings are checked for paths.
    continued = "\\\n" in stripped
    prefix = _prefix(tokens) if tokens and not continued else None
    outside, protected = _paths(tokens if tokens is not None else stripped.split(), work_dir)
    protected = protected or _installs_code(tokens if tokens is not None else stripped.split())
    if continued:
        joined = _tokens(stripped.replace("\\\n", ""))
        more = _paths(joined if joined is not None else stripped.split(), work_dir)
        outside, protected = outside or more[0], protected or more[1]
    if prefix is None:
        key, label = EXACT_PREFIX + stripped, EXACT_LABEL
    else:
        shown = shlex.join(prefix)
        key, label = WIDE_PREFIX + shown, f"`{shown}` with any arguments inside the work dir"
        installer = os.path.basename(prefix[0]).lower() in _SUBCOMMAND_TOOLS
        if installer and len(prefix) == 2 and prefix[1] in _INSTALLS:
            label = f"`{shown}` with no arguments"  # with any, it is an exact scope
    return CommandScope(key, label, prefix is None, outside, protected)


def _tokens(command: str) -> list[str] | None:
    """`command` split as bash would split its words, operators apart; None if it cannot be."""
    if _CONTROL.search(command):
        return None
    lexer = shlex.shlex(command, posix=True, punctuation_chars=_OPERATOR_CHARS)
    lexer.whitespace = " \t"  # a newline separates commands, a carriage return does not
    lexer.whitespace_split = True
    lexer.commenters = ""  # bash's `#` rules differ: keep every character in view
    try:
        return list(lexer)
    except ValueError:  # an unclosed quote
        return None


def _is_operator(token: str) -> bool:
    return bool(token) and all(ch in _OPERATOR_CHARS for ch in token)


def _prefix(words: list[str]) -> list[str] | None:
    """The words that name the scope of a simple command, or None for an exact scope."""
    if any(_is_operator(w) or _EXPANSION.search(w) for w in words):
        return None
    program = words[0]
    # macOS file systems ignore case: `GIT` and `Python3` run git and python3.
    name = os.path.basename(program).lower()
    args = words[1:]
    if "=" in program or program in _KEYWORDS or name in RUNNERS or not _PLAIN.fullmatch(name):
        return None
    if any(_runs_programs(name, arg) for arg in args):
        return None
    if any(arg.startswith("|") or arg.endswith("|") for arg in args):
        return None  # `convert '|cmd' out.png`, perl's `open`: a file name that is a pipe
    if name == "tar" and args and set(args[0]) & set(_EXEC_LETTERS["tar"]):
        return None  # old-style `tar xIf …`: the first word is a bundle without its dash
    if name in _WRAPPERS and args and args[0] == _WRAPPERS[name]:
        inner = _prefix(args[1:]) if len(args) > 1 else None
        return None if inner is None else [program, args[0], *inner]
    if name not in _DATA_TOOLS and any(_names_runner(arg) for arg in args):
        return None  # `chrt 0 sh -c …`, `fd -x python3 …`, `tar --to-comm=sh`: a program runs
    if _INTERPRETER.fullmatch(name) or _INTERPRETER_VARIANT.search(name):
        return _interpreter_prefix(program, name, args)
    if name == "git":
        return _git_prefix(program, args)
    if name == "make":
        return _make_prefix(program, args)
    if name in _SUBCOMMAND_TOOLS:
        return _subcommand_prefix(program, name, args)
    return [program]


def _runs_programs(name: str, arg: str) -> bool:
    option = arg[2:].split("=", 1)[0].lower() if arg.startswith("--") else ""
    # git's own table is complete for the subcommands it widens (`--diff-filter` is harmless).
    if option and name != "git":
        if any(word in option for word in _EXEC_WORDS):
            return True
        # getopt_long takes any unambiguous prefix: `--compress-prog` is `--compress-program`.
        last = option.rsplit("-", 1)[-1]
        if len(last) >= 2 and any(word.startswith(last) for word in _EXEC_WORDS):
            return True
    if not arg.startswith("-"):
        return False
    # Single-dash long options name programs too: `pdflatex -shell-escape`, `gcc -wrapper`.
    single = arg[1:].split("=", 1)[0].lower()
    long_single = not option and len(single) >= 3 and name != "git"
    if long_single and any(word in single for word in _EXEC_WORDS):
        return True
    table = _EXEC_OPTIONS.get(name, ())
    if any(arg.startswith(known) for known in table):
        return True
    if option and any(known.startswith("--") and known[2:].startswith(option) for known in table):
        return True  # an abbreviation: `--to-comm`, `git grep --open`
    letters = _EXEC_LETTERS.get(name, "")
    return not arg.startswith("--") and any(letter in arg for letter in letters)


def _names_runner(arg: str) -> bool:
    """Whether `arg` (or the value of `--opt=value`) starts with a shell, interpreter or runner."""
    for value in (arg, arg.split("=", 1)[-1]):
        words = value.split()
        if not words:
            continue
        name = os.path.basename(words[0]).lower()
        if name != "." and (name in RUNNERS or _INTERPRETER.fullmatch(name)):
            return True  # (`.` is the current folder here, not bash's `source`)
    return False


def _interpreter_prefix(program: str, name: str, args: list[str]) -> list[str] | None:
    if _PYTHON.fullmatch(name) and len(args) >= 2 and args[0] == "-m":
        module = args[1]
        if not _PLAIN.fullmatch(module) or module.lower() in _CODE_MODULES:
            return None
        return [program, "-m", module]
    if args and not args[0].startswith("-") and not args[0].startswith("+"):
        return [program, args[0]]  # a script file, then the script's own arguments
    return None  # -c, -e, -V, --eval, … or no script: only this exact command


def _git_prefix(program: str, args: list[str]) -> list[str] | None:
    index = 0
    while index < len(args) and args[index].startswith("-"):
        if args[index] not in _GIT_SAFE_GLOBALS:
            return None  # -c, -C, --config-env, --exec-path, --git-dir, --work-tree, …
        index += 1
    if index == len(args) or args[index] not in _GIT_WIDENED:
        return None  # an alias, an unknown or a program-running subcommand
    return [program, args[index]]


def _make_prefix(program: str, args: list[str]) -> list[str] | None:
    if any("=" in arg for arg in args):
        return None  # `make SHELL=...` or `CC=...` choose what runs
    targets = [arg for arg in args if not arg.startswith("-")]
    return [program, targets[0]] if targets and _PLAIN.fullmatch(targets[0]) else None


def _subcommand_prefix(program: str, name: str, args: list[str]) -> list[str] | None:
    if not args or not _PLAIN.fullmatch(args[0]) or args[0] in _SUBCOMMAND_TOOLS[name]:
        return None  # options before the subcommand, none at all, or one that runs anything
    if args[0] in _INSTALLS and len(args) > 1:
        return None
    if args[0] in _NAMED_SUBCOMMANDS:
        named = len(args) >= 2 and _PLAIN.fullmatch(args[1])
        return [program, args[0], args[1]] if named else None
    return [program, args[0]]


# --- commands that write what makes tools run code, without naming the file ---------------------

_GIT_VALUE_GLOBALS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace"})
_CONFIG_READS = frozenset(
    {"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--get-color", "--get-colorbool"}
    | {"-l", "--list", "get", "list"}
)
_CONFIG_WRITES = frozenset(
    {"--add", "--replace-all", "--unset", "--unset-all", "--rename-section", "--remove-section"}
    | {"-e", "--edit", "set", "unset", "rename-section", "remove-section", "edit"}
)
_HARMLESS_CONFIG = frozenset(
    {"user.name", "user.email", "init.defaultbranch", "pull.rebase", "pull.ff", "push.default"}
    | {"core.autocrlf", "core.eol", "core.filemode", "core.ignorecase", "core.quotepath"}
    | {"color.ui", "merge.ff", "fetch.prune", "rebase.autostash", "commit.verbose"}
)
"""Keys whose values name no program: writing them is an ordinary command."""
_CONFIG_VALUE_OPTIONS = frozenset({"-f", "--file", "--blob", "--type", "--default", "--comment"})
_HOOK_INSTALLERS = {
    "pre-commit": frozenset({"install", "install-hooks", "init-templatedir"}),
    "lefthook": frozenset({"install", "add"}),
    "husky": frozenset({"", "install", "init"}),
    "overcommit": frozenset({"--install"}),
}
"""Programs (and their subcommands) that write `.git/hooks/…` or `core.hooksPath`."""


def _simple_commands(tokens: list[str]) -> Iterator[list[str]]:
    """The words of each simple command in `tokens` (the parts between operators)."""
    command: list[str] = []
    for token in [*tokens, ";"]:
        if not _is_operator(token):
            command.append(token)
        elif command:
            yield command
            command = []


def _installs_code(tokens: list[str]) -> bool:
    """Whether a simple command of `tokens` writes git's config or hooks without naming the
    file: `git config core.fsmonitor …`, `pre-commit install`, `husky`."""
    return any(_writes_git_config_or_hooks(command) for command in _simple_commands(tokens))


def _writes_git_config_or_hooks(words: list[str]) -> bool:
    # Also behind a runner: `npx husky`, `pipx run pre-commit install`.
    for index, word in enumerate(words):
        installer = _HOOK_INSTALLERS.get(os.path.basename(word).lower())
        following = words[index + 1] if index + 1 < len(words) else ""
        if installer is not None and following in installer:
            return True
    name = os.path.basename(words[0]).lower()
    args = words[1:]
    if name != "git":
        return False
    index = 0
    while index < len(args) and args[index].startswith("-"):
        index += 2 if args[index] in _GIT_VALUE_GLOBALS else 1
    if index >= len(args):
        return False
    if args[index] == "lfs":
        return index + 1 < len(args) and args[index + 1] in ("install", "update")
    return args[index] == "config" and not _reads_config(args[index + 1 :])


def _reads_config(args: list[str]) -> bool:
    """Whether `git config ARGS` only reads (`--get k`, `--list`, `k`) or writes a key that
    names no program (`user.email`)."""
    positional: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in _CONFIG_VALUE_OPTIONS:
            skip = True
        elif not arg.startswith("-"):
            positional.append(arg)
    verbs = _CONFIG_READS | _CONFIG_WRITES
    keys = positional[1:] if positional and positional[0] in verbs else positional
    if keys and (keys[0].lower() in _HARMLESS_CONFIG or keys[0].lower().startswith("advice.")):
        return True
    if any(arg.split("=", 1)[0] in _CONFIG_WRITES for arg in args):
        return False
    reads = any(arg.split("=", 1)[0] in _CONFIG_READS for arg in args)
    return reads or len(positional) <= 1


# --- paths outside the work dir ------------------------------------------------------------------


def _paths(tokens: list[str], work_dir: Path) -> tuple[bool, bool]:
    """Whether an argument (or a command given by path) names something outside `work_dir`,
    and whether one names a protected file."""
    root = Path(os.path.realpath(work_dir))
    outside = protected = False
    command_word = True
    for token in tokens:
        if _is_operator(token):
            # After `>`, `>>`, `<`, `&>`... comes the file redirected to or from, not a command.
            command_word = not any(ch in "<>" for ch in token)
            continue
        if command_word:
            command_word = False
            if "/" not in token:
                continue  # a program looked up on PATH, not a path argument
        for candidate in _candidates(_substitute_variables(token, work_dir)):
            paths = _expand(candidate, work_dir)
            if paths is None:
                outside = protected = True  # cannot tell what it names: ask
                continue
            outside = outside or any(not _inside(path, root) for path in paths)
            protected = protected or any(is_protected(Path(path), work_dir) for path in paths)
    return outside, protected or _copies_protected(tokens, work_dir)


def _copies_protected(tokens: list[str], work_dir: Path) -> bool:
    """Whether a copy or move takes a folder holding a protected file along: `cp -rT template .`
    writes `template/.envrc` as `.envrc` without naming it."""
    for command in _simple_commands(tokens):
        if os.path.basename(command[0]).lower() not in _COPIERS:
            continue
        args = command[1:]
        # `-t DIR`'s value is where to, not a source.
        operands = [
            arg
            for index, arg in enumerate(args)
            if not arg.startswith("-") and (index == 0 or args[index - 1] != "-t")
        ]
        targeted = any(arg.startswith(("-t", "--target")) for arg in args)
        sources = operands if targeted else operands[:-1]  # the last one is where to
        for source in sources:
            folder = os.path.join(work_dir, os.path.expanduser(source))
            if os.path.isdir(folder) and holds_protected(Path(folder)):
                return True
    return False


_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


def _substitute_variables(word: str, work_dir: Path) -> str:
    """`word` with `$NAME` and `${NAME}` replaced as the command's shell would (`$HOME/.ssh`
    names a path outside); an unset one is left as it is."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name == "PWD":
            return str(work_dir)  # the command runs there, whatever kode-tui's own PWD says
        return os.environ.get(name, match.group(0))

    return _VARIABLE.sub(value, word)


def _candidates(word: str) -> set[str]:
    """The parts of `word` that could be a path: itself, `--opt=PATH`, `-oPATH`, `a:PATH`, …"""
    found: set[str] = set()
    items = [word]
    if word.startswith("-") and not word.startswith("--") and len(word) > 2:
        items.append(word[2:])
    for item in items:
        for piece in item.split("="):
            url = _URL.match(piece)
            if url:
                if url.group(1).lower() == "file":
                    found.add(piece[url.end() :] or "/")
                continue
            found.update(part for part in re.split(r"[:,{}@]", piece) if part)
    return found


def _expand(candidate: str, work_dir: Path) -> list[str] | None:
    """The absolute paths `candidate` can name (a glob's matches); None when that is unknown."""
    if candidate in _SAFE_DEVICES or candidate.startswith("/dev/fd/"):
        return []
    if candidate.startswith("~"):
        expanded = os.path.expanduser(candidate)
        if expanded.startswith("~"):
            return None  # ~user of an unknown user, ~+, ~-
        candidate = expanded
    # Not normalised: bash resolves `link/..` through the link, and so does `_inside`'s
    # realpath, whereas normpath would drop both words (`d/../secret` with `d -> /outside/x`).
    path = candidate if os.path.isabs(candidate) else os.path.join(work_dir, candidate)
    if not glob.has_magic(candidate):
        return [path]
    if _DOT_GLOB.search(candidate):
        return None  # bash's `.*` can match `..` (and `.git`)
    matches: list[str] = []
    for match in glob.iglob(path):
        matches.append(match)
        if len(matches) > _GLOB_LIMIT:
            return None
    return matches or [path]


def _inside(path: str, root: Path) -> bool:
    try:
        Path(os.path.realpath(path)).relative_to(root)
    except (ValueError, OSError):
        return False
    return True
