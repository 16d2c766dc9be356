"""`vpo report`: one self-contained HTML file comparing runs, for a reader with no network.

Figures are inline base64 PNGs, the data behind the tables is an inline JSON block, and the only
script is inline (table sorting, and a hook that writes any script error into the page, which the
browser test reads back). Nothing is fetched: the file opens from a laptop offline or from a
paper's supplementary material.
"""
from __future__ import annotations

import base64
import datetime as _dt
import html
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from vpo_harness.harness.core.metrics import group_estimate
from vpo_harness.harness.core.results import is_evolve_run
from vpo_harness.reports.compare import Comparison, compare_runs, default_ks, display_name
from vpo_harness.reports.pools import DEFAULT_STRATEGIES, RunPools, load_pools, per_problem_metrics, strategies_for
from vpo_harness.reports.axes import k_axis, mark_all_zero
from vpo_harness.reports.colours import run_styles
from vpo_harness.reports.tables import SEED_LEGEND, format_estimate, format_number

CURVE_METRICS = ("best", "pass")


# ---------------------------------------------------------------------------------------------------
# data
@dataclass
class RunView:
    """A run as the report shows it: its pools, label and per-problem metrics over its own ks."""

    pools: RunPools
    label: str
    ks: list[int]
    strategies: list[str]
    per_problem: dict[str, np.ndarray]
    #: the run's colour in every figure of the report (reports/colours.py)
    colour: str = "C0"

    def estimate(self, name: str) -> dict[str, float]:
        """Mean and s.e. over problems; for a seed group, as `vpo show` reads one: the mean over the
        seeds of each seed's mean, with the within-run and the between-seed standard errors (a
        training-seed group: the s.e. that treats each training run as one draw)."""
        values = self.per_problem.get(name, np.array([np.nan]))
        if not self.pools.seeds or len(self.pools.units) != len(values):
            return group_estimate(values).as_dict()
        return group_estimate(values, [s for _, s in self.pools.units], [p for p, _ in self.pools.units],
                              self.pools.seed_axis).as_dict()

    @property
    def title(self) -> str:
        """The label and, for a seed group, its seeds as read (``group (2 of 3 seeds, partial: ...)``)."""
        return f"{self.label} ({self.pools.seeds_label})" if self.pools.seeds else self.label


def _with_rows(pools: RunPools) -> RunPools:
    """A run the report can read: one with scored candidates (an empty or all-failed run is one line)."""
    if not pools.problem_ids:
        raise ValueError(f"{pools.path}: samples.jsonl holds no rows yet (nothing sampled): nothing to report")
    if not any(s.size for s in pools.scalars):
        raise ValueError(f"{pools.path}: every chain failed ({pools.n_errors} error rows, no scored candidate): "
                         "nothing to report; re-run with --retry-errors")
    empty = [p for p, s in zip(pools.problem_ids, pools.scalars) if not s.size]
    if empty:
        raise ValueError(f"{pools.path}: problem {empty[0]} has no scored candidate (every chain failed"
                         f"{f'; {len(empty)} such problems' if len(empty) > 1 else ''}), so no k fits every "
                         "pool; re-run with --retry-errors")
    return pools


def _view(pools: RunPools, label: str, strategies: Sequence[str], seed: int, colour: str = "C0") -> RunView:
    ks = [k for k in (pools.ks or default_ks([pools])) if 1 <= k <= pools.min_pool] or default_ks([pools])
    strats = strategies_for([pools], strategies)
    per = per_problem_metrics(pools, ks, ["oracle", *strats], seed, pools.metric_seed)
    return RunView(pools, label, ks, strats, per, colour)


def choose_problems(views: Sequence[RunView], n: int) -> tuple[list[str], str]:
    """Problems with the largest VPO-minus-GRPO best@k gap (largest shared k); without a VPO/GRPO
    pair, the largest gap between the second and the first run."""
    def find(word: str) -> RunView | None:
        for v in views:
            if word in f"{v.label} {v.pools.facts.get('model') or ''}".lower():
                return v
        return None

    a, b = find("vpo"), find("grpo")
    if a is None or b is None or a is b:
        if len(views) < 2:
            pids = views[0].pools.problem_ids[:n]
            return pids, "the first problems of the run"
        a, b = views[1], views[0]
    k = max(set(a.ks) & set(b.ks) or {1})
    ia = {p: i for i, p in enumerate(a.pools.problem_ids)}
    ib = {p: i for i, p in enumerate(b.pools.problem_ids)}
    gaps = []
    for p in a.pools.problem_ids:
        if p in ib:
            g = a.per_problem[f"best@{k}"][ia[p]] - b.per_problem[f"best@{k}"][ib[p]]
            if g == g:
                gaps.append((-g, p))
    gaps.sort()
    return [p for _, p in gaps[:n]], f"largest best@{k} gap {a.label} minus {b.label}"


# ---------------------------------------------------------------------------------------------------
# figures
#: report figures are shown ~1250 px wide: fonts set for a 5-inch panel are scaled up by this much
FONT_SCALE = 1.3
#: label of the shaded bands in every legend of the report
BAND_LABEL = "band: ±1 standard error"


def _polish(fig: Any) -> None:
    """Readability fixes every report figure gets: larger fonts; a panel whose values are all 0 on a
    0..1 axis (autoscaling gave -0.04..0.04 around nothing) with a note saying so; whole-number ticks
    on linear candidate and iteration axes; the shaded band named in each legend."""
    from matplotlib.collections import PolyCollection
    from matplotlib.patches import Patch
    from matplotlib.text import Text
    from matplotlib.ticker import MaxNLocator

    for t in fig.findobj(Text):
        t.set_fontsize(max(t.get_fontsize() * FONT_SCALE, 9.5))
    for ax in fig.axes:
        if not ax.get_visible() or not ax.axison:
            continue
        if not any("for every run" in t.get_text() for t in ax.texts):
            mark_all_zero(ax, fontsize=11)
        title = ax.title
        width_pt = ax.get_position().width * fig.get_figwidth() * 72
        per_line = max(12, int(width_pt / (0.6 * title.get_fontsize())))
        if title.get_text() and max(len(x) for x in title.get_text().split("\n")) > per_line:
            import textwrap  # a scaled-up title wider than its panel would run into the next one

            title.set_text("\n".join(textwrap.fill(x, per_line) for x in title.get_text().split("\n")))
        xl = ax.get_xlabel()
        if ax.get_xscale() == "linear" and ("candidates" in xl or "iteration" in xl):
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        leg = ax.get_legend()
        if leg is not None and any(isinstance(c, PolyCollection) for c in ax.collections):
            handles, labels = ax.get_legend_handles_labels()
            if BAND_LABEL not in labels:
                ax.legend(handles + [Patch(facecolor="0.6", alpha=0.35, lw=0)], labels + [BAND_LABEL],
                          fontsize=max(8 * FONT_SCALE, 9.5))
    fig.tight_layout()


def _png(fig: Any) -> str:
    import matplotlib.pyplot as plt

    _polish(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight", pad_inches=0.08)  # scaled text is never cut
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def fig_curves(views: Sequence[RunView]) -> str:
    """best@k, pass@k and selected@k[strategy] vs k, one line per run, +-1 standard error band."""
    plt = _plt()
    strats = sorted({s for v in views for s in v.strategies}, key=list(DEFAULT_STRATEGIES).index)
    panels = [("best", "best@k (oracle pick)"), ("pass", "pass@k")] + \
             [(f"selected[{s}]", f"selected@k [{s}]") for s in strats]
    cols = min(3, len(panels))
    rows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.3 * cols, 3.4 * rows), squeeze=False)
    for ax, (metric, title) in zip(axes.ravel(), panels):
        for i, v in enumerate(views):
            name = (lambda k: f"{metric}@{k}") if "[" not in metric else \
                (lambda k, m=metric: f"selected@{k}[{m.split('[')[1]}")
            est = [v.estimate(name(k)) for k in v.ks]
            mean = np.array([e["mean"] for e in est])
            se = np.array([e["stderr"] for e in est])
            if np.isnan(mean).all():
                continue
            ax.plot(v.ks, mean, marker="o", ms=3, color=v.colour, label=v.label)
            ax.fill_between(v.ks, mean - se, mean + se, color=v.colour, alpha=0.2, lw=0)
            if metric.startswith("selected"):  # the oracle for reference, same colour, dashed
                best = np.array([v.estimate(f"best@{k}")["mean"] for k in v.ks])
                ax.plot(v.ks, best, ls="--", lw=0.8, color=v.colour, alpha=0.7)
        k_axis(ax, sorted({k for v in views for k in v.ks}))
        ax.set_ylabel("task scalar" if metric != "pass" else "fraction of problems")
        ax.set_title(title + ("  (dashed: best@k)" if metric.startswith("selected") else ""), fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    for ax in axes.ravel()[len(panels):]:
        ax.axis("off")
    fig.tight_layout()
    return _png(fig)


def fig_bars(views: Sequence[RunView]) -> str:
    """Diversity, Pareto fraction and VPO objective per run, mean +- standard error over problems."""
    plt = _plt()
    items = [("diversity", "diversity\n(mean pairwise L1 of reward vectors)"),
             ("pareto_fraction", "Pareto fraction\n(share of non-dominated candidates)"),
             ("vpo_objective", "VPO objective\nE_w[max_y w·r(y)], 100 Dirichlet(1) weights")]
    fig, axes = plt.subplots(1, 3, figsize=(12.5, 3.6))
    x = np.arange(len(views))
    for ax, (key, title) in zip(axes, items):
        est = [v.estimate(key) for v in views]
        ax.bar(x, [e["mean"] for e in est], yerr=[e["stderr"] for e in est], capsize=4,
               color=[v.colour for v in views])
        ax.set_xticks(x, [v.label for v in views], rotation=12, fontsize=8)
        ax.set_title(title, fontsize=10)
        ax.set_ylabel("mean over problems (bars: ±1 s.e.)")
        ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return _png(fig)


def fig_field_metrics(views: Sequence[RunView]) -> str | None:
    """pass^k vs k, Cover@tau vs tau and the compute-matched best vs completion tokens (when the runs
    recorded token counts), drawn by vpo_harness.reports.plots so `vpo plot` and the report show the same curves."""
    from vpo_harness.reports.plots import PlotRun, metric_figure

    runs = [PlotRun(v.label, pools=v.pools, ks=v.ks, colour=v.colour) for v in views]
    names = ["pass^k", "cover"] + (["tokens"] if any(v.pools.tokens_per_chain > 0 for v in views) else [])
    return _png(metric_figure(runs, names))


def component_names(view: RunView) -> list[str] | None:
    dims = {r.shape[1] for r in view.pools.rewards if r.ndim == 2 and len(r)}
    if len(dims) != 1:
        return None  # per-problem reward length (code): no shared component axis
    d = dims.pop()
    names = view.pools.facts.get("components") or []
    return list(names) if len(names) == d else [f"c{i + 1}" for i in range(d)]


def fig_components(views: Sequence[RunView]) -> str | None:
    """Mean reward per component, grouped by component, one bar per run."""
    names = [component_names(v) for v in views]
    if any(n is None for n in names) or len({tuple(n) for n in names}) != 1:
        return None
    plt = _plt()
    comps = names[0]
    fig, ax = plt.subplots(figsize=(max(5.0, 1.3 * len(comps) + 2), 3.4))
    width = 0.8 / len(views)
    for i, v in enumerate(views):
        allr = np.concatenate([r for r in v.pools.rewards if len(r)])
        per_prob = np.stack([r.mean(axis=0) for r in v.pools.rewards if len(r)])
        se = per_prob.std(axis=0, ddof=1) / np.sqrt(len(per_prob)) if len(per_prob) > 1 else np.zeros(len(comps))
        ax.bar(np.arange(len(comps)) + (i - (len(views) - 1) / 2) * width, allr.mean(axis=0), width,
               yerr=se, capsize=3, color=v.colour, label=v.label)
    ax.set_xticks(np.arange(len(comps)), comps)
    ax.set_ylabel("mean reward (0–1)")
    ax.set_title("mean reward per component over all candidates (bars: ±1 s.e. over problems)", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    return _png(fig)


def top_components(points: np.ndarray, comps: Sequence[str] | None) -> str:
    """The two components along which ``points`` vary most (ties: the earlier), as a projection
    spec "a,b" in component order: named axes a reader can interpret, unlike principal components."""
    labels = list(comps) if comps and len(comps) == points.shape[1] else [f"c{i + 1}" for i in range(points.shape[1])]
    var = points.var(axis=0) if len(points) else np.zeros(points.shape[1])
    order = sorted(range(len(labels)), key=lambda j: (-round(float(var[j]), 12), j))[:2]
    return ",".join(labels[j] for j in sorted(order))


def project(points: np.ndarray, comps: Sequence[str] | None, axes_spec: str | None) -> tuple[np.ndarray, tuple[str, str]]:
    """2-D coordinates of reward vectors: two named components (``"a,b"``; by default, None, the two
    that vary most, see :func:`top_components`), or with ``"pca"`` the first two principal
    components of the given points (centred, SVD)."""
    if points.shape[1] == 1:
        return np.c_[points[:, 0], np.zeros(len(points))], (comps[0] if comps else "c1", "(none)")
    if not axes_spec and points.shape[1] > 2:
        d = points.shape[1]
        comps = list(comps) if comps and len(comps) == d else [f"c{i + 1}" for i in range(d)]
        axes_spec = top_components(points, comps)
    if axes_spec and axes_spec != "pca":
        names = [s.strip() for s in axes_spec.split(",")]
        labels = list(comps or [])
        if len(names) != 2 or any(nm not in labels for nm in names):
            raise ValueError(f"--projection: expected 'pca' or two of {', '.join(labels)}, got {axes_spec!r}")
        i, j = labels.index(names[0]), labels.index(names[1])
        return points[:, [i, j]], (names[0], names[1])
    if points.shape[1] == 2:
        lab = list(comps) if comps else ["c1", "c2"]
        return points, (lab[0], lab[1])
    centred = points - points.mean(axis=0)
    if not np.any(centred):
        return np.zeros((len(points), 2)), ("PC1", "PC2")
    _, sv, vt = np.linalg.svd(centred, full_matrices=False)
    var = sv ** 2 / max((sv ** 2).sum(), 1e-300)
    xy = centred @ vt[:2].T
    if xy.shape[1] == 1:
        xy = np.c_[xy, np.zeros(len(xy))]
    share = [f"{100 * var[i]:.0f}%" if i < len(var) else "0%" for i in range(2)]
    return xy, (f"PC1 ({share[0]} of variance)", f"PC2 ({share[1]} of variance)")


def fig_projections(views: Sequence[RunView], problems: Sequence[str], axes_spec: str | None) -> str | None:
    """One row per chosen problem, one panel per run: candidates' reward vectors in 2-D. The
    projection is fitted on all runs' candidates of that problem, so panels of a row share axes;
    marker area grows with the number of candidates at the same point (collapse shows as one blob)."""
    if not problems:
        return None
    plt = _plt()
    fig, axes = plt.subplots(len(problems), len(views), figsize=(3.6 * len(views), 3.1 * len(problems)),
                             squeeze=False)
    for r, pid in enumerate(problems):
        mats = []
        for v in views:
            idx = {p: i for i, p in enumerate(v.pools.problem_ids)}
            mats.append(v.pools.rewards[idx[pid]] if pid in idx else np.zeros((0, 0)))
        dims = {m.shape[1] for m in mats if len(m)}
        if len(dims) != 1:
            for ax in axes[r]:
                ax.axis("off")
            continue
        comps = component_names(views[0]) if component_names(views[0]) and \
            len(component_names(views[0])) == next(iter(dims)) else None
        allp = np.concatenate([m for m in mats if len(m)])
        xy, (xl, yl) = project(allp, comps, axes_spec)
        # both axes on one scale: a flat direction (all candidates equal along it) is drawn as
        # flat, not blown up to fill the panel
        span = max(float(np.ptp(xy[:, 0])), float(np.ptp(xy[:, 1])), 0.2)
        lims = [((lo + hi) / 2 - max(hi - lo, 0.3 * span) / 2 - 0.08 * span,
                 (lo + hi) / 2 + max(hi - lo, 0.3 * span) / 2 + 0.08 * span)
                for lo, hi in ((xy[:, 0].min(), xy[:, 0].max()), (xy[:, 1].min(), xy[:, 1].max()))]
        start = 0
        for c, (v, m) in enumerate(zip(views, mats)):
            ax = axes[r, c]
            pts = xy[start:start + len(m)]
            start += len(m)
            if len(pts):
                uniq, counts = np.unique(np.round(pts, 9), axis=0, return_counts=True)
                ax.scatter(uniq[:, 0], uniq[:, 1], s=18 + 22 * counts, color=v.colour, alpha=0.6,
                           edgecolor="k", lw=0.4)
                n_vec = len(np.unique(np.round(m, 9), axis=0))  # of the full vectors, not of the 2-D points
                ax.set_title(f"{v.label}\n{pid}: {len(m)} candidates, {n_vec} distinct vector{'s' if n_vec != 1 else ''}",
                             fontsize=8)
            else:
                ax.set_title(f"{v.label}\n{pid}: not in this run", fontsize=8)
            ax.set_xlim(*lims[0])
            ax.set_ylim(*lims[1])
            ax.set_xlabel(xl, fontsize=8)
            ax.set_ylabel(yl, fontsize=8)
            ax.tick_params(labelsize=7)
            ax.grid(alpha=0.3)
    fig.tight_layout()
    return _png(fig)


def _projection_note(projection: str | None) -> str:
    if projection == "pca":
        return "first two principal components, fitted per problem on all runs' candidates"
    if projection:
        return f"components {_esc(projection)}"
    return ("the two named reward components that vary most over the problem's candidates, shared by all runs "
            "of a row; --projection pca for principal components")


def fig_evolve(runs: Sequence[Any], colours: Sequence[str] | None = None) -> str | None:
    """Evolve runs (vpo_harness.reports.evolve.EvolveRun): fraction solved and best task scalar vs candidates
    evaluated, plain sampling of the same model at the same budget dashed; integer candidate ticks;
    ``colours``: the runs' colours in the report (default: reports/colours.py over these runs)."""
    from vpo_harness.reports.evolve import draw

    if not runs:
        return None
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(10.5, 3.6))
    draw(axes, runs, colours)
    fig.tight_layout()
    return _png(fig)


def evolve_tables(runs: Sequence[Any], resamples: int, seed: int) -> tuple[str, dict[str, Any]]:
    """Per evolve run, its budget table next to plain sampling and the paired search-minus-sampling
    differences; with several runs, each against the first at equal budgets. Returns HTML and data."""
    from vpo_harness.reports.evolve import budget_table, compare_evolve, compare_with_baseline

    parts, data = [], {}
    cell = lambda e: f"{_num(e['mean'])}±{_num(e['stderr'])}" if e and e.get("n") else "-"  # noqa: E731
    for i, run in enumerate(runs):
        table = budget_table(run)
        rows = [[str(r["candidates"]), cell(r["solved"]), cell(r.get("baseline_solved")), cell(r["best"]),
                 cell(r.get("baseline_best"))] for r in table]
        f = run.facts
        parts.append(f"<h3>{_esc(run.label)}{' (partial)' if run.partial else ''}</h3><p class='note'>"
                     f"{_esc(f.get('model'))}, prompt {_esc(f.get('prompt_mode'))}, m={_esc(f.get('m'))}, "
                     f"{_esc(f.get('iterations'))} iterations = {run.budget} candidates per problem, "
                     f"{len(run.problem_ids)} problems; solved = {_esc(run.solved_definition)}; sampling: "
                     + (_esc(str(run.baseline.path)) if run.baseline else "none (no baseline/ folder)") + "</p>"
                     + _table(f"evolve-{i}", ["candidates", "solved (evolve)", "solved (sampling)", "best (evolve)",
                                              "best (sampling)"], rows, left=0))
        if run.baseline is not None:
            comp = compare_with_baseline(run, resamples=resamples, seed=seed)
            parts.append("<p class='note'>Search minus plain sampling, paired over problems:</p>"
                         + comparison_table(comp).replace('id="comparison"', f'id="evolve-vs-sampling-{i}"'))
        data[run.label] = {"budgets": table}
    if len(runs) >= 2:
        try:
            comp = compare_evolve(runs, resamples=resamples, seed=seed)
        except ValueError as exc:
            parts.append(f"<p class='note'>No paired comparison of the searches: {_esc(exc)}</p>")
        else:
            parts.append(f"<h3>Searches against {_esc(runs[0].label)}</h3><p class='note'>Run minus "
                         f"{_esc(runs[0].label)} at each candidate budget, paired over shared problems, 95% "
                         f"bootstrap interval ({comp.resamples} resamples, seed {comp.seed}).</p>"
                         + comparison_table(comp).replace('id="comparison"', 'id="evolve-comparison"'))
            data["comparison"] = json.loads(json.dumps(comp.as_dict(), default=float).replace("NaN", "null"))
    return "".join(parts), data


# ---------------------------------------------------------------------------------------------------
# html
_CSS = """
body{font-family:DejaVu Sans,Helvetica,Arial,sans-serif;margin:24px auto;max-width:min(1500px,96vw);padding:0 12px;color:#222;line-height:1.4;font-size:15px}
h1{font-size:1.6em}h2{font-size:1.25em;border-bottom:1px solid #ccc;padding-bottom:3px;margin-top:1.8em}
table{border-collapse:collapse;font-size:13.5px;margin:8px 0}th,td{border:1px solid #ccc;padding:3px 7px;text-align:right}
th{background:#f2f2f2;cursor:pointer;user-select:none}td.l,th.l{text-align:left}tr:nth-child(even) td{background:#fafafa}
img{max-width:100%;display:block;margin:6px 0}.note{color:#555;font-size:13.5px}.pos{color:#1a7f37}.neg{color:#b42318}
code{background:#f4f4f4;padding:0 3px}details{margin:6px 0}.wrap{overflow-x:auto;max-width:100%}
td{white-space:nowrap}td.l{white-space:normal}.wrap table{margin:0}
.wrap{width:fit-content}#summary td:first-child,#summary th:first-child{position:sticky;left:0;background:#fff;z-index:1}
img{height:auto}.se{display:block;font-size:11.5px;color:#666}
"""

_JS = """
window.__vpoErrors = [];
function __vpoNote(msg){window.__vpoErrors.push(String(msg));
  var el=document.getElementById('vpo-errors'); if(el){el.textContent=window.__vpoErrors.join('\\n');}}
window.addEventListener('error', function(e){__vpoNote('error: '+(e.message||(e.target&&e.target.src)||e));}, true);
(function(){var ce=console.error; console.error=function(){__vpoNote('console.error: '+Array.prototype.join.call(arguments,' '));
  return ce.apply(console, arguments);};})();
function sortTable(th){
  var table=th.closest('table'), body=table.tBodies[0], idx=Array.prototype.indexOf.call(th.parentNode.children, th);
  var asc=th.getAttribute('data-dir')!=='asc'; th.setAttribute('data-dir', asc?'asc':'desc');
  var rows=Array.prototype.slice.call(body.rows);
  rows.sort(function(a,b){var x=a.cells[idx].getAttribute('data-v')||a.cells[idx].textContent,
    y=b.cells[idx].getAttribute('data-v')||b.cells[idx].textContent; var fx=parseFloat(x), fy=parseFloat(y);
    var c=(!isNaN(fx)&&!isNaN(fy))?fx-fy:x.localeCompare(y); return asc?c:-c;});
  rows.forEach(function(r){body.appendChild(r);});
}
window.addEventListener('load', function(){
  var imgs=document.images, ok=0; for(var i=0;i<imgs.length;i++){if(imgs[i].complete&&imgs[i].naturalWidth>0){ok++;}
    else{__vpoNote('image did not load: '+(imgs[i].alt||i));}}
  var tables={}; document.querySelectorAll('table[id]').forEach(function(t){tables[t.id]=t.tBodies[0].rows.length;});
  var data=JSON.parse(document.getElementById('vpo-data').textContent);
  var st=document.getElementById('vpo-status');
  st.setAttribute('data-images-total', imgs.length); st.setAttribute('data-images-loaded', ok);
  st.setAttribute('data-tables', JSON.stringify(tables)); st.setAttribute('data-runs', data.runs.length);
  st.setAttribute('data-errors', window.__vpoErrors.length); st.textContent='loaded';
});
"""


def _esc(x: Any) -> str:
    return html.escape(str(x))


def _num(x: Any, nd: int = 3, sign: bool = False) -> str:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return "-"
    return format_number(v, nd, sign)


def _table(tid: str, head: Sequence[str], rows: Sequence[Sequence[Any]], left: int = 1,
           sort_values: Sequence[Sequence[Any]] | None = None) -> str:
    th = "".join(f'<th class="{"l" if i < left else ""}" onclick="sortTable(this)">{_esc(h)}</th>'
                 for i, h in enumerate(head))
    body = []
    for r_i, row in enumerate(rows):
        cells = []
        for i, c in enumerate(row):
            dv = ""
            if sort_values is not None and sort_values[r_i][i] is not None:
                dv = f' data-v="{_esc(sort_values[r_i][i])}"'
            cells.append(f'<td class="{"l" if i < left else ""}"{dv}>{c}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<div class="wrap"><table id="{tid}"><thead><tr>{th}</tr></thead><tbody>{"".join(body)}</tbody>'
            '</table></div>')


def _img(b64: str | None, alt: str) -> str:
    if b64 is None:
        return ""
    return f'<img alt="{_esc(alt)}" src="data:image/png;base64,{b64}">'


def summary_table(views: Sequence[RunView]) -> str:
    taus = [float(k.split("@", 1)[1]) for k in views[0].per_problem if k.startswith("cover@")]
    head = ["run", "model", "task", "pool (n×m)", "problems"] + [f"best@{k}" for k in views[0].ks] + \
           ["pass@max k", "pass^max k"] + [f"Cover@{t:g}" for t in taus] + \
           ["diversity", "Pareto fraction", "VPO objective", "errors"]
    rows = []
    for v in views:
        cfg = v.pools.facts
        kmax = v.ks[-1]
        # the s.e. under the mean, smaller: the table stays narrow enough for a laptop screen (and scrolls if not)
        cell = lambda name: format_estimate(v.estimate(name), fmt="html")  # noqa: E731
        model = str(cfg.get("model") or "?").split(":", 1)[-1].rstrip("/").split("/")[-1]  # full spec: provenance
        rows.append([_esc(v.title), _esc(model), _esc(cfg.get("task", "?")),
                     f"{cfg.get('n', '?')}×{cfg.get('m', '?')}", str(len(v.pools.problem_ids))]
                    + [cell(f"best@{k}") if k in v.ks else "-" for k in views[0].ks]
                    + [cell(f"pass@{kmax}"), cell(f"pass^{kmax}")] + [cell(f"cover@{t:g}") for t in taus]
                    + [cell("diversity"), cell("pareto_fraction"), cell("vpo_objective"), str(v.pools.n_errors)])
    return _table("summary", head, rows, left=3)


def selection_table(views: Sequence[RunView]) -> str:
    head = ["run", "strategy"] + [f"k={k}" for k in views[0].ks]
    rows = []
    for v in views:
        for s in ["oracle", *v.strategies]:
            rows.append([_esc(v.label), _esc(s)] + [
                format_estimate(v.estimate(f"selected@{k}[{s}]"), fmt="html") if k in v.ks else "-"
                for k in views[0].ks])
    return _table("selection", head, rows, left=2)


def comparison_table(comp: Comparison) -> str:
    head = ["metric", "k", "run", "n", "baseline", "run mean", "diff", "95% CI", "win/tie/loss"]
    rows, sv = [], []
    for r in comp.rows:
        cls = "pos" if r.ci_low > 0 else "neg" if r.ci_high < 0 else ""
        rows.append([_esc(display_name(r.metric, r.k)), "" if r.k is None else str(r.k), _esc(r.run), str(r.n), _num(r.baseline_mean),
                     _num(r.run_mean), f'<span class="{cls}">{_num(r.diff, sign=True)}</span>',
                     f"[{_num(r.ci_low, sign=True)}, {_num(r.ci_high, sign=True)}]", f"{r.wins}/{r.ties}/{r.losses}"])
        sv.append([None, r.k, None, None, r.baseline_mean, r.run_mean, r.diff, r.ci_low, None])
    return _table("comparison", head, rows, left=1, sort_values=sv)


def problem_table(views: Sequence[RunView]) -> str:
    """One row per problem (union over runs): best@max-k, mean scalar, diversity, unique answers (distinct
    texts under the task's dedup key) and distinct vectors (distinct reward vectors)."""
    ids: list[str] = []
    seen: set[str] = set()
    for v in views:
        for p in v.pools.problem_ids:
            if p not in seen:
                seen.add(p)
                ids.append(p)
    head = ["problem"]
    for v in views:
        head += [f"{v.label} best@{v.ks[-1]}", f"{v.label} mean", f"{v.label} diversity",
                 f"{v.label} unique answers", f"{v.label} distinct vectors"]
    rows, sv = [], []
    index = [{p: i for i, p in enumerate(v.pools.problem_ids)} for v in views]
    for pid in ids:
        row, srow = [_esc(pid)], [None]
        for v, ix in zip(views, index):
            if pid not in ix:
                row += ["-"] * 5
                srow += [None] * 5
                continue
            i = ix[pid]
            vals = [v.per_problem[f"best@{v.ks[-1]}"][i], v.per_problem["mean_scalar"][i],
                    v.per_problem["diversity"][i]]
            keys = [x for x in (v.pools.pools()[i].keys or []) if x is not None]
            unique = len(set(keys))
            rew = v.pools.rewards[i]
            vectors = len(np.unique(np.round(rew, 9), axis=0)) if len(rew) else 0
            row += [_num(x) for x in vals] + [str(unique), str(vectors)]
            srow += [*vals, unique, vectors]
        rows.append(row)
        sv.append(srow)
    return _table("problems", head, rows, left=1, sort_values=sv)


_PROV_KEYS = ("model", "model_fingerprint", "task", "split", "task_options", "prompt_style", "m", "n", "ks",
              "temperature", "top_p", "max_tokens", "chat_template_args", "protocol", "seed", "limit", "data_path", "created", "git", "versions",
              "rescored_from", "command")


def provenance(view: RunView, index: int) -> str:
    cfg = view.pools.facts
    rows = [[_esc(k), f"<code>{_esc(json.dumps(cfg.get(k), ensure_ascii=False))}</code>"]
            for k in _PROV_KEYS if k in cfg]
    rows.append(["folder", f"<code>{_esc(view.pools.path)}</code>"])
    return _table(f"provenance-{index}", ["field", "value"], rows, left=2)


def build_report(run_paths: Sequence[str | Path], out: str | Path, labels: Sequence[str] | None = None,
                 problems: Sequence[str] | None = None, n_problems: int = 4, projection: str | None = None,
                 strategies: Sequence[str] = DEFAULT_STRATEGIES, resamples: int = 10_000, seed: int = 0,
                 title: str | None = None) -> Path:
    """Write the HTML report of ``run_paths`` (evaluation and evolve runs) to ``out``."""
    paths = [Path(p) for p in run_paths]
    if labels is not None and len(labels) != len(paths):
        raise ValueError(f"--labels has {len(labels)} names for {len(paths)} runs")
    names = list(labels) if labels else [p.name for p in paths]
    from vpo_harness.harness.core.results import check_same_task
    from vpo_harness.reports.evolve import curves as evolve_curves, load_evolve, require_candidates

    check_same_task(paths)  # one report, one task and split
    # one colour per run for every figure of the report, evaluation and evolve runs alike
    colour_of = {p: s.colour for p, s in zip(paths, run_styles(str(p) for p in paths))}
    evolve = [require_candidates(load_evolve(p, nm), "report") for nm, p in zip(names, paths) if is_evolve_run(p)]
    views = [_view(_with_rows(load_pools(p)), nm, strategies, seed, colour_of[p])
             for nm, p in zip(names, paths) if not is_evolve_run(p)]
    if not views and not evolve:
        raise ValueError("no runs to report")
    sections: list[str] = []
    data: dict[str, Any] = {"runs": [], "generated": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    if views:
        comp, comp_note = None, ""
        if len(views) >= 2:
            try:
                comp = compare_runs([v.pools for v in views], strategies=strategies, resamples=resamples, seed=seed)
            except ValueError as exc:
                comp_note = f"No paired comparison: {exc}"
        chosen, why = (list(problems), "chosen with --problems") if problems else choose_problems(views, n_problems)
        missing = [p for p in chosen if not any(p in v.pools.problem_ids for v in views)]
        if missing:
            raise ValueError(f"--problems: {', '.join(missing)} not in any run")
        sections.append("<h2>Summary</h2><p class='note'>Means over problems ± standard error. best@k: unbiased "
                        "expected maximum task scalar of k candidates drawn without replacement from the pool. "
                        "pass^k: all k attempts pass. Cover@τ: share of problems with pass rate ≥ τ."
                        + (f" A seed group: the mean over its seeds; {_esc(SEED_LEGEND)}." if any(v.pools.seeds for v in views)
                           else "") + "".join(f" <b>{_esc(v.title)}</b>: partial seed group, so its numbers "
                                              "lack the seeds named." for v in views if v.pools.partial)
                        + "</p>" + summary_table(views))
        sections.append("<h2>best@k, pass@k and selection without an oracle</h2>"
                        "<p class='note'>Bands: ±1 standard error over problems. selected@k[strategy]: expected "
                        "graded score of the candidate a strategy picks from k (majority: most frequent normalised "
                        "answer; random: uniform pick = mean; public-tests: best on visible tests, scored on hidden "
                        "ones). Dashed: best@k of the same run.</p>"
                        + _img(fig_curves(views), "best@k, pass@k and selected@k curves") + selection_table(views))
        sections.append("<h2>pass^k, Cover@τ and best at equal token cost</h2><p class='note'>pass^k: chance that "
                        "all k attempts pass, C(c,k)/C(n,k) from c passes in n (reliability, where pass@k is coverage). "
                        "Cover@τ: share of problems whose pass rate c/n is at least τ (dotted: the τ of the summary "
                        "table). Best vs tokens: expected best task scalar when each problem gets T completion tokens "
                        "(T / mean chain length chains, drawn without replacement, a fractional count spent as a "
                        "mix of the two whole counts), so a chain of m answers meets single answers at equal cost. "
                        "Bands: ±1 standard error over problems.</p>"
                        + _img(fig_field_metrics(views), "pass^k, Cover and best-vs-tokens curves"))
        sections.append("<h2>Diversity, Pareto fraction, VPO objective</h2>" + _img(fig_bars(views), "diversity bars"))
        comp_fig = fig_components(views)
        sections.append("<h2>Mean reward per component</h2>" + (
            _img(comp_fig, "mean reward per component") if comp_fig else
            "<p class='note'>Runs have per-problem reward lengths (code tests) or different components: "
            "no shared component axis.</p>"))
        proj = fig_projections(views, chosen, projection)
        sections.append(f"<h2>Candidates in reward space</h2><p class='note'>Problems: {_esc(why)}. Each panel: "
                        "one run's candidates for one problem, reward vectors projected to 2-D "
                        f"({_projection_note(projection)}); "
                        "marker area grows with the number of candidates at the same point.</p>"
                        + _img(proj, "reward-space projections"))
        if comp is not None:
            sections.append("<h2>Paired comparison</h2><p class='note'>"
                            f"Run minus baseline ({_esc(views[0].label)}) over shared problems; 95% paired "
                            f"bootstrap interval ({comp.resamples} resamples, seed {comp.seed}); green/red: the "
                            "interval excludes 0. " + "; ".join(
                                f"{_esc(r)}: {n} shared problems, solved ({_esc(comp.solved_only[r]['criterion'])}) only "
                                f"by the baseline {len(comp.solved_only[r]['baseline_only'])}, only by the run "
                                f"{len(comp.solved_only[r]['run_only'])}" for r, n in comp.shared.items())
                            + "</p>" + comparison_table(comp))
            data["comparison"] = json.loads(json.dumps(comp.as_dict(), default=float).replace("NaN", "null"))
        elif comp_note:
            sections.append(f"<h2>Paired comparison</h2><p class='note'>{_esc(comp_note)}</p>")
        sections.append("<h2>Per problem</h2><p class='note'>Click a header to sort.</p>" + problem_table(views))
        for v in views:
            data["runs"].append({"label": v.label, "path": str(v.pools.path), "ks": v.ks, "problem_ids": v.pools.problem_ids,
                                 "seeds": v.pools.seeds, "seeds_label": v.pools.seeds_label, "partial": v.pools.partial,
                                 "metrics": {k: [None if x != x else round(float(x), 6) for x in arr]
                                             for k, arr in v.per_problem.items()}})
    if evolve:
        tables, evo_data = evolve_tables(evolve, resamples, seed)
        sections.append("<h2>Evolutionary search</h2><p class='note'>Solved and best task scalar vs candidates "
                        "evaluated per problem (computed from the stored rows), the search solid and plain "
                        "sampling of the same model at the same budget dashed; bands ±1 standard error over "
                        "problems.</p>" + _img(fig_evolve(evolve, [colour_of[p] for p in paths if is_evolve_run(p)]),
                                                   "evolve curves") + tables)
        if "comparison" in evo_data:
            data["evolve_comparison"] = evo_data.pop("comparison")
        for run in evolve:
            cur = evolve_curves(run)
            rnd = lambda c: {"x": c["x"], "mean": [None if v != v else round(v, 6) for v in c["mean"]],  # noqa: E731
                             "stderr": [None if v != v else round(v, 6) for v in c["stderr"]]}
            data["runs"].append({
                "label": run.label, "kind": "evolve", "path": str(run.path), "partial": run.partial,
                "budgets": evo_data[run.label]["budgets"],
                "evolve": {"solved_vs_candidates": rnd(cur["evolve_solved"]),
                           "best_vs_candidates": rnd(cur["evolve_best"])},
                "baseline": {"solved_vs_candidates": rnd(cur["sampling_solved"]),
                             "best_vs_candidates": rnd(cur["sampling_best"])} if "sampling_solved" in cur else None})
    prov = "".join(f"<details open><summary>{_esc(v.label)}</summary>{provenance(v, i)}</details>" for i, v in enumerate(views))
    prov += "".join(f"<details><summary>{_esc(run.label)} (evolve)</summary><pre>"
                    f"{_esc(json.dumps(run.facts, indent=1, default=str))}</pre></details>" for run in evolve)
    sections.append("<h2>Provenance</h2>" + prov)
    title = title or "vpo report: " + ", ".join([v.label for v in views] + [run.label for run in evolve])
    doc = (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{_esc(title)}</title>"
           f"<style>{_CSS}</style><script>{_JS}</script></head><body>"
           f"<h1>{_esc(title)}</h1><p class='note'>Generated {_esc(data['generated'])} by vpo-harness. Self-contained: "
           "figures and data are inline.</p>"
           "<pre id='vpo-errors' class='neg'></pre><div id='vpo-status' hidden></div>"
           + "".join(sections)
           + f"<script type='application/json' id='vpo-data'>{_json_for_html(data)}</script></body></html>")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(doc, encoding="utf-8")
    return out


def _json_for_html(obj: Any) -> str:
    """JSON safe inside a <script> element (no closing tag can appear)."""
    return json.dumps(obj, ensure_ascii=False, default=str).replace("</", "<\\/")
