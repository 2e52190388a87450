"""Entry point of ``python -m jobs``."""

from __future__ import annotations

import sys

from jobs.cli import main

if __name__ == "__main__":
    sys.exit(main())
