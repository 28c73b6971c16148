"""``python -m dshstream``: the command line."""

from ._cli import main

raise SystemExit(main())
