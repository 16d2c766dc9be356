"""selected@k[strategy] curves of runs, for `vpo show` (a table) and `vpo plot --metric selected:NAME`.

Computed from the stored candidates (the answers a deployment would vote on), so they are available
for every run folder, old ones included, without re-running anything.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from vpo_harness.harness.eval.selection import selected_at_k, summarize_selected
from vpo_harness.reports.axes import k_axis
from vpo_harness.reports.pools import RunPools, load_pools, strategies_for
from vpo_harness.reports.tables import Cell, as_estimate, legend_for, write_table


def curves(run: RunPools, strategies: Sequence[str], seed: int = 0,
           ks: Sequence[int] | None = None) -> dict[str, dict[int, dict[str, float]]]:
    """strategy -> k -> {mean, stderr, n, mc_stderr}, for ``ks`` (default: the run's) that fit its pools."""
    ks = [k for k in (run.ks if ks is None else ks) if 1 <= k <= run.min_pool] or [1]
    out: dict[str, dict[int, dict[str, float]]] = {}
    for s in ["oracle", *strategies_for([run], strategies)]:
        out[s] = {k: _estimate(run, *selected_at_k(run.pools(), k, s, seed)) for k in ks}
    return out


def _estimate(run: RunPools, values: np.ndarray, mc_err: np.ndarray) -> dict[str, float]:
    """One selected@k estimate. The mean and s.e. follow the rule of every other metric
    (:func:`~vpo_harness.harness.core.metrics.group_estimate`), so oracle selection (= best@k) prints the
    standard errors best@k prints in `vpo show` and `vpo compare`; a seed group's Monte Carlo error
    combines its seeds' as independent draws."""
    if not run.seeds:
        return summarize_selected(values, mc_err)
    from vpo_harness.harness.core.metrics import group_estimate

    seeds, probs = [u[1] for u in run.units], [u[0] for u in run.units]
    est: dict[str, float] = dict(group_estimate(values, seeds, probs, run.seed_axis).as_dict())
    per_seed = [summarize_selected(values[m], mc_err[m]) for m in
                (np.array([u[1] == s for u in run.units]) for s in run.seeds)]
    est["mc_stderr"] = float(np.sqrt(sum(e["mc_stderr"] ** 2 for e in per_seed)) / len(per_seed))
    return est


def format_selected(paths: Sequence[str | Path], strategies: Sequence[str], seed: int = 0,
                    ks: Sequence[int] | None = None) -> str:
    """Table: one line per run and strategy, one column per k (mean ± standard error over problems;
    Monte Carlo strategies add their simulation error in brackets when it is visible at 3 decimals)."""
    lines: list[list[str]] = []
    ks_all: list[int] = []
    per_run = []
    axes: list[str] = []
    for p in paths:
        run = load_pools(p)
        if not run.problem_ids:
            continue
        axes.append(run.seed_axis)
        cur = curves(run, strategies, seed, ks)
        per_run.append((run.label, cur))
        ks_all = sorted(set(ks_all) | {k for c in cur.values() for k in c})
    if not per_run:
        return "(no candidates to select from)"
    head = ["run", "selected@k"] + [f"k={k}" for k in ks_all]
    for label, cur in per_run:
        for s, by_k in cur.items():
            cells: list[Any] = []
            for k in ks_all:
                e = by_k.get(k)
                if e is None:
                    cells.append("-")
                    continue
                mc = f"[mc {e['mc_stderr']:.3f}]" if e["mc_stderr"] >= 5e-4 else ""
                cells.append(Cell(as_estimate(e), note=mc))
            lines.append([label, s + (" (=best@k)" if s == "oracle" else "")] + cells)
    shown = any(isinstance(c, Cell) and c.note for ln in lines for c in ln)
    return write_table(head, lines, align="l" * len(head), notes=[MC_LEGEND] if shown else [],
                       seed_legend=legend_for(axes))


#: what the ``[mc x]`` beside a selected@k number is, printed under every table that shows one
MC_LEGEND = ("[mc x]: Monte Carlo error: this selected@k is estimated from seeded random draws (k-subsets of "
             "the pool, a vote's tie-breaks), and x is that estimate's own standard error, apart from the ± "
             "over problems")


def plot_selected(paths: Sequence[str | Path], out: str | Path, strategy: str, labels: Sequence[str] | None = None,
                  title: str | None = None, seed: int = 0) -> Path:
    """selected@k[strategy] vs k, one line per run with ±1 standard-error band; best@k of the same run
    dashed in the same colour, so the gap to the oracle is visible."""
    from vpo_harness.reports.plots import _save, plt

    if labels is not None and len(labels) != len(paths):
        raise ValueError(f"--labels has {len(labels)} names for {len(paths)} runs")
    fig, ax = plt.subplots(figsize=(5.5, 4.0), dpi=150)
    from vpo_harness.reports.colours import run_styles

    all_ks: set[int] = set()
    for i, (p, style) in enumerate(zip(paths, run_styles(str(p) for p in paths))):
        colour = style.colour
        run = load_pools(p)
        cur = curves(run, [strategy], seed)
        if strategy not in cur:
            raise ValueError(f"{p}: strategy {strategy!r} needs what this run does not store "
                             "(answers to vote on, or a visible/hidden test split: --task-args visible_tests=half)")
        ks = sorted(cur[strategy])
        all_ks |= set(ks)
        mean = np.array([cur[strategy][k]["mean"] for k in ks])
        se = np.array([cur[strategy][k]["stderr"] for k in ks])
        best = np.array([cur["oracle"][k]["mean"] for k in ks])
        lab = labels[i] if labels else run.label
        ax.plot(ks, mean, marker="o", ms=3, color=colour, label=f"{lab}: selected@k [{strategy}]")
        ax.fill_between(ks, mean - se, mean + se, color=colour, alpha=0.2, lw=0)
        ax.plot(ks, best, ls="--", lw=1, color=colour, label=f"{lab}: best@k (oracle)")
    k_axis(ax, sorted(all_ks))
    ax.set_ylabel("task scalar of the selected candidate")
    ax.set_title(title or f"selected@k [{strategy}] vs best@k")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return _save(fig, out)


__all__ = ["curves", "format_selected", "plot_selected", "k_axis"]
