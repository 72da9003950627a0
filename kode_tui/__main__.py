from kode_tui.cli import main

raise SystemExit(main())
