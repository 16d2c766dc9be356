"""Entry point of the `vpo serve` child process (``python -m search.serve_main``); the same flags as
`vpo serve`, without importing the whole CLI."""
from __future__ import annotations

import sys

if __name__ == "__main__":
    from search.cli import serve_main

    sys.exit(serve_main())
