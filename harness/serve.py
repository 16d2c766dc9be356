"""``python -m harness.serve``: the `vpo serve` process `vpo evolve` starts for hf/vllm/zoo models,
with the flags of `vpo serve` and without importing the whole CLI."""
from __future__ import annotations

import sys

if __name__ == "__main__":
    from harness.commands.serve import serve_main

    sys.exit(serve_main())
