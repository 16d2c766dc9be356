"""When a problem counts as solved in an evolve run.

Maze: the candidate reaches the maze's optimal task scalar, found by the exact route search
(``benchmarks/maze_search.py``, uniform weights: the scalar is the mean of the components). A Maze
"pass" (every component 1) is impossible by construction, so pass would say nothing there. Every other
task: the candidate passes (every reward component 1; for code: every test).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from vpo_harness.benchmarks import Benchmark, Problem

TOL = 1e-6


def maze_optimal_scalar(task: Benchmark, problem: Problem) -> float:
    from vpo_harness.benchmarks.maze_search import best_route_detail

    mode = getattr(task, "reward_mode", "linear")
    detail = best_route_detail(_key(problem), (0.25, 0.25, 0.25, 0.25), mode)
    return float(np.asarray(task.scalar(np.asarray(detail["reward"], dtype=float))))


def _key(problem: Problem) -> Any:
    """best_route_detail is lru_cached on its arguments; a MazeInstance is hashable, a dict is not."""
    from vpo_harness.benchmarks.maze_env import MazeInstance

    return MazeInstance.from_problem(problem)


def solved_fn(task: Benchmark) -> Callable[[Problem, Any], bool]:
    """``solved(problem, evaluation)`` for ``task`` (an Evaluation has ``scalar`` and ``passed``)."""
    if task.name == "maze":
        cache: dict[str, float] = {}

        def solved(problem: Problem, ev: Any) -> bool:
            if problem.id not in cache:
                cache[problem.id] = maze_optimal_scalar(task, problem)
            return float(ev.scalar) >= cache[problem.id] - TOL

        return solved
    return lambda problem, ev: bool(ev.passed)


def thresholds(task: Benchmark, problems: list[Problem]) -> dict[str, float] | None:
    """Per-problem target scalar (Maze) recorded in results; None for pass-based tasks."""
    if task.name != "maze":
        return None
    return {p.id: round(maze_optimal_scalar(task, p), 6) for p in problems}
