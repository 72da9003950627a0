"""kode-tui: a terminal coding agent whose context you can see and steer."""

__version__ = "0.1.0"
