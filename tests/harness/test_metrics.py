"""Estimators against brute force over all k-subsets, and the identities vpo.md names."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from vpo_harness.harness.core import metrics


def brute_best_at_k(x: np.ndarray, k: int) -> float:
    return float(np.mean([max(c) for c in itertools.combinations(x, k)]))


@pytest.mark.parametrize("n", [1, 2, 5, 9])
def test_best_at_k_matches_subset_enumeration(n: int) -> None:
    rng = np.random.default_rng(n)
    x = rng.random((4, n))
    for k in range(1, n + 1):
        est = metrics.best_at_k(x, k)
        brute = np.array([brute_best_at_k(row, k) for row in x])
        assert np.max(np.abs(est - brute)) < 1e-12


def test_best_at_k_with_ties_and_discrete_scores() -> None:
    x = np.array([[0.0, 0.25, 0.25, 0.5, 1.0, 1.0, 0.0]])
    for k in range(1, 8):
        assert abs(metrics.best_at_k(x, k)[0] - brute_best_at_k(x[0], k)) < 1e-12


def test_best_at_k_endpoints() -> None:
    rng = np.random.default_rng(0)
    x = rng.random((10, 30))
    assert np.allclose(metrics.best_at_k(x, 1), x.mean(axis=1), atol=1e-12)
    assert np.allclose(metrics.best_at_k(x, 30), x.max(axis=1), atol=1e-12)


def test_weights_are_stable_for_huge_n() -> None:
    w = metrics.best_at_k_weights(100_000, 500)
    assert np.isfinite(w).all() and abs(w.sum() - 1.0) < 1e-9
    assert w[:499].sum() == 0.0


def test_best_equals_pass_on_binary_scores() -> None:
    rng = np.random.default_rng(1)
    c = (rng.random((50, 20)) < 0.2).astype(float)
    for k in (1, 3, 7, 20):
        assert np.allclose(metrics.best_at_k(c, k), metrics.pass_at_k(c, k), atol=1e-12)


def test_pass_at_k_matches_chen_formula() -> None:
    for n, c, k in [(10, 0, 3), (10, 3, 3), (10, 8, 3), (30, 1, 30), (7, 7, 1), (200, 13, 50)]:
        want = 1.0 - math.comb(n - c, k) / math.comb(n, k)
        got = metrics.pass_at_k(np.array([[1.0] * c + [0.0] * (n - c)]), k)[0]
        assert abs(got - want) < 1e-12


def test_variable_pool_sizes_and_undefined_k() -> None:
    pools = [np.array([0.1, 0.9, 0.5]), np.array([0.2, 0.4])]
    est = metrics.best_at_k(pools, 3)
    assert abs(est[0] - 0.9) < 1e-12 and np.isnan(est[1])
    assert metrics.mean_se(est).n == 1


def test_k_out_of_range_raises() -> None:
    with pytest.raises(ValueError, match="1 <= k <= n"):
        metrics.best_at_k_weights(3, 4)


def test_diversity_is_mean_pairwise_l1() -> None:
    rng = np.random.default_rng(2)
    r = rng.random((9, 4))
    brute = np.mean([np.abs(a - b).sum() for a, b in itertools.combinations(r, 2)])
    assert abs(metrics.mean_pairwise_l1(r) - brute) < 1e-12
    assert metrics.mean_pairwise_l1(np.ones((5, 4))) == 0.0


def test_pareto_fraction() -> None:
    r = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5], [0.2, 0.2]])
    assert metrics.pareto_fraction(r) == pytest.approx(0.75)


def test_vpo_objective_prefers_covering_sets() -> None:
    w = metrics.dirichlet_weights(2, 1000, 1.0, seed=0)
    corners = np.array([[1.0, 0.0], [0.0, 1.0]])
    middles = np.array([[0.5, 0.5], [0.5, 0.5]])
    assert metrics.vpo_objective(corners, w) > metrics.vpo_objective(middles, w) + 0.2


def test_summarize_mean_and_stderr() -> None:
    pools = [np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[1.0, 1.0], [1.0, 1.0]])]
    scalars = [p.mean(axis=1) for p in pools]
    passes = [np.all(p == 1, axis=1) for p in pools]
    s = metrics.summarize(pools, scalars, passes, [1, 2], ["a", "b"])
    assert s["best@1"]["mean"] == pytest.approx(0.75)
    assert s["best@1"]["stderr"] == pytest.approx(np.std([0.5, 1.0], ddof=1) / np.sqrt(2))
    assert s["pass@2"]["mean"] == pytest.approx(0.5)
    assert s["diversity"]["mean"] == pytest.approx(1.0)
    assert s["components"] == {"a": 0.75, "b": 0.75}


def test_curve_equals_pointwise() -> None:
    rng = np.random.default_rng(5)
    pools = [rng.random(30), rng.random(12), rng.random(30)]
    curve = metrics.best_at_k_curve(pools, [1, 4, 16, 30])
    for k, v in curve.items():
        assert np.allclose(v, metrics.best_at_k(pools, k), equal_nan=True)
    assert np.isnan(curve[16][1]) and not np.isnan(curve[16][0])
