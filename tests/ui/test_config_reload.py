"""config.toml edited while the TUI runs (issue 28, item 12): one line says what changed, a
broken edit is said and kept out, a theme applies. What a change does to the session is
tested at the facade (tests/soul/test_facade.py, tests/soul/test_config_watch.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.ui.app import KodeApp
from tests.ui_helpers import ready, wait_for

FIRST = '[models.one]\nmodel = "openai/one"\napi_base = "http://127.0.0.1:9/v1"\n'
SECOND = FIRST + '[models.two]\nmodel = "openai/two"\napi_base = "http://127.0.0.1:9/v1"\n'


def notices(app: KodeApp) -> list[str]:
    return [str(notice.message) for notice in app._notifications]


async def test_an_edited_config_applies_without_a_restart_and_a_broken_one_is_kept_out(
    project: Path, home: Path
) -> None:
    config = home / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(FIRST)
    app = KodeApp(project, provider=ScriptedProvider([]))
    async with app.run_test(size=(120, 36)) as pilot:
        await ready(pilot)
        session = app.agent_session
        assert session is not None
        assert "two" not in [option.name for option in session.model_options()]

        async def saved(text: str, done: Callable[[], bool]) -> None:
            """Write `text` until `done()`: a write made before the watcher is up is not seen,
            so it is written again (the bound is only a safety net, however loaded the machine)."""
            for _ in range(30):
                config.write_text(text)
                with contextlib.suppress(AssertionError):
                    await wait_for(pilot, done, timeout=2)
                    return
            raise AssertionError(f"never saw {done}")

        def said(words: str) -> Callable[[], bool]:
            return lambda: any(words in notice for notice in notices(app))

        await saved(SECOND, said("read again: model two added"))
        assert notices(app)[-1] == "config.toml read again: model two added"
        assert "two" in [option.name for option in session.model_options()]  # /model's list

        await saved(SECOND + "[loop_control\n", said("the config in use stays"))
        [broken] = [n for n in notices(app) if "the config in use stays" in n]
        assert broken.startswith(f"{config}:") and "\n" not in broken
        assert "two" in app.config.models

        await saved('theme = "kode-light"\n' + SECOND, lambda: app.theme == "kode-light")
