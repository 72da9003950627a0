"""`kode-tui acp`: kode-tui as an Agent Client Protocol agent (a front end, as the TUI is)."""
