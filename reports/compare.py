"""Paired comparison of runs: difference vs the first run per k and metric, with a 95% bootstrap CI.

Problems are the unit of resampling (the same problem is one pair), so the interval is a paired
percentile bootstrap over the problems both runs hold. All resamples of all metrics are one matrix
product: a (B, P) matrix of resample counts times a (P, M) matrix of per-problem differences.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Sequence

import numpy as np

from vpo_harness.harness.core.metrics import DEFAULT_TAUS, Estimate, group_estimate
from vpo_harness.harness.core.seed_groups import unit_label, unit_seed as seed_of_unit
from vpo_harness.reports.constant_metrics import Constant
from vpo_harness.reports.tables import Cell, format_number, latex_escape, legend_for, write_table
from vpo_harness.harness.core.pool_metrics import metric_names as pool_metric_names
from vpo_harness.reports.pools import DEFAULT_STRATEGIES, RunPools, common_budgets, per_problem_metrics, strategies_for

#: config fields that must agree between compared runs (reward mode lives in the task options)
IDENTITY_FIELDS = ("task", "split", "reward_mode", "prompt_style")
TIE_TOL = 1e-9


def identity(run: RunPools) -> dict[str, Any]:
    cfg = run.facts
    opts = cfg.get("task_options") or {}
    info = (cfg.get("task_info") or {}).get("options") or {}
    return {"task": cfg.get("task"), "split": cfg.get("split"), "prompt_style": cfg.get("prompt_style"),
            "reward_mode": opts.get("reward_mode", info.get("reward_mode"))}


def check_comparable(runs: Sequence[RunPools]) -> None:
    """Refuse runs whose task, split, reward mode or prompt style differ, naming every such field."""
    base = identity(runs[0])
    for r in runs[1:]:
        other = identity(r)
        diff = [f for f in IDENTITY_FIELDS if base[f] != other[f]]
        if diff:
            detail = ", ".join(f"{f}: {base[f]!r} vs {other[f]!r}" for f in diff)
            raise ValueError(f"{runs[0].path} and {r.path} are not comparable: {detail} "
                             f"(differing field{'s' if len(diff) > 1 else ''}: {', '.join(diff)})")


def paired_bootstrap(diffs: np.ndarray, resamples: int = 10_000, seed: int = 0,
                     level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of the mean of each row of ``diffs`` (M, P) under resampling of problems.

    NaN entries (a metric undefined on a problem) are left out of that metric's mean in every
    resample. Vectorised: the resamples are a (B, P) count matrix; means are two mat-mats.
    """
    d = np.atleast_2d(np.asarray(diffs, dtype=float))
    m, p = d.shape
    if p == 0:
        return np.full(m, np.nan), np.full(m, np.nan)
    rng = np.random.default_rng(seed)
    valid = ~np.isnan(d)
    vals = np.where(valid, d, 0.0).T  # (P, M)
    has_nan = not valid.all()
    sums = np.empty((resamples, m))
    ns = np.empty((resamples, m)) if has_nan else None
    # resample counts in blocks of rows: a (block, P) count matrix stays in cache, so the bincount
    # and the mat-mat run at memory speed (one 10,000 x 1,000 block is 2-3x slower)
    block = 256
    offsets = (p * np.arange(block, dtype=np.int32))[:, None]
    for s0 in range(0, resamples, block):
        b = min(block, resamples - s0)
        idx = rng.integers(0, p, size=(b, p), dtype=np.int32)
        counts = np.bincount((idx + offsets[:b]).ravel(), minlength=b * p).reshape(b, p).astype(float)
        sums[s0:s0 + b] = counts @ vals
        if ns is not None:
            ns[s0:s0 + b] = counts @ valid.T
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / ns if ns is not None else sums / p
    a = (1.0 - level) / 2.0
    lo, hi = np.full(m, np.nan), np.full(m, np.nan)
    rows = valid.any(axis=1)
    if rows.any():
        q = np.nanquantile if has_nan else np.quantile
        lo[rows], hi[rows] = q(means[:, rows], [a, 1.0 - a], axis=0)
    return lo, hi


@dataclass
class Row:
    """One metric of one run against the baseline (the first run)."""

    metric: str
    k: int | None
    baseline: str
    run: str
    n: int  # problems where the metric is defined for both
    baseline_mean: float
    run_mean: float
    diff: float
    ci_low: float
    ci_high: float
    wins: int
    ties: int
    losses: int
    # standard errors over the n paired problems (sample std / sqrt(n)): of each side's mean and of the
    # mean difference (paired, so usually far below either side's)
    baseline_se: float = float("nan")
    run_se: float = float("nan")
    diff_se: float = float("nan")
    # seed groups (pairs are (problem, seed)): standard errors between the per-seed means, over n_seeds
    baseline_seed_se: float = float("nan")
    run_seed_se: float = float("nan")
    diff_seed_se: float = float("nan")
    n_seeds: int = 1

    def estimate(self, side: str) -> Estimate:
        """``baseline``, ``run`` or ``diff`` as an estimate (mean, s.e. and the between-seed s.e.)."""
        mean = {"baseline": self.baseline_mean, "run": self.run_mean, "diff": self.diff}[side]
        return Estimate(mean, getattr(self, f"{side}_se"), self.n, getattr(self, f"{side}_seed_se"), self.n_seeds)


@dataclass
class Comparison:
    rows: list[Row]
    shared: dict[str, int]  # run label -> problems shared with the baseline
    totals: dict[str, int]  # run label -> problems in the run
    solved_only: dict[str, dict[str, Any]]  # run label -> {criterion, baseline_only, run_only}
    ks: list[int]
    strategies: list[str]
    resamples: int
    seed: int
    #: run label -> seeds as read, for each seed group among the runs (``2 of 3 seeds, partial: ...``)
    groups: dict[str, str] = field(default_factory=dict)
    #: run label -> what its seeds vary ("sampling" or "training"), for each seed group among the runs
    axes: dict[str, str] = field(default_factory=dict)
    #: how the intervals were made: "bootstrap" (pairs resampled) or "training-runs" (training-seed
    #: groups: each training run one draw, :func:`unit_estimate`)
    interval: str = "bootstrap"
    #: the note of metrics left out as constant by construction (:meth:`without_constant`), "" if none
    dropped: str = ""

    @property
    def interval_legend(self) -> str:
        if self.interval == "training-runs":
            return ("95% CI treating each training run as one draw: (training seed x problem) random effects, "
                    "Student t with Satterthwaite df (not pairs as independent draws)")
        return f"95% bootstrap CI ({self.resamples} resamples, seed {self.seed})"

    @property
    def seed_legend(self) -> str:
        """The legend line of the seed groups' ``s±`` (training or sampling seeds)."""
        return legend_for(list(self.axes.values()))

    @property
    def partial(self) -> dict[str, str]:
        """The groups that lack a seed they list, or hold an empty or unfinished one."""
        return {k: v for k, v in self.groups.items() if "partial" in v}

    def notes(self) -> list[str]:
        """One line per partial seed group, and the one about metrics left out, for every output format."""
        return [f"{run}: partial seed group ({label})" for run, label in self.partial.items()] + (
            [self.dropped] if self.dropped else [])

    def without_constant(self, constant: Constant | None) -> "Comparison":
        """The comparison less the rows of metrics ``constant`` drops (a task's 0-by-construction pass
        metrics), its note kept for the tables to print; itself when ``constant`` is None."""
        if constant is None:
            return self
        keep = [r for r in self.rows if not constant.drops(display_name(r.metric, r.k))]
        return replace(self, rows=keep, dropped=constant.note()) if len(keep) < len(self.rows) else self

    def as_dict(self) -> dict[str, Any]:
        return {"rows": [asdict(r) for r in self.rows], "shared_problems": self.shared, "problems": self.totals,
                "solved_only": self.solved_only, "ks": self.ks, "strategies": self.strategies,
                "resamples": self.resamples, "seed": self.seed, "level": 0.95, "seed_groups": self.groups,
                "partial": self.partial, "interval": self.interval, "interval_legend": self.interval_legend}


def _metric_k(name: str) -> tuple[str, int | None]:
    """("best", 4) for best@4, ("selected[majority]", 4) for selected@4[majority], ("pass^", 4) for
    pass^4, ("best_tokens", 1200) for a token budget; a name whose suffix is no integer (cover@0.5)
    is kept whole with k None."""
    if "^" in name and "@" not in name:
        head, _, k = name.partition("^")
        return (f"{head}^", int(k)) if k.isdigit() else (name, None)
    if "@" not in name:
        return name, None
    head, rest = name.split("@", 1)
    k, _, strat = rest.partition("[")
    if not k.isdigit():
        return name, None
    return (f"{head}[{strat}" if strat else head), int(k)


def display_name(metric: str, k: int | None) -> str:
    """The name a table prints: best@4, pass^4, selected@4[majority], best_tokens@1200, cover@0.5."""
    if k is None:
        return metric
    if metric.endswith("^"):
        return f"{metric}{k}"
    head, _, strat = metric.partition("[")
    return f"{head}@{k}" + (f"[{strat}" if strat else "")


def unit_estimate(units: Sequence[str], values: np.ndarray, axis: str | None) -> Estimate:
    """:func:`~vpo_harness.harness.core.metrics.group_estimate` of values over pairing keys
    (:func:`pair_keys`: problem ids, or ``p#seed-s`` labels when a seed group is among the runs)."""
    if not any("#seed-" in u for u in units):
        return group_estimate(values)
    return group_estimate(values, [seed_of_unit(u) for u in units], [u.rsplit("#seed-", 1)[0] for u in units],
                          axis)


def _nan(x: float | None) -> float:
    return float("nan") if x is None else float(x)


def default_metric_names(runs: Sequence[RunPools], ks: Sequence[int], strategies: Sequence[str],
                         taus: Sequence[float], budgets: Sequence[int]) -> list[str]:
    """Every metric compare reports by default, in table order."""
    comps = [r.component_names() for r in runs]
    shared = comps[0] if comps and all(c is not None and c == comps[0] for c in comps) else []
    return ([f"best@{k}" for k in ks] + [f"pass@{k}" for k in ks] + [f"pass^{k}" for k in ks]
            + [f"cover@{t:g}" for t in taus] + [f"best_tokens@{int(round(T))}" for T in budgets]
            + [f"selected@{k}[{s}]" for s in strategies for k in ks]
            + ["diversity", "pareto_fraction", "vpo_objective"] + [f"component:{c}" for c in shared]
            + pool_metric_names())


def default_ks(runs: Sequence[RunPools]) -> list[int]:
    """The ks every run was configured with that fit in every pool (largest pool if none recorded)."""
    cap = min(r.min_pool for r in runs)
    sets = [set(r.ks) for r in runs if r.ks]
    ks = sorted(set.intersection(*sets)) if sets else []
    ks = [k for k in ks if 1 <= k <= cap]
    if not ks and cap >= 1:
        ks = sorted({1 << i for i in range(cap.bit_length()) if 1 << i <= cap} | {cap})
    return ks


def pair_keys(runs: Sequence[RunPools]) -> list[list[str]]:
    """What pairs the entries of the runs: the problem id, or (problem, seed) when a seed group is
    among them (a single run then counts as its own seed)."""
    if not any(r.seeds for r in runs):
        return [list(r.problem_ids) for r in runs]
    axes = {r.seed_axis or "single" for r in runs}
    if "training" in axes and len(axes) > 1:  # (problem, seed) would pair a training seed with a sampling seed
        other = next(r for r in runs if r.seed_axis != "training")
        raise ValueError(f"{other.path}: is not a training-seed group, and the others are (`vpo demo` writes them "
                         "under <out>/seeds/): compare training-seed groups only with each other")
    seed = lambda r: int(r.facts.get("seed") or 0)  # noqa: E731
    return [[unit_label(p, s) for p, s in (r.units or [(p, seed(r)) for p in r.problem_ids])] for r in runs]


def solved_only(a: RunPools, b: RunPools, shared: list[str], keys_a: Sequence[str] | None = None,
                keys_b: Sequence[str] | None = None) -> dict[str, Any]:
    """Problems one side solves and the other does not, on the whole pool (the largest k).

    Solved = some candidate passes; for tasks where no candidate of either run ever passes (Maze:
    a pass is impossible by construction), solved = the pool reaches the best scalar either run
    reaches on that problem. ``keys_a``/``keys_b``: the pairing keys (:func:`pair_keys`)."""
    ia = {p: i for i, p in enumerate(a.problem_ids if keys_a is None else keys_a)}
    ib = {p: i for i, p in enumerate(b.problem_ids if keys_b is None else keys_b)}
    any_pass = any(a.passed[ia[p]].any() or b.passed[ib[p]].any() for p in shared)
    a_only, b_only = [], []
    for p in shared:
        if any_pass:
            sa, sb = bool(a.passed[ia[p]].any()), bool(b.passed[ib[p]].any())
        else:
            ma = a.scalars[ia[p]].max() if a.scalars[ia[p]].size else -np.inf
            mb = b.scalars[ib[p]].max() if b.scalars[ib[p]].size else -np.inf
            top = max(ma, mb)
            sa, sb = ma >= top - TIE_TOL, mb >= top - TIE_TOL
        if sa and not sb:
            a_only.append(p)
        elif sb and not sa:
            b_only.append(p)
    return {"criterion": "pass" if any_pass else "best scalar", "baseline_only": a_only, "run_only": b_only}


def compare_runs(runs: Sequence[RunPools], ks: Sequence[int] | None = None,
                 strategies: Sequence[str] = DEFAULT_STRATEGIES, resamples: int = 10_000, seed: int = 0,
                 metric_names: Sequence[str] | None = None, taus: Sequence[float] = DEFAULT_TAUS,
                 budgets: Sequence[int] | None = None) -> Comparison:
    """Every run against ``runs[0]`` on the problems both hold. ``budgets``: token budgets of the
    compute-matched best (default: :func:`vpo_harness.reports.pools.common_budgets`)."""
    if len(runs) < 2:
        raise ValueError("compare needs at least two runs")
    check_comparable(runs)
    ks = list(ks) if ks else default_ks(runs)
    strategies = strategies_for(runs, strategies)
    obj_seed = runs[0].metric_seed
    budgets = list(common_budgets(runs) if budgets is None else budgets)
    per_run = [per_problem_metrics(r, ks, ["oracle", *strategies], seed, obj_seed, taus, budgets) for r in runs]
    base, base_m = runs[0], per_run[0]
    keys = pair_keys(runs)
    ia = {p: i for i, p in enumerate(keys[0])}
    names = list(metric_names) if metric_names else default_metric_names(runs, ks, strategies, taus, budgets)
    rows: list[Row] = []
    shared_n, solved = {}, {}
    for j, (run, rm) in enumerate(zip(runs[1:], per_run[1:]), 1):
        ib = {p: i for i, p in enumerate(keys[j])}
        shared = [p for p in keys[0] if p in ib]
        shared_n[run.label] = len(shared)
        ia_idx = np.array([ia[p] for p in shared], dtype=int)
        ib_idx = np.array([ib[p] for p in shared], dtype=int)
        a = np.stack([base_m[nm][ia_idx] for nm in names]) if shared else np.zeros((len(names), 0))
        b = np.stack([rm[nm][ib_idx] for nm in names]) if shared else np.zeros((len(names), 0))
        d = b - a
        lo, hi = paired_bootstrap(d, resamples, seed + j)
        axis = "training" if base.seed_axis == "training" and run.seed_axis == "training" else "sampling"
        for i, nm in enumerate(names):
            ok = ~np.isnan(d[i])
            di = d[i][ok]
            metric, k = _metric_k(nm)
            # each side and the difference by the one rule `vpo show` uses too (group_estimate)
            ea, eb, ed = (unit_estimate(shared, np.where(ok, x, np.nan), axis) for x in (a[i], b[i], d[i]))
            ci = (float(lo[i]), float(hi[i]))
            if axis == "training":   # each training run is one draw, in the interval as in the s.e.s
                ci = ed.interval() if ed.defined and ed.stderr == ed.stderr else (float("nan"), float("nan"))
            seeded: dict[str, Any] = {}
            if ed.n_seeds > 1:
                seeded = {"n_seeds": ed.n_seeds, **{f"{side}_seed_se": _nan(e.seed_stderr)
                                                    for side, e in (("baseline", ea), ("run", eb), ("diff", ed))}}
            rows.append(Row(metric, k, base.label, run.label, int(ok.sum()), ea.mean, eb.mean, ed.mean, ci[0], ci[1],
                            int((di > TIE_TOL).sum()), int((np.abs(di) <= TIE_TOL).sum()),
                            int((di < -TIE_TOL).sum()), ea.stderr, eb.stderr, ed.stderr, **seeded))
        solved[run.label] = solved_only(base, run, shared, keys[0], keys[j])
    return Comparison(rows, shared_n, {r.label: len(r.problem_ids) for r in runs}, solved, ks, strategies,
                      resamples, seed, {r.label: r.seeds_label for r in runs if r.seeds},
                      {r.label: r.seed_axis for r in runs if r.seeds},
                      "training-runs" if all(r.seed_axis == "training" for r in runs) else "bootstrap")


# ---------------------------------------------------------------------------------------------------
# output: every format through the one table writer (reports.tables)
def format_table(comp: Comparison) -> str:
    """Terminal table: one line per metric and run (each side and the difference as mean ± s.e., and
    ``s±`` the between-seed s.e. for seed groups), then the problem counts and the one-sided solves."""
    head = ["metric", "k", "run", "n", "baseline", "run mean", "diff", "95% CI", "win/tie/loss"]
    rows = [[display_name(r.metric, r.k), "" if r.k is None else str(r.k), r.run, str(r.n), r.estimate("baseline"),
             r.estimate("run"), Cell(r.estimate("diff"), sign=True),
             f"[{format_number(r.ci_low, sign=True)}, {format_number(r.ci_high, sign=True)}]",
             f"{r.wins}/{r.ties}/{r.losses}"] for r in comp.rows]
    base = comp.rows[0].baseline if comp.rows else "?"
    legend = comp.seed_legend
    seed = "training seed" if "training" in comp.axes.values() else "seed"
    pairs = f"(problem, {seed}) pairs" if any(r.n_seeds > 1 for r in comp.rows) else "shared problems"
    out = [f"baseline: {base}; differences are run - baseline, paired over {pairs}, "
           f"{comp.interval_legend}", *comp.notes(),
           write_table(head, rows, align="l" * 9, seed_legend=legend)]
    for run, n in comp.shared.items():
        note = f"{run}: {n} shared problems (baseline has {comp.totals[base]}, run has {comp.totals[run]})"
        so = comp.solved_only[run]
        out.append(note)
        out.append(f"  solved ({so['criterion']}) only by the baseline ({len(so['baseline_only'])}): "
                   + (", ".join(so["baseline_only"][:20]) + (" ..." if len(so["baseline_only"]) > 20 else "")))
        out.append(f"  solved ({so['criterion']}) only by {run} ({len(so['run_only'])}): "
                   + (", ".join(so["run_only"][:20]) + (" ..." if len(so["run_only"]) > 20 else "")))
    return "\n".join(out)


def to_csv(comp: Comparison) -> str:
    """One row per metric, k and run with every :class:`Row` field (undefined numbers empty)."""
    fields = list(Row.__dataclass_fields__)
    return write_table(fields, [[getattr(r, f) for f in fields] for r in comp.rows], "csv")


def to_json(comp: Comparison) -> str:
    def clean(o: Any) -> Any:
        if isinstance(o, float) and o != o:
            return None
        if isinstance(o, dict):
            return {k: clean(v) for k, v in o.items()}
        if isinstance(o, list):
            return [clean(v) for v in o]
        return o

    return json.dumps(clean(comp.as_dict()), indent=2)


# ---------------------------------------------------------------------------------------------------
# paper tables: mean ± s.e. and the CI in one cell, the better side bold when the CI excludes 0
def _paper_rows(comp: Comparison, nd: int) -> tuple[list[str], list[list[Any]], str]:
    """Header, cells and column alignment shared by the LaTeX and Markdown writers."""
    runs = list(dict.fromkeys(r.run for r in comp.rows))
    base = comp.rows[0].baseline if comp.rows else "baseline"
    run_head = runs[0] if len(runs) == 1 else "run mean"
    head = ["metric"] + (["run"] if len(runs) > 1 else []) + [base, run_head, "difference [95% CI]", "n"]
    out = []
    for r in comp.rows:
        ci = (f" [{format_number(r.ci_low, nd, True)}, {format_number(r.ci_high, nd, True)}]"
              if r.ci_low == r.ci_low else "")
        row: list[Any] = [display_name(r.metric, r.k)] + ([r.run] if len(runs) > 1 else [])
        row += [Cell(r.estimate("baseline"), bold=r.ci_high < 0), Cell(r.estimate("run"), bold=r.ci_low > 0),
                Cell(r.estimate("diff"), sign=True, note=ci), str(r.n)]
        out.append(row)
    first = 2 if len(runs) > 1 else 1
    return head, out, "l" * first + "r" * (len(head) - first)


def to_latex(comp: Comparison, nd: int = 3) -> str:
    """A booktabs tabular (needs \\usepackage{booktabs}): one row per metric and run, each side's
    mean $\\pm$ s.e. over the paired problems, the difference $\\pm$ its paired s.e. and the 95%
    bootstrap CI in one cell; the better side bold where the CI excludes 0 (higher is better)."""
    head, rows, align = _paper_rows(comp, nd)
    note = (f"vpo compare: run - baseline over shared problems; 95% paired bootstrap CI ({comp.resamples} "
            f"resamples, seed {comp.seed}); bold: the CI excludes 0")
    return write_table(head, rows, "latex", nd=nd, align=align, notes=[note, *comp.notes()],
                       seed_legend=comp.seed_legend)


def to_markdown(comp: Comparison, nd: int = 3) -> str:
    """A GitHub/pandoc pipe table with the cells of :func:`to_latex` (± as the character, bold as **)."""
    head, rows, align = _paper_rows(comp, nd)
    note = (f"Run minus baseline over shared problems; mean ± standard error; 95% paired bootstrap CI "
            f"({comp.resamples} resamples, seed {comp.seed}); bold: the CI excludes 0 (higher is better).")
    return write_table(head, rows, "markdown", nd=nd, align=align, notes=[note, *comp.notes()],
                       seed_legend=comp.seed_legend)
