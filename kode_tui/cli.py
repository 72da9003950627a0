"""Command line entry point."""

from __future__ import annotations

import argparse
import sys

from kode_tui import __version__
from kode_tui.paths import Paths


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kode-tui", description=__doc__)
    parser.add_argument("--version", action="version", version=f"kode-tui {__version__}")
    parser.add_argument("--paths", action="store_true", help="print where kode-tui keeps things")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.paths:
        for name, path in Paths.current().describe():
            print(f"{name:<9} {path}")
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
