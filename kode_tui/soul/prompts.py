"""The texts kode-tui sends to the model, from the shipped `prompts/` folder."""

from __future__ import annotations

import platform
import shutil
import time
from functools import cache
from pathlib import Path
from string import Template

from kode_tui.paths import data_dir


@cache
def load(name: str) -> str:
    """The text of `prompts/<name>.md`, without its final newline."""
    return (data_dir("prompts") / f"{name}.md").read_text(encoding="utf-8").rstrip("\n")


def render(name: str, **values: str) -> str:
    """`prompts/<name>.md` with its `${...}` placeholders filled (unknown ones left as they are)."""
    return Template(load(name)).safe_substitute(values)


def system_prompt(work_dir: Path) -> str:
    return render(
        "system",
        work_dir=str(work_dir),
        os=f"{platform.system()} {platform.release()}",
        shell="bash" if shutil.which("bash") else "/bin/sh",
        date=time.strftime("%Y-%m-%d"),
    )
