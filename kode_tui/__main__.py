from kode_tui.cli import run

run()
