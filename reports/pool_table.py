"""The VPO authors' pool metrics of runs as a table, for `vpo show --metrics`.

The values per problem come from ``harness.core.pool_metrics`` (the authors' definitions); here they
are averaged over problems as the authors average over prompts, with the standard error over problems
beside each mean, and a seed group's seeds combined by the rule of every other metric of a group
(``metrics.group_estimate``: sampling seeds as the mean of the per-seed means with the between-seed s.e.
beside it, training seeds with each training run one draw).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence


from vpo_harness.harness.core.metrics import Estimate, group_estimate
from vpo_harness.harness.core.pool_metrics import metric_names, per_problem_pool_metrics
from vpo_harness.reports.constant_metrics import Constant
from vpo_harness.reports.pools import RunPools, load_pools
from vpo_harness.reports.tables import legend_for, write_table


def estimates(run: RunPools) -> dict[str, Estimate]:
    """metric name -> mean ± s.e. over the run's problems (over seeds, for a seed group)."""
    per = per_problem_pool_metrics(run.rewards, run.chain_sizes)
    if not run.seeds:
        return {name: group_estimate(v) for name, v in per.items()}
    seeds, probs = [u[1] for u in run.units], [u[0] for u in run.units]
    return {name: group_estimate(v, seeds, probs, run.seed_axis) for name, v in per.items()}


def pool_metrics_json(path: str | Path) -> dict[str, Any]:
    """``{metric: {mean, stderr, n, ...}}`` of one run folder or seed group."""
    return {name: e.as_dict() for name, e in estimates(load_pools(path)).items()}


def format_pool_metrics(paths: Sequence[str | Path], constant: Constant | None = None) -> str:
    """One line per run, one column per metric; a title line says whose definitions these are.
    ``constant``: the metrics it drops are left out (the main table of `vpo show` prints its note)."""
    runs = [load_pools(p) for p in paths]
    names = [n for n in metric_names() if not (constant and constant.drops(n))]
    rows = [[r.path.name + (f" ({r.seeds_label})" if r.seeds else ""), r.task]
            + [estimates(r)[n] for n in names] for r in runs]
    legend = legend_for([r.seed_axis for r in runs if r.seeds])
    return ("the VPO authors' pool metrics (vpo/utils/eval_metrics.py), mean ± s.e. over problems; "
            "solved = every reward component >= 1\n"
            + write_table(["run", "task", *names], rows, align="ll" + "r" * len(names), seed_legend=legend))
