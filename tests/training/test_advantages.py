"""Properties of the advantage estimators that vpo.md states or implies."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from vpo_harness.harness.core import metrics
from vpo_harness.training import advantages as A

rng0 = np.random.default_rng(0)


def _rand_rewards(groups=3, G=8, m=3, d=4, seed=0):
    return np.random.default_rng(seed).random((groups, G, m, d))


@pytest.mark.parametrize("method", ["grpo", "vpo", "multi_rlvr", "max_at_k", "random_weight"])
def test_zero_mean_within_group(method):
    r = _rand_rewards(m=1 if method in ("grpo", "max_at_k", "random_weight") else 3)
    w = np.random.default_rng(1).dirichlet(np.ones(4), size=r.shape[:2])
    adv = A.compute_advantages(method, r, rng=np.random.default_rng(2), row_weights=w)
    assert adv.shape == r.shape[:2]
    np.testing.assert_allclose(adv.mean(axis=1), 0.0, atol=1e-9)
    assert np.abs(adv).max() > 0.1


@pytest.mark.parametrize("method", ["grpo", "vpo", "multi_rlvr", "max_at_k", "random_weight"])
def test_constant_group_gives_zero(method):
    one = np.random.default_rng(3).random((1, 1, 1 if method in ("grpo", "max_at_k", "random_weight") else 3, 4))
    r = np.repeat(one, 8, axis=1)
    w = np.full((1, 8, 4), 0.25)
    adv = A.compute_advantages(method, r, rng=np.random.default_rng(0), row_weights=w)
    assert np.all(adv == 0.0)


def test_grpo_uses_bessel_std_vpo_population_std():
    """GRPO follows veRL (the paper's baseline trainer): std with n - 1; VPO keeps vpo.md's population std."""
    R = np.array([[0.0, 1.0, 1.0, 3.0], [2.0, 2.0, 2.0, 2.0]])
    g = A.grpo_group_norm(R)
    mean, sd1 = R[0].mean(), np.sqrt(((R[0] - R[0].mean()) ** 2).sum() / 3)
    np.testing.assert_allclose(g[0], (R[0] - mean) / (sd1 + 1e-6), rtol=1e-12)
    assert np.all(g[1] == 0.0)
    v = A.group_zscore(R)
    np.testing.assert_allclose(v[0], (R[0] - mean) / (R[0].std() + 1e-6), rtol=1e-12)
    np.testing.assert_allclose(g[0] / v[0], np.sqrt(3 / 4), rtol=1e-5)      # sqrt((G-1)/G)
    # a one-rollout group: mean 0, std 1, as veRL does
    np.testing.assert_allclose(A.grpo_group_norm(np.array([[0.4]])), [[0.4 / (1 + 1e-6)]])
    r = _rand_rewards(groups=2, G=8, m=1)
    np.testing.assert_allclose(A.grpo_advantages(r), A.grpo_group_norm(A.grpo_rewards(r)))
    np.testing.assert_allclose(A.multi_rlvr_advantages(r), A.grpo_group_norm(A.multi_rlvr_rewards(r)))


def test_vpo_m1_large_K_approaches_grpo():
    r = _rand_rewards(groups=4, G=8, m=1)
    grpo = A.grpo_advantages(r) / np.sqrt(7 / 8)      # undo the Bessel factor: same ranking and scale
    vpo = A.vpo_advantages(r, K=20000, rng=np.random.default_rng(0))
    np.testing.assert_allclose(vpo, grpo, atol=0.05)
    # a small K is visibly noisier, so the test above is not trivially satisfied
    vpo_small = A.vpo_advantages(r, K=3, rng=np.random.default_rng(0))
    assert np.abs(vpo_small - grpo).max() > np.abs(vpo - grpo).max()


def test_corners_beat_copies_of_middle():
    corners = np.array([[1.0, 0.0], [0.0, 1.0]])
    middle = np.array([[0.5, 0.5], [0.5, 0.5]])
    w = A.dirichlet_weights(1, 5000, 2, rng=np.random.default_rng(0))
    R = A.vpo_rewards(np.stack([corners, middle])[None], w)[0]
    assert R[0] > R[1] + 0.2          # E max(w1, w2) = 0.75 vs 0.5
    assert abs(R[0] - 0.75) < 0.02 and abs(R[1] - 0.5) < 1e-9
    adv = A.group_zscore(R[None])[0]
    assert adv[0] > 0 > adv[1]
    # GRPO / Multi-RLVR cannot tell them apart: same summed task scalar
    assert np.ptp(A.multi_rlvr_rewards(np.stack([corners, middle])[None])[0]) < 1e-12


def test_dedupe_removes_repeats_and_zero_pads():
    r = np.array([[[[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]]])
    out = A.dedupe_chains(r, [[["RR", "RR", "DD"]]])
    np.testing.assert_array_equal(out[0, 0], [[1, 0], [0, 1], [0, 0]])
    out = A.dedupe_chains(r, [[["RR", None, "RR"]]])
    np.testing.assert_array_equal(out[0, 0], [[1, 0], [0, 0], [0, 0]])
    # a chain repeating its best answer gains nothing over a single copy under VPO
    w = A.dirichlet_weights(1, 100, 2, rng=np.random.default_rng(0))
    one = A.vpo_rewards(np.array([[[[1.0, 0.0], [0, 0], [0, 0]]]]), w)
    rep = A.vpo_rewards(A.dedupe_chains(np.array([[[[1.0, 0.0]] * 3]]), [[["R", "R", "R"]]]), w)
    assert one[0, 0] == rep[0, 0]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=2, max_size=9), st.integers(1, 9))
def test_max_at_k_coefficients_average_to_best_at_k(xs, k):
    x = np.array(xs)
    k = min(k, len(x))
    c = A.max_at_k_coefficients(x, k)
    assert c.mean() == pytest.approx(metrics.best_at_k([x], k)[0], abs=1e-9)
    brute = np.mean([max(s) for s in itertools.combinations(x, k)])
    assert metrics.best_at_k([x], k)[0] == pytest.approx(brute, abs=1e-9)


def test_max_at_k_rewards_the_top_more_than_grpo_does():
    r = np.array([0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 1.0])[None, :, None, None].repeat(4, axis=3)
    adv = A.max_at_k_advantages(r, k=4)
    assert np.all(np.diff(adv[0]) >= -1e-12)      # monotone in the reward
    assert adv[0, 0] == pytest.approx(adv[0, 1]) or adv[0, 0] <= adv[0, 1]
    assert adv.mean() == pytest.approx(0.0, abs=1e-9)


def test_sobol_weights_are_on_the_simplex_and_lower_variance():
    d, K = 4, 64
    r = np.random.default_rng(5).random((1, 4, 3, d))
    mc, qmc = [], []
    for s in range(200):
        mc.append(A.vpo_rewards(r, A.dirichlet_weights(1, K, d, rng=np.random.default_rng(s))))
        w = A.sobol_weights(1, K, d, rng=np.random.default_rng(s))
        assert np.all(w >= 0) and np.allclose(w.sum(-1), 1.0)
        qmc.append(A.vpo_rewards(r, w))
    mc, qmc = np.array(mc), np.array(qmc)
    assert abs(mc.mean() - qmc.mean()) < 0.01         # same target
    assert qmc.var(axis=0).mean() < 0.7 * mc.var(axis=0).mean()


def test_vpo_seeded():
    r = _rand_rewards()
    a = A.vpo_advantages(r, rng=np.random.default_rng(7))
    b = A.vpo_advantages(r, rng=np.random.default_rng(7))
    c = A.vpo_advantages(r, rng=np.random.default_rng(8))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_goal_prompt_appends_weights():
    msgs = [{"role": "user", "content": "Solve."}]
    out = A.goal_prompt(msgs, [0.1, 0.2, 0.3, 0.4], ["completion", "gold", "diamond", "avoid_lava"])
    assert "gold=0.20" in out[-1]["content"] and "higher = more important" in out[-1]["content"]
    assert msgs[0]["content"] == "Solve."                # input untouched


def test_unknown_method():
    with pytest.raises(ValueError, match="unknown method"):
        A.compute_advantages("ppo", _rand_rewards())
