from kode_tui.launch import run

run()
