"""``python -m app.record`` is the ``stepscope`` console script."""

from __future__ import annotations

import sys

from app.record.cli import main

if __name__ == "__main__":
    sys.exit(main())
