"""The VPO authors' pool metrics, so our numbers can stand beside their training logs.

The authors' training code (ryanboldi/vpo, ``vpo/utils/eval_metrics.py: compute_pool_metrics``, averaged
over prompts by ``vpo/utils/pool_metrics.py``) reports, for the pool of scored answers of one prompt:

- **union coverage** (their ``max_sum``): sum over reward components of the pool's best value on it;
- **best individual**: the largest component sum of a single answer;
- **pass@k per solution** and **per chain** (k = 1, 2, 3): the unbiased pass@k where an answer counts
  as solved when every component is >= 1, over the answers, or over the chains (a chain is solved
  when one of its answers is; a chain that gave no scored answer is not in the pool, as there);
- **witness count / fraction**: how many answers are the unique best of the pool under some
  non-empty subset of components (equal-sum weighting); identical reward vectors form one class,
  and every member of a winning class counts. Defined up to 12 components (2^d subsets), NaN above.

This module is a re-statement of those definitions in numpy, one pool at a time, and the per-problem
arrays the reports average (mean and standard error over problems, as every other metric).
``tests/harness/test_pool_metrics.py`` checks it against values of the authors' own function on the
shared reference score matrices. Witness sums add the components in ascending index order, as theirs
do, so ties are decided on the same floating-point values.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

#: the ks of the authors' pass@k (their PASS_AT_K_KS: one 3-answer chain against three 1-answer ones)
AUTHORS_KS: tuple[int, ...] = (1, 2, 3)
#: above this many components the witness metrics are NaN (the authors' MAX_OBJECTIVES)
MAX_WITNESS_COMPONENTS = 12


def metric_names(ks: Sequence[int] = AUTHORS_KS) -> list[str]:
    """The metric names, in table order (the authors' ``max_sum`` is ``union_coverage`` here)."""
    return (["union_coverage", "best_individual"] + [f"pass@{k}[solution]" for k in ks]
            + [f"pass@{k}[chain]" for k in ks] + ["witness_count", "witness_fraction"])


def authors_pass_at_k(n: int, c: int, k: int) -> float:
    """The Codex estimator as the authors apply it: 0 when nothing is solved, 1 when fewer than k
    answers are unsolved (k larger than the pool included: it is not clamped), else
    1 - prod_{i=n-c+1..n} (1 - k/i)."""
    if c <= 0 or n <= 0 or k <= 0:
        return 0.0
    if n - c < k:
        return 1.0
    i = np.arange(n - c + 1, n + 1, dtype=float)
    return float(1.0 - np.prod(1.0 - k / i))


def witness_count(rewards: np.ndarray) -> float:
    """Answers whose reward vector is the unique maximum of the pool's component sum over some
    non-empty subset of components (NaN above :data:`MAX_WITNESS_COMPONENTS` components)."""
    n, d = rewards.shape
    if n == 0 or d == 0:
        return 0.0
    if d > MAX_WITNESS_COMPONENTS:
        return float("nan")
    # equal vectors are one class (-0.0 and 0.0 too, as in the authors' tuple keys)
    classes, counts = np.unique(rewards, axis=0, return_counts=True)
    masks = np.arange(1, 1 << d)
    sums = np.zeros((len(classes), masks.size))
    for j in range(d):  # component by component, in the authors' order: the same float sums
        sums = sums + np.where((masks >> j) & 1, classes[:, j:j + 1], 0.0)
    if len(classes) == 1:
        return float(counts[0])
    top2 = -np.partition(-sums, 1, axis=0)[:2]  # best and runner-up of every subset
    unique_best = top2[0] > top2[1]
    winners = np.unique(sums.argmax(axis=0)[unique_best])
    return float(counts[winners].sum())


def pool_metrics(rewards: np.ndarray, chain_sizes: np.ndarray, ks: Sequence[int] = AUTHORS_KS) -> dict[str, float]:
    """The authors' metrics of one problem's pool: ``rewards`` (n, d) in chain order, ``chain_sizes``
    the number of answers of each chain (summing to n). NaN everywhere for an empty pool."""
    rewards = np.asarray(rewards, dtype=float)
    n = rewards.shape[0] if rewards.ndim == 2 else 0
    if n == 0 or rewards.shape[1] == 0:
        return {name: float("nan") for name in metric_names(ks)}
    solved = (rewards >= 1.0).all(axis=1)
    sizes = np.asarray(chain_sizes, dtype=int)
    sizes = sizes[sizes > 0]
    if sizes.sum() != n:
        raise ValueError(f"chain sizes sum to {sizes.sum()}, the pool holds {n} answers")
    chain_solved = np.add.reduceat(solved.astype(int), np.concatenate([[0], np.cumsum(sizes)[:-1]])) > 0
    out = {"union_coverage": float(rewards.max(axis=0).sum()), "best_individual": float(rewards.sum(axis=1).max())}
    c_sol, c_chain = int(solved.sum()), int(chain_solved.sum())
    out.update({f"pass@{k}[solution]": authors_pass_at_k(n, c_sol, k) for k in ks})
    out.update({f"pass@{k}[chain]": authors_pass_at_k(sizes.size, c_chain, k) for k in ks})
    w = witness_count(rewards)
    out.update(witness_count=w, witness_fraction=w / n)
    return out


def per_problem_pool_metrics(rewards: Sequence[np.ndarray], chain_sizes: Sequence[np.ndarray] | None = None,
                             ks: Sequence[int] = AUTHORS_KS) -> dict[str, np.ndarray]:
    """metric name -> (P,) values, one per problem (NaN where a problem's pool is empty). Without
    ``chain_sizes`` (or with none recorded) every answer is a chain of its own, the authors' default
    when no rollout ids are given."""
    if not chain_sizes:
        chain_sizes = [np.ones(len(r), dtype=int) for r in rewards]
    per = [pool_metrics(r, z, ks) for r, z in zip(rewards, chain_sizes)]
    return {name: np.array([p[name] for p in per], dtype=float) for name in metric_names(ks)}
