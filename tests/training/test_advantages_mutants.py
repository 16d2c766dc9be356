"""Advantage estimators against brute-force references on varied rewards: the tests that kill the
mutants scripts/mutation.sh found surviving in training/advantages.py (dispatch arguments dropped,
custom scalars ignored, inputs modified in place, wrong normalisation)."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from vpo_harness.training import advantages as A

RNG = np.random.default_rng(7)
REW = RNG.integers(0, 5, size=(3, 6, 2, 4)) / 4.0  # (groups, G, m, d): varied, ties included


def first_component(r: np.ndarray) -> np.ndarray:
    return np.asarray(r, dtype=float)[..., 0]


def brute_coefficients(x: np.ndarray, k: int) -> np.ndarray:
    n = len(x)
    return np.array([np.mean([max(x[j] for j in s) for s in itertools.combinations(range(n), k) if i in s])
                     for i in range(n)])


@pytest.mark.parametrize("k", [1, 2, 3, 6])
def test_max_at_k_coefficients_match_subset_enumeration(k):
    for x in (RNG.random(6), np.array([0.5, 0.5, 0.0, 1.0, 0.25, 0.5])):
        np.testing.assert_allclose(A.max_at_k_coefficients(x, k), brute_coefficients(x, k), atol=1e-12)
    with pytest.raises(ValueError, match="1 <= k <= n"):
        A.max_at_k_coefficients(np.zeros(3), 4)
    with pytest.raises(ValueError):
        A.max_at_k_coefficients(np.zeros(3), 0)


def test_max_at_k_advantages_use_the_scalar_k_and_normalisation():
    R = first_component(REW[:, :, 0, :])
    for k, norm in ((3, True), (2, False), (None, True)):
        got = A.max_at_k_advantages(REW, k=k, scalar=first_component, normalize=norm)
        kk = max(2, 6 // 2) if k is None else k
        for b in range(3):
            c = brute_coefficients(R[b], kk)
            want = c - c.mean()
            if norm:
                want = want / (want.std(ddof=1) + A.EPS) if want.std(ddof=1) >= A.EPS else np.zeros(6)
            elif np.ptp(R[b]) < A.EPS:
                want = np.zeros(6)
            np.testing.assert_allclose(got[b], want, atol=1e-9)
    flat = np.zeros((1, 4, 1, 2))
    assert (A.max_at_k_advantages(flat, k=2) == 0).all() and (A.max_at_k_advantages(flat, k=2, normalize=False) == 0).all()
    assert A.max_at_k_advantages(REW, k=99).shape == (3, 6)  # k is capped at G


def test_group_norms_match_their_definitions():
    R = RNG.random((4, 5))
    R[2] = 0.3  # a flat group
    z = A.group_zscore(R)
    want = (R - R.mean(1, keepdims=True)) / (R.std(1, keepdims=True) + A.EPS)
    want[2] = 0.0
    np.testing.assert_allclose(z, want, atol=1e-12)
    g = A.grpo_group_norm(R)
    want = (R - R.mean(1, keepdims=True)) / (R.std(1, ddof=1, keepdims=True) + A.EPS)
    want[2] = 0.0
    np.testing.assert_allclose(g, want, atol=1e-12)
    one = np.array([[0.5], [2.0]])
    np.testing.assert_allclose(A.grpo_group_norm(one), one / (1 + A.EPS))


def test_dedupe_keeps_first_of_each_key_and_leaves_the_input_alone():
    r = RNG.random((1, 2, 3, 2))
    before = r.copy()
    keys = [[["a", "a", "b"], [None, "x", "x"]]]
    out = A.dedupe_chains(r, keys)
    np.testing.assert_array_equal(r, before)  # the caller's array is not modified
    np.testing.assert_allclose(out[0, 0], [r[0, 0, 0], r[0, 0, 2], [0, 0]])
    np.testing.assert_allclose(out[0, 1], [r[0, 1, 1], [0, 0], [0, 0]])


def test_set_and_weighted_rewards_match_loops():
    W = A.dirichlet_weights(3, 5, 4, 1.0, np.random.default_rng(1))
    got = A.vpo_rewards(REW, W)
    want = np.array([[np.mean([max(W[b, k] @ REW[b, g, j] for j in range(2)) for k in range(5)])
                      for g in range(6)] for b in range(3)])
    np.testing.assert_allclose(got, want, atol=1e-12)
    rw = RNG.random((3, 6, 4))
    np.testing.assert_allclose(A.weighted_rewards(REW, rw),
                               [[rw[b, g] @ REW[b, g, 0] for g in range(6)] for b in range(3)], atol=1e-12)
    np.testing.assert_allclose(A.multi_rlvr_rewards(REW, first_component), REW[..., 0].sum(axis=2))
    np.testing.assert_allclose(A.grpo_rewards(REW, first_component), REW[:, :, 0, 0])
    np.testing.assert_allclose(A.multi_rlvr_advantages(REW, first_component),
                               A.grpo_group_norm(REW[..., 0].sum(axis=2)))


def test_compute_advantages_passes_every_argument_through():
    rw = RNG.random((3, 6, 4))
    for sobol in (False, True):
        got = A.compute_advantages("vpo", REW, rng=np.random.default_rng(3), K=7, alpha=0.5, sobol=sobol)
        want = A.vpo_advantages(REW, K=7, alpha=0.5, sobol=sobol, rng=np.random.default_rng(3))
        np.testing.assert_allclose(got, want)
        assert not np.allclose(got, A.vpo_advantages(REW, rng=np.random.default_rng(3), sobol=sobol))
    np.testing.assert_allclose(A.compute_advantages("max_at_k", REW, k=2), A.max_at_k_advantages(REW, k=2))
    assert not np.allclose(A.max_at_k_advantages(REW, k=2), A.max_at_k_advantages(REW))  # k reaches it
    # the defaults: K=100 Dirichlet(1) draws, no Sobol; k = max(2, G // 2) for max@k
    np.testing.assert_allclose(A.compute_advantages("vpo", REW, rng=np.random.default_rng(4)),
                               A.vpo_advantages(REW, K=100, alpha=1.0, sobol=False, rng=np.random.default_rng(4)))
    four = REW[:, :4]
    np.testing.assert_allclose(A.max_at_k_advantages(four), A.max_at_k_advantages(four, k=2))
    assert not np.allclose(A.max_at_k_advantages(four, k=3), A.max_at_k_advantages(four, k=2))
    np.testing.assert_allclose(A.compute_advantages("grpo", REW), A.grpo_advantages(REW))
    np.testing.assert_allclose(A.compute_advantages("multi_rlvr", REW), A.multi_rlvr_advantages(REW))
    for m in ("random_weight", "goal_cond"):
        np.testing.assert_allclose(A.compute_advantages(m, REW, row_weights=rw), A.random_weight_advantages(REW, rw))
        with pytest.raises(ValueError, match=f"{m} needs row_weights"):
            A.compute_advantages(m, REW)
    with pytest.raises(ValueError, match="unknown method 'nope'; known: grpo, vpo"):
        A.compute_advantages("nope", REW)


def test_weight_samplers_are_on_the_simplex_with_the_right_mean():
    for draw in (A.dirichlet_weights, A.sobol_weights):
        w = draw(2, 64, 3, 1.0, np.random.default_rng(0))
        assert w.shape == (2, 64, 3) and (w > 0).all()
        np.testing.assert_allclose(w.sum(-1), 1.0)
        np.testing.assert_allclose(w.mean(axis=(0, 1)), [1 / 3] * 3, atol=0.05)
    w = A.sobol_weights(1, 256, 2, 3.0, np.random.default_rng(0))  # alpha != 1: scipy's Gamma ppf
    assert abs(w[0, :, 0].var() - (3 * 3) / (6 ** 2 * 7)) < 0.01  # Beta(3, 3) variance 1/28
    u = np.array([0.1, 0.5, 0.9])
    np.testing.assert_allclose(A._gamma_ppf(u, 1.0), -np.log1p(-u))


def test_sobol_fallback_without_scipy_is_a_shifted_lattice_in_the_unit_cube(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "scipy.stats", None)  # `from scipy.stats import qmc` fails
    pts = A._scrambled_sobol(64, 3, np.random.default_rng(0))
    assert pts.shape == (64, 3) and (pts >= 0).all() and (pts < 1).all()
    assert np.abs(pts.mean(axis=0) - 0.5).max() < 0.1  # evenly spread
    assert len({tuple(p) for p in pts.round(9)}) == 64
    again = A._scrambled_sobol(64, 3, np.random.default_rng(0))
    np.testing.assert_array_equal(pts, again)
    w = A.sobol_weights(2, 16, 3, 1.0, np.random.default_rng(1))
    np.testing.assert_allclose(w.sum(-1), 1.0)


def test_goal_prompt_appends_weights_to_a_copy_of_the_last_message():
    msgs = [{"role": "system", "content": "sys"}, {"role": "user", "content": "solve  "}]
    out = A.goal_prompt(msgs, [0.125, 0.5], ["gold", "lava"])
    assert msgs[1]["content"] == "solve  "  # input untouched
    assert out[0] == msgs[0]
    assert out[1]["content"] == ("solve\nObjective weights (higher = more important): gold=0.12, lava=0.50. "
                                 "Maximise the weighted score.")
    assert math.isclose(A.mean_scalar(np.array([[0.0, 1.0]]))[0], 0.5)
