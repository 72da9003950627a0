"""The command line of `kode-tui`, apart from the command: this module imports argparse alone,
so that `launch.run` can read the command line and start the model process before the rest of
the command loads (kode_tui.cli's ~20 ms of imports)."""

from __future__ import annotations

import argparse

from kode_tui import __version__

TYPE_CHECKING = False  # not `typing`'s: its import is ~3 ms before the model process starts

if TYPE_CHECKING:
    from pathlib import Path
    from typing import NoReturn

MODE_NAMES = ("ask", "auto-edit", "plan", "sandbox", "yolo")
"""`--permission-mode`'s choices: `kode_tui.config.ApprovalMode`, which the command does not
load before it needs the engine."""


class Parser(argparse.ArgumentParser):
    """An option the command does not take, or a value it does not know, is one line, as
    every other error of the command is (argparse's own adds its whole usage)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser(*, quiet: bool = False) -> argparse.ArgumentParser:
    """The command line of `kode-tui`. `quiet` (`launch.run` reads it before the command does):
    no --help or --version, and an error raises `Unreadable` instead of saying it."""
    parser = (_QuietParser if quiet else Parser)(
        prog="kode-tui",
        description="A terminal coding agent whose context you can see and steer.",
        add_help=not quiet,
    )
    parser.add_argument(
        "work_dir", nargs="?", default=".",
        help="the project to work in (default: here); with --print, a message naming no folder",
    )  # fmt: skip
    parser.add_argument(
        "-C", "--continue", dest="continue_", action="store_true",
        help="continue the last session of the work dir",
    )  # fmt: skip
    parser.add_argument(
        "-S", "--session", metavar="ID", nargs="?", const="",
        help="open the session with this id (without one: pick it from a list)",
    )  # fmt: skip
    parser.add_argument(
        "--session-dir", metavar="DIR", help="open any session folder, a Kimi CLI one too"
    )
    parser.add_argument(
        "--list-sessions", action="store_true", help="list the sessions of the work dir"
    )
    parser.add_argument(
        "--search", metavar="TEXT",
        help="print the messages holding TEXT in the sessions of the work dir (any case)",
    )  # fmt: skip
    parser.add_argument(
        "--all", dest="everywhere", action="store_true",
        help="with --search: in the sessions of every work dir",
    )  # fmt: skip
    parser.add_argument(
        "--export", metavar="ID", help="write the transcript of a session (an id or its start)"
    )
    parser.add_argument(
        "--format", dest="export_format", choices=("md", "jsonl"),
        help="with --export: Markdown (default), or the raw records as JSON lines",
    )  # fmt: skip
    parser.add_argument(
        "-o", "--output", metavar="FILE", help="with --export: write to FILE, not stdout"
    )
    model_options(parser)
    parser.add_argument(
        "--yolo", action="store_true", help="approve every tool call (this run only)"
    )
    parser.add_argument(
        "--permission-mode", choices=MODE_NAMES, metavar="MODE",
        help=f"with --print: the approval mode of this run ({', '.join(MODE_NAMES)}); in plan "
        "the turn ends with the plan as its result",
    )  # fmt: skip
    parser.add_argument("--theme", metavar="NAME", help="the colour theme (see /theme)")
    parser.add_argument(
        "-p", "--prompt", metavar="TEXT",
        help="the message to send; with --print (or alone) runs one turn headless",
    )  # fmt: skip
    parser.add_argument(
        "--print", dest="print_mode", action="store_true",
        help="run one turn without the UI, answer on stdout (prompt from -p or stdin)",
    )  # fmt: skip
    parser.add_argument(
        "--output-format", choices=("text", "json", "stream-json"), default="text",
        help="with --print: text (default), one JSON result, or JSON lines of the events",
    )  # fmt: skip
    parser.add_argument(
        "--input-format", choices=("text", "stream-json"), default="text",
        help="with --print: the message as text (default), or JSON lines of user messages on "
        "stdin, one turn each (needs --output-format stream-json)",
    )  # fmt: skip
    parser.add_argument("--paths", action="store_true", help="print where kode-tui keeps things")
    parser.add_argument(
        "--gc", action="store_true",
        help="free the snapshot contents no session refers to (of every work dir)",
    )  # fmt: skip
    if not quiet:
        parser.add_argument("--version", action="version", version=f"kode-tui {__version__}")
    return parser


def model_options(parser: argparse.ArgumentParser) -> None:
    """`-m MODEL` and `--config FILE`, shared by the app and `kode-tui acp`."""
    parser.add_argument(
        "-m", "--model", metavar="MODEL",
        help="a model alias from config.toml, a litellm model string, or 'demo'",
    )  # fmt: skip
    parser.add_argument(
        "--config", metavar="FILE", help="read this config file instead of config.toml"
    )


class Unreadable(Exception):
    """A command line `build_parser(quiet=True)` cannot read (the command says why)."""


class _QuietParser(Parser):
    def error(self, message: str) -> NoReturn:
        raise Unreadable(message)


def export_options(args: argparse.Namespace) -> bool:
    """Whether an option that goes with --export or --search is given."""
    return bool(args.everywhere or args.export_format or args.output)


def config_file(args: argparse.Namespace) -> Path | None:
    """The config file --config names, else None (the default file)."""
    if not args.config:
        return None
    from pathlib import Path

    return Path(args.config).expanduser()


def runs_the_app(argv: list[str]) -> argparse.Namespace | None:
    """The command line `argv`, read, when it plainly runs the full-screen app (no other
    command, option of one, help or version asked, nothing argparse refuses); else None. What
    `cli.main` does with it decides; this only says its model process may start now."""
    if argv[:1] == ["acp"]:
        return None
    try:
        args, unknown = build_parser(quiet=True).parse_known_args(argv)
    except Unreadable:
        return None
    other = (
        unknown
        or args.paths
        or args.gc
        or args.list_sessions
        or args.search is not None
        or args.export is not None
        or export_options(args)
        or args.print_mode
        or args.prompt is not None
        or args.output_format != "text"
        or args.input_format != "text"
        or args.permission_mode is not None
    )
    return None if other else args
