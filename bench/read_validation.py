"""Cost of validating samples.jsonl rows on reading (harness/core/rows.py: check_row, called by
harness/core/store.py: iter_samples), as a ratio to the same read without the check in the same run.

Rows: m answers of d reward components each, like a Maze run (m=3, d=4) and like a code run (m=1,
one reward per test, d=60). CPU time is reported: on a shared machine wall time includes waiting.
    python3 bench/read_validation.py            # 5,000 rows per shape
    python3 bench/read_validation.py --rows 20000
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout this file sits in runs (its vpo_harness/)

from vpo_harness.harness.core import store  # noqa: E402


def _rows(n: int, m: int, d: int, rng: random.Random) -> list[dict]:
    return [{"problem_id": f"p{i // 30}", "chain_index": i % 30, "seed": i, "text": "x" * 200,
             "answers": ["UP DOWN"] * m, "rewards": [[rng.random() for _ in range(d)] for _ in range(m)],
             "scalars": [0.5] * m, "passed": [False] * m, "n_unique": m, "error": None, "prompt_tokens": 10,
             "completion_tokens": 50, "latency_s": 0.1, "score_s": 0.01} for i in range(n)]


def _cpu(fn, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=5000)
    args = ap.parse_args()
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        for name, m, d in (("maze-like m=3 d=4", 3, 4), ("code-like m=1 d=60", 1, 60)):
            path = Path(tmp) / "samples.jsonl"
            path.write_text("".join(json.dumps(r) + "\n" for r in _rows(args.rows, m, d, rng)))
            checked = _cpu(lambda: list(store.iter_samples(path)))
            real = store.check_row
            store.check_row = lambda row: None  # the baseline: the same read without the check
            try:
                plain = _cpu(lambda: list(store.iter_samples(path)))
            finally:
                store.check_row = real
            print(f"{name}: {args.rows} rows read in {checked:.3f}s CPU with validation, {plain:.3f}s without: "
                  f"{checked / plain:.2f}x")


if __name__ == "__main__":
    main()
