"""Paired comparison of runs: difference vs the first run per k and metric, with a 95% bootstrap CI.

Problems are the unit of resampling (the same problem is one pair), so the interval is a paired
percentile bootstrap over the problems both runs hold. All resamples of all metrics are one matrix
product: a (B, P) matrix of resample counts times a (P, M) matrix of per-problem differences.
"""
from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np

from harness.core.metrics import DEFAULT_TAUS
from reports.pools import DEFAULT_STRATEGIES, RunPools, common_budgets, per_problem_metrics, strategies_for

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

    def as_dict(self) -> dict[str, Any]:
        return {"rows": [asdict(r) for r in self.rows], "shared_problems": self.shared, "problems": self.totals,
                "solved_only": self.solved_only, "ks": self.ks, "strategies": self.strategies,
                "resamples": self.resamples, "seed": self.seed, "level": 0.95}


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


def _se(x: np.ndarray) -> float:
    return float(x.std(ddof=1) / np.sqrt(x.size)) if x.size > 1 else (0.0 if x.size else float("nan"))


def default_metric_names(runs: Sequence[RunPools], ks: Sequence[int], strategies: Sequence[str],
                         taus: Sequence[float], budgets: Sequence[int]) -> list[str]:
    """Every metric compare reports by default, in table order."""
    comps = [r.component_names() for r in runs]
    shared = comps[0] if comps and all(c is not None and c == comps[0] for c in comps) else []
    return ([f"best@{k}" for k in ks] + [f"pass@{k}" for k in ks] + [f"pass^{k}" for k in ks]
            + [f"cover@{t:g}" for t in taus] + [f"best_tokens@{int(round(T))}" for T in budgets]
            + [f"selected@{k}[{s}]" for s in strategies for k in ks]
            + ["diversity", "pareto_fraction", "vpo_objective"] + [f"component:{c}" for c in shared])


def default_ks(runs: Sequence[RunPools]) -> list[int]:
    """The ks every run was configured with that fit in every pool (largest pool if none recorded)."""
    cap = min(r.min_pool for r in runs)
    sets = [set(r.ks) for r in runs if r.ks]
    ks = sorted(set.intersection(*sets)) if sets else []
    ks = [k for k in ks if 1 <= k <= cap]
    if not ks and cap >= 1:
        ks = sorted({1 << i for i in range(cap.bit_length()) if 1 << i <= cap} | {cap})
    return ks


def solved_only(a: RunPools, b: RunPools, shared: list[str]) -> dict[str, Any]:
    """Problems one side solves and the other does not, on the whole pool (the largest k).

    Solved = some candidate passes; for tasks where no candidate of either run ever passes (Maze:
    a pass is impossible by construction), solved = the pool reaches the best scalar either run
    reaches on that problem."""
    ia = {p: i for i, p in enumerate(a.problem_ids)}
    ib = {p: i for i, p in enumerate(b.problem_ids)}
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
    compute-matched best (default: :func:`reports.pools.common_budgets`)."""
    if len(runs) < 2:
        raise ValueError("compare needs at least two runs")
    check_comparable(runs)
    ks = list(ks) if ks else default_ks(runs)
    strategies = strategies_for(runs, strategies)
    obj_seed = runs[0].metric_seed
    budgets = list(common_budgets(runs) if budgets is None else budgets)
    per_run = [per_problem_metrics(r, ks, ["oracle", *strategies], seed, obj_seed, taus, budgets) for r in runs]
    base, base_m = runs[0], per_run[0]
    ia = {p: i for i, p in enumerate(base.problem_ids)}
    names = list(metric_names) if metric_names else default_metric_names(runs, ks, strategies, taus, budgets)
    rows: list[Row] = []
    shared_n, solved = {}, {}
    for j, (run, rm) in enumerate(zip(runs[1:], per_run[1:]), 1):
        ib = {p: i for i, p in enumerate(run.problem_ids)}
        shared = [p for p in base.problem_ids if p in ib]
        shared_n[run.label] = len(shared)
        ia_idx = np.array([ia[p] for p in shared], dtype=int)
        ib_idx = np.array([ib[p] for p in shared], dtype=int)
        a = np.stack([base_m[nm][ia_idx] for nm in names]) if shared else np.zeros((len(names), 0))
        b = np.stack([rm[nm][ib_idx] for nm in names]) if shared else np.zeros((len(names), 0))
        d = b - a
        lo, hi = paired_bootstrap(d, resamples, seed + j)
        for i, nm in enumerate(names):
            ok = ~np.isnan(d[i])
            di = d[i][ok]
            metric, k = _metric_k(nm)
            rows.append(Row(metric, k, base.label, run.label, int(ok.sum()),
                            float(a[i][ok].mean()) if ok.any() else float("nan"),
                            float(b[i][ok].mean()) if ok.any() else float("nan"),
                            float(di.mean()) if ok.any() else float("nan"), float(lo[i]), float(hi[i]),
                            int((di > TIE_TOL).sum()), int((np.abs(di) <= TIE_TOL).sum()),
                            int((di < -TIE_TOL).sum()), _se(a[i][ok]), _se(b[i][ok]), _se(di)))
        solved[run.label] = solved_only(base, run, shared)
    return Comparison(rows, shared_n, {r.label: len(r.problem_ids) for r in runs}, solved, ks, strategies,
                      resamples, seed)


# ---------------------------------------------------------------------------------------------------
# output
def _f(x: float, nd: int = 3, sign: bool = False) -> str:
    if x != x:
        return "-"
    return f"{x:+.{nd}f}" if sign else f"{x:.{nd}f}"


def format_table(comp: Comparison) -> str:
    """Terminal table: one line per metric and run, then the problem counts and the one-sided solves."""
    head = ["metric", "k", "run", "n", "baseline", "run mean", "diff", "95% CI", "win/tie/loss"]
    lines = [[display_name(r.metric, r.k), "" if r.k is None else str(r.k), r.run, str(r.n), _f(r.baseline_mean), _f(r.run_mean),
              _f(r.diff, sign=True), f"[{_f(r.ci_low, sign=True)}, {_f(r.ci_high, sign=True)}]",
              f"{r.wins}/{r.ties}/{r.losses}"] for r in comp.rows]
    widths = [max(len(x) for x in col) for col in zip(head, *lines)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    base = comp.rows[0].baseline if comp.rows else "?"
    out = [f"baseline: {base}; differences are run - baseline, paired over shared problems, "
           f"95% bootstrap CI ({comp.resamples} resamples, seed {comp.seed})", fmt.format(*head)]
    out += [fmt.format(*ln) for ln in lines]
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
    buf = io.StringIO()
    fields = list(Row.__dataclass_fields__)
    w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    for r in comp.rows:
        w.writerow(asdict(r))
    return buf.getvalue()


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
#: stands for ± in the shared cells until a writer renders it (a character no label holds)
_PM = "\x00"


def _pf(x: float, nd: int, sign: bool = False) -> str:
    """:func:`_f` without a "-0.000" from rounding noise."""
    return _f(0.0 if x == x and abs(x) < 0.5 * 10.0 ** -nd else x, nd, sign)


def _paper_rows(comp: Comparison, nd: int) -> tuple[list[str], list[list[tuple[str, bool]]]]:
    """Header and cells (text, bold) shared by the LaTeX and Markdown writers. ± and the interval are
    written as :data:`_PM`, which each writer renders its own way."""
    runs = list(dict.fromkeys(r.run for r in comp.rows))
    base = comp.rows[0].baseline if comp.rows else "baseline"
    run_head = runs[0] if len(runs) == 1 else "run mean"
    head = ["metric"] + (["run"] if len(runs) > 1 else []) + [base, run_head, "difference [95% CI]", "n"]
    out = []
    for r in comp.rows:
        better_run, better_base = r.ci_low > 0, r.ci_high < 0
        cell = lambda m, e, sign=False: (f"{_pf(m, nd, sign)}{_PM}{_pf(e, nd)}" if m == m else "-")  # noqa: E731
        diff = cell(r.diff, r.diff_se, True) + (
            f" [{_pf(r.ci_low, nd, True)}, {_pf(r.ci_high, nd, True)}]" if r.ci_low == r.ci_low else "")
        row = [(display_name(r.metric, r.k), False)] + ([(r.run, False)] if len(runs) > 1 else [])
        row += [(cell(r.baseline_mean, r.baseline_se), better_base), (cell(r.run_mean, r.run_se), better_run),
                (diff, False), (str(r.n), False)]
        out.append(row)
    return head, out


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in str(text))


def to_latex(comp: Comparison, nd: int = 3) -> str:
    """A booktabs tabular (needs \\usepackage{booktabs}): one row per metric and run, each side's
    mean $\\pm$ s.e. over the paired problems, the difference $\\pm$ its paired s.e. and the 95%
    bootstrap CI in one cell; the better side bold where the CI excludes 0 (higher is better)."""
    head, rows = _paper_rows(comp, nd)
    def tex(text: str, bold: bool) -> str:
        body = latex_escape(text).replace(_PM, " $\\pm$ ")
        return f"\\textbf{{{body}}}" if bold else body
    cols = "l" * (2 if head[1] == "run" else 1) + "r" * (len(head) - (2 if head[1] == "run" else 1))
    lines = [f"% vpo compare: run - baseline over shared problems; 95% paired bootstrap CI ({comp.resamples} "
             f"resamples, seed {comp.seed}); bold: the CI excludes 0",
             f"\\begin{{tabular}}{{{cols}}}", "\\toprule", " & ".join(latex_escape(h) for h in head) + " \\\\",
             "\\midrule"]
    lines += [" & ".join(tex(t, b) for t, b in row) + " \\\\" for row in rows]
    lines += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(lines)


def to_markdown(comp: Comparison, nd: int = 3) -> str:
    """A GitHub/pandoc pipe table with the cells of :func:`to_latex` (± as the character, bold as **)."""
    head, rows = _paper_rows(comp, nd)
    def md(text: str, bold: bool) -> str:
        body = text.replace("|", "\\|").replace(_PM, " ± ")
        return f"**{body}**" if bold and body != "-" else body
    first = 2 if head[1] == "run" else 1
    lines = ["| " + " | ".join(h.replace("|", "\\|") for h in head) + " |",
             "|" + "|".join(":---" if i < first else "---:" for i in range(len(head))) + "|"]
    lines += ["| " + " | ".join(md(t, b) for t, b in row) + " |" for row in rows]
    lines.append("")
    lines.append(f"Run minus baseline over shared problems; mean ± standard error; 95% paired bootstrap CI "
                 f"({comp.resamples} resamples, seed {comp.seed}); bold: the CI excludes 0 (higher is better).")
    return "\n".join(lines)
