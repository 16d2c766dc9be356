"""Paired bootstrap speed: 1,000 problems x 10 ks x (best, pass) with 10,000 resamples.

Target: under 1 s for the vectorised interval (CPU time is printed too: on a shared machine the
wall time includes waiting for a core). Baseline in the same run: the same resamples drawn
and reduced one metric at a time with fancy indexing (the obvious loop), to show the ratio.
    python3 bench/compare_bootstrap.py
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout this file sits in runs (its vpo_harness/)

from vpo_harness.harness.core.metrics import best_at_k_curve, pass_at_k  # noqa: E402
from vpo_harness.reports.compare import paired_bootstrap  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--smoke", action="store_true", help="100 problems, 200 resamples: that it runs, not the figure")
    smoke = ap.parse_args().smoke
    rng = np.random.default_rng(0)
    P, n, ks, B = (100, 32, [1, 2, 4, 8, 32], 200) if smoke else (1000, 32, [1, 2, 3, 4, 6, 8, 12, 16, 24, 32], 10_000)
    q = rng.uniform(0.05, 0.7, P)
    a = (rng.random((P, n)) < q[:, None]).astype(float) * rng.random((P, n))
    b = (rng.random((P, n)) < (q + 0.05)[:, None]).astype(float) * rng.random((P, n))
    ba, bb = best_at_k_curve(a, ks), best_at_k_curve(b, ks)
    rows = [bb[k] - ba[k] for k in ks] + [pass_at_k(b > 0.5, k) - pass_at_k(a > 0.5, k) for k in ks]
    d = np.stack(rows)  # (20, 1000)
    t, c = time.perf_counter(), time.process_time()
    lo, hi = paired_bootstrap(d, B, seed=0)
    t_vec, c_vec = time.perf_counter() - t, time.process_time() - c
    t = time.perf_counter()
    idx = np.random.default_rng(0).integers(0, P, size=(B, P), dtype=np.int32)
    ref = [np.quantile(d[i][idx].mean(axis=1), [0.025, 0.975]) for i in range(d.shape[0])]
    t_loop = time.perf_counter() - t
    gap = max(abs(lo[i] - ref[i][0]) + abs(hi[i] - ref[i][1]) for i in range(d.shape[0]))
    print(f"{P} problems x {len(ks)} ks x 2 metrics, {B} resamples: vectorised {t_vec:.3f} s wall, "
          f"{c_vec:.3f} s CPU (target < 1 s; wall > CPU means other processes held the cores), per-metric fancy indexing {t_loop:.3f} s, ratio {t_loop / t_vec:.1f}x; "
          f"max interval difference {gap:.2e} (same resamples)")


if __name__ == "__main__":
    main()
