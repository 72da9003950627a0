"""config.toml read again when it changes (issue 28, item 12): what a change says, a file that
does not load kept out, the watcher itself."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path

from kode_tui.config import Config, HookConfig, LoopControl, ModelConfig, load_config
from kode_tui.soul.facade.config_watch import read_again, watch_config, what_changed

ONE = '[models.one]\nmodel = "openai/one"\napi_base = "http://127.0.0.1:9/v1"\n'
TWO = ONE + '[models.two]\nmodel = "openai/two"\napi_base = "http://127.0.0.1:9/v1"\n'


def test_a_change_is_said_in_a_few_words_with_what_waits() -> None:
    one, two = ModelConfig(model="openai/one"), ModelConfig(model="openai/two")
    old = Config(models={"one": one, "gone": one})
    new = Config(
        models={"one": one.model_copy(update={"reasoning": True}), "two": two, "three": two},
        loop_control=LoopControl(max_retries_per_step=4),
        hooks=[HookConfig(event="Stop", command="true")],
        default_model="two",
        pictures="off",
    )

    assert what_changed(old, new) == [
        "models two, three added",
        "model one changed",
        "model gone removed",
        "loop_control changed",
        "pictures changed",
        "hooks: from the next session",
        "default_model: at the next start",
    ]
    assert what_changed(new, new) == []


def test_a_file_that_does_not_load_keeps_the_config_in_use(home: Path, tmp_path: Path) -> None:
    config = home / "config.toml"
    assert read_again(None) is None  # not there (an editor between delete and write): no change
    home.mkdir(parents=True, exist_ok=True)
    config.write_text(TWO)
    read = read_again(None)
    assert isinstance(read, Config) and list(read.models) == ["one", "two"]

    config.write_text(TWO + "[loop_control\n")  # half saved
    said = read_again(None)
    assert isinstance(said, str) and said.startswith(f"{config}:") and "\n" not in said
    assert said.endswith("(the config in use stays)")

    other = tmp_path / "other.toml"  # --config FILE
    other.write_text("[loop_control]\nmax_retries_per_step = 0\n")
    said = read_again(other)
    assert isinstance(said, str) and "max_retries_per_step" in said


async def saved(
    file: Path, text: str, lines: asyncio.Queue[tuple[str, bool]], seen: Callable[[str], bool]
) -> str:
    """Write `text` to `file` until the watcher says a line `seen` accepts (a write made before
    the watcher is up is not noticed: it is written again), and that line."""
    async with asyncio.timeout(60):  # only a safety net: the watcher answers each write
        while True:
            file.write_text(text)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(2):
                    while not seen(line := (await lines.get())[0]):
                        pass
                    return line


async def test_the_watcher_hands_over_each_saved_config_and_says_a_broken_one(home: Path) -> None:
    config = home / "config.toml"
    home.mkdir(parents=True, exist_ok=True)
    config.write_text(ONE)
    in_use = load_config(None)
    lines: asyncio.Queue[tuple[str, bool]] = asyncio.Queue()

    async def use(new: Config) -> str:
        nonlocal in_use
        old, in_use = in_use, new
        return "; ".join(what_changed(old, new))

    watcher = asyncio.create_task(watch_config(None, use, lambda *said: lines.put_nowait(said)))
    await asyncio.sleep(0)  # it runs up to its first wait: watchfiles watches from then on
    try:
        line = await saved(config, TWO, lines, lambda line: "two" in line)
        assert line == "config.toml read again: model two added"
        assert list(in_use.models) == ["one", "two"]

        line = await saved(config, TWO + "[loop_control\n", lines, lambda line: "stays" in line)
        assert line.startswith(f"{config}:") and line.endswith("(the config in use stays)")
        assert list(in_use.models) == ["one", "two"]
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
