"""Errors a user can cause, shared by the layers that raise them and the command that shows them.

Each message is one sentence, shown as is; no traceback.
"""

from __future__ import annotations


class ConfigError(Exception):
    """A config file or a model name the user got wrong; the message is one line to show as is."""


class UserError(Exception):
    """Something the user can fix on the command line: shown as one sentence, exit status 2."""
