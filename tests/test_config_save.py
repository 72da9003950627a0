"""save_setting: /theme and /model write one line of config.toml and leave the rest alone."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from kode_tui.config import ConfigError, load_config
from kode_tui.config_save import save_setting
from kode_tui.paths import Paths

COMMENTED = """\
# My kode-tui config.
default_model = "sonnet"   # the one I pay for
theme = "kode-dark"

# Models I use.
[models.sonnet]
model = "anthropic/claude-sonnet-4-5"
max_context_size = 200000
"""


def test_a_missing_config_file_is_created_private(home: Path) -> None:
    save_setting("theme", "kode-light")

    file = Paths.current().config_file
    assert file.read_text() == 'theme = "kode-light"\n'
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert load_config().theme == "kode-light"


def test_an_existing_setting_is_replaced_in_place_keeping_comments(tmp_path: Path) -> None:
    file = tmp_path / "config.toml"
    file.write_text(COMMENTED)

    save_setting("default_model", "openai/gpt-5", file)
    save_setting("theme", "kode-high-contrast", file)

    assert file.read_text() == COMMENTED.replace('"sonnet"   #', '"openai/gpt-5"   #').replace(
        '"kode-dark"', '"kode-high-contrast"'
    )


def test_a_new_setting_goes_after_the_top_level_settings_before_any_table(
    tmp_path: Path,
) -> None:
    file = tmp_path / "config.toml"
    file.write_text(COMMENTED.replace('theme = "kode-dark"\n', ""))

    save_setting("theme", "nord", file)

    lines = file.read_text().splitlines()
    assert lines[:4] == [
        "# My kode-tui config.",
        'default_model = "sonnet"   # the one I pay for',
        'theme = "nord"',
        "",
    ]
    config = load_config(file)
    assert config.theme == "nord"
    assert config.models["sonnet"].model == "anthropic/claude-sonnet-4-5"


def test_with_only_tables_the_setting_goes_above_the_first_table_and_its_comment(
    tmp_path: Path,
) -> None:
    file = tmp_path / "config.toml"
    file.write_text("# Header.\n\n# Models.\n[models.a]\nmodel = 'x/y'\n")

    save_setting("default_model", "a", file)

    assert file.read_text() == (
        "# Header.\n\ndefault_model = \"a\"\n\n# Models.\n[models.a]\nmodel = 'x/y'\n"
    )
    assert load_config(file).default_model == "a"


def test_a_key_inside_a_table_or_a_multiline_string_is_not_taken_for_the_setting(
    tmp_path: Path,
) -> None:
    file = tmp_path / "config.toml"
    text = 'approval_mode = "ask"\n[context]\ncustom = """\ntheme = "mine"\n[not a table]\n"""\n'
    file.write_text(text)

    save_setting("theme", "kode-light", file)

    assert file.read_text() == 'approval_mode = "ask"\ntheme = "kode-light"\n' + text[22:]
    config = load_config(file)
    assert config.theme == "kode-light"
    assert config.context.custom == 'theme = "mine"\n[not a table]\n'


def test_a_multiline_value_is_replaced_whole(tmp_path: Path) -> None:
    file = tmp_path / "config.toml"
    file.write_text('theme = """\nkode-dark"""\napproval_mode = "yolo"\n')

    save_setting("theme", "kode-light", file)

    assert file.read_text() == 'theme = "kode-light"\napproval_mode = "yolo"\n'


def test_values_are_escaped_and_round_trip(tmp_path: Path) -> None:
    file = tmp_path / "config.toml"
    value = 'we"ird\\ näme\t\x7f'

    save_setting("default_model", value, file)
    save_setting("default_model", value, file)

    assert load_config(file).default_model == value
    assert file.read_text().count("default_model") == 1


def test_a_file_without_a_final_newline_and_with_crlf_stays_valid(tmp_path: Path) -> None:
    file = tmp_path / "config.toml"
    file.write_bytes(b'approval_mode = "ask"\r\n[tools]\r\ndmail = false')

    save_setting("theme", "nord", file)

    assert file.read_bytes() == (
        b'approval_mode = "ask"\r\ntheme = "nord"\r\n[tools]\r\ndmail = false'
    )
    assert load_config(file).tools.dmail is False


def test_a_symlinked_config_file_is_written_through_the_link(tmp_path: Path) -> None:
    target = tmp_path / "dotfiles" / "kode.toml"
    target.parent.mkdir()
    target.write_text('theme = "nord"\n')
    link = tmp_path / "config.toml"
    link.symlink_to(target)

    save_setting("theme", "kode-light", link)

    assert link.is_symlink()
    assert target.read_text() == 'theme = "kode-light"\n'


def test_an_invalid_file_is_an_error_and_stays_untouched(tmp_path: Path) -> None:
    file = tmp_path / "config.toml"
    file.write_text("theme = \n")

    with pytest.raises(ConfigError, match=r"config\.toml:1: invalid TOML"):
        save_setting("theme", "nord", file)

    assert file.read_text() == "theme = \n"


def test_a_file_whose_layout_tomlkit_cannot_keep_is_refused_and_stays_untouched(
    tmp_path: Path,
) -> None:
    """A table split around an array of tables would be regrouped: the user's layout would
    change behind their back, so the setting is refused instead."""
    file = tmp_path / "config.toml"
    text = '[models.a]\nmodel = "x/a"\n[[hooks]]\nx = 1\n[models.b]\nmodel = "x/b"\n'
    file.write_text(text)

    with pytest.raises(ConfigError, match="cannot set theme here without rewriting the file"):
        save_setting("theme", "nord", file)

    assert file.read_text() == text


@pytest.mark.parametrize(
    ("key", "value"), [("models", "x"), ("nonsense", "x"), ("approval_mode", "always")]
)
def test_unknown_keys_and_invalid_values_are_refused(key: str, value: str, home: Path) -> None:
    with pytest.raises(ValueError):
        save_setting(key, value)

    assert not os.path.exists(Paths.current().config_file)
