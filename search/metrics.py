"""Evolve-run metrics: fraction of problems solved vs iteration and vs candidates evaluated
(mean +- standard error over problems), best score vs iteration per problem, and the plain-sampling
comparison at the same candidate budget.

Plain sampling at budget c is the unbiased "solved within c draws" estimate from a pool of the same
model's independent samples (Chen et al.'s pass@k estimator with "solved" as the success event); the
evolve curve at c is whether the c-th candidate evaluated (in iteration order) or an earlier one
solved the problem. Both curves therefore count candidates the same way.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
from rapidfuzz.distance import Levenshtein

from vpo_harness.harness.core.metrics import best_at_k_curve, mean_se, pass_at_k


def _curve(values: np.ndarray, xs: Sequence[int]) -> dict[str, list]:
    """values: (P, len(xs)) per-problem 0/1 or scores -> mean and stderr per x."""
    est = [mean_se(values[:, j]) for j in range(values.shape[1])] if values.size else []
    return {"x": [int(x) for x in xs], "mean": [round(e.mean, 6) for e in est],
            "stderr": [round(e.stderr, 6) for e in est]}


def evolve_curves(rows: Sequence[dict[str, Any]], problem_ids: Sequence[str], iterations: int) -> dict[str, Any]:
    """Curves of one evolve run from its candidate rows (one row per candidate)."""
    by_p: dict[str, list[dict[str, Any]]] = {p: [] for p in problem_ids}
    for r in rows:
        if r["problem_id"] in by_p and int(r["iteration"]) <= iterations:
            by_p[r["problem_id"]].append(r)
    its = np.arange(iterations + 1)
    n_cand = max((len(v) for v in by_p.values()), default=0)
    cands = np.arange(1, n_cand + 1)
    solved_it = np.zeros((len(problem_ids), len(its)))
    solved_c = np.zeros((len(problem_ids), len(cands)))
    best_it = np.full((len(problem_ids), len(its)), np.nan)
    best_c = np.full((len(problem_ids), len(cands)), np.nan)
    per_problem: dict[str, Any] = {}
    for i, pid in enumerate(problem_ids):
        rs = sorted(by_p[pid], key=lambda r: (int(r["iteration"]), int(r["answer_index"])))
        if not rs:
            continue
        it_of = np.array([int(r["iteration"]) for r in rs])
        sc = np.array([float(r["scalars"][0]) for r in rs])
        ok = np.array([bool(r.get("solved")) for r in rs])
        first = int(np.argmax(ok)) if ok.any() else None
        if first is not None:
            solved_c[i, first:] = 1.0
            solved_it[i, its >= it_of[first]] = 1.0
        best_per_it = np.full(len(its), -np.inf)
        np.maximum.at(best_per_it, it_of, sc)
        run = np.maximum.accumulate(best_per_it)
        best_it[i] = np.where(np.isfinite(run), run, np.nan)
        best_c[i, : len(sc)] = np.maximum.accumulate(sc)
        if len(rs) < n_cand:  # an unfinished problem: unknown beyond what was evaluated
            solved_c[i, len(rs):] = np.nan
            solved_it[i, it_of.max() + 1:] = np.nan
        per_problem[pid] = {
            "candidates": len(rs), "best": float(sc.max()),
            "solved_at_candidate": first + 1 if first is not None else None,
            "solved_at_iteration": int(it_of[first]) if first is not None else None,
            "best_vs_iteration": [None if np.isnan(v) else round(float(v), 6) for v in best_it[i]],
        }
    return {
        "solved_vs_iteration": _curve(solved_it, its),
        "solved_vs_candidates": _curve(solved_c, cands),
        "best_vs_iteration": _curve(best_it, its),
        "best_vs_candidates": _curve(best_c, cands),
        "per_problem": per_problem,
        "solved": mean_se(solved_c[:, -1] if n_cand else []).as_dict(),
    }


def sampling_curve(pools: Sequence[np.ndarray], budgets: Sequence[int]) -> dict[str, list]:
    """Fraction solved within c independent samples (unbiased, without replacement), per budget c;
    ``pools[p]`` are problem p's 0/1 solved flags."""
    vals = np.stack([pass_at_k(list(pools), int(c)) for c in budgets], axis=1) if budgets else np.zeros((len(pools), 0))
    return _curve(vals, budgets)


def baseline_curves(rows: Sequence[dict[str, Any]], problem_ids: Sequence[str],
                    solved: Callable[[str, float, bool], bool], budget: int) -> dict[str, Any]:
    """Plain best@k sampling of the same model up to ``budget`` candidates: solved within c samples
    and the unbiased best@c of the task scalar."""
    pools: dict[str, list[bool]] = {p: [] for p in problem_ids}
    scores: dict[str, list[float]] = {p: [] for p in problem_ids}
    for r in rows:
        if r["problem_id"] not in pools or r.get("error"):
            continue
        for s, ok in zip(r["scalars"], r["passed"]):
            pools[r["problem_id"]].append(solved(r["problem_id"], float(s), bool(ok)))
            scores[r["problem_id"]].append(float(s))
    arr = [np.asarray(pools[p], dtype=float) for p in problem_ids]
    n = min((len(a) for a in arr), default=0)
    xs = list(range(1, min(n, budget) + 1))
    best = best_at_k_curve([np.asarray(scores[p], dtype=float) for p in problem_ids], xs) if xs else {}
    best_vals = np.stack([best[c] for c in xs], axis=1) if xs else np.zeros((len(arr), 0))
    return {"solved_vs_candidates": sampling_curve(arr, xs), "best_vs_candidates": _curve(best_vals, xs), "pool": n,
            "solved": mean_se([float(a.any()) for a in arr]).as_dict()}


# ---------------------------------------------------------------------------------------------------
# budget tables, from the stored rows (an old or stale results.json plays no part)
def candidate_budgets(total: int) -> list[int]:
    """The candidate budgets a table reads: powers of two below ``total``, and ``total`` itself."""
    total = int(total)
    out = [1 << i for i in range(max(total, 1).bit_length()) if 1 << i < total]
    return out + [total] if total >= 1 else []


def evolve_candidates(rows: Sequence[dict[str, Any]], problem_ids: Sequence[str],
                      iterations: int | None = None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per problem, (scalars, solved flags) of its candidates in evaluation order
    (:func:`evolve_order`)."""
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for pid, rs in evolve_order(rows, problem_ids, iterations).items():
        out[pid] = (np.asarray([float(r["scalars"][0]) for r in rs], dtype=float),
                    np.asarray([bool(r.get("solved")) for r in rs], dtype=bool))
    return out


def evolve_order(rows: Sequence[dict[str, Any]], problem_ids: Sequence[str],
                 iterations: int | None = None) -> dict[str, list[dict[str, Any]]]:
    """Per problem, its candidate rows in evaluation order (iteration, then answer index), over the
    leading run of complete iterations only: a budget of c candidates must mean the first c the
    search evaluated, so an iteration missing in the middle (a crash, or later iterations finished
    first when several are in flight) ends what is known."""
    by_it: dict[str, dict[int, dict[int, dict[str, Any]]]] = {p: {} for p in problem_ids}
    for r in rows:
        pid = r["problem_id"]
        if pid not in by_it or r.get("error") or "iteration" not in r:
            continue
        it = int(r["iteration"])
        if iterations is not None and it > iterations:
            continue
        by_it[pid].setdefault(it, {})[int(r.get("answer_index", 0))] = r  # later rows win
    out: dict[str, list[dict[str, Any]]] = {}
    for pid, its in by_it.items():
        ordered: list[dict[str, Any]] = []
        it = 0
        while it in its:
            ch = its[it]
            of = int(next(iter(ch.values())).get("of", len(ch)))
            if len(ch) != of:
                break
            ordered += [ch[j] for j in sorted(ch)]
            it += 1
        out[pid] = ordered
    return out


# ---------------------------------------------------------------------------------------------------
# the front a search found: hypervolume of the reward vectors against candidates
def evolve_rewards(rows: Sequence[dict[str, Any]], problem_ids: Sequence[str],
                   iterations: int | None = None) -> dict[str, np.ndarray]:
    """Per problem, (n, d) reward vectors of the search's candidates in evaluation order."""
    return {pid: _stack([r["rewards"][0] for r in rs]) for pid, rs in evolve_order(rows, problem_ids, iterations).items()}


def sampling_rewards(rows: Sequence[dict[str, Any]], problem_ids: Sequence[str]) -> dict[str, np.ndarray]:
    """Per problem, (n, d) reward vectors of a sampling run's answers in chain order (chains are
    independent draws, so the first c are a sample of c)."""
    by: dict[str, list[dict[str, Any]]] = {p: [] for p in problem_ids}
    for r in rows:
        if r["problem_id"] in by and not r.get("error"):
            by[r["problem_id"]].append(r)
    return {pid: _stack([v for r in sorted(rs, key=lambda r: int(r["chain_index"])) for v in r["rewards"]])
            for pid, rs in by.items()}


def _stack(vectors: Sequence[Sequence[float]]) -> np.ndarray:
    return np.asarray(vectors, dtype=float) if len(vectors) else np.zeros((0, 0))


#: the reference point of a search's hypervolume, on every component: a margin below 0, so that a
#: candidate with one component at 0 (a route that collects no gold) still adds the volume its other
#: components earn; with the origin as reference it would add none
HV_REF = -0.1
#: components above which the exact hypervolume is not computed (its cost grows as n^d): NaN instead
HV_MAX_DIMS = 8


def hypervolume_at_budgets(vectors: dict[str, np.ndarray], problem_ids: Sequence[str],
                           budgets: Sequence[int]) -> np.ndarray:
    """(P, len(budgets)): the hypervolume (reference :data:`HV_REF` on every component) of each
    problem's first c reward vectors; NaN where fewer than c are stored or the vectors have more than
    :data:`HV_MAX_DIMS` components. The size of the front found so far: it grows when a candidate
    opens a new trade-off, even when no scalar improves."""
    from vpo_harness.harness.core.metrics import hypervolume

    out = np.full((len(problem_ids), len(budgets)), np.nan)
    for i, pid in enumerate(problem_ids):
        v = vectors.get(pid, np.zeros((0, 0)))
        if v.ndim != 2 or v.shape[1] > HV_MAX_DIMS:
            continue
        for j, c in enumerate(budgets):
            if 0 < c <= v.shape[0]:
                out[i, j] = hypervolume(v[: int(c)], ref=HV_REF)
    return out


def hypervolume_curve(vectors: dict[str, np.ndarray], problem_ids: Sequence[str], budget: int) -> dict[str, list]:
    """Mean hypervolume over problems against candidates, at :func:`candidate_budgets` up to ``budget``."""
    xs = candidate_budgets(budget)
    return _curve(hypervolume_at_budgets(vectors, problem_ids, xs), xs)


def evolve_at_budgets(cands: dict[str, tuple[np.ndarray, np.ndarray]], problem_ids: Sequence[str],
                      budgets: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """(solved, best): (P, len(budgets)) per-problem values of the search at each budget c: solved by
    one of its first c candidates, and the best task scalar among them. NaN where a problem has
    fewer than c candidates stored (an unfinished run): unknown, never counted as unsolved."""
    solved = np.full((len(problem_ids), len(budgets)), np.nan)
    best = np.full_like(solved, np.nan)
    for i, pid in enumerate(problem_ids):
        sc, ok = cands.get(pid, (np.zeros(0), np.zeros(0, bool)))
        if not sc.size:
            continue
        run_best = np.maximum.accumulate(sc)
        run_ok = np.maximum.accumulate(ok.astype(float))
        for j, c in enumerate(budgets):
            if c <= sc.size:
                solved[i, j], best[i, j] = run_ok[c - 1], run_best[c - 1]
    return solved, best


def sampling_at_budgets(solved_pools: Sequence[np.ndarray], scalar_pools: Sequence[np.ndarray],
                        budgets: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """(solved, best): (P, len(budgets)) for plain sampling: the unbiased chance that c independent
    samples hold a solution (pass@c with "solved" as the event) and the unbiased best@c of the task
    scalar. NaN where the pool is smaller than c."""
    if not budgets:
        return np.zeros((len(solved_pools), 0)), np.zeros((len(scalar_pools), 0))
    solved = np.stack([pass_at_k([np.asarray(p, dtype=float) for p in solved_pools], int(c)) for c in budgets], axis=1)
    curve = best_at_k_curve([np.asarray(s, dtype=float) for s in scalar_pools], [int(c) for c in budgets])
    best = np.stack([curve[int(c)] for c in budgets], axis=1)
    return solved, best


def edit_distance(a: Sequence[Any], b: Sequence[Any]) -> int:
    """Levenshtein distance between two sequences of hashable steps (insertions, deletions,
    substitutions: cost 1). rapidfuzz's C++ kernel: the pure-Python table took 4 ms per pair of
    60-move routes, 98% of the search experiment's analysis (bench/edit_distance.py measures both)."""
    return int(Levenshtein.distance(list(a), list(b)))


def normalised_distance(a: Sequence[Any], b: Sequence[Any]) -> float:
    """Edit distance over the longer length: 0 for equal answers, 1 for answers sharing nothing."""
    n = max(len(a), len(b))
    return edit_distance(a, b) / n if n else 0.0


def locality(rows: Sequence[dict[str, Any]], steps: Callable[[str, str], list[str]],
             n_others: int = 8) -> dict[str, Any]:
    """How local a search's children are: for every child with a parent and an answer, the normalised
    edit distance (over the task's answer steps, ``steps(problem_id, answer)``: Maze moves, words,
    program lines) to its parent, and the mean distance to up to ``n_others`` other candidates of
    earlier iterations (evenly spaced over them in evaluation order, the parent left out: a fixed,
    seed-free choice that keeps the number of distances computed linear in the run). A local operator has child-parent
    distances well below child-other ones; independent sampling has them equal on average.

    Returns the means over children (``child_parent``, ``child_other``, ``n``) and per problem."""
    by_p: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_p.setdefault(r["problem_id"], []).append(r)
    all_par: list[float] = []
    all_oth: list[float] = []
    per: dict[str, dict[str, float | int | None]] = {}
    for pid, rs in sorted(by_p.items()):
        rs = sorted(rs, key=lambda r: (int(r["iteration"]), int(r.get("answer_index", 0))))
        seq = {r["program_id"]: steps(pid, r["answers"][0]) for r in rs if r.get("answers") and r["answers"][0]}
        par, oth = [], []
        for k, r in enumerate(rs):
            me = seq.get(r.get("program_id"))
            parent = seq.get(r.get("parent_id")) if r.get("parent_id") else None
            if me is None or parent is None:
                continue
            earlier = [x["program_id"] for x in rs[:k] if int(x["iteration"]) < int(r["iteration"])
                       and x["program_id"] in seq and x["program_id"] != r["parent_id"]]
            if earlier:
                pick = sorted({earlier[int(i)] for i in np.linspace(0, len(earlier) - 1, min(n_others, len(earlier)))})
                oth.append(float(np.mean([normalised_distance(me, seq[o]) for o in pick])))
                par.append(normalised_distance(me, parent))
        per[pid] = {"child_parent": float(np.mean(par)) if par else None,
                    "child_other": float(np.mean(oth)) if oth else None, "n": len(par)}
        all_par += par
        all_oth += oth
    return {"child_parent": float(np.mean(all_par)) if all_par else None,
            "child_other": float(np.mean(all_oth)) if all_oth else None, "n": len(all_par), "per_problem": per}
