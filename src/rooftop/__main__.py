from rooftop.cli import main

raise SystemExit(main())
