from memd.cli.thin import main

raise SystemExit(main())
