"""Supervised targets for the warm start, and tokenisation of (prompt, completion) pairs.

Two kinds of targets:
- ``random`` (the Maze row's warm start): valid routes from S to E that know nothing of the reward
  weightings -- a shortest path with random tie-breaks, or one through a random free waypoint, within
  the step budget (:func:`random_route`). Chains hold m such routes drawn independently. The warm start
  so learns the answer *format* and how to reach the exit, not which trade-offs are good: that is left
  to RL, as in the paper, whose four methods start from a base model with no SFT.
- ``search``: routes found by exact search, each optimal for some weighting of the four reward
  components (completion, gold, diamond, avoid_lava). Kept for the search operators' warm starts and
  for runs recorded with it; it teaches VPO's target behaviour before RL starts.

Completion formats: the paper's (move words, space-separated; every move word and tag is one token of
the tiny model's tokenizer). Routes are kept internally as letter strings (``RRD``: search cache,
symmetry transforms) and spelled out as words only here.
    single answer:  <answer>RIGHT RIGHT DOWN ...</answer>
    chain of m:     <route_1>RIGHT DOWN ...</route_1><route_2>...</route_2>...<route_m>...</route_m>
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from vpo_harness.benchmarks.base import Benchmark, Problem

LETTER = {"UP": "U", "DOWN": "D", "LEFT": "L", "RIGHT": "R"}
WORD = {v: k for k, v in LETTER.items()}

#: fixed weightings always searched, so every maze contributes its extreme trade-offs
ANCHOR_WEIGHTS = np.array([
    [1, 1, 0, 1],      # gold, avoid lava
    [1, 0, 1, 1],      # diamonds, avoid lava
    [1, 1, 0, 0],      # gold at any lava cost
    [1, 0, 1, 0],      # diamonds at any lava cost
    [1, 1, 1, 1],      # the task scalar itself
    [1, 0, 0, 1],      # shortest safe route
    [1, 0, 0, 0],      # shortest route
], dtype=float)


def route_letters(moves: Sequence[str]) -> str:
    return "".join(LETTER[m] for m in moves)


def search_targets(task: Benchmark, problems: Sequence[Problem], *, n_random: int = 6, seed: int = 42,
                   cache: str | Path | None = None) -> dict[str, list[dict[str, Any]]]:
    """problem id -> distinct optimal routes [{"route": "RRD..", "r": [..4..]}], anchors first.

    Search is the slow part (seconds per maze), so results are cached as JSON keyed by maze id.
    """
    from vpo_harness.benchmarks.maze import best_route

    cached: dict[str, list[dict[str, Any]]] = {}
    if cache is not None and Path(cache).exists():
        cached = json.loads(Path(cache).read_text())
    rng = np.random.default_rng(seed)
    todo = [p for p in problems if p.id not in cached]
    try:
        from vpo_harness.harness.core.progress import progress as tqdm
        it = tqdm(todo, desc="search targets", disable=len(todo) < 20)
    except ImportError:  # pragma: no cover
        it = todo
    for p in it:
        ws = np.concatenate([ANCHOR_WEIGHTS, rng.dirichlet(np.ones(task.d), size=n_random)])
        seen: dict[str, list[float]] = {}
        for w in ws:
            moves = best_route(task_instance(p), w.tolist(), getattr(task, "reward_mode", "convex_bonus"))
            route = route_letters(moves)
            if route and route not in seen:
                r, _ = task.simulate(p, moves)
                if r[0] >= 1.0:                   # only routes that reach the exit
                    seen[route] = [float(v) for v in r]
        cached[p.id] = [{"route": k, "r": v} for k, v in seen.items()]
    if cache is not None and todo:
        Path(cache).parent.mkdir(parents=True, exist_ok=True)
        Path(cache).write_text(json.dumps(cached))
    return {p.id: cached[p.id] for p in problems}


def _walk_down(dist: dict[tuple[int, int], int], source: tuple[int, int], rng: np.random.Generator) -> str:
    """A shortest path from ``source`` to the BFS root of ``dist``, each step a uniform choice among the
    neighbours one step closer (so every shortest path can come out)."""
    out, p = [], source
    while dist[p] > 0:
        steps = [(ch, (p[0] + dr, p[1] + dc)) for ch, (dr, dc) in _DELTA.items()
                 if dist.get((p[0] + dr, p[1] + dc), -1) == dist[p] - 1]
        ch, p = steps[int(rng.integers(len(steps)))]
        out.append(ch)
    return "".join(out)


def random_route(problem: Problem, rng: np.random.Generator, detour: float = 0.5) -> str:
    """A valid Maze route (letters, ``RRD..``) from S to E, blind to the reward: with probability
    ``1 - detour`` a shortest S->E path with random tie-breaks, else a shortest path through a uniformly
    drawn free waypoint whose detour fits the step budget (E is not entered on the way to it, since
    reaching E ends the episode). Gold, diamonds, lava and the bonus tile play no part in the draw."""
    from vpo_harness.benchmarks.maze_env import bfs

    maze = task_instance(problem)
    to_exit = bfs(maze.grid, maze.exit)
    if maze.start not in to_exit:
        return ""
    if rng.random() >= detour:
        return _walk_down(to_exit, maze.start, rng)
    from_start = bfs(maze.grid, maze.start, no_pass=[maze.exit])
    ways = sorted(w for w in maze.free_cells if w != maze.exit and w in from_start and w in to_exit
                  and from_start[w] + to_exit[w] <= maze.budget)
    w = ways[int(rng.integers(len(ways)))]
    to_w = bfs(maze.grid, w, blocked=[maze.exit])
    return _walk_down(to_w, maze.start, rng) + _walk_down(to_exit, w, rng)


def make_format_examples(task: Benchmark, problems: Sequence[Problem], *, m: int = 3, style: str = "compact",
                         copies: int = 2, multi_fraction: float = 0.5, seed: int = 42, prefix_fraction: float = 0.0,
                         detour: float = 0.5) -> list[tuple]:
    """(messages, completion) pairs whose routes are :func:`random_route` draws: a single answer is one
    draw, a chain is m independent draws (so a chain is no more diverse than m separate answers).
    A ``prefix_fraction`` of the examples are prefilled, as in :func:`make_examples`."""

    rng = np.random.default_rng(seed)
    out: list[tuple] = []
    for p in problems:
        for _ in range(copies):
            multi = rng.random() < multi_fraction
            pick = [random_route(p, rng, detour) for _ in range(m if multi else 1)]
            if not all(pick):
                continue
            if multi:
                msgs, completion, mm = task.multi_prompt(p, m, style=style), chain_completion(pick), m
            else:
                msgs, completion, mm = task.prompt(p, style=style), single_completion(pick[0]), 1
            out.append(maybe_prefilled(task, p, msgs, completion, pick[0], mm, rng, prefix_fraction))
    return out


def maybe_prefilled(task: Benchmark, problem: Problem, msgs: list[dict[str, str]], completion: str, first: str,
                    m: int, rng: np.random.Generator, prefix_fraction: float) -> tuple:
    """One supervised example, prefilled with probability ``prefix_fraction`` (training/prefix.py): the
    start of its first route (letters ``first``), cut uniformly, becomes an open assistant turn and the
    example is the triple (messages, rest, prefix); else the pair (messages, completion)."""
    from vpo_harness.training.prefix import cut_route, draws_prefix, split_completion

    if draws_prefix(rng, prefix_fraction):
        pre = cut_route(task, problem, route_words(first), m, rng).text
        rest = split_completion(completion, pre)
        if rest is not None:
            return (msgs, rest, pre)
    return (msgs, completion)


def task_instance(problem: Problem) -> Any:
    from vpo_harness.benchmarks.maze_env import MazeInstance
    return MazeInstance.from_problem(problem)


def route_words(route: str) -> str:
    """``RRD`` -> ``RIGHT RIGHT DOWN`` (the answer format of the paper's prompt)."""
    return " ".join(WORD[ch] for ch in route)


def single_completion(route: str) -> str:
    return f"<answer>{route_words(route)}</answer>"


def chain_completion(routes: Sequence[str]) -> str:
    return "".join(f"<route_{i}>{route_words(r)}</route_{i}>" for i, r in enumerate(routes, 1))


def make_examples(task: Benchmark, problems: Sequence[Problem], targets: dict[str, list[dict[str, Any]]],
                  *, m: int = 3, style: str = "compact", copies: int = 2, multi_fraction: float = 0.5,
                  seed: int = 42, prefix_fraction: float = 0.0) -> list[tuple]:
    """(messages, completion) pairs: per maze ``copies`` examples, a ``multi_fraction`` of them chains.

    A single-answer example picks one target route at random (so the warm start's single-answer
    distribution covers the trade-offs); a chain picks m distinct routes in random order (cycling when a
    maze has fewer than m distinct optimal routes).

    A ``prefix_fraction`` of the examples are prefilled (training/prefix.py): the start of their first
    route, cut uniformly, is an open assistant turn and the target is the rest of the completion; those
    examples are triples (messages, rest, prefix).
    """

    rng = np.random.default_rng(seed)
    out: list[tuple[list[dict[str, str]], str]] = []
    for p in problems:
        routes = [t["route"] for t in targets.get(p.id, [])]
        if not routes:
            continue
        for _ in range(copies):
            if rng.random() < multi_fraction:
                order = list(rng.permutation(len(routes)))
                pick = [routes[order[i % len(order)]] for i in range(m)]
                msgs, completion, first, mm = task.multi_prompt(p, m, style=style), chain_completion(pick), pick[0], m
            else:
                first = routes[int(rng.integers(len(routes)))]
                msgs, completion, mm = task.prompt(p, style=style), single_completion(first), 1
            out.append(maybe_prefilled(task, p, msgs, completion, first, mm, rng, prefix_fraction))
    return out


@dataclass
class Encoded:
    input_ids: torch.Tensor      # (B, T) right-padded
    attention_mask: torch.Tensor  # (B, T)
    labels: torch.Tensor         # (B, T), -100 on prompt and padding


def encode_pairs(tokenizer: Any, pairs: Sequence[tuple]) -> Encoded:
    """Prompt rendered with the chat template; loss only on the completion and its end token. A triple
    (messages, completion, prefix) renders the prefix as an open assistant turn, as the backends render
    a prefilled request, so the prefix is context and only the continuation is trained."""
    from vpo_harness.training.prefix import render_prompt

    seqs, labs = [], []
    for msgs, completion, *prefix in pairs:
        p = tokenizer(render_prompt(msgs, tokenizer, prefix[0] if prefix else ""), add_special_tokens=False)["input_ids"]
        c = tokenizer(completion, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        seqs.append(p + c)
        labs.append([-100] * len(p) + c)
    T = max(len(s) for s in seqs)
    pad = tokenizer.pad_token_id
    ids = torch.full((len(seqs), T), pad, dtype=torch.long)
    att = torch.zeros((len(seqs), T), dtype=torch.long)
    lab = torch.full((len(seqs), T), -100, dtype=torch.long)
    for i, (s, l) in enumerate(zip(seqs, labs)):
        ids[i, : len(s)] = torch.tensor(s)
        att[i, : len(s)] = 1
        lab[i, : len(l)] = torch.tensor(l)
    return Encoded(ids, att, lab)


# ---- symmetry augmentation -------------------------------------------------------------------------
_DELTA = {"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)}
_LETTER_OF = {v: k for k, v in _DELTA.items()}


def _lin(k: int, dr: int, dc: int) -> tuple[int, int]:
    """Linear part of dihedral transform k (0..7): k % 4 quarter turns clockwise, then a mirror if k >= 4."""
    for _ in range(k % 4):
        dr, dc = dc, -dr
    if k >= 4:
        dc = -dc
    return dr, dc


def transform_pos(k: int, p: Sequence[int], n: int) -> tuple[int, int]:
    r, c = p
    for _ in range(k % 4):
        r, c = c, n - 1 - r
    if k >= 4:
        c = n - 1 - c
    return r, c


def transform_route(k: int, route: str) -> str:
    return "".join(_LETTER_OF[_lin(k, *_DELTA[ch])] for ch in route)


def transform_problem(k: int, problem: Problem) -> Problem:
    """The maze under dihedral symmetry k, as a new Problem (k = 0 is the identity).

    The generator's rules are symmetric (start and exit on opposite corners of a random diagonal, zones
    in the two other corners), so the 8 images of a training maze are in-distribution training mazes:
    an 8x larger warm-start set from the same 1000 train seeds.
    """
    if k == 0:
        return problem
    d = dict(problem.data)
    n = int(d["size"])
    grid = [list(row) for row in d["grid"]]
    new = [["#"] * n for _ in range(n)]
    for r in range(n):
        for c in range(n):
            nr, nc = transform_pos(k, (r, c), n)
            new[nr][nc] = grid[r][c]
    d["grid"] = ["".join(row) for row in new]
    for key in ("start", "exit", "gold_corner", "diamond_corner", "bonus"):
        d[key] = list(transform_pos(k, d[key], n))
    for key in ("gold", "diamond", "lava"):
        d[key] = [list(transform_pos(k, p, n)) for p in d[key]]
    return Problem(id=f"{problem.id}~t{k}", data=d, meta={**problem.meta, "transform": k})


def augment(problems: Sequence[Problem], targets: dict[str, list[dict[str, Any]]],
            transforms: Sequence[int] = range(8)) -> tuple[list[Problem], dict[str, list[dict[str, Any]]]]:
    """All dihedral images of the problems with their targets' routes mapped along."""
    out_p: list[Problem] = []
    out_t: dict[str, list[dict[str, Any]]] = {}
    for p in problems:
        for k in transforms:
            q = transform_problem(k, p)
            out_p.append(q)
            out_t[q.id] = [{"route": transform_route(k, t["route"]), "r": t["r"]} for t in targets.get(p.id, [])]
    return out_p, out_t
