"""`vpo cache`: how big the generation cache is, per model, and clearing it (all of it or one model's).

Both work on a damaged file, since they are how a user repairs one: `vpo cache` says what is wrong
(damaged pages, entries failing their checksum) and `vpo cache clear` removes a file it cannot read
and starts an empty one."""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

EXAMPLES = """\
vpo cache                          # where it is, chains and bytes, per model
vpo cache --json
vpo cache clear                    # remove every stored chain
vpo cache clear --model mock:moves # only one model spec's chains
VPO_CACHE=/scratch/vpo vpo cache  # another cache root (every command reads the same variable)
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
    from vpo_harness.harness.core.gencache import CacheError, GenerationCache, remove_cache_file
    from vpo_harness.harness.core.paths import generations_dir

    if args.model is not None and args.action != "clear":
        raise ValueError("--model selects what `vpo cache clear` removes; `vpo cache` shows every model")
    folder = generations_dir()
    try:
        with GenerationCache(folder) as cache:
            if args.action == "clear":
                n = cache.clear(args.model)
                what = f"model {args.model}" if args.model else "all models"
                print(f"removed {n} chains ({what}) from {cache.path}")
                return 0
            st = cache.stats()
    except CacheError as exc:
        return _damaged(args, folder, str(exc), remove_cache_file)
    if args.json:
        print(json.dumps({"path": str(st.path), "entries": st.entries, "payload_bytes": st.payload_bytes,
                          "disk_bytes": st.disk_bytes, "damaged_entries": st.damaged, "damaged_file": None,
                          "models": {m: {"entries": n, "payload_bytes": b} for m, (n, b) in st.models.items()}},
                         indent=2))
        return 0
    print(f"generation cache: {st.path}")
    print(f"{st.entries} chains, {_size(st.payload_bytes)} stored, {_size(st.disk_bytes)} on disk")
    if st.damaged:
        print(f"{st.damaged} damaged entries (failing their checksum): runs skip and resample them; "
              "`vpo cache clear` removes them")
    if st.models:
        width = max(len(m) for m in st.models)
        for m, (n, b) in st.models.items():
            print(f"  {m:<{width}}  {n:>8} chains  {_size(b):>10}")
    return 0


def _damaged(args: argparse.Namespace, folder: Path, why: str, remove: Any) -> int:
    """A file SQLite cannot read: `vpo cache` reports it (exit 1), `vpo cache clear` removes it and
    opens an empty one (a damaged file cannot be cleared of one model's entries only: all go)."""
    from vpo_harness.harness.core.gencache import GenerationCache

    if args.action != "clear":
        if args.json:
            print(json.dumps({"path": str(folder), "damaged_file": why}, indent=2))
        else:
            print(f"generation cache: {folder}\ndamaged: {why}")
        return 1
    gone = remove(folder)
    GenerationCache(folder).close()
    scope = "" if args.model is None else f" (--model {args.model}: a damaged file cannot keep other models' chains)"
    print(f"removed the damaged generation cache{scope}: {', '.join(str(p) for p in gone) or 'nothing'}; "
          f"started an empty one in {folder}\n(it was: {why})")
    return 0
