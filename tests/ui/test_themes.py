"""The shipped theme files are Textual themes."""

from __future__ import annotations

import tomllib

import pytest
from textual.theme import Theme

from kode_tui.paths import data_dir

THEMES = sorted(data_dir("themes").glob("*.toml"))


def test_the_default_theme_is_shipped() -> None:
    assert "kode-dark.toml" in [path.name for path in THEMES]


@pytest.mark.parametrize("path", THEMES, ids=lambda path: path.stem)
def test_each_theme_file_builds_a_textual_theme(path: object) -> None:
    data = tomllib.loads(path.read_text())  # type: ignore[attr-defined]
    theme = Theme(**data)
    assert theme.name == path.stem  # type: ignore[attr-defined]
