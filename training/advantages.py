"""Advantage estimators of VPO and its baselines, as pure functions over numpy arrays.

Shapes (the same for every estimator, so the RL trainer has one code path):

    rewards     (groups, G, m, d)   reward vectors of the m answers of each of G rollouts of a prompt;
                                    single-answer methods use m = 1; missing answers are zero rows
    advantages  (groups, G)         one scalar per rollout, applied to every token of the rollout

Every estimator ends with a group z-score, which is why they differ only in the scalar set reward R
(groups, G) they feed into it. Two z-scores, as in the authors' code (``ryanboldi/vpo@767db79``):

* VPO (:func:`group_zscore`): population std, and an exactly-zero advantage when the group's std is
  below 1e-6 (docs/vpo.md; the authors' ``vpo/utils/vpo.py``).
* GRPO and the baselines built on it (Multi-RLVR, random-weighting and goal-conditioned GRPO)
  (:func:`grpo_group_norm`): the paper's baseline trainer is veRL's ``compute_grpo_outcome_advantage``,
  which divides by the *Bessel-corrected* std (``torch.std``, n - 1) plus 1e-6 and treats a
  one-rollout group as mean 0, std 1. For G rollouts the GRPO advantages are therefore
  sqrt((G-1)/G) times the population z-score (0.935x at G = 8): a smaller step at the same lr.

Max@k keeps its own normalisation (see :func:`max_at_k_advantages`). The definitions follow
docs/vpo.md line by line, except the Bessel correction above, where the authors' code wins.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from vpo_harness.harness.core import metrics

EPS = 1e-6

ScalarFn = Callable[[np.ndarray], np.ndarray]


def mean_scalar(r: np.ndarray) -> np.ndarray:
    """Default task scalar s(r): the mean of the components (Maze and most tasks)."""
    return np.asarray(r, dtype=float).mean(axis=-1)


# ---- the common last step ----------------------------------------------------------------------------
def group_zscore(R: np.ndarray, eps: float = EPS) -> np.ndarray:
    """(R - mean) / (std + eps) within each group (row), population std.

    A group whose rewards are all equal carries no signal about which rollout was better: every
    advantage is exactly 0 there (not 0/eps noise), as GRPO prescribes.
    """
    R = np.asarray(R, dtype=float)
    mean = R.mean(axis=-1, keepdims=True)
    std = R.std(axis=-1, keepdims=True)
    adv = (R - mean) / (std + eps)
    return np.where(std < eps, 0.0, adv)


def grpo_group_norm(R: np.ndarray, eps: float = EPS) -> np.ndarray:
    """veRL's GRPO outcome advantage: (R - mean) / (std_{n-1} + eps) within each group (row).

    A one-rollout group uses mean 0 and std 1 (so its advantage is R / (1 + eps)), as veRL does. A group
    whose rewards are all identical gets exactly 0 (veRL's (R - mean) / eps is 0 up to rounding there).
    """
    R = np.asarray(R, dtype=float)
    G = R.shape[-1]
    if G == 1:
        return R / (1.0 + eps)
    mean = R.mean(axis=-1, keepdims=True)
    std = R.std(axis=-1, ddof=1, keepdims=True)
    adv = (R - mean) / (std + eps)
    return np.where(np.ptp(R, axis=-1, keepdims=True) == 0, 0.0, adv)


def normalise_group(method: str, R: np.ndarray) -> np.ndarray:
    """The last step of ``method`` on set rewards R (groups, G): VPO's population z-score, or the GRPO
    family's Bessel-corrected one. Adapters (verl, TRL) call this so the choice lives here only."""
    return group_zscore(R) if method == "vpo" else grpo_group_norm(R)


# ---- deduplication -------------------------------------------------------------------------------------
def dedupe_chains(rewards: np.ndarray, keys: Sequence[Sequence[Sequence[Any]]]) -> np.ndarray:
    """Drop repeated answers inside each chain and zero-pad back to m rows.

    ``keys[b][g][j]`` is the dedup key of answer j of rollout g in group b (maze: the move string;
    None for a missing answer, which is already a zero row). Without this a chain could score the
    set objective by writing its best answer m times, which is exactly the collapse VPO is meant to
    avoid; with it, repeats add nothing.
    """
    rewards = np.array(rewards, dtype=float, copy=True)
    B, G, m, _ = rewards.shape
    for b in range(B):
        for g in range(G):
            seen: set[Any] = set()
            keep: list[int] = []
            for j in range(m):
                k = keys[b][g][j]
                if k is None or k in seen:
                    continue
                seen.add(k)
                keep.append(j)
            kept = rewards[b, g, keep]
            rewards[b, g] = 0.0
            rewards[b, g, : len(keep)] = kept
    return rewards


# ---- weights on the simplex -----------------------------------------------------------------------------
def dirichlet_weights(groups: int, K: int, d: int, alpha: float = 1.0,
                      rng: np.random.Generator | None = None) -> np.ndarray:
    """(groups, K, d) i.i.d. Dirichlet(alpha * 1_d) weight vectors, one set of K per prompt group
    (the same sampler as the evaluation's VPO objective, vpo_harness.harness.core.metrics.dirichlet_weights)."""
    return metrics.dirichlet_weights(d, K, alpha, np.random.default_rng(rng), size=(groups,))


def _gamma_ppf(u: np.ndarray, alpha: float) -> np.ndarray:
    """Inverse CDF of Gamma(alpha, 1); closed form for alpha = 1 (the paper's value)."""
    if alpha == 1.0:
        return -np.log1p(-u)
    from scipy.special import gammaincinv  # only needed for alpha != 1

    return gammaincinv(alpha, u)


def _scrambled_sobol(n: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """n points of a scrambled Sobol sequence in [0, 1)^d (scipy.stats.qmc when present).

    The fallback is a randomly shifted rank-1 lattice (Korobov), also a low-discrepancy set with a
    random shift, so the estimator stays unbiased and its variance still drops below plain MC.
    """
    try:
        from scipy.stats import qmc

        eng = qmc.Sobol(d=d, scramble=True, seed=rng)
        m = max(0, math.ceil(math.log2(max(n, 1))))
        return eng.random_base2(m)[:n]
    except ImportError:  # pragma: no cover - scipy is installed in CI
        a = 1 + int(rng.integers(1, max(2, n)))
        z = np.array([pow(a, j, max(n, 2)) for j in range(d)], dtype=float)
        pts = (np.arange(n)[:, None] * z[None, :] / max(n, 1)) % 1.0
        return (pts + rng.random(d)[None, :]) % 1.0


def sobol_weights(groups: int, K: int, d: int, alpha: float = 1.0,
                  rng: np.random.Generator | None = None) -> np.ndarray:
    """(groups, K, d) Dirichlet(alpha) weights from scrambled Sobol points.

    Map each coordinate through the Gamma(alpha) inverse CDF and normalise: the standard
    Gamma-to-Dirichlet construction, applied to evenly spread points instead of random ones. Each
    group gets its own scramble so groups stay independent.
    """
    rng = np.random.default_rng(rng)
    out = np.empty((groups, K, d))
    for b in range(groups):
        u = _scrambled_sobol(K, d, rng)
        u = np.clip(u, 1e-12, 1 - 1e-12)
        gam = _gamma_ppf(u, alpha)
        out[b] = gam / gam.sum(axis=-1, keepdims=True)
    return out


# ---- estimators -----------------------------------------------------------------------------------------
def grpo_rewards(rewards: np.ndarray, scalar: ScalarFn = mean_scalar) -> np.ndarray:
    """R = s(r) of the (first and only) answer of each rollout."""
    return scalar(np.asarray(rewards, dtype=float)[:, :, 0, :])


def grpo_advantages(rewards: np.ndarray, scalar: ScalarFn = mean_scalar) -> np.ndarray:
    """GRPO: the task scalar, normalised within the group by the Bessel-corrected std (veRL)."""
    return grpo_group_norm(grpo_rewards(rewards, scalar))


def vpo_rewards(rewards: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Set reward R_g = (1/K) sum_k max_{y in S_g} w_k . r(y).

    rewards (groups, G, m, d), weights (groups, K, d) shared by the G rollouts of a group -> (groups, G).
    Zero rows (missing or duplicate answers) can never win the max unless everything is zero, since
    all rewards are >= 0.
    """
    rewards = np.asarray(rewards, dtype=float)
    weights = np.asarray(weights, dtype=float)
    scores = np.einsum("bgmd,bkd->bgmk", rewards, weights)   # w_k . r for every answer
    return scores.max(axis=2).mean(axis=-1)                   # max over the set, mean over weights


def vpo_advantages(rewards: np.ndarray, *, K: int = 100, alpha: float = 1.0, sobol: bool = False,
                   rng: np.random.Generator | int | None = None,
                   weights: np.ndarray | None = None) -> np.ndarray:
    """VPO: K weights per group (Dirichlet or scrambled Sobol), set reward, group z-score."""
    rewards = np.asarray(rewards, dtype=float)
    B, _, _, d = rewards.shape
    if weights is None:
        rng = np.random.default_rng(rng)
        draw = sobol_weights if sobol else dirichlet_weights
        weights = draw(B, K, d, alpha, rng)
    return group_zscore(vpo_rewards(rewards, weights))


def multi_rlvr_rewards(rewards: np.ndarray, scalar: ScalarFn = mean_scalar) -> np.ndarray:
    """Multi-RLVR: R = sum over the (already deduplicated) answers of s(r)."""
    return scalar(np.asarray(rewards, dtype=float)).sum(axis=2)


def multi_rlvr_advantages(rewards: np.ndarray, scalar: ScalarFn = mean_scalar) -> np.ndarray:
    return grpo_group_norm(multi_rlvr_rewards(rewards, scalar))


def weighted_rewards(rewards: np.ndarray, row_weights: np.ndarray) -> np.ndarray:
    """R = w . r with one weight vector per rollout: row_weights (groups, G, d)."""
    return np.einsum("bgd,bgd->bg", np.asarray(rewards, dtype=float)[:, :, 0, :], row_weights)


def random_weight_advantages(rewards: np.ndarray, row_weights: np.ndarray) -> np.ndarray:
    """Random-weighting GRPO: each rollout scored by its own hidden w ~ Dir(alpha)."""
    return grpo_group_norm(weighted_rewards(rewards, row_weights))


def goal_prompt(messages: list[dict[str, str]], weights: Sequence[float],
                component_names: Sequence[str]) -> list[dict[str, str]]:
    """Append the objective weights to the last user message (goal-conditioned GRPO)."""
    text = ", ".join(f"{n}={w:.2f}" for n, w in zip(component_names, weights))
    out = [dict(msg) for msg in messages]
    out[-1]["content"] = (out[-1]["content"].rstrip() + "\nObjective weights (higher = more important): "
                          + text + ". Maximise the weighted score.")
    return out


def max_at_k_coefficients(x: np.ndarray, k: int) -> np.ndarray:
    """Per-sample coefficient c_i = mean over the k-subsets containing sample i of their max.

    For the sample at ascending rank r (1-based) among n:
    c = [C(r-1, k-1) x_(r) + sum_{j>r} C(j-2, k-2) x_(j)] / C(n-1, k-1).
    Ratios are built incrementally in floats, so no big binomials appear. Ties are broken by a stable
    sort; the coefficients' mean is the best@k estimate whatever the tie order.
    """
    x = np.asarray(x, dtype=float)
    n = len(x)
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got k={k}, n={n}")
    order = np.argsort(x, kind="stable")
    xs = x[order]
    denom = math.comb(n - 1, k - 1)
    # a[r] = C(r-1, k-1)/denom for r = 1..n; b[j] = C(j-2, k-2)/denom for j = 2..n (0 if k == 1)
    a = np.array([math.comb(r - 1, k - 1) for r in range(1, n + 1)], dtype=float) / denom
    if k >= 2:
        b = np.array([math.comb(j - 2, k - 2) if j >= 2 else 0 for j in range(1, n + 1)], dtype=float) / denom
    else:
        b = np.zeros(n)
    bx = b * xs
    tail = np.concatenate([np.cumsum(bx[::-1])[::-1][1:], [0.0]])  # sum_{j>r} b_j x_j
    c_sorted = a * xs + tail
    c = np.empty(n)
    c[order] = c_sorted
    return c


def max_at_k_advantages(rewards: np.ndarray, k: int | None = None, scalar: ScalarFn = mean_scalar,
                        normalize: bool = True) -> np.ndarray:
    """Max@k: c_i - best@k (zero-mean within a group), optionally divided by the group std of c.

    The division keeps the step size on the scale of the z-scored estimators so one learning rate
    serves every method; it uses the Bessel-corrected std (n - 1) plus EPS, as veRL's vendored max_at_k
    estimator in the authors' code does (x sqrt(G / (G - 1)) smaller than a population std: 1/1.069 at
    G = 8). Set normalize=False for the raw unbiased gradient coefficients.
    """
    R = grpo_rewards(rewards, scalar)
    B, G = R.shape
    k = max(2, G // 2) if k is None else k
    k = min(k, G)
    out = np.zeros((B, G))
    for b in range(B):
        c = max_at_k_coefficients(R[b], k)
        adv = c - c.mean()
        if normalize:
            sd = adv.std(ddof=1) if G > 1 else 0.0
            adv = np.zeros(G) if sd < EPS else adv / (sd + EPS)
        elif np.ptp(R[b]) < EPS:
            adv = np.zeros(G)
        out[b] = adv
    return out


METHODS = ("grpo", "vpo", "multi_rlvr", "max_at_k", "random_weight", "goal_cond")
MULTI_ANSWER = {"vpo", "multi_rlvr"}


def compute_advantages(method: str, rewards: np.ndarray, *, rng: np.random.Generator | None = None,
                       row_weights: np.ndarray | None = None, K: int = 100, alpha: float = 1.0,
                       sobol: bool = False, k: int | None = None) -> np.ndarray:
    """Dispatch used by the RL trainer: one call site for every method."""
    if method == "grpo":
        return grpo_advantages(rewards)
    if method == "vpo":
        return vpo_advantages(rewards, K=K, alpha=alpha, sobol=sobol, rng=rng)
    if method == "multi_rlvr":
        return multi_rlvr_advantages(rewards)
    if method == "max_at_k":
        return max_at_k_advantages(rewards, k=k)
    if method in ("random_weight", "goal_cond"):
        # goal-conditioned GRPO scores like random weighting; it differs in the trainer only: the prompt
        # shows w (goal_prompt), so the G rollouts of a group share one w and the z-score compares like with like
        if row_weights is None:
            raise ValueError(f"{method} needs row_weights (groups, G, d)")
        return random_weight_advantages(rewards, row_weights)
    raise ValueError(f"unknown method {method!r}; known: {', '.join(METHODS)}")
