"""``python -m dshstream``: the command line."""

from .cli import main

raise SystemExit(main())
