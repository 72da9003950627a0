"""`kode-tui`, the command: the model process starts as soon as the command line is read.

The first message typed waits for that process to import its library (~0.45 s of CPU, on the
other core): started once `kode_tui.cli` had loaded (~20 ms of imports: logging, the session
files' helpers, the masking), the first request waited those 20 ms too. `cli.main` reads the
command line again and does what it says; a process it does not use is stopped.
"""

from __future__ import annotations

import sys

from kode_tui import model_launch
from kode_tui.cli_args import config_file, runs_the_app

TYPE_CHECKING = False  # not `typing`'s: its import is ~3 ms before the model process starts

if TYPE_CHECKING:
    from typing import NoReturn


def run() -> NoReturn:
    args = runs_the_app(sys.argv[1:])
    if args is not None:
        model_launch.start_early(config_file(args), args.model)
    from kode_tui.cli import run as run_command

    run_command()
