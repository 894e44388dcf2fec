from plane.cli import main

raise SystemExit(main())
