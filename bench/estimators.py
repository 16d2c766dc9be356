"""best@k / pass@k curves for 1000 problems x n=1000: vectorised estimators vs a per-problem loop.

Both sides compute the same numbers (checked); the ratio is printed, measured in this run.
    python bench/estimators.py [--problems 1000] [--n 1000]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout this file sits in runs (its vpo_harness/)

from vpo_harness.harness.core import metrics  # noqa: E402

KS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000)


def loop_best_at_k(x: np.ndarray, k: int) -> float:
    """The textbook per-problem form: sort, then sum weights built one term at a time."""
    xs = sorted(x.tolist())
    n = len(xs)
    w = k / n
    total = w * xs[n - 1]
    for i in range(n, k, -1):  # w_{i-1} = w_i (i-k)/(i-1)
        w = w * (i - k) / (i - 1)
        total += w * xs[i - 2]
    return total


def loop_pass_at_k(c: int, n: int, k: int) -> float:
    if n - c < k:
        return 1.0
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    return 1.0 - prod


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--problems", type=int, default=1000)
    ap.add_argument("--n", type=int, default=1000)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    scores = rng.random((args.problems, args.n))
    correct = rng.random((args.problems, args.n)) < 0.05
    ks = [k for k in KS if k <= args.n]

    t0 = time.perf_counter()
    vec_b = metrics.best_at_k_curve(scores, ks)
    vec_p = {k: metrics.pass_at_k(correct, k) for k in ks}
    t_vec = time.perf_counter() - t0

    t0 = time.perf_counter()
    loop_b = {k: np.array([loop_best_at_k(row, k) for row in scores]) for k in ks}
    counts = correct.sum(axis=1)
    loop_p = {k: np.array([loop_pass_at_k(int(c), args.n, k) for c in counts]) for k in ks}
    t_loop = time.perf_counter() - t0

    err = max(max(np.abs(vec_b[k] - loop_b[k]).max(), np.abs(vec_p[k] - loop_p[k]).max()) for k in ks)
    print(f"estimators: {args.problems} problems x n={args.n}, {len(ks)} values of k, best@k + pass@k")
    print(f"  vectorised      {t_vec:8.3f} s")
    print(f"  per-problem loop {t_loop:8.3f} s")
    print(f"  speed-up (loop / vectorised): {t_loop / t_vec:.1f}x   max |difference| = {err:.2e}")


if __name__ == "__main__":
    main()
