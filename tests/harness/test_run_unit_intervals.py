"""Intervals for training-seed groups treat each training run as one draw.

Synthetic designs with a known true difference: x[s, m] = delta + a_s + b_m + e_sm, the seed effect a_s
shared by every problem of a training run and the problem effect b_m shared by every run (the same
mazes for all seeds). 95% intervals of :func:`crossed_estimate` must cover delta in 93-97% of 1,000
designs; the interval that takes the S*M cells as independent draws must not (it is what the harness
printed before)."""
from __future__ import annotations

import numpy as np

from vpo_harness.harness.core.metrics import crossed_estimate
from vpo_harness.reports.compare import unit_estimate
from vpo_harness.harness.core.seed_groups import unit_label

DESIGNS = 1000


def _designs(seed: int, S: int = 5, M: int = 100):
    rng = np.random.default_rng(seed)
    for _ in range(DESIGNS):
        delta = rng.uniform(-0.1, 0.1)
        s_seed, s_prob, s_cell = rng.uniform(0.02, 0.1), rng.uniform(0.03, 0.2), rng.uniform(0.03, 0.2)
        x = (delta + rng.normal(0, s_seed, (S, 1)) + rng.normal(0, s_prob, (1, M))
             + rng.normal(0, s_cell, (S, M)))
        yield delta, x


def test_crossed_intervals_cover_the_true_difference_at_their_level() -> None:
    covered = naive = 0
    for delta, x in _designs(20261203):
        lo, hi = crossed_estimate(x).interval()
        covered += lo <= delta <= hi
        half = 1.96 * x.std(ddof=1) / np.sqrt(x.size)          # cells as independent draws
        naive += abs(x.mean() - delta) <= half
    assert 0.93 <= covered / DESIGNS <= 0.97
    assert naive / DESIGNS < 0.85


def test_seeds_on_their_own_problems_use_the_per_seed_means() -> None:
    """When each training seed was evaluated on other problems (no grid), the run-unit estimate is Student
    t over the per-seed means, which also covers at its level."""
    rng = np.random.default_rng(7)
    covered = 0
    for _ in range(DESIGNS):
        delta, S, M = rng.uniform(-0.1, 0.1), 4, 30
        x = delta + rng.normal(0, 0.05, (S, 1)) + rng.normal(0, 0.15, (S, M))
        units = [unit_label(f"p{s}-{m}", s) for s in range(S) for m in range(M)]    # no problem shared
        est = unit_estimate(units, x.ravel(), "training")
        assert est.df == S - 1 and est.mean == np.mean(x.mean(axis=1))
        lo, hi = est.interval()
        covered += lo <= delta <= hi
    assert 0.93 <= covered / DESIGNS <= 0.97


def test_a_grid_uses_the_crossed_estimate() -> None:
    x = np.random.default_rng(3).normal(size=(3, 12))
    units = [unit_label(f"p{m}", s) for s in range(3) for m in range(12)]
    got, want = unit_estimate(units, x.ravel(), "training"), crossed_estimate(x)
    assert (got.mean, got.stderr, got.df) == (want.mean, want.stderr, want.df)


def test_the_standard_error_is_the_spread_of_the_mean_over_repeated_designs() -> None:
    """Same effect sizes, 1,000 draws: the mean squared s.e. matches the variance of the grand mean
    (which holds the seed term var(a)/S; the cells-as-independent s.e. is 5x too small here)."""
    rng = np.random.default_rng(11)
    means, var_est = [], []
    for _ in range(DESIGNS):
        x = rng.normal(0, 0.06, (5, 1)) + rng.normal(0, 0.12, (1, 100)) + rng.normal(0, 0.12, (5, 100))
        est = crossed_estimate(x)
        means.append(est.mean)
        var_est.append(est.stderr ** 2)
    assert 0.88 <= np.mean(var_est) / np.var(means, ddof=1) <= 1.2
