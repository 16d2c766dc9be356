"""The one place a chain is scored: parse -> reward vectors (+ details) -> dedup -> scalars -> row.

The runner, the RL trainer's scoring step, quick/validation evaluation and the search and TRL/verl
adapters all call :func:`score_chain`, so a parsing or dedup rule changes in one place only.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from vpo_harness.benchmarks.base import Benchmark, Problem
from vpo_harness.harness.core.models.base import Generation
from vpo_harness.harness.core.rows import ChainRow


@dataclass
class ChainScore:
    """Scores of one chain's answers; arrays have one row per answer (m for a chain, 1 for a sample)."""

    answers: list[str | None]
    rewards: np.ndarray  # (A, d) in [0, 1]; the zero vector for a missing answer
    scalars: np.ndarray  # (A,) task scalar s(r)
    passed: np.ndarray  # (A,) bool: every component is 1
    #: dedup key per answer (None for a missing answer): equal keys in one chain are duplicates
    keys: list[Any]
    details: list[dict[str, Any]] | None = None

    @property
    def n_unique(self) -> int:
        """Unique answers of the chain (distinct under the task's dedup key; missing answers don't count)."""
        return len({repr(k) for k in self.keys if k is not None})


class RewardError(ValueError):
    """A task scored an answer with a reward that is not a finite number in [0, 1] (a bug in the
    task's scorer): stored as that chain's error, never as a number every metric would carry."""


#: float noise a scorer may leave at the ends of [0, 1] (clipped, not refused)
REWARD_TOL = 1e-9


def check_rewards(task: Benchmark, problem: Problem, rewards: np.ndarray, scalars: np.ndarray) -> np.ndarray:
    """``rewards`` clipped to [0, 1] when they are within :data:`REWARD_TOL` of it; a NaN, an inf or
    a value further out raises :class:`RewardError` naming the task, problem, answer and component."""
    bad = ~np.isfinite(rewards) | (rewards < -REWARD_TOL) | (rewards > 1.0 + REWARD_TOL)
    if bad.any():
        i, j = (int(x) for x in np.argwhere(bad)[0])
        names = list(task.component_names)
        comp = repr(names[j]) if len(names) == rewards.shape[1] else f"{j + 1} of {rewards.shape[1]}"
        raise RewardError(f"task {task.name!r} problem {problem.id}: reward component {comp} of answer {i + 1} "
                          f"is {rewards[i, j]!r} (a reward must be a finite number in [0, 1]; the task's scorer "
                          "is wrong)")
    bad_s = ~np.isfinite(scalars)
    if bad_s.any():
        i = int(np.argmax(bad_s))
        raise RewardError(f"task {task.name!r} problem {problem.id}: the task scalar of answer {i + 1} is "
                          f"{scalars[i]!r} (it must be finite)")
    return np.clip(rewards, 0.0, 1.0)


def score_chain(task: Benchmark, problem: Problem, text: str, m: int) -> ChainScore:
    """Parse ``text`` (``m`` numbered answers, or one answer when ``m == 1``) and score every answer.
    Raises :class:`RewardError` when the task returns a reward outside [0, 1] or not finite."""
    answers = task.parse(text, None if m == 1 else m)
    r, details = task.score(problem, answers)
    r = np.asarray(r, dtype=float).reshape(len(answers), -1)
    scalars = np.atleast_1d(task.scalar(r)).astype(float)
    r = check_rewards(task, problem, r, scalars)
    keys = [task.dedup_key(problem, a, ri) if a is not None else None for a, ri in zip(answers, r)]
    return ChainScore(answers=list(answers), rewards=r, scalars=scalars,
                      passed=np.atleast_1d(task.passed(r)).astype(bool), keys=keys, details=details)


def score_generation(task: Benchmark, problem: Problem, gen: Generation, m: int, seed: int | None) -> ChainRow:
    """The stored row of one generated chain (a failed generation keeps its error and no answers)."""
    t0 = time.perf_counter()
    row = ChainRow(problem_id=gen.problem_id, chain_index=gen.chain_index, seed=seed, text=gen.text,
                   prompt_tokens=gen.prompt_tokens, completion_tokens=gen.completion_tokens,
                   finish_reason=gen.finish_reason, latency_s=gen.latency_s, attempts=gen.attempts,
                   error=gen.error, extra=dict(gen.extra or {}),
                   prefix=gen.prefix or None, prefix_tokens=gen.prefix_tokens if gen.prefix else None)
    if not gen.error:
        try:
            sc = score_chain(task, problem, gen.text, m)
        except RewardError as exc:  # the chain is kept as an error row; the run goes on
            row.error = f"reward: {exc}"
            row.score_s = round(time.perf_counter() - t0, 6)
            return row
        row.answers = sc.answers
        row.rewards = sc.rewards.round(6).tolist()
        row.scalars = sc.scalars.round(6).tolist()
        row.passed = sc.passed.tolist()
        row.n_unique = sc.n_unique
        row.details = sc.details
    row.score_s = round(time.perf_counter() - t0, 6)
    return row
