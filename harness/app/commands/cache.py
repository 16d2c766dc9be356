"""`vpo cache`: how big the generation cache is, per model, and clearing it (all of it or one model's)."""
from __future__ import annotations

import argparse
import json

EXAMPLES = """\
vpo cache                          # where it is, chains and bytes, per model
vpo cache --json
vpo cache clear                    # remove every stored chain
vpo cache clear --model mock:moves # only one model spec's chains
VPO_CACHE_DIR=/scratch/gen vpo cache   # another cache folder (every command reads the same variable)
"""


def register(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("cache", help="show the generation cache's size per model, or clear it")
    p.add_argument("action", nargs="?", choices=("show", "clear"), default="show",
                   help="show (the default) or clear")
    p.add_argument("--model", default=None, help="clear: only the chains of this model spec (as `vpo cache` lists it)")
    p.add_argument("--json", action="store_true", help="show: print JSON")
    return p


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"


def run(args: argparse.Namespace) -> int:
    from harness.core.gencache import GenerationCache

    if args.model is not None and args.action != "clear":
        raise ValueError("--model selects what `vpo cache clear` removes; `vpo cache` shows every model")
    with GenerationCache() as cache:
        if args.action == "clear":
            n = cache.clear(args.model)
            what = f"model {args.model}" if args.model else "all models"
            print(f"removed {n} chains ({what}) from {cache.path}")
            return 0
        st = cache.stats()
    if args.json:
        print(json.dumps({"path": str(st.path), "entries": st.entries, "payload_bytes": st.payload_bytes,
                          "disk_bytes": st.disk_bytes,
                          "models": {m: {"entries": n, "payload_bytes": b} for m, (n, b) in st.models.items()}},
                         indent=2))
        return 0
    print(f"generation cache: {st.path}")
    print(f"{st.entries} chains, {_size(st.payload_bytes)} stored, {_size(st.disk_bytes)} on disk")
    if st.models:
        width = max(len(m) for m in st.models)
        for m, (n, b) in st.models.items():
            print(f"  {m:<{width}}  {n:>8} chains  {_size(b):>10}")
    return 0
