"""Engine-neutral pieces shared by the TRL trainer and the verl plugin: prompts of a method, scoring of
rollout texts into reward tensors, and the per-rollout set reward R that every estimator z-scores.

Why a separate module: the native trainer, TRL and verl must agree on three facts or their runs are not
comparable: which prompt a method sees (chain prompt for multi-answer methods, goal weights appended for
goal-conditioned GRPO), how a completion becomes a reward matrix (the benchmark's chain scoring, zero
rows for truncated rollouts, VPO's dedup), and how weights are drawn. Everything numeric comes from
``training/advantages.py``; this module only arranges inputs for it.
"""
from __future__ import annotations

import hashlib
import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from vpo_harness.benchmarks.base import Benchmark, Messages, Problem
from vpo_harness.training import advantages as A

from vpo_harness.benchmarks.scoring import score_chain  # the one chain-scoring function (parse -> rewards -> dedup keys)


# ---- methods and prompts ----------------------------------------------------------------------------------
def is_multi(method: str) -> bool:
    """Multi-answer methods write chains of m answers; the others one answer."""
    if method not in A.METHODS:
        raise ValueError(f"unknown method {method!r}; known: {', '.join(A.METHODS)}")
    return method in A.MULTI_ANSWER


def answers_per_rollout(method: str, m: int) -> int:
    return m if is_multi(method) else 1


def method_prompt(task: Benchmark, problem: Problem, method: str, m: int, style: str,
                  goal_weights: Sequence[float] | None = None) -> Messages:
    """The prompt the policy sees for ``method`` (what the native trainer builds, step 1)."""
    msgs = task.multi_prompt(problem, m, style=style) if is_multi(method) else task.prompt(problem, style=style)
    if method == "goal_cond":
        if goal_weights is None:
            raise ValueError("goal_cond needs goal weights for the prompt")
        msgs = A.goal_prompt(msgs, goal_weights, task_components(task, problem))
    return msgs


def goal_weights(task: Benchmark, problems: Sequence[Problem], method: str, *, seed: int,
                 alpha: float = 1.0) -> list[list[float] | None]:
    """Goal-conditioned GRPO's prompt weights, one Dir(alpha) draw per problem (None for other methods).
    They live in the data row, so the G rollouts of a prompt share them (TRL and verl alike)."""
    if method != "goal_cond":
        return [None] * len(problems)
    rng = np.random.default_rng([seed, 3])
    return [rng.dirichlet(np.full(len(task_components(task, p)), alpha)).tolist() for p in problems]


def task_components(task: Benchmark, problem: Problem) -> tuple[str, ...]:
    """Component names of one problem (code tasks have one per test, so d varies by problem)."""
    per = getattr(task, "components_for", None)
    return tuple(per(problem)) if callable(per) else tuple(task.component_names)


# ---- problems travel as JSON inside datasets (TRL columns, verl parquet extra_info) --------------------------
def problem_to_json(problem: Problem) -> str:
    return json.dumps({"id": problem.id, "data": problem.data, "meta": problem.meta}, sort_keys=True)


def problem_from_json(text: str) -> Problem:
    d = json.loads(text)
    return Problem(id=d["id"], data=d["data"], meta=d.get("meta", {}))


# ---- scoring -------------------------------------------------------------------------------------------------
@dataclass
class ScoredBatch:
    """Rewards of N rollouts, padded to the widest problem's d (extra columns are zero).

    raw       (N, m, d)  reward vectors of every answer, truncated rollouts zeroed
    deduped   (N, m, d)  ``raw`` with duplicate answers of a chain removed (multi-answer methods)
    d         (N,)       components of each rollout's problem
    truncated (N,)       rollout cut by the token limit
    n_unique  (N,)       unique answers (distinct under the task's dedup key)
    """

    raw: np.ndarray
    deduped: np.ndarray
    d: np.ndarray
    truncated: np.ndarray
    n_unique: np.ndarray


def _score_one(task: Benchmark, problem: Problem, text: str, m: int) -> tuple[np.ndarray, list[Any]]:
    sc = score_chain(task, problem, text, m)
    return np.asarray(sc.rewards, dtype=float), list(sc.keys)


def score_rollouts(task: Benchmark, problems: Sequence[Problem], texts: Sequence[str], *, m: int,
                   truncated: Sequence[bool] | None = None, truncated_reward: str = "zero",
                   dedup: bool = True, workers: int = 1) -> ScoredBatch:
    """Score N rollout texts of their problems. ``m`` answers per rollout (1: single-answer parse).

    ``truncated_reward="zero"`` gives a rollout cut by the token limit the zero vector (the native
    trainer's rule: otherwise a policy drifts into never stopping because a cut answer still parses);
    ``"keep"`` scores it like any other text. Code tasks grade in their sandbox pool; ``workers`` > 1
    scores several rollouts at once (threads: the heavy part runs in sandbox processes).
    """
    if truncated_reward not in ("zero", "keep"):
        raise ValueError(f"truncated_reward must be 'zero' or 'keep', got {truncated_reward!r}")
    N = len(texts)
    if len(problems) != N:
        raise ValueError(f"{len(problems)} problems for {N} texts")
    cut = np.zeros(N, dtype=bool) if truncated is None else np.asarray(truncated, dtype=bool)
    if workers > 1 and N > 1:
        with ThreadPoolExecutor(max_workers=workers) as ex:
            results = list(ex.map(lambda i: _score_one(task, problems[i], texts[i], m), range(N)))
    else:
        results = [_score_one(task, problems[i], texts[i], m) for i in range(N)]
    d = np.array([r.shape[1] for r, _ in results], dtype=int)
    raw = np.zeros((N, m, int(d.max()) if N else 0))
    for i, (r, _) in enumerate(results):
        raw[i, : r.shape[0], : r.shape[1]] = r
    if truncated_reward == "zero":
        raw[cut] = 0.0
    keys = [[None if cut[i] and truncated_reward == "zero" else k for k in ks] for i, (_, ks) in enumerate(results)]
    n_unique = np.array([len({repr(k) for k in ks if k is not None}) for ks in keys], dtype=int)
    deduped = A.dedupe_chains(raw[None], [keys])[0] if dedup and m > 1 else raw.copy()
    return ScoredBatch(raw=raw, deduped=deduped, d=d, truncated=cut, n_unique=n_unique)


# ---- weights and advantages ------------------------------------------------------------------------------------
def step_rng(seed: int, step: int, stream: int) -> np.random.Generator:
    """The native trainer's streams: 1 = VPO weights, 2 = hidden random-weighting weights."""
    return np.random.default_rng([seed, step, stream])


def group_advantages(method: str, rewards: np.ndarray, d: np.ndarray, *, seed: int, step: int,
                     K: int = 100, alpha: float = 1.0, sobol: bool = False, k: int | None = None,
                     row_weights: np.ndarray | None = None) -> np.ndarray:
    """Advantages (groups, G) of a batch of rollouts (groups, G, m, d_max) with ``d`` (groups,) components.

    When every group has the same d this is exactly ``advantages.compute_advantages`` with the native
    trainer's generator for that step. Code tasks (d differs per problem) call it group by group, each
    on its own d columns with its own generator, so weights never put mass on a test a problem lacks.
    """
    groups = rewards.shape[0]
    if method == "random_weight" and row_weights is None:
        row_weights = np.zeros((groups, rewards.shape[1], rewards.shape[-1]))
        rng = step_rng(seed, step, 2)
        for b in range(groups):
            row_weights[b, :, : d[b]] = rng.dirichlet(np.full(int(d[b]), alpha), size=rewards.shape[1])
    if len(set(int(x) for x in d)) <= 1:
        dd = int(d[0]) if groups else rewards.shape[-1]
        return A.compute_advantages(method, rewards[..., :dd], rng=step_rng(seed, step, 1),
                                    row_weights=None if row_weights is None else row_weights[..., :dd],
                                    K=K, alpha=alpha, sobol=sobol, k=k)
    out = np.zeros(rewards.shape[:2])
    for b in range(groups):
        dd = int(d[b])
        rw = None if row_weights is None else row_weights[b:b + 1, :, :dd]
        out[b] = A.compute_advantages(method, rewards[b:b + 1, ..., :dd], rng=np.random.default_rng([seed, step, 1, b]),
                                      row_weights=rw, K=K, alpha=alpha, sobol=sobol, k=k)[0]
    return out


def batch_metrics(rewards: np.ndarray, d: np.ndarray, *, K: int = 100, alpha: float = 1.0,
                  seed: int = 0) -> dict[str, float]:
    """Per-step curves over groups (groups, G, m, d_max): diversity (mean pairwise L1 of the group's
    answers) and the VPO test objective E_w[max w . r] with K seeded Dirichlet weights per group. Both
    come from vpo_harness.harness.core.metrics, so training curves and evaluation use the same definitions."""
    from vpo_harness.harness.core.metrics import mean_pairwise_l1, vpo_objective

    rng = np.random.default_rng([seed, 7])
    div, obj = [], []
    for b in range(rewards.shape[0]):
        dd = int(d[b])
        pool = rewards[b, ..., :dd].reshape(-1, dd)
        div.append(mean_pairwise_l1(pool))
        obj.append(vpo_objective(pool, rng.dirichlet(np.full(dd, alpha), size=K)))
    return {"diversity": float(np.mean(div)) if div else 0.0, "vpo_objective": float(np.mean(obj)) if obj else 0.0}


def uid_seed(uid: Any, salt: int = 0) -> int:
    """A stable 63-bit seed from a group id (verl's uid): the G rollouts of a group draw the same weights
    in different processes without talking to each other."""
    h = hashlib.blake2b(f"{salt}:{uid}".encode(), digest_size=8).digest()
    return int.from_bytes(h, "little") >> 1
