from plane.entry import main

raise SystemExit(main())
