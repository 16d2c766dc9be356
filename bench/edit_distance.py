"""Edit distance between routes, side by side: the pure-Python Levenshtein table the search metrics
used before against rapidfuzz's kernel (search/metrics.py: edit_distance), on random 60-move routes
(the length of a Maze route of the hardest test mazes). Prints both rates and their ratio, measured in
the same run, and checks that they agree on every pair.

    python bench/edit_distance.py [--pairs 2000]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def table_distance(a: list[str], b: list[str]) -> int:
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


def main(argv: list[str] | None = None) -> int:
    from vpo_harness.search.metrics import edit_distance

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=2000)
    ap.add_argument("--moves", type=int, default=60)
    a = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    pairs = [([str(m) for m in rng.choice(list("UDLR"), a.moves)], [str(m) for m in rng.choice(list("UDLR"), a.moves)])
             for _ in range(a.pairs)]
    t0 = time.perf_counter()
    ref = [table_distance(x, y) for x, y in pairs]
    t_ref = time.perf_counter() - t0
    t0 = time.perf_counter()
    got = [edit_distance(x, y) for x, y in pairs]
    t_lib = time.perf_counter() - t0
    if got != ref:
        raise SystemExit("edit_distance disagrees with the table")
    print(f"{a.pairs} pairs of {a.moves}-move routes: table {a.pairs / t_ref:,.0f} pairs/s, "
          f"rapidfuzz {a.pairs / t_lib:,.0f} pairs/s, ratio {t_ref / t_lib:.0f}x (same run, same pairs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
