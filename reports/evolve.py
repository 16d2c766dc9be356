"""Evolve runs read as a search, not as a pool of independent samples.

A search's candidates depend on each other (a child is written from its parent), so best@k over the
trajectory estimates nothing. What an evolve run measures is the search's own curve: at a budget of
c candidates per problem, was the problem solved by one of the first c candidates, and how good was
the best of them. Its matching reference is plain sampling of the same model at the same budget
(``RUN/baseline``, a `vpo run` folder): the unbiased chance that c independent samples hold a
solution, and the unbiased best@c of the task scalar. Everything here is computed from the stored
rows of both folders, so a results.json written by an older version (or cut off) plays no part.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from vpo_harness.harness.core.metrics import mean_se
from vpo_harness.harness.core.results import is_evolve_run, run_kind
from vpo_harness.harness.core.store import CONFIG, RESULTS, RunStore, RunStoreError, latest_rows
from vpo_harness.reports.compare import TIE_TOL, Comparison, Row, paired_bootstrap
from vpo_harness.reports.tables import as_estimate, write_table
from vpo_harness.search.metrics import (candidate_budgets, evolve_at_budgets, evolve_candidates, evolve_rewards,
                                        hypervolume_at_budgets, sampling_at_budgets)

BASELINE = "baseline"
#: identity fields two evolve runs must share to be compared (as for sampling runs)
SAME = ("task", "split", "reward_mode", "prompt_style")


@dataclass
class Baseline:
    """The plain-sampling pools of an evolve run's ``baseline/`` folder, per problem."""

    path: Path
    solved: dict[str, np.ndarray]  # problem -> 0/1 flags of its samples
    scalars: dict[str, np.ndarray]
    n_errors: int = 0
    rewards: dict[str, np.ndarray] = field(default_factory=dict)  # problem -> (n, d) vectors in chain order


@dataclass
class EvolveRun:
    """One evolve folder: its settings, each problem's candidates in evaluation order, its baseline."""

    path: Path
    facts: dict[str, Any]
    problem_ids: list[str]
    candidates: dict[str, tuple[np.ndarray, np.ndarray]]  # problem -> (scalars, solved) in order
    budget: int  # candidates per problem the search evaluates when finished
    solved_definition: str
    baseline: Baseline | None
    label: str = ""
    rewards: dict[str, np.ndarray] = field(default_factory=dict)  # problem -> (n, d) vectors in evaluation order
    _values: dict[tuple, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict, repr=False)

    @property
    def partial(self) -> bool:
        """Some problem has fewer candidates stored than the budget (still running, or interrupted)."""
        return any(self.candidates.get(p, (np.zeros(0),))[0].size < self.budget for p in self.problem_ids)

    def budgets(self, wanted: Sequence[int] | None = None) -> list[int]:
        return [c for c in wanted if 1 <= c <= self.budget] if wanted else candidate_budgets(self.budget)

    def search_values(self, budgets: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        key = ("search", tuple(budgets))
        if key not in self._values:
            self._values[key] = evolve_at_budgets(self.candidates, self.problem_ids, budgets)
        return self._values[key]

    def baseline_values(self, budgets: Sequence[int]) -> tuple[np.ndarray, np.ndarray] | None:
        if self.baseline is None:
            return None
        key = ("baseline", tuple(budgets))
        if key not in self._values:
            b = self.baseline
            self._values[key] = sampling_at_budgets([b.solved.get(p, np.zeros(0)) for p in self.problem_ids],
                                                    [b.scalars.get(p, np.zeros(0)) for p in self.problem_ids],
                                                    budgets)
        return self._values[key]


def _facts(config: dict[str, Any], results: dict[str, Any] | None) -> dict[str, Any]:
    """Settings of an evolve folder from its config.json (nested identity, or the flat record of
    early versions), filling gaps from results.json."""
    ident = config.get("identity") if isinstance(config.get("identity"), dict) else None
    res = results or {}
    if ident is not None:
        task, model = ident.get("task") or {}, ident.get("model") or {}
        samp, evo = ident.get("sampling") or {}, ident.get("evolve") or {}
        opts = task.get("options") or {}
        info = (ident.get("task_info") or {}).get("options") or {}
        out = {"task": task.get("name"), "split": task.get("split"), "model": model.get("spec"),
               "m": samp.get("m"), "iterations": evo.get("iterations"), "prompt_mode": evo.get("prompt_mode"),
               "prompt_style": task.get("prompt_style"), "reward_mode": opts.get("reward_mode", info.get("reward_mode")),
               "problem_ids": (ident.get("problems") or {}).get("ids"), "task_options": opts,
               "data_path": task.get("data_path"), "limit": task.get("limit"), "problems": evo.get("problems")}
    else:
        out = {k: config.get(k) for k in ("task", "split", "model", "m", "iterations", "prompt_mode", "prompt_style")}
        out["task_options"] = config.get("task_options") or {}
        out["reward_mode"] = out["task_options"].get("reward_mode")
    for k in ("task", "split", "model", "m", "iterations", "prompt_mode"):
        if out.get(k) is None and res.get(k) is not None:
            out[k] = res.get(k)
    return out


def _int_field(value: Any, path: Path, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise RunStoreError(f"{path}: field {name!r}: expected an integer, got {value!r}")
    return value


def _thresholds(folder: Path, facts: dict[str, Any], results: dict[str, Any] | None,
                ids: list[str]) -> dict[str, float] | None:
    """Per-problem target scalar for tasks where "solved" is not "passed" (Maze): recorded in
    results.json (a property of the problems, valid even when the metrics there are stale), else
    found again from the task's problems."""
    from vpo_harness.search.solved import thresholds

    thr = (results or {}).get("thresholds")
    if isinstance(thr, dict) and all(p in thr for p in ids):
        return {p: float(thr[p]) for p in ids}
    if facts.get("task") != "maze":
        return None
    from vpo_harness.benchmarks import get_task

    task = get_task("maze", **(facts.get("task_options") or {}))
    probs = task.load(facts.get("split") or "test", path=facts.get("data_path"))
    by_id = {p.id: p for p in probs}
    missing = [p for p in ids if p not in by_id]
    if missing:
        raise RunStoreError(f"{folder}: problems {', '.join(missing[:3])} are not in the task's "
                            f"{facts.get('split')!r} split, so their solved threshold cannot be found")
    return thresholds(task, [by_id[p] for p in ids])


def _baseline(folder: Path, ids: list[str], thr: dict[str, float] | None) -> Baseline | None:
    from vpo_harness.search.solved import TOL

    bfolder = folder / BASELINE
    if not (bfolder / CONFIG).is_file():
        return None
    solved: dict[str, list[bool]] = {p: [] for p in ids}
    scalars: dict[str, list[float]] = {p: [] for p in ids}
    rewards: dict[str, list[list[float]]] = {p: [] for p in ids}
    n_errors = 0
    for r in sorted(latest_rows(bfolder), key=lambda r: (str(r["problem_id"]), int(r["chain_index"]))):
        pid = r["problem_id"]
        if pid not in solved:
            continue
        if r.get("error"):
            n_errors += 1
            continue
        for s, ok in zip(r.get("scalars") or [], r.get("passed") or []):
            scalars[pid].append(float(s))
            solved[pid].append(float(s) >= thr[pid] - TOL if thr is not None else bool(ok))
        rewards[pid] += list(r.get("rewards") or [])
    return Baseline(bfolder, {p: np.asarray(v, dtype=float) for p, v in solved.items()},
                    {p: np.asarray(v, dtype=float) for p, v in scalars.items()}, n_errors,
                    {p: np.asarray(v, dtype=float) if v else np.zeros((0, 0)) for p, v in rewards.items()})


def load_evolve(folder: str | Path, label: str | None = None) -> EvolveRun:
    """An evolve folder from its config.json and rows (and its baseline's rows)."""
    import json

    folder = Path(folder)
    if not (folder / CONFIG).is_file():
        raise RunStoreError(f"{folder}: not a run folder (no {CONFIG})")
    if not is_evolve_run(folder):
        raise ValueError(f"{folder}: not an evolve run (config.json has no kind 'evolve')")
    config = RunStore(folder).read_config()
    results = None
    if (folder / RESULTS).is_file():
        try:
            results = json.loads((folder / RESULTS).read_text(encoding="utf-8"))
        except ValueError as exc:
            raise RunStoreError(f"{folder / RESULTS}: not valid JSON ({exc})") from exc
    facts = _facts(config, results if isinstance(results, dict) else None)
    rows = latest_rows(folder)
    ids = facts.get("problem_ids") or list(dict.fromkeys(r["problem_id"] for r in rows))
    iterations = _int_field(facts.get("iterations"), folder / CONFIG, "iterations")
    m = _int_field(facts.get("m"), folder / CONFIG, "m")
    cands = evolve_candidates(rows, ids, iterations)
    if iterations is None:  # an early flat record: what the rows hold is the budget
        budget = max((c[0].size for c in cands.values()), default=0)
    else:
        budget = (iterations + 1) * (m or 1)
    thr = _thresholds(folder, facts, results if isinstance(results, dict) else None, ids)
    defn = "optimal scalar (exact maze search)" if thr is not None else "passed (every component 1)"
    return EvolveRun(folder, facts, list(ids), cands, budget, defn, _baseline(folder, list(ids), thr),
                     label or folder.name, evolve_rewards(rows, ids, iterations))


def require_candidates(run: EvolveRun, verb: str) -> EvolveRun:
    """One line instead of a table or figure of dashes when a search has evaluated nothing yet."""
    if not any(c[0].size for c in run.candidates.values()):
        raise ValueError(f"{run.path}: samples.jsonl holds no evaluated candidate yet (nothing searched): "
                         f"nothing to {verb}")
    return run


# ---------------------------------------------------------------------------------------------------
# the search's own table
def budget_table(run: EvolveRun, budgets: Sequence[int] | None = None) -> list[dict[str, Any]]:
    """One row per candidate budget: solved and best scalar of the search and of plain sampling,
    each as mean, standard error and problems counted."""
    bs = run.budgets(budgets)
    solved, best = run.search_values(bs)
    base = run.baseline_values(bs)
    out = []
    for j, c in enumerate(bs):
        row = {"candidates": c, "solved": mean_se(solved[:, j]).as_dict(), "best": mean_se(best[:, j]).as_dict()}
        if base is not None:
            row["baseline_solved"] = mean_se(base[0][:, j]).as_dict()
            row["baseline_best"] = mean_se(base[1][:, j]).as_dict()
        out.append(row)
    return out


def format_budget_table(run: EvolveRun, budgets: Sequence[int] | None = None) -> str:
    f = run.facts
    n_done = sum(run.candidates.get(p, (np.zeros(0),))[0].size >= run.budget for p in run.problem_ids)
    head = (f"{run.label}{' (partial)' if run.partial else ''}: evolve on {f.get('task')} "
            f"{f.get('split') or ''}, {f.get('model')}, prompt {f.get('prompt_mode')}, m={f.get('m')}, "
            f"{f.get('iterations')} iterations = {run.budget} candidates per problem; "
            f"{len(run.problem_ids)} problems ({n_done} finished); solved = {run.solved_definition}")
    cols = ["candidates", "solved (evolve)", "solved (sampling)", "best (evolve)", "best (sampling)"]
    cell = lambda e: as_estimate(e) if e else "-"  # noqa: E731
    lines = [[str(r["candidates"]), cell(r["solved"]), cell(r.get("baseline_solved")), cell(r["best"]),
              cell(r.get("baseline_best"))] for r in budget_table(run, budgets)]
    if run.baseline is not None:
        note = (f"sampling: plain sampling of the same model at the same budget ({run.baseline.path}); "
                "mean ± s.e. over problems; best = best task scalar among the candidates")
    else:
        note = (f"sampling: - ({run.path / BASELINE} missing: re-run the evolve command without --no-baseline "
                "to compare against plain sampling at the same budget)")
    return "\n".join([head, write_table(cols, lines, align="l" * len(cols)), note])


# ---------------------------------------------------------------------------------------------------
# paired comparisons
def _row(metric: str, c: int, base_label: str, run_label: str, a: np.ndarray, b: np.ndarray,
         lo: float, hi: float) -> Row:
    ok = ~(np.isnan(a) | np.isnan(b))
    d = (b - a)[ok]
    nan = float("nan")
    return Row(metric=metric, k=c, baseline=base_label, run=run_label, n=int(ok.sum()),
               baseline_mean=float(a[ok].mean()) if ok.any() else nan,
               run_mean=float(b[ok].mean()) if ok.any() else nan, diff=float(d.mean()) if ok.any() else nan,
               ci_low=float(lo), ci_high=float(hi), wins=int((d > TIE_TOL).sum()),
               ties=int((np.abs(d) <= TIE_TOL).sum()), losses=int((d < -TIE_TOL).sum()))


def _paired(metric_values: list[tuple[str, int, np.ndarray, np.ndarray]], base_label: str, run_label: str,
            resamples: int, seed: int) -> list[Row]:
    """Rows of paired differences (b - a per problem) with one bootstrap over all metrics at once."""
    if not metric_values:
        return []
    diffs = np.stack([b - a for _, _, a, b in metric_values])
    lo, hi = paired_bootstrap(diffs, resamples, seed)
    return [_row(m, c, base_label, run_label, a, b, lo[i], hi[i]) for i, (m, c, a, b) in enumerate(metric_values)]


def _check_same(runs: Sequence[EvolveRun]) -> None:
    base = runs[0]
    for r in runs[1:]:
        diff = [k for k in SAME if base.facts.get(k) != r.facts.get(k)]
        if diff:
            detail = ", ".join(f"{k}: {base.facts.get(k)!r} vs {r.facts.get(k)!r}" for k in diff)
            raise ValueError(f"{base.path} and {r.path} are not comparable: {detail} "
                             f"(differing field{'s' if len(diff) > 1 else ''}: {', '.join(diff)})")


def _solved_only(a: np.ndarray, b: np.ndarray, ids: list[str]) -> dict[str, Any]:
    return {"criterion": "solved within the budget",
            "baseline_only": [p for p, x, y in zip(ids, a, b) if x == 1 and y == 0],
            "run_only": [p for p, x, y in zip(ids, a, b) if y == 1 and x == 0]}


def compare_evolve(runs: Sequence[EvolveRun], budgets: Sequence[int] | None = None, resamples: int = 10_000,
                   seed: int = 0) -> Comparison:
    """Every evolve run against ``runs[0]``: paired differences over shared problems of solved and of
    best scalar at each candidate budget both runs reach, 95% bootstrap CI, win/tie/loss."""
    if len(runs) < 2:
        raise ValueError("compare needs at least two runs")
    for r in runs:
        require_candidates(r, "compare")
    _check_same(runs)
    cap = min(r.budget for r in runs)
    bs = [c for c in budgets if 1 <= c <= cap] if budgets else candidate_budgets(cap)
    if not bs:
        raise ValueError(f"--k: none of {list(budgets or [])} is a budget every run reaches (1..{cap} candidates)")
    base = runs[0]
    rows: list[Row] = []
    shared_n, solved_only = {}, {}
    for j, run in enumerate(runs[1:], 1):
        shared = [p for p in base.problem_ids if p in set(run.problem_ids)]
        shared_n[run.label] = len(shared)
        a_s, a_b = (x[[base.problem_ids.index(p) for p in shared]] for x in base.search_values(bs))
        b_s, b_b = (x[[run.problem_ids.index(p) for p in shared]] for x in run.search_values(bs))
        vals = [("solved", c, a_s[:, i], b_s[:, i]) for i, c in enumerate(bs)] + \
               [("best", c, a_b[:, i], b_b[:, i]) for i, c in enumerate(bs)]
        rows += _paired(vals, base.label, run.label, resamples, seed + j)
        solved_only[run.label] = _solved_only(a_s[:, -1], b_s[:, -1], shared)
    return Comparison(rows, shared_n, {r.label: len(r.problem_ids) for r in runs}, solved_only, bs, [],
                      resamples, seed)


def compare_with_baseline(run: EvolveRun, budgets: Sequence[int] | None = None, resamples: int = 10_000,
                          seed: int = 0) -> Comparison:
    """The search minus plain sampling of the same model at the same budget (its ``baseline/``),
    paired over problems: the experiment an evolve run exists for."""
    if run.baseline is None:
        raise ValueError(f"{run.path}: no {BASELINE}/ folder (re-run the evolve command without --no-baseline)")
    require_candidates(run, "compare")
    if not any(v.size for v in run.baseline.scalars.values()):
        raise ValueError(f"{run.baseline.path}: no scored sample yet: nothing to compare")
    bs = run.budgets(budgets)
    if not bs:
        raise ValueError(f"--k: none of {list(budgets or [])} is within the run's 1..{run.budget} candidates")
    s_s, s_b = run.search_values(bs)
    b_s, b_b = run.baseline_values(bs)  # type: ignore[misc]
    label = f"{run.label}/{BASELINE}"
    vals = [("solved", c, b_s[:, i], s_s[:, i]) for i, c in enumerate(bs)] + \
           [("best", c, b_b[:, i], s_b[:, i]) for i, c in enumerate(bs)]
    rows = _paired(vals, label, run.label, resamples, seed + 1)
    n = len(run.problem_ids)
    return Comparison(rows, {run.label: n}, {label: n, run.label: n},
                      {run.label: _solved_only(np.round(b_s[:, -1]), s_s[:, -1], run.problem_ids)}, bs, [],
                      resamples, seed)


def format_comparison(comp: Comparison) -> str:
    from vpo_harness.reports.compare import format_table

    return ("evolve runs: k = candidates evaluated per problem; solved = solved by one of the first k "
            "(plain sampling: unbiased chance that k samples hold a solution); best = best task scalar among "
            "them (plain sampling: unbiased best@k)\n" + format_table(comp))


def refuse_mixed(paths: Sequence[str | Path], verb: str) -> None:
    """One line refusing evolve runs next to sampling runs, naming the matching comparison."""
    kinds = {Path(p): run_kind(p) for p in paths}
    evo = [p for p, k in kinds.items() if k == "evolve"]
    samp = [p for p, k in kinds.items() if k != "evolve"]
    if not evo or not samp:
        return
    e, s = evo[0], samp[0]
    has = (e / BASELINE / CONFIG).is_file()
    if has and s.resolve() == (e / BASELINE).resolve():
        raise ValueError(f"{s} is the plain-sampling baseline of the evolve run {e}: compare the two alone "
                         f"(vpo compare {s} {e}) for the search minus sampling at each candidate budget")
    hint = (f"{verb} {s} with {e / BASELINE} (plain sampling of the evolve run's model at the same candidate "
            f"budget) instead" if has else
            f"{e} has no {BASELINE}/ folder to {verb} {s} with: re-run its vpo evolve command without --no-baseline")
    raise ValueError(f"{e} is an evolve run and {s} a sampling run: a search's candidates are not independent "
                     f"samples, so their best@k do not compare; {hint}")


def own_baseline_pair(paths: Sequence[str | Path]) -> Path | None:
    """The evolve folder when ``paths`` are exactly an evolve run's ``baseline/`` and that run."""
    if len(paths) != 2:
        return None
    a, b = (Path(p).resolve() for p in paths)
    if is_evolve_run(b) and a == b / BASELINE:
        return Path(paths[1])
    return None


# ---------------------------------------------------------------------------------------------------
# figures
def curves(run: EvolveRun) -> dict[str, dict[str, Sequence[float]]]:
    """Mean and standard error at every budget 1..budget (for figures); baseline curves when present."""
    xs = list(range(1, run.budget + 1))
    out: dict[str, dict[str, Sequence[float]]] = {}  # x: the budgets (ints); mean, stderr: floats
    parts = [("evolve", run.search_values(xs))]
    base = run.baseline_values(xs)
    if base is not None:
        parts.append(("sampling", base))
    for name, (solved, best) in parts:
        for metric, vals in (("solved", solved), ("best", best)):
            est = [mean_se(vals[:, j]) for j in range(len(xs))]
            out[f"{name}_{metric}"] = {"x": xs, "mean": [e.mean for e in est], "stderr": [e.stderr for e in est]}
    return out


def hypervolume_curves(run: EvolveRun) -> dict[str, dict[str, Sequence[float]]]:
    """Mean and standard error over problems of the hypervolume of the first c reward vectors
    (:func:`~vpo_harness.search.metrics.hypervolume_at_budgets`), at the table's budgets (powers of
    two and the whole budget: each point is an exact hypervolume per problem), for the search and,
    when present, its plain-sampling baseline (the first c samples in chain order: independent draws)."""
    xs = candidate_budgets(run.budget)
    parts = [("evolve", run.rewards)] + ([("sampling", run.baseline.rewards)] if run.baseline is not None else [])
    out: dict[str, dict[str, Sequence[float]]] = {}  # x: the budgets (ints); mean, stderr: floats
    for name, vectors in parts:
        vals = hypervolume_at_budgets(vectors, run.problem_ids, xs)
        est = [mean_se(vals[:, j]) for j in range(len(xs))]
        out[name] = {"x": xs, "mean": [e.mean for e in est], "stderr": [e.stderr for e in est]}
    return out


def draw_hypervolume(ax: Any, runs: Sequence[EvolveRun], colours: Sequence[str] | None = None) -> None:
    """Hypervolume of the reward vectors found against candidates: the search solid with markers,
    plain sampling of the same model dashed, one colour per run, bands ±1 standard error over problems."""
    from vpo_harness.reports.colours import run_styles
    from vpo_harness.search.metrics import HV_REF

    colours = list(colours) if colours is not None else [s.colour for s in run_styles(str(r.path) for r in runs)]
    for run, color in zip(runs, colours):
        tag = " (partial)" if run.partial else ""
        for name, c in hypervolume_curves(run).items():
            x, m, s = (np.asarray(c[k], dtype=float) for k in ("x", "mean", "stderr"))
            ok = ~np.isnan(m)
            if not ok.any():
                continue
            style = "-o" if name == "evolve" else "--s"
            lab = f"{run.label}{tag}: {'evolve' if name == 'evolve' else 'plain sampling'}"
            ax.plot(x[ok], m[ok], style, color=color, lw=1.6, ms=3.5, label=lab)
            ax.fill_between(x[ok], (m - np.nan_to_num(s))[ok], (m + np.nan_to_num(s))[ok], color=color,
                            alpha=0.15 if name == "evolve" else 0.08, lw=0)
    integer_axis(ax, max((r.budget for r in runs), default=1))
    ax.set_xlabel("candidates evaluated per problem")
    ax.set_ylabel("hypervolume of the reward vectors (mean over problems)")
    ax.set_title(f"front found: hypervolume, reference {HV_REF:g} on every component", fontsize=9)
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)


def integer_axis(ax: Any, xmax: int) -> None:
    """Candidate counts are whole numbers: integer ticks only, starting at 1."""
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
    ax.set_xlim(0.5, max(1, xmax) + 0.5)


def draw(axes: Sequence[Any], runs: Sequence[EvolveRun], colours: Sequence[str] | None = None) -> None:
    """Solved (left) and best task scalar (right) vs candidates: the search solid, plain sampling of
    the same model dashed, one colour per run (``colours``, else by position: reports/colours.py),
    bands ±1 standard error over problems; a panel at 0 throughout gets the 0..1 axis and a note."""
    from vpo_harness.reports.axes import mark_all_zero
    from vpo_harness.reports.colours import run_styles

    colours = list(colours) if colours is not None else [s.colour for s in run_styles(str(r.path) for r in runs)]
    for run, color in zip(runs, colours):
        cur = curves(run)
        tag = " (partial)" if run.partial else ""
        for ax, metric in zip(axes, ("solved", "best")):
            for name, style, alpha in (("evolve", "-", 0.18), ("sampling", "--", 0.1)):
                c = cur.get(f"{name}_{metric}")
                if c is None:
                    continue
                x, m, s = (np.asarray(c[k], dtype=float) for k in ("x", "mean", "stderr"))
                ok = ~np.isnan(m)
                if not ok.any():
                    continue
                lab = f"{run.label}{tag}: {'evolve' if name == 'evolve' else 'plain sampling'}"
                ax.plot(x[ok], m[ok], style, color=color, lw=1.6, label=lab)
                ax.fill_between(x[ok], (m - np.nan_to_num(s))[ok], (m + np.nan_to_num(s))[ok], color=color,
                                alpha=alpha, lw=0)
    xmax = max((r.budget for r in runs), default=1)
    for ax, ylab in zip(axes, ("fraction of problems solved", "best task scalar (mean over problems)")):
        integer_axis(ax, xmax)
        ax.set_xlabel("candidates evaluated per problem")
        ax.set_ylabel(ylab)
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
        mark_all_zero(ax)
    axes[0].set_title(f"solved = {runs[0].solved_definition}" if runs else "solved", fontsize=9)
    axes[1].set_title("best task scalar found", fontsize=9)
