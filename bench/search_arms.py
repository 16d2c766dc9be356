"""Shared analysis of search experiments whose arms are `vpo evolve` runs and their `baseline/` sampling
runs (bench/evolve_operators.py, bench/evolve_prefix.py): per-maze curves of solved and best scalar vs
candidates, counted the same way for evolve and sampling, a table with paired bootstrap intervals and
win/tie/loss per contrast (any weighted sum of arms, so a difference of differences too), and one
figure of all arms.

Counting is the package's own (``vpo_harness.search.metrics``): evolve candidates in the order the search
evaluated them (iteration, then answer slot, over the complete iterations), so with ``-m 3`` every
answer of a call is one candidate; sampling at c candidates is the unbiased
expectation over c draws without replacement from the arm's pool (best@c, and solved-within-c as
pass@c of the solved flags). "Solved" = the maze's optimal task scalar (``search/solved.py``).
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout this file sits in runs (its vpo_harness/)

REPO = Path(__file__).resolve().parents[1]
#: a contrast: its label and arm -> coefficient (``{"a": 1, "b": -1}`` is a - b)
Contrast = tuple[str, dict[str, float]]


def vpo(*args: str) -> float:
    """Run one plain `vpo` command (printed first); its wall time in seconds."""
    print("$ vpo " + " ".join(args), flush=True)
    t0 = time.time()
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    subprocess.run([sys.executable, "-m", "vpo_harness.harness.app.cli", *args], cwd=REPO, check=True, env=env)
    return time.time() - t0


def pair(a: str, b: str) -> Contrast:
    return f"{a} − {b}", {a: 1.0, b: -1.0}


def rows(folder: Path) -> list[dict[str, Any]]:
    from vpo_harness.harness.core.store import latest_rows

    return [r for r in latest_rows(folder) if not r.get("error")]


def per_maze(folder: Path, budget: int, thr: dict[str, float], ids: list[str], evolve: bool) -> tuple[np.ndarray, np.ndarray]:
    """(P, budget) best scalar so far and solved-so-far per maze, counted by the package's own rules
    (``vpo_harness.search.metrics``, the ones `vpo evolve`'s results and `vpo show` use): evolve candidates in
    evaluation order over the complete iterations, sampling as the unbiased expectation over c draws,
    "solved" = reaching the maze's optimal scalar ``thr`` (``vpo_harness.search.solved.TOL``)."""
    from vpo_harness.search.metrics import evolve_at_budgets, evolve_candidates, sampling_at_budgets
    from vpo_harness.search.solved import TOL

    budgets = list(range(1, budget + 1))
    rs = rows(folder)
    if evolve:
        solved, best = evolve_at_budgets(evolve_candidates(rs, ids), ids, budgets)
        return best, solved
    by: dict[str, list[dict[str, Any]]] = {pid: [] for pid in ids}
    for r in rs:
        if r["problem_id"] in by:
            by[r["problem_id"]].append(r)
    scalars = [np.array([float(s) for r in sorted(by[pid], key=lambda r: int(r["chain_index"])) for s in r["scalars"]])
               for pid in ids]
    solved, best = sampling_at_budgets([sc >= thr[pid] - TOL for pid, sc in zip(ids, scalars)], scalars, budgets)
    return best, solved


def curves_of(folders: dict[str, Path], budget: int, ids: list[str], thr: dict[str, float]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per arm: (best, solved) per maze; arms named ``evolve-*`` are read as evolve runs."""
    return {a: per_maze(f, budget, thr, ids, a.startswith("evolve")) for a, f in folders.items()}


def pool(curves: Sequence[dict[str, tuple[np.ndarray, np.ndarray]]]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Several sets' curves as one set (mazes stacked), for the pooled analysis."""
    return {a: (np.concatenate([c[a][0] for c in curves]), np.concatenate([c[a][1] for c in curves]))
            for a in curves[0]}


def summarize(curves: dict[str, tuple[np.ndarray, np.ndarray]], ids: list[str], budget: int, arms: Sequence[str],
              contrasts: Sequence[Contrast]) -> tuple[str, dict[str, Any]]:
    """Markdown table of solved / best at a few budgets per arm, then each contrast at the largest
    budget: mean difference over mazes with its paired 95% bootstrap interval (10,000 resamples, seed
    0) and win/tie/loss, then the mazes solved by one arm only."""
    from vpo_harness.harness.core.metrics import mean_se
    from vpo_harness.reports.compare import paired_bootstrap

    from vpo_harness.reports.tables import format_number, write_table

    marks = sorted({b for b in (1, 3, 10, 30, 60, 100, 200, budget) if b <= budget})
    out: dict[str, Any] = {"budgets": marks, "n_mazes": len(ids), "arms": {}, "contrasts": {}}
    arm_rows = []
    for a in arms:
        best, solved = curves[a]
        s = [mean_se(solved[:, b - 1]) for b in marks]
        v = [mean_se(best[:, b - 1]) for b in marks]
        out["arms"][a] = {"solved": [e.as_dict() for e in s], "best": [e.as_dict() for e in v]}
        arm_rows.append([a, *s, *v])
    lines = [write_table(["arm"] + [f"solved@{b}" for b in marks] + [f"best@{b}" for b in marks], arm_rows,
                         "markdown")]
    lines += ["", f"Paired differences at the largest budget ({budget} candidates per maze), 95% bootstrap "
              "interval over mazes, win/tie/loss:", ""]
    contrast_rows = []
    for label, weights in contrasts:
        cells = []
        for j in (1, 0):  # solved, then best
            d = sum(w * curves[a][j][:, -1] for a, w in weights.items())
            lo, hi = paired_bootstrap(d[None, :])
            w, t, lo_n = int((d > 1e-9).sum()), int((np.abs(d) <= 1e-9).sum()), int((d < -1e-9).sum())
            cells += [f"{format_number(float(np.nanmean(d)), sign=True)} [{format_number(lo[0], sign=True)}, "
                      f"{format_number(hi[0], sign=True)}]", f"{w}/{t}/{lo_n}"]
            out["contrasts"][f"{label}:{'solved' if j else 'best'}"] = {
                "mean": float(np.nanmean(d)), "ci": [float(lo[0]), float(hi[0])], "wtl": [w, t, lo_n]}
        contrast_rows.append([label, *cells])
    lines.append(write_table(["contrast", "solved diff [CI]", "w/t/l", "best diff [CI]", "w/t/l"], contrast_rows,
                             "markdown", align="lllll"))
    only = {}
    for a in arms:
        mine = {pid for i, pid in enumerate(ids) if curves[a][1][i, -1] >= 1 - 1e-9}
        others = {pid for o in arms if o != a for i, pid in enumerate(ids) if curves[o][1][i, -1] >= 1 - 1e-9}
        only[a] = sorted(mine - others)
    out["solved_by_one_arm_only"] = only
    lines += ["", "Mazes solved by one arm only (sampling arms: solved with certainty in the pool): " +
              "; ".join(f"{a}: {', '.join(v) if v else 'none'}" for a, v in only.items())]
    return "\n".join(lines), {**out, "_curves": curves}


def plot(results: dict[str, dict[str, Any]], budget: int, path: Path, arms: Sequence[str],
         style: dict[str, tuple[str, str]]) -> None:
    """Solved (top) and best scalar (bottom) vs candidates, one column per set, every arm in each."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    sets = list(results)
    fig, axes = plt.subplots(2, len(sets), figsize=(5.2 * len(sets), 7.2), squeeze=False)
    xs = np.arange(1, budget + 1)
    for c, name in enumerate(sets):
        curves = results[name]["_curves"]
        for r, (j, label) in enumerate(((1, "solved (fraction of mazes)"), (0, "best task scalar"))):
            ax = axes[r][c]
            for a in arms:
                v = curves[a][j]
                m = np.nanmean(v, axis=0)
                se = np.nanstd(v, axis=0, ddof=1) / np.sqrt(np.sum(~np.isnan(v), axis=0).clip(min=1))
                col, ls = style[a]
                ax.plot(xs, m, color=col, ls=ls, label=a)
                ax.fill_between(xs, m - se, m + se, color=col, alpha=0.12)
            ax.set_xlabel("candidates per maze")
            ax.set_ylabel(label)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_title(f"{name} ({results[name]['n_mazes']} mazes; bands: ±1 s.e.)")
            ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
