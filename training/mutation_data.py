"""Supervised pairs for a Maze *mutation operator*: (mutation prompt with a parent route, better routes).

A mutation operator is a policy that reads a parent route and its reward vector and writes routes
that improve on it or trade its components differently (``Maze.mutation_prompt``). Its warm start is
trained on pairs built here, from the exact route search on training mazes only:

- parents come from three sources, so the operator sees the kinds of routes a search population
  holds: random walks (mostly failing routes), perturbed optimal routes (cut short, a detour spliced
  in, a stretch reversed: near misses) and, optionally, routes a policy actually wrote (a run's pool);
- targets are the search's optimal routes (one per component weighting, ``vpo_harness.training.data.search_targets``)
  that either raise the task scalar over the parent or are not dominated by it (a different trade-off);
  the parent itself is never a target, so copying the parent is never taught.

A chain of m (the VPO operator's format) takes m distinct such targets, best first; a single answer
(the GRPO operator's) takes the best. Everything is seeded, so the same arguments give the same pairs.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from vpo_harness.benchmarks.base import Benchmark, Problem, Shown
from vpo_harness.training.data import WORD, chain_completion, route_letters, route_words, single_completion

LETTERS = "UDLR"


def random_walk(rng: np.random.Generator, budget: int) -> str:
    """A route of random moves of random length up to the budget (letters)."""
    n = int(rng.integers(1, budget + 1))
    return "".join(LETTERS[i] for i in rng.integers(0, 4, size=n))


def perturb(rng: np.random.Generator, route: str, budget: int) -> str:
    """A near miss of an optimal route: cut short, a random detour spliced in, or a stretch reversed."""
    if not route:
        return random_walk(rng, budget)
    kind = int(rng.integers(3))
    if kind == 0:  # cut short: the exit is usually missed
        return route[: int(rng.integers(0, len(route)))] or route[:1]
    if kind == 1:  # a detour: random moves inserted somewhere, within the budget
        at = int(rng.integers(0, len(route) + 1))
        extra = random_walk(rng, max(1, min(4, budget - len(route)))) if budget > len(route) else ""
        return (route[:at] + extra + route[at:])[:budget]
    i, j = sorted(int(x) for x in rng.integers(0, len(route) + 1, size=2))
    return route[:i] + route[i:j][::-1] + route[j:]


def improving_targets(task: Benchmark, parent_r: np.ndarray, targets: Sequence[dict[str, Any]],
                      parent_route: str) -> list[dict[str, Any]]:
    """Targets better than the parent in scalar, or not dominated by it; best scalar first."""
    ps = float(task.scalar(parent_r))
    out = []
    for t in targets:
        if t["route"] == parent_route:
            continue
        r = np.asarray(t["r"], dtype=float)
        better = float(task.scalar(r)) > ps + 1e-9
        other_tradeoff = bool(np.any(r > parent_r + 1e-9))
        if better or other_tradeoff:
            out.append(t)
    return sorted(out, key=lambda t: -float(task.scalar(np.asarray(t["r"], dtype=float))))


def sample_parent(task: Benchmark, problem: Problem, targets: Sequence[dict[str, Any]],
                  rng: np.random.Generator) -> Shown:
    """A parent for an RL mutation prompt: a random walk or a perturbed optimal route, half each."""
    budget = int(problem.data["budget"])
    if targets and rng.random() < 0.5:
        route = perturb(rng, targets[int(rng.integers(len(targets)))]["route"], budget)
    else:
        route = random_walk(rng, budget)
    text = route_words(route)
    return Shown(text, tuple(float(x) for x in task.reward(problem, text)))


def mutation_prompt(task: Benchmark, problem: Problem, targets: Sequence[dict[str, Any]], m: int,
                    rng: np.random.Generator, *, style: str = "compact", inspirations: int = 1) -> list[dict[str, str]]:
    """The messages of one RL mutation prompt: a seeded parent plus ``inspirations`` optimal routes."""
    parent = sample_parent(task, problem, targets, rng)
    shown = [sample_parent(task, problem, targets, rng) for _ in range(min(inspirations, 2))]
    return task.mutation_prompt(problem, parent, shown, m, style=style)


def mutation_examples(task: Benchmark, problems: Sequence[Problem], targets: dict[str, list[dict[str, Any]]],
                      *, m: int, style: str = "compact", per_maze: int = 4, seed: int = 42,
                      pool_routes: dict[str, list[str]] | None = None,
                      inspirations: int = 1) -> list[tuple[list[dict[str, str]], str]]:
    """(messages, completion) pairs: ``per_maze`` parents per maze, each with its improving targets.

    ``pool_routes``: problem id -> move strings a policy wrote for it (optional third parent source).
    ``inspirations``: how many other population-like routes (walks, near misses) to show next to the
    parent (0 to 2), so the operator learns to read them as the engine shows them.
    """
    rng = np.random.default_rng(seed)
    out: list[tuple[list[dict[str, str]], str]] = []
    for p in problems:
        ts = targets.get(p.id, [])
        if not ts:
            continue
        budget = int(p.data["budget"])
        pool = [route_letters(task.moves(a)) for a in (pool_routes or {}).get(p.id, []) if task.moves(a)]
        for _ in range(per_maze):
            source = int(rng.integers(3 if pool else 2))
            if source == 0:
                parent = random_walk(rng, budget)
            elif source == 1:
                parent = perturb(rng, ts[int(rng.integers(len(ts)))]["route"], budget)
            else:
                parent = pool[int(rng.integers(len(pool)))]
            pr = np.asarray(task.reward(p, route_words(parent)), dtype=float)
            good = improving_targets(task, pr, ts, parent)
            if not good:
                continue
            # inspirations look like what a search population holds next to the parent (near misses
            # and walks), never the optimal targets themselves: copying one must not be the lesson
            shown = [sample_parent(task, p, ts, rng) for _ in range(min(inspirations, 2))]
            msgs = task.mutation_prompt(p, Shown(route_words(parent), tuple(float(x) for x in pr)), shown, m,
                                        style=style)
            if m == 1:
                completion = single_completion(good[0]["route"])
            else:
                completion = chain_completion([good[i % len(good)]["route"] for i in range(m)])
            out.append((msgs, completion))
    return out


__all__ = ["mutation_examples", "mutation_prompt", "sample_parent", "improving_targets", "perturb", "random_walk", "WORD"]
