"""Metric edge cases against brute force: the tests that kill mutants scripts/mutation.sh found
surviving in harness/core/metrics.py (pool-size grouping, undefined k, NaN handling, stderr, Estimate
round trips, Pareto ties, summarize on pools of different sizes and dimensions)."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from vpo_harness.harness.core import metrics as M


def brute_best(x, k):
    return float(np.mean([max(c) for c in itertools.combinations(x, k)]))


def brute_pass(ok, k):
    return float(np.mean([any(c) for c in itertools.combinations(ok, k)]))


def test_weights_match_binomials_and_sum_to_one():
    for n in range(1, 9):
        for k in range(1, n + 1):
            w = M.best_at_k_weights(n, k)
            want = [math.comb(i - 1, k - 1) / math.comb(n, k) for i in range(1, n + 1)]
            np.testing.assert_allclose(w, want, atol=1e-13)
            assert abs(w.sum() - 1) < 1e-12
    for n, k in ((3, 0), (3, 4), (0, 1)):
        with pytest.raises(ValueError, match="1 <= k <= n"):
            M.best_at_k_weights(n, k)


def test_curve_on_pools_of_different_sizes_matches_brute_force():
    rng = np.random.default_rng(3)
    pools = [rng.integers(0, 4, size=n) / 3 for n in (5, 3, 5, 1, 0, 4)]
    ks = [1, 2, 3, 4, 5]
    curve = M.best_at_k_curve(pools, ks)
    for k in ks:
        want = [brute_best(p, k) if len(p) >= k else np.nan for p in pools]
        np.testing.assert_allclose(curve[k], want, atol=1e-12, equal_nan=True)
        np.testing.assert_allclose(M.best_at_k(pools, k), want, atol=1e-12, equal_nan=True)
    mat = rng.random((4, 6))
    np.testing.assert_allclose(M.best_at_k(mat, 3), [brute_best(r, 3) for r in mat], atol=1e-12)


def test_pass_at_k_on_pools_of_different_sizes_matches_brute_force():
    pools = [np.array([1, 0, 0, 1, 0], bool), np.array([0, 0, 0], bool), np.array([1, 1], bool),
             np.array([0, 0, 0, 0, 1, 0], bool), np.zeros(0, bool), np.array([0.9, 0.1, 0.4])]
    for k in (1, 2, 3, 4):
        want = [brute_pass(np.asarray(p) > 0.5, k) if len(p) >= k else np.nan for p in pools]
        np.testing.assert_allclose(M.pass_at_k(pools, k), want, atol=1e-12, equal_nan=True)


def test_mean_se_drops_nan_and_uses_the_sample_std():
    e = M.mean_se([0.2, np.nan, 0.6, 1.0])
    assert (e.mean, e.n) == (pytest.approx(0.6), 3)
    assert e.stderr == pytest.approx(np.std([0.2, 0.6, 1.0], ddof=1) / math.sqrt(3))
    one = M.mean_se([0.4])
    assert (one.mean, one.stderr, one.n) == (0.4, 0.0, 1) and one.defined
    none = M.mean_se([np.nan, np.nan])
    assert none.n == 0 and math.isnan(none.mean) and math.isnan(none.stderr) and not none.defined
    assert not M.Estimate(0.5, 0.1, 0).defined and M.Estimate(0.0, 0.0, 2).defined


def test_estimate_round_trip_and_null():
    e = M.Estimate(0.25, 0.05, 7)
    assert e.as_dict() == {"mean": 0.25, "stderr": 0.05, "n": 7}
    assert M.Estimate.from_dict(e.as_dict()) == e
    back = M.Estimate.from_dict({"mean": None, "stderr": None})
    assert math.isnan(back.mean) and math.isnan(back.stderr) and back.n == 0


def test_pareto_fraction_with_ties_and_empty_pool():
    r = np.array([[1, 0], [1, 0], [0, 1], [0.5, 0.5], [0.4, 0.4], [1, 1]], float)
    # only [1, 1] is undominated: it dominates every other row
    assert M.pareto_fraction(r) == pytest.approx(1 / 6)
    r2 = r[:4]  # ties count as non-dominated, [0.5, 0.5] is not dominated by either corner
    assert M.pareto_fraction(r2) == 1.0
    assert math.isnan(M.pareto_fraction(np.zeros((0, 2))))
    assert M.mean_pairwise_l1(np.zeros((1, 3))) == 0.0


def test_vpo_objective_and_weights():
    w = M.dirichlet_weights(3, 50, 1.0, 0)
    assert w.shape == (50, 3) and np.allclose(w.sum(1), 1)
    np.testing.assert_array_equal(w, M.dirichlet_weights(3, 50, 1.0, np.random.default_rng(0)))
    assert M.dirichlet_weights(2, 4, 1.0, 0, size=(5,)).shape == (5, 4, 2)
    r = np.array([[1, 0, 0], [0, 1, 0.5]], float)
    assert M.vpo_objective(r, w) == pytest.approx(np.mean([max(r @ wi) for wi in w]))
    assert M.vpo_objective(np.zeros((0, 3)), w) == 0.0
    assert M.default_ks(30) == (1, 2, 4, 8, 16, 30) and M.default_ks(5) == (1, 2, 4) and M.default_ks(0) == (1,)


def test_summarize_mixed_dimensions_and_empty_pools():
    pools = [np.array([[1.0, 0.0], [0.5, 0.5]]), np.array([[0.0, 1.0, 1.0]]), np.zeros((0, 2))]
    scalars = [p.mean(axis=1) if len(p) else np.zeros(0) for p in pools]
    passes = [(p >= 1).all(axis=1) if len(p) else np.zeros(0, bool) for p in pools]
    out = M.summarize(pools, scalars, passes, [1, 2], None)
    assert out["n_problems"] == 3 and out["n_candidates"] == 3
    assert out["best@1"]["mean"] == pytest.approx(np.mean([0.5, 2 / 3]))
    assert out["best@2"]["n"] == 1 and out["best@2"]["mean"] == pytest.approx(0.5)
    assert out["pass@1"]["mean"] == pytest.approx(0.0)
    assert out["diversity"]["n"] == 1 and out["diversity"]["mean"] == pytest.approx(1.0)
    assert "components" not in out  # dimensions differ: no per-component means
    w2, w3 = M.dirichlet_weights(2, M.VPO_K, 1.0, 5), M.dirichlet_weights(3, M.VPO_K, 1.0, 5)
    want = np.mean([M.vpo_objective(pools[0], w2), M.vpo_objective(pools[1], w3)])
    assert M.summarize(pools, scalars, passes, [1], None, objective_seed=5)["vpo_objective"]["mean"] == pytest.approx(want)
    named = M.summarize(pools[:1], scalars[:1], passes[:1], [1], ["a", "b"])
    assert named["components"] == {"a": 0.75, "b": 0.25}
    assert named["spread"] == {"a": pytest.approx(0.25), "b": pytest.approx(0.25)}
    unnamed = M.summarize(pools[:1], scalars[:1], passes[:1], [1], ["only_one"])
    assert set(unnamed["components"]) == {"c0", "c1"}


def test_pools_of_one_candidate():
    assert M.pareto_fraction(np.array([[0.2, 0.4]])) == 1.0  # one candidate is undominated
    assert M.pass_at_k([np.array([True]), np.array([False])], 1).tolist() == [1.0, 0.0]
    assert M.best_at_k([np.array([0.3])], 1).tolist() == [0.3]
    assert M.mean_pairwise_l1(np.array([[0.2, 0.4]])) == 0.0
