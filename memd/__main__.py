from memd.cli.main import main

raise SystemExit(main())
