"""best@k, pass@k and the diversity metrics of the VPO evaluation protocol (shared/docs/vpo.md).

Every estimator works on a whole benchmark at once: scores of problems with the same pool size are
stacked into a (P, n) matrix and reduced with one weight vector, so a 1000 x 1000 curve is a sort
and a matrix-vector product per k instead of a Python loop over problems. Pools of different sizes
(a chain lost to a server error) are grouped by size.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

#: the paper's k grid (pool of 30); a run reads best@k/pass@k at the ks that fit its pool
DEFAULT_KS: tuple[int, ...] = (1, 2, 4, 8, 16, 30)
#: seed of the Dirichlet weights of the VPO objective metric: fixed, so the metric compares across runs
#: whatever their sampling seed
METRIC_SEED = 0
#: weight draws and concentration of the VPO objective (vpo.md: K = 100 draws from Dirichlet(1))
VPO_K, VPO_ALPHA = 100, 1.0


def default_ks(pool_size: int) -> tuple[int, ...]:
    """The default ks a pool of ``pool_size`` candidates can estimate (best@k needs k <= pool size)."""
    return tuple(k for k in DEFAULT_KS if k <= pool_size) or (1,)


# ---------------------------------------------------------------------------------------------------
# weights
def best_at_k_weights(n: int, k: int) -> np.ndarray:
    """Weights w_i = C(i-1, k-1) / C(n, k) on the ascending order statistics x_(1..n).

    Built by the recurrence w_n = k/n, w_{i-1} = w_i (i-k)/(i-1), so no binomial is ever formed and
    n = 10^5 stays finite; entries below i = k are exactly zero.
    """
    if not 1 <= k <= n:
        raise ValueError(f"best@k needs 1 <= k <= n, got k={k}, n={n}")
    i = np.arange(k, n + 1, dtype=float)  # i = k..n
    # w_i / w_n = prod_{j=i+1}^{n} (j-1-k+1)/(j-1) = prod_{j=i+1}^{n} (j-k)/(j-1); cumulative product from the top
    ratios = (i[1:] - k) / (i[1:] - 1.0)  # factor linking w_{i} to w_{i+1}, for i = k..n-1
    w_tail = np.empty(n - k + 1)
    w_tail[-1] = k / n
    if n > k:
        w_tail[:-1] = (k / n) * np.cumprod(ratios[::-1])[::-1]
    w = np.zeros(n)
    w[k - 1:] = w_tail
    return w


def _as_pools(scores: np.ndarray | Sequence[Sequence[float]]) -> list[np.ndarray]:
    if isinstance(scores, np.ndarray) and scores.ndim == 2:
        return list(scores)
    return [np.asarray(s, dtype=float).ravel() for s in scores]


def _grouped(pools: list[np.ndarray]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Pool size -> (row indices, stacked scores)."""
    by_n: dict[int, list[int]] = {}
    for idx, p in enumerate(pools):
        by_n.setdefault(p.size, []).append(idx)
    return {n: (np.asarray(ix), np.stack([pools[i] for i in ix]) if n else np.zeros((len(ix), 0)))
            for n, ix in by_n.items()}


# ---------------------------------------------------------------------------------------------------
# per-problem estimators
def best_at_k(scores: np.ndarray | Sequence[Sequence[float]], k: int) -> np.ndarray:
    """Unbiased expected max of k candidates drawn without replacement, one value per problem.

    ``scores`` is (P, n) or a list of per-problem 1-d arrays (sizes may differ). Problems whose pool
    is smaller than k get NaN (the estimator is undefined there) rather than a silently biased value.
    """
    return best_at_k_curve(scores, [k])[k]


def best_at_k_curve(scores: np.ndarray | Sequence[Sequence[float]], ks: Sequence[int]) -> dict[int, np.ndarray]:
    """best@k for several k with one sort per pool size: a whole curve costs one sort + len(ks) mat-vecs."""
    pools = _as_pools(scores)
    out = {k: np.full(len(pools), np.nan) for k in ks}
    for n, (ix, mat) in _grouped(pools).items():
        if n == 0:
            continue
        srt = np.sort(mat, axis=1)
        for k in ks:
            if k <= n:
                out[k][ix] = srt @ best_at_k_weights(n, k)
    return out


def pass_at_k(correct: np.ndarray | Sequence[Sequence[bool]], k: int) -> np.ndarray:
    """Chen et al. pass@k = 1 - C(n-c, k)/C(n, k) per problem, in the stable product form.

    C(n-c,k)/C(n,k) = prod_{i=n-c+1}^{n} (1 - k/i), evaluated as a difference of one cumulative log-sum,
    which keeps it vectorised over problems.
    """
    pools = _as_pools(correct)
    out = np.full(len(pools), np.nan)
    for n, (ix, mat) in _grouped(pools).items():
        if n < k or n == 0:
            continue
        c = (mat > 0.5).sum(axis=1)
        cum = _tail_log_products(n, k)  # factors with i <= k are never used
        fail = n - c
        res = np.ones(len(ix))
        ok = fail >= k  # otherwise every k-subset holds a correct one
        res[ok] = 1.0 - np.exp(cum[n] - cum[fail[ok]])
        out[ix] = res
    return out


def _tail_log_products(n: int, k: int) -> np.ndarray:
    """cum[j] = sum_{i<=j, i>k} log(1 - k/i), so prod_{i=a+1}^{n} (1 - k/i) = exp(cum[n] - cum[a]) for a >= k.

    Both pass@k and pass^k are ratios C(a, k)/C(n, k) = prod_{i=a+1}^{n} (1 - k/i): one cumulative
    log-sum per pool size serves every problem of that size."""
    i = np.arange(1, n + 1, dtype=float)
    logs = np.zeros(n)
    np.log1p(-k / i, out=logs, where=i > k)
    return np.concatenate([[0.0], np.cumsum(logs)])


def pass_hat_k(correct: np.ndarray | Sequence[Sequence[bool]], k: int) -> np.ndarray:
    """pass^k per problem: the probability that k attempts drawn without replacement ALL pass.

    Unbiased from n samples with c passes: C(c, k)/C(n, k) (the without-replacement analogue of
    p^k, as tau-bench reports it); a reliability measure where pass@k is a coverage one. NaN where
    the pool is smaller than k.
    """
    pools = _as_pools(correct)
    out = np.full(len(pools), np.nan)
    for n, (ix, mat) in _grouped(pools).items():
        if n < k or n == 0:
            continue
        c = (mat > 0.5).sum(axis=1)
        cum = _tail_log_products(n, k)
        res = np.zeros(len(ix))
        ok = c >= k  # fewer than k passes: no all-pass k-subset
        res[ok] = np.exp(cum[n] - cum[c[ok]])
        out[ix] = res
    return out


#: default success-rate thresholds of Cover@tau (`--tau` changes them)
DEFAULT_TAUS: tuple[float, ...] = (0.1, 0.5, 0.9)


def cover_at_tau(correct: np.ndarray | Sequence[Sequence[bool]], tau: float) -> np.ndarray:
    """Per problem 1.0 when its pass rate c/n is at least ``tau`` (else 0.0; NaN for an empty pool).

    The benchmark's Cover@tau is the mean of these (the fraction of problems the model solves
    reliably at level tau). This is the plug-in estimate from the observed rate: no unbiased
    estimator of the indicator [p >= tau] exists from n Bernoulli draws (only polynomials of degree
    <= n in p are unbiasedly estimable), so a small pool makes it coarse, never biased by design.
    """
    if not 0.0 < tau <= 1.0:
        raise ValueError(f"Cover@tau needs 0 < tau <= 1, got {tau}")
    pools = _as_pools(correct)
    out = np.full(len(pools), np.nan)
    for n, (ix, mat) in _grouped(pools).items():
        if n:
            out[ix] = ((mat > 0.5).sum(axis=1) >= tau * n - 1e-9 * n).astype(float)
    return out


def chain_maxima(scalars: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The best scalar of each chain, from a problem's answer scalars and answers per chain."""
    s = np.asarray(scalars, dtype=float)
    sizes = np.asarray(sizes, dtype=int)
    if sizes.sum() != s.size:
        raise ValueError(f"chain sizes sum to {int(sizes.sum())}, pool has {s.size} answers")
    if s.size == 0:
        return np.zeros(0)
    keep = sizes > 0
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])[keep]
    return np.maximum.reduceat(s, starts)


def tokens_per_chain(chain_tokens: Sequence[np.ndarray]) -> float:
    """Mean completion tokens of a chain: the mean over problems of each problem's mean chain length
    (NaN when a chain's token count is unknown)."""
    per = [float(np.mean(t)) for t in chain_tokens if len(t)]
    if not per or any(x != x for x in per):
        return float("nan")
    return float(np.mean(per))


def best_at_tokens(chain_best: Sequence[np.ndarray], chain_tokens: Sequence[np.ndarray],
                   budgets: Sequence[float]) -> dict[float, np.ndarray]:
    """Compute-matched best: expected best task scalar when a problem gets T completion tokens.

    Definition (exact, no Monte Carlo): with tbar = :func:`tokens_per_chain`, a budget T buys
    J = T / tbar chains; J = j + f (0 <= f < 1) is spent as j + 1 chains with probability f and j
    chains otherwise, the chains drawn uniformly without replacement from the problem's pool, and
    the value is the best scalar among all their answers. So the expected completion tokens spent
    per problem (averaged over problems) is exactly T, and the per-problem value is
    (1 - f) best@j + f best@(j+1) over the chain maxima, each term the unbiased order-statistics
    estimator. A chain of m answers therefore competes with single answers at equal token cost:
    at T = 4 tbar a 1x4 run is judged on one chain, a 4x1 run of 4x shorter chains on four.
    Undefined (NaN) where J < 1 or J exceeds the problem's number of chains.
    """
    tbar = tokens_per_chain(chain_tokens)
    vals = _as_pools(chain_best)
    out = {T: np.full(len(vals), np.nan) for T in budgets}
    if not tbar > 0:
        return out
    for n, (ix, mat) in _grouped(vals).items():
        if n == 0:
            continue
        srt = np.sort(mat, axis=1)
        for T in budgets:
            J = T / tbar
            j = int(np.floor(J + 1e-9))
            f = J - j if J - j > 1e-9 else 0.0
            if j < 1 or j + (f > 0) > n:
                continue
            w = best_at_k_weights(n, j) * (1.0 - f)
            if f > 0:
                w = w + f * best_at_k_weights(n, j + 1)
            out[T][ix] = srt @ w
    return out


def tokens_curve(chain_best: Sequence[np.ndarray], chain_tokens: Sequence[np.ndarray]) -> dict[str, object]:
    """best vs completion tokens at the whole-chain budgets T = j * tbar, j = 1..(smallest pool of
    chains): x (tokens per problem), mean, stderr and n per point; empty lists when tokens are unknown."""
    tbar = tokens_per_chain(chain_tokens)
    sizes = [len(v) for v in chain_best if len(v)]
    if not tbar > 0 or not sizes:
        return {"tokens_per_chain": None if tbar != tbar else tbar, "chains": [], "x": [], "mean": [],
                "stderr": [], "n": []}
    js = list(range(1, min(sizes) + 1))
    cur = best_at_tokens(chain_best, chain_tokens, [j * tbar for j in js])
    est = [mean_se(v) for v in cur.values()]
    return {"tokens_per_chain": tbar, "chains": js, "x": [j * tbar for j in js], "mean": [e.mean for e in est],
            "stderr": [e.stderr for e in est], "n": [e.n for e in est]}


def mean_pairwise_l1(rewards: np.ndarray) -> float:
    """Mean L1 distance over unordered pairs of a pool's reward vectors (n, d).

    Per dimension, sum_{i<j} |x_i - x_j| = sum_i x_(i) (2i - n - 1) over the sorted column, O(n log n).
    """
    r = np.asarray(rewards, dtype=float)
    n = r.shape[0]
    if n < 2:
        return 0.0
    s = np.sort(r, axis=0)
    coef = 2.0 * np.arange(1, n + 1) - n - 1
    return float((coef @ s).sum() / (n * (n - 1) / 2))


def nondominated(rewards: np.ndarray) -> np.ndarray:
    """Mask (n,) of a pool's candidates that no other candidate dominates (at least as good on every
    component and better on one); equal vectors do not dominate each other, so ties are all kept."""
    r = np.asarray(rewards, dtype=float)
    if r.shape[0] == 0:
        return np.zeros(0, dtype=bool)
    ge = (r[:, None, :] >= r[None, :, :]).all(-1)  # ge[j, i]: j >= i everywhere
    gt = (r[:, None, :] > r[None, :, :]).any(-1)
    dominated = np.asarray((ge & gt).any(axis=0), dtype=bool)
    return ~dominated


def pareto_fraction(rewards: np.ndarray) -> float:
    """Fraction of a pool's candidates that no other candidate dominates (ties count as non-dominated)."""
    r = np.asarray(rewards, dtype=float)
    if r.shape[0] == 0:
        return float("nan")
    return float(nondominated(r).mean())


def hypervolume(rewards: np.ndarray, ref: float | np.ndarray = 0.0) -> float:
    """Volume of the region dominated by a pool's reward vectors (n, d) and bounded below by ``ref``
    (default the origin: rewards lie in [0, 1]): the size of the front a search found, which grows
    when a candidate opens a new trade-off even if no scalar improves. Exact, by slicing along the
    last component (points sorted there, each slab the (d-1)-volume of the points above it); fronts
    of a search's pool are small, so the exponential worst case does not arise in practice."""
    r = np.asarray(rewards, dtype=float)
    if r.ndim != 2:
        raise ValueError(f"hypervolume wants an (n, d) array, got shape {r.shape}")
    lo = np.broadcast_to(np.asarray(ref, dtype=float), (r.shape[1],))
    r = r[(r > lo).all(axis=1)] if r.shape[0] else r
    return _hv(r[nondominated(r)] if r.shape[0] else r, lo)


def _hv(r: np.ndarray, lo: np.ndarray) -> float:
    if r.shape[0] == 0:
        return 0.0
    if r.shape[1] == 1:
        return float(r[:, 0].max() - lo[0])
    levels = np.unique(r[:, -1])[::-1]  # slabs from the top down
    total = 0.0
    for k, z in enumerate(levels):
        below = levels[k + 1] if k + 1 < len(levels) else lo[-1]
        above = r[r[:, -1] >= z][:, :-1]
        total += (z - below) * _hv(above[nondominated(above)], lo[:-1])
    return float(total)


def dirichlet_weights(d: int, K: int = VPO_K, alpha: float = VPO_ALPHA,
                      seed: int | np.random.Generator = METRIC_SEED, size: tuple[int, ...] = ()) -> np.ndarray:
    """K weight vectors on the simplex, Dirichlet(alpha); ``size`` prepends batch axes: (*size, K, d).
    ``seed`` may be a Generator (the trainer draws fresh weights each step from its own stream)."""
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    return rng.dirichlet(np.full(d, float(alpha)), size=(*size, K))


def vpo_objective(rewards: np.ndarray, weights: np.ndarray) -> float:
    """E_w[max_y w . r(y)]: the VPO set objective of a pool under fixed weight draws (K, d)."""
    r = np.asarray(rewards, dtype=float)
    if r.shape[0] == 0:
        return 0.0
    return float((r @ weights.T).max(axis=0).mean())


# ---------------------------------------------------------------------------------------------------
# benchmark-level summaries
@dataclass(frozen=True)
class Estimate:
    """A mean with its standard error over ``n`` problems. An estimate over several sampling seeds
    (:func:`mean_over_seeds`) also carries ``seed_stderr``, the between-seed standard error, and
    ``n_seeds``; ``stderr`` then stays the within-run one, so both sources of noise are visible."""

    mean: float
    stderr: float
    n: int
    seed_stderr: float | None = None
    n_seeds: int = 1
    #: degrees of freedom of ``stderr`` when it is not the usual n - 1 (a training-seed group's
    #: :func:`crossed_estimate`: Satterthwaite's); the 95% interval uses Student's t with them
    df: float | None = None

    def as_dict(self) -> dict[str, float | int]:
        out: dict[str, float | int] = {"mean": self.mean, "stderr": self.stderr, "n": self.n}
        if self.n_seeds > 1:  # single runs keep the results.json shape they always had
            out.update(seed_stderr=float("nan") if self.seed_stderr is None else self.seed_stderr,
                       n_seeds=self.n_seeds)
        if self.df is not None:
            out["df"] = self.df
        return out

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """mean -/+ t_{df} * stderr (df: :attr:`df`, else n - 1)."""
        from scipy.stats import t as student_t

        df = self.df if self.df is not None else max(self.n - 1, 1)
        q = float(student_t.ppf(0.5 + level / 2, df))
        return self.mean - q * self.stderr, self.mean + q * self.stderr

    @classmethod
    def from_dict(cls, d: dict[str, object]) -> "Estimate":
        """Inverse of :meth:`as_dict`; JSON ``null`` (a NaN written by an old writer) reads back as NaN."""
        def num(x: object) -> float:
            return float("nan") if x is None else float(x)  # type: ignore[arg-type]
        seeds = int(d.get("n_seeds") or 1)  # type: ignore[arg-type]
        return cls(num(d.get("mean")), num(d.get("stderr")), int(d.get("n") or 0),  # type: ignore[arg-type]
                   num(d.get("seed_stderr")) if seeds > 1 else None, seeds,
                   None if d.get("df") is None else num(d.get("df")))

    @property
    def defined(self) -> bool:
        """False when no problem could estimate it (every value NaN)."""
        return self.n > 0 and self.mean == self.mean


def mean_se(values: Iterable[float]) -> Estimate:
    """Mean over problems and its standard error (sample std / sqrt(P)); NaNs (undefined) dropped."""
    v = np.asarray(list(values), dtype=float)
    v = v[~np.isnan(v)]
    if v.size == 0:
        return Estimate(float("nan"), float("nan"), 0)
    se = float(v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else 0.0
    return Estimate(float(v.mean()), se, int(v.size))


def mean_over_seeds(estimates: Sequence[Estimate]) -> Estimate:
    """One metric of S runs that differ only in their sampling seed.

    mean: the mean of the per-seed means; ``stderr``: the within-run standard error of that mean,
    sqrt(sum se_i^2) / S (the seeds' pools are independent); ``seed_stderr``: the between-seed one,
    std(means, ddof=1) / sqrt(S), which also holds the noise a single run's s.e. cannot see (all of
    a run's problems share its seed). Seeds where the metric is undefined are left out; ``n`` is the
    smallest number of problems of the seeds kept."""
    ok = [e for e in estimates if e.defined]
    if not ok:
        return Estimate(float("nan"), float("nan"), 0, float("nan"), len(estimates))
    means = np.array([e.mean for e in ok], dtype=float)
    ses = np.nan_to_num(np.array([e.stderr for e in ok], dtype=float))
    s = len(ok)
    seed_se = float(means.std(ddof=1) / np.sqrt(s)) if s > 1 else float("nan")
    return Estimate(float(means.mean()), float(np.sqrt((ses ** 2).sum()) / s), min(e.n for e in ok), seed_se, s)


def crossed_estimate(x: np.ndarray) -> Estimate:
    """The mean of a (training seeds S, problems M) matrix whose seeds were all evaluated on the same
    problems, with a standard error that treats each training run as one draw.

    Model: x[s, m] = mu + a_s + b_m + e_sm (seed, problem and interaction effects, all random). The grand
    mean's variance is var(a)/S + var(b)/M + var(e)/(SM); (MS_seed + MS_problem) / (S M), from the two-way
    ANOVA mean squares (one value per cell), estimates it with var(e)/(SM) counted once more (small: it
    shrinks with S*M), and stays positive. Treating the S*M cells as independent draws misses both
    shared effects and is too narrow. Degrees of freedom: Satterthwaite's for the sum of the two mean
    squares (near S - 1 when the seed term dominates, so the t interval widens as it should with few
    training runs). Problems with a NaN for some seed are left out.
    ``seed_stderr`` is the plain between-seed s.e. of the per-seed means, for reference."""
    x = np.asarray(x, dtype=float)
    x = x[:, ~np.isnan(x).any(axis=0)] if x.ndim == 2 else x
    if x.ndim != 2 or x.size == 0:
        return Estimate(float("nan"), float("nan"), 0, float("nan"), int(x.shape[0]) if x.ndim == 2 else 0)
    S, M = x.shape
    mu = float(x.mean())
    seed_means, prob_means = x.mean(axis=1), x.mean(axis=0)
    seed_se = float(seed_means.std(ddof=1) / np.sqrt(S)) if S > 1 else float("nan")
    if S < 2 or M < 2:
        se = seed_se if S > 1 else (float(prob_means.std(ddof=1) / np.sqrt(M)) if M > 1 else float("nan"))
        return Estimate(mu, se, M, seed_se if S > 1 else None, S)
    ms_a = M * float(((seed_means - mu) ** 2).sum()) / (S - 1)
    ms_b = S * float(((prob_means - mu) ** 2).sum()) / (M - 1)
    total = ms_a + ms_b
    var = total / (S * M)
    denom = ms_a ** 2 / (S - 1) + ms_b ** 2 / (M - 1)
    df = float(total ** 2 / denom) if denom > 0 else float(S - 1)
    return Estimate(mu, float(np.sqrt(max(var, 0.0))), M, seed_se, S, max(df, 1.0))


def group_estimate(values: np.ndarray | Sequence[float], seeds: Sequence[int] | np.ndarray | None = None,
                   problems: Sequence[str] | None = None, axis: str | None = None) -> Estimate:
    """The one standard-error rule of every table (`vpo show`, `vpo compare`, the report, the
    selected@k and pool-metric tables): the mean of per-problem ``values`` and its standard error.

    Why one function: two readers of the same run that computed the s.e. their own way printed two
    different numbers for one mean. ``seeds`` (one per value) marks a seed group's (problem, seed)
    entries, ``axis`` says what its seeds vary:

    * a single run (``seeds`` None): :func:`mean_se` over problems;
    * sampling seeds (``axis`` not "training"): :func:`mean_over_seeds` of each seed's
      :func:`mean_se` (seeds in order of first appearance);
    * training seeds: each training run one draw. ``problems`` (one per value) names the problem of
      each entry; over the problems every seed holds with a defined value, :func:`crossed_estimate` of
      the (seed, problem) grid; when the seeds share no problem, Student t over the per-seed means
      (each seed's own problems sit inside its mean).

    NaN values (the metric undefined on a problem) are left out throughout."""
    v = np.asarray(values, dtype=float)
    if seeds is None:
        return mean_se(v)
    sd = np.asarray(seeds)
    if sd.shape != v.shape:
        raise ValueError(f"group_estimate: {sd.size} seeds for {v.size} values")
    order = list(dict.fromkeys(sd.tolist()))
    if axis != "training":
        return mean_over_seeds([mean_se(v[sd == s]) for s in order])
    if problems is None or len(problems) != v.size:
        raise ValueError("group_estimate: a training-seed group needs the problem of each value")
    ok = ~np.isnan(v)
    kept = [s for s in order if (ok & (sd == s)).any()]
    by_seed = {s: {p: x for p, x, ss, k in zip(problems, v, sd.tolist(), ok) if ss == s and k} for s in kept}
    shared = set.intersection(*(set(d) for d in by_seed.values())) if by_seed else set()
    if len(kept) >= 2 and shared:
        cols = [p for p in dict.fromkeys(problems) if p in shared]
        return crossed_estimate(np.array([[by_seed[s][p] for p in cols] for s in kept]))
    means = np.array([np.mean(list(d.values())) for d in by_seed.values()])
    S = len(means)
    if S < 2:
        return Estimate(float(means.mean()) if S else float("nan"), float("nan"), int(ok.sum()), None, max(S, 1))
    se = float(means.std(ddof=1) / np.sqrt(S))
    return Estimate(float(means.mean()), se, int(ok.sum()), se, S, float(S - 1))


def per_problem_values(pools: Sequence[np.ndarray], scalars: Sequence[np.ndarray], passes: Sequence[np.ndarray],
                       ks: Sequence[int], objective_seed: int = METRIC_SEED,
                       taus: Sequence[float] = DEFAULT_TAUS) -> dict[str, np.ndarray]:
    """Each per-problem metric of a run, one value per problem (NaN where undefined): what
    :func:`summarize` averages, and what a training-seed group's :func:`crossed_estimate` needs."""
    out: dict[str, np.ndarray] = {}
    best = best_at_k_curve(scalars, ks)
    for k in ks:
        out[f"best@{k}"] = np.asarray(best[k], dtype=float)
        out[f"pass@{k}"] = np.asarray(pass_at_k(passes, k), dtype=float)
        out[f"pass^{k}"] = np.asarray(pass_hat_k(passes, k), dtype=float)
    for tau in taus:
        out[f"cover@{tau:g}"] = np.asarray(cover_at_tau(passes, tau), dtype=float)
    out["mean_scalar"] = np.array([np.mean(s) if len(s) else np.nan for s in scalars], dtype=float)
    out["diversity"] = np.array([mean_pairwise_l1(r) if len(r) > 1 else np.nan for r in pools], dtype=float)
    out["pareto_fraction"] = np.array([pareto_fraction(r) for r in pools], dtype=float)
    weights: dict[int, np.ndarray] = {}
    vpo = []
    for r in pools:
        r = np.asarray(r, dtype=float)
        if not len(r):
            vpo.append(np.nan)
            continue
        if r.shape[1] not in weights:   # one weight set per reward dimension (code: d = number of tests)
            weights[r.shape[1]] = dirichlet_weights(r.shape[1], VPO_K, VPO_ALPHA, objective_seed)
        vpo.append(vpo_objective(r, weights[r.shape[1]]))
    out["vpo_objective"] = np.array(vpo, dtype=float)
    return out


def summarize(
    pools: Sequence[np.ndarray],
    scalars: Sequence[np.ndarray],
    passes: Sequence[np.ndarray],
    ks: Sequence[int],
    component_names: Sequence[str] | None = None,
    objective_seed: int = METRIC_SEED,
    taus: Sequence[float] = DEFAULT_TAUS,
    chain_sizes: Sequence[np.ndarray] | None = None,
    chain_tokens: Sequence[np.ndarray] | None = None,
) -> dict[str, object]:
    """All metrics of a run from per-problem pools.

    pools[p]: (n_p, d) reward vectors; scalars[p]: (n_p,) task scalars; passes[p]: (n_p,) booleans.
    chain_sizes[p] / chain_tokens[p]: answers and completion tokens of each chain of problem p, for
    the compute-matched ``best_vs_tokens`` curve (left out when not given).
    """
    out: dict[str, object] = {}
    per = per_problem_values(pools, scalars, passes, ks, objective_seed, taus)
    for k in ks:
        for name in (f"best@{k}", f"pass@{k}", f"pass^{k}"):
            out[name] = mean_se(per[name]).as_dict()
    for tau in taus:
        out[f"cover@{tau:g}"] = mean_se(per[f"cover@{tau:g}"]).as_dict()
    if chain_sizes is not None and chain_tokens is not None:
        maxima = [chain_maxima(s, z) for s, z in zip(scalars, chain_sizes)]
        out["best_vs_tokens"] = tokens_curve(maxima, chain_tokens)
    for name in ("mean_scalar", "diversity", "pareto_fraction"):
        out[name] = mean_se(per[name]).as_dict()
    nonempty = [np.asarray(r, dtype=float) for r in pools if len(r)]
    if nonempty:
        out["vpo_objective"] = mean_se(per["vpo_objective"]).as_dict()
        dims = {r.shape[1] for r in nonempty}
        if len(dims) == 1:
            d = dims.pop()
            allr = np.concatenate(nonempty)
            names = (list(component_names) if component_names and len(component_names) == d
                     else [f"c{i}" for i in range(d)])
            out["components"] = {nm: float(allr[:, j].mean()) for j, nm in enumerate(names)}
            out["spread"] = {nm: float(np.mean([r[:, j].std() for r in nonempty])) for j, nm in enumerate(names)}
    out["n_problems"] = len(pools)
    out["n_candidates"] = int(sum(len(s) for s in scalars))
    return out
