"""Exact best-route search for the maze: ``best_route(maze, weights) -> list of moves``.

The reward depends on a route only through which items it collects, which distinct lava tiles it hits
and (``convex_bonus``) whether it visits B, and it is monotone in each. So the search enumerates the
allowed lava set A (every subset of the lava tiles, fewest first): with the other lava tiles removed from
the grid, a route hits at most A. For each A, a Held-Karp dynamic programme over the targets (the items,
plus B in ``convex_bonus`` mode) gives the shortest S -> targets (in some order) -> E length of every
target set, with shortest-path legs in which E is never an intermediate cell. The best target set that
fits in the budget, scored as if all of A were hit, is a lower bound of that route's true reward, and for
the optimal route's own hit set and item set it is exact: the maximum over A is the optimum.

Pruning (still exact): skip the sets of |A| = h once no target set reachable with all lava allowed,
scored with h hits, could beat the best value so far; skip A when its leg lengths equal those of A minus
one tile (that tile is useless and the smaller set is no worse).

Ties are broken deterministically: the first optimal A in enumeration order (fewest allowed lava tiles,
then lexicographic), within it the shortest route, then the smallest target bitmask (gold items first,
then diamonds, then B, each in sorted cell order); legs are BFS shortest paths preferring the move order
UP, DOWN, LEFT, RIGHT. Typical run time is a few milliseconds per maze.
"""
from __future__ import annotations

from collections import deque
from functools import lru_cache
from itertools import combinations
from typing import Any, Sequence

import numpy as np

from vpo_harness.benchmarks.maze_env import DELTAS, REWARD_MODES, MazeInstance, simulate

_INF = 10**6
_ORDER = ("UP", "DOWN", "LEFT", "RIGHT")


@lru_cache(maxsize=16)
def _layers(n: int) -> list[list[tuple[int, np.ndarray]]]:
    """For popcount k = 2..n: per target j, the masks of that size containing j."""
    masks = np.arange(1 << n)
    pc = np.array([bin(x).count("1") for x in range(1 << n)])
    out = []
    for k in range(2, n + 1):
        layer = masks[pc == k]
        out.append([(j, layer[(layer >> j) & 1 == 1]) for j in range(n)])
    return out


def _held_karp(D: np.ndarray, n: int, budget: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """D over nodes [targets..., S, E]. Returns (dp, parent, total length per mask incl. the exit leg)."""
    s, e = n, n + 1
    N = 1 << n
    dp = np.full((N, max(n, 1)), _INF, dtype=np.int64)
    parent = np.full((N, max(n, 1)), -1, dtype=np.int64)
    for j in range(n):
        dp[1 << j, j] = D[s, j]
    for layer in _layers(n) if n >= 2 else []:
        for j, M in layer:
            cand = dp[M ^ (1 << j)] + D[:n, j][None, :]
            arg = np.argmin(cand, axis=1)
            best = cand[np.arange(len(M)), arg]
            best = np.where(best > budget, _INF, best)
            dp[M, j] = best
            parent[M, j] = arg
    tot = np.full(N, _INF, dtype=np.int64)
    if n:
        tot = (dp[:, :n] + D[:n, e][None, :]).min(axis=1)
    tot[0] = D[s, e]
    return dp, parent, tot


def _all_pairs(adj: np.ndarray, removed: Sequence[int], no_pass: int) -> np.ndarray:
    D = adj.copy()
    if removed:
        D[removed, :] = _INF
        D[:, removed] = _INF
        D[removed, removed] = 0
    skip = set(removed) | {no_pass}
    for k in range(D.shape[0]):
        if k in skip:
            continue
        np.minimum(D, D[:, k:k + 1] + D[k:k + 1, :], out=D)
    return D


def _leg(maze: MazeInstance, a: tuple[int, int], b: tuple[int, int], blocked: set) -> list[str]:
    """Shortest move list a -> b avoiding ``blocked`` and never passing through E (BFS, fixed order)."""
    if a == b:
        return []
    prev: dict[tuple[int, int], tuple[tuple[int, int], str]] = {a: (a, "")}
    q = deque([a])
    n = maze.size
    while q:
        p = q.popleft()
        if p == maze.exit and p != a:
            continue
        for mv in _ORDER:
            dr, dc = DELTAS[mv]
            nb = (p[0] + dr, p[1] + dc)
            if 0 <= nb[0] < n and 0 <= nb[1] < n and maze.is_free(nb) and nb not in blocked and nb not in prev:
                prev[nb] = (p, mv)
                if nb == b:
                    q.clear()
                    break
                q.append(nb)
    if b not in prev:
        raise RuntimeError("internal error: unreachable leg in best_route")
    moves = []
    p = b
    while p != a:
        p, mv = prev[p]
        moves.append(mv)
    return moves[::-1]


def _values(w: np.ndarray, cg: np.ndarray, cd: np.ndarray, b: np.ndarray, h: int, ng: int, nd: int, nl: int,
            mode: str) -> np.ndarray:
    g = cg / ng if ng else np.ones_like(cg, dtype=float)
    d = cd / nd if nd else np.ones_like(cd, dtype=float)
    a = np.full(cg.shape, 1.0 - (h / nl if nl else 0.0))
    if mode == "convex_bonus":
        mult = np.where(b > 0, 1.5, 1.0)
        g, d, a = (np.clip(x ** 2 * mult, 0.0, 1.0) for x in (g, d, a))
    return w[0] + w[1] * g + w[2] * d + w[3] * a


def best_route_detail(maze: Any, weights: Sequence[float], reward_mode: str = "linear") -> dict[str, Any]:
    """Like :func:`best_route`, with the reward vector, value and episode info of the route."""
    maze = MazeInstance.from_problem(maze)
    if reward_mode not in REWARD_MODES:
        raise ValueError(f"unknown reward_mode {reward_mode!r}; known: {', '.join(REWARD_MODES)}")
    w = np.asarray(weights, dtype=float).reshape(-1)
    if w.shape != (4,) or not np.all(np.isfinite(w)):
        raise ValueError(f"weights must be 4 finite numbers, got {weights!r}")
    if np.any(w < 0):
        raise ValueError("weights must be non-negative (the search relies on monotone rewards)")

    targets = list(maze.gold) + list(maze.diamond)
    if reward_mode == "convex_bonus":
        targets.append(maze.bonus)
    n = len(targets)
    ng, nd, nl = len(maze.gold), len(maze.diamond), len(maze.lava)
    masks = np.arange(1 << n)
    cg = sum(((masks >> i) & 1) for i in range(ng)) if ng else np.zeros(1 << n, dtype=np.int64)
    cd = sum(((masks >> i) & 1) for i in range(ng, ng + nd)) if nd else np.zeros(1 << n, dtype=np.int64)
    bvis = ((masks >> (n - 1)) & 1) if reward_mode == "convex_bonus" else np.zeros(1 << n, dtype=np.int64)

    cells = sorted(maze.free_cells)
    index = {p: i for i, p in enumerate(cells)}
    m = len(cells)
    adj = np.full((m, m), _INF, dtype=np.int64)
    np.fill_diagonal(adj, 0)
    for p, i in index.items():
        for dr, dc in DELTAS.values():
            j = index.get((p[0] + dr, p[1] + dc))
            if j is not None:
                adj[i, j] = 1
    keys = [index[p] for p in targets] + [index[maze.start], index[maze.exit]]
    lava_idx = [index[p] for p in maze.lava]

    exit_i = index[maze.exit]
    # the most permissive grid (all lava allowed) bounds what any allowed set A can collect
    D_all = _all_pairs(adj, [], exit_i)[np.ix_(keys, keys)]
    hk_all = _held_karp(D_all, n, maze.budget)
    reach_all = hk_all[2] <= maze.budget
    if not reach_all.any():
        raise RuntimeError(f"maze seed {maze.seed}: no route reaches E within the budget")

    best: tuple | None = None   # ((-value, length), A, mask, D, dp, parent)
    seen: dict[frozenset, bytes] = {}
    for size in range(nl + 1):
        ub = float(np.max(np.where(reach_all, _values(w, cg, cd, bvis, size, ng, nd, nl, reward_mode), -np.inf)))
        for A in combinations(range(nl), size):
            if best is not None and ub <= -best[0][0] + 1e-12:
                break
            if size == nl:
                D, hk = D_all, hk_all
            else:
                removed = [lava_idx[i] for i in range(nl) if i not in A]
                D, hk = _all_pairs(adj, removed, exit_i)[np.ix_(keys, keys)], None
            sig = D.tobytes()
            fA = frozenset(A)
            seen[fA] = sig
            if any(seen.get(fA - {x}) == sig for x in A):
                continue
            dp, parent, tot = hk if hk is not None else _held_karp(D, n, maze.budget)
            ok = tot <= maze.budget
            if not ok.any():
                continue
            vals = np.where(ok, _values(w, cg, cd, bvis, size, ng, nd, nl, reward_mode), -np.inf)
            top = vals.max()
            cands = np.flatnonzero(vals >= top - 1e-12)
            pick = int(cands[np.lexsort((cands, tot[cands]))[0]])
            key = (-float(top), int(tot[pick]))
            if best is None or key[0] < best[0][0] - 1e-12:
                best = (key, A, pick, D, dp, parent)
    if best is None:
        raise RuntimeError(f"maze seed {maze.seed}: no route reaches E within the budget")

    _, A, mask, D, dp, parent = best
    # reconstruct the target order
    order: list[int] = []
    if mask:
        e = n + 1
        last = int(np.argmin(dp[mask, :n] + D[:n, e]))
        cur = mask
        while cur:
            order.append(last)
            prev_last = int(parent[cur, last])
            cur ^= 1 << last
            last = prev_last
        order.reverse()
    blocked = {maze.lava[i] for i in range(nl) if i not in A}
    waypoints = [maze.start] + [targets[i] for i in order] + [maze.exit]
    moves: list[str] = []
    for a, b in zip(waypoints, waypoints[1:]):
        moves.extend(_leg(maze, a, b, blocked))
    r, info = simulate(maze, moves, reward_mode)
    return {"moves": moves, "reward": r, "value": float(w @ r), "predicted": -best[0][0], "info": info,
            "allowed_lava": [maze.lava[i] for i in A], "targets": [targets[i] for i in order]}


def best_route(maze: Any, weights: Sequence[float], reward_mode: str = "linear") -> list[str]:
    """Moves of a route that maximises ``weights . r`` (exact) within the budget; deterministic.

    ``maze`` is a :class:`MazeInstance`, a Problem or its data dict; ``weights`` are 4 non-negative
    numbers over (completion, gold, diamond, avoid_lava).
    """
    return best_route_detail(maze, weights, reward_mode)["moves"]
