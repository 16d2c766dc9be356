"""Figures for papers: best@k curves with standard-error bands, and per-run diversity."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import matplotlib

matplotlib.use("Agg")  # headless by default: plots are files, never windows
import matplotlib.ticker  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from vpo_harness.harness.core.suggest import did_you_mean  # noqa: E402
from vpo_harness.reports.axes import ZERO_NOTE, ZERO_YLIM, k_axis  # noqa: E402
from vpo_harness.reports.colours import paper_styles, run_styles  # noqa: E402

if TYPE_CHECKING:  # the classes' own modules: pyplot re-exports them only at run time
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


def _save(fig: Figure, out: str | Path) -> Path:
    if fig.get_layout_engine() is None:  # a paper figure lays itself out (constrained, legend outside)
        fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, bbox_inches="tight", pad_inches=0.05)  # never clip a rotated or long label
    plt.close(fig)
    return out


def _with_shape(label: str, run: Any) -> str:
    """A legend label that says the pool shape (10x3 vs 30x1: the same 30 candidates, sampled differently)."""
    shape = run.summary.pool_shape if run.summary is not None else None
    return label if not shape or shape in label else f"{label} ({shape})"


def _colours(runs: Sequence[Any]) -> list[str]:
    """The runs' colours (reports/colours.py): by each run's folder, distinct within the figure, the
    rule every figure of `vpo plot`, of the report and of the viewer follows."""
    return [s.colour for s in run_styles(str(r.path) for r in runs)]


def _readable_ylim(ax: Axes, lows: list[float], highs: list[float]) -> bool:
    """Limits that keep a flat line visible, with a floor of 0.25 on the range so a flat zero reads as
    zero on a labelled scale (autoscaling put it on the axis edge or blew up rounding noise); returns
    True when every value is zero."""
    lo, hi = min(lows + [0.0]), max(highs + [0.0])
    if not hi > lo:  # all zero: the 0..1 axis of a score or rate
        ax.set_ylim(*ZERO_YLIM)
        return True
    span = max(hi - lo, 0.25)
    ax.set_ylim(lo - 0.06 * span, lo + 1.12 * span)
    return False


def _curve(run: Any, metric: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ks, means, stderrs) of best@k or pass@k from the run's typed results (vpo_harness.harness.core.results)."""
    est = run.summary.best if metric == "best" else run.summary.pass_at
    ks = sorted(est)
    return (np.array(ks), np.array([est[k].mean for k in ks], dtype=float),
            np.array([est[k].stderr for k in ks], dtype=float))


def _label(run: Any) -> str:
    res = run.summary
    model = (res.model if res is not None else "?").split(":", 1)[-1].rstrip("/").split("/")[-1]
    return f"{model} ({res.pool_shape if res is not None else '?'})"


def plot_best_at_k(runs: Sequence[Any], out: str | Path, metric: str = "best", labels: Sequence[str] | None = None,
                   title: str | None = None) -> Path:
    """One line per run (LoadedRun from vpo_harness.harness.core.results.load_run), shaded ±1 standard error, log2 k axis."""
    return _save(best_at_k_figure(runs, metric=metric, labels=labels, title=title), out)


def best_at_k_figure(runs: Sequence[Any], metric: str = "best", labels: Sequence[str] | None = None,
                     title: str | None = None) -> Figure:
    """The figure of :func:`plot_best_at_k`: a tick at every plotted k, pool shapes in the legend, the
    band named (±1 standard error over problems), and a flat-zero metric still readable."""
    from matplotlib.patches import Patch

    if labels is not None and len(labels) != len(runs):
        raise ValueError(f"--labels has {len(labels)} names for {len(runs)} runs")
    fig, ax = plt.subplots(figsize=(5.5, 4.0), dpi=150)
    all_ks: set[int] = set()
    lows, highs = [], []
    seeded = False
    colours = _colours(runs)
    for i, run in enumerate(runs):
        if run.summary is None:
            raise ValueError(f"{run.path}: no results.json (finish or resume the run first)")
        ks, mean, se = _curve(run, metric)
        if ks.size == 0:
            raise ValueError(f"{run.path}: results.json has no {metric}@k metrics")
        lab = _with_shape(labels[i], run) if labels else _label(run)
        est = run.summary.best if metric == "best" else run.summary.pass_at
        if run.summary.seeds:
            lab += f", {run.summary.seeds_label}"
        ax.plot(ks, mean, marker="o", ms=3, label=lab, zorder=3, color=colours[i])
        se = np.nan_to_num(se)
        ax.fill_between(ks, mean - se, mean + se, color=colours[i], alpha=0.2, lw=0)
        seed_se = np.array([np.nan if est[int(k)].seed_stderr is None else est[int(k)].seed_stderr for k in ks],
                           dtype=float)
        if run.summary.seeds and np.isfinite(seed_se).any():  # a seed group: the between-seed s.e. as bars
            ax.errorbar(ks, mean, yerr=np.nan_to_num(seed_se), fmt="none", ecolor=colours[i], capsize=3,
                        lw=1, zorder=4)
            seeded = True
        all_ks.update(int(k) for k in ks)
        lows.append(float(np.nanmin(mean - se)))
        highs.append(float(np.nanmax(mean + se)))
    ax.set_xscale("log", base=2)
    ticks = sorted(all_ks)
    ax.set_xticks(ticks, [str(k) for k in ticks])
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_xlim(ticks[0] / 1.25, ticks[-1] * 1.25)
    ax.set_xlabel("k (candidates drawn from the pool)")
    ax.set_ylabel(f"{metric}@k" + (" (task scalar)" if metric == "best" else ""))
    if _readable_ylim(ax, lows, highs):
        ax.text(0.5, 0.55, f"{metric}@k is 0 for every run and k", transform=ax.transAxes, ha="center",
                fontsize=9, color="0.3")
    tasks = sorted({r.summary.task for r in runs})
    ax.set_title(title or f"{metric}@k on {', '.join(tasks)}")
    ax.grid(alpha=0.3, which="major")
    handles, names = ax.get_legend_handles_labels()
    handles.append(Patch(facecolor="0.6", alpha=0.35, lw=0))
    names.append("band: ±1 standard error (over problems)")
    if seeded:
        from matplotlib.lines import Line2D

        handles.append(Line2D([], [], color="0.4", marker="|", ls="none", ms=8))
        names.append("bars: ±1 standard error between seeds")
    ax.legend(handles, names, fontsize=8)
    return fig


def plot_diversity(runs: Sequence[Any], out: str | Path, labels: Sequence[str] | None = None) -> Path:
    """Bar chart of mean pairwise L1 reward distance per run (the paper's diversity column)."""
    fig, ax = plt.subplots(figsize=(4.5, 3.5), dpi=150)
    names, means, ses = [], [], []
    for i, run in enumerate(runs):
        d = run.summary.diversity if run.summary is not None else None
        names.append(_with_shape(labels[i], run) if labels else _label(run))
        means.append(d.mean if d is not None else np.nan)
        ses.append(d.stderr if d is not None else 0.0)
    ax.bar(range(len(names)), means, yerr=ses, capsize=4, color=_colours(runs))
    ax.set_title("diversity (error bars: ±1 standard error)", fontsize=9)
    ax.set_xticks(range(len(names)), names, rotation=15, fontsize=8, ha="right")
    ax.set_ylabel("diversity (mean pairwise L1\nof reward vectors)")
    if _readable_ylim(ax, [0.0], [float(np.nanmax(np.array(means) + np.array(ses)))] if names else [0.0]):
        ax.text(0.5, 0.5, "diversity is 0 for every run", transform=ax.transAxes, ha="center", color="0.3")
    ax.grid(alpha=0.3, axis="y")
    return _save(fig, out)


# ---------------------------------------------------------------------------------------------------
# `vpo plot --metric NAME[,NAME...]`: any metric, one panel each, shared y-limits, a paper style
#: metric name -> (panel kind, y label, title); "component:NAME" and "components" are added per run
PLOT_METRICS: dict[str, tuple[str, str, str]] = {
    "best": ("k", "best@k (task scalar)", "best@k (oracle pick)"),
    "pass": ("k", "pass@k (fraction of problems)", "pass@k (some attempt passes)"),
    "pass^k": ("k", "pass^k (fraction of problems)", "pass^k (all k attempts pass)"),
    "cover": ("tau", "Cover@τ (fraction of problems)", "Cover@τ (pass rate ≥ τ)"),
    "tokens": ("tokens", "best (task scalar)", "best vs generated tokens (compute-matched)"),
    "diversity": ("bar", "mean pairwise L1 of reward vectors", "diversity"),
    "pareto": ("bar", "share of non-dominated candidates", "Pareto fraction"),
    "objective": ("bar", "E_w[max_y w·r(y)]", "VPO objective"),
    "mean": ("bar", "mean task scalar", "mean task scalar"),
    "evolve": ("evolve", "best task scalar (mean over problems)", "evolve: best score vs candidates"),
    "evolve-solved": ("evolve", "fraction of problems solved", "evolve: solved vs candidates"),
}
_ALIASES = {"passk": "pass^k", "pass-all": "pass^k", "pass_all": "pass^k", "pareto_fraction": "pareto",
            "vpo_objective": "objective", "mean_scalar": "mean", "best_tokens": "tokens", "token-matched": "tokens",
            "evolve-best": "evolve"}
#: per-problem metric name of a bar panel
_BAR_KEYS = {"diversity": "diversity", "pareto": "pareto_fraction", "objective": "vpo_objective", "mean": "mean_scalar"}
#: scores, rates and fractions live in [0, 1]: an all-zero panel gets that axis
_BOUNDED = ("best", "pass", "pass^k", "cover", "tokens", "pareto", "mean", "objective", "evolve", "evolve-solved")

#: figure styles: size of one panel (inches), font size, line width, marker size
STYLES: dict[str, dict[str, float]] = {
    "default": {"w": 5.0, "h": 3.7, "font": 11.0, "lw": 1.6, "ms": 4.0, "dpi": 150},
    # one journal column is ~3.3 in wide; a two-panel figure spans the page (~6.9 in)
    "paper": {"w": 3.3, "h": 2.45, "font": 8.5, "lw": 1.2, "ms": 3.0, "dpi": 300},
}


@dataclass
class PlotRun:
    """One run of a figure: an evaluation run's pools, or an evolve run's results.json."""

    label: str
    pools: Any = None  # reports.pools.RunPools
    evolve: dict[str, Any] | None = None
    ks: list[int] = field(default_factory=list)
    #: a colour fixed by the caller (the report's, shared by all its figures); None = from ``key``
    #: (reports/colours.py)
    colour: str | None = None
    #: what the run's colour follows: its folder (the label when empty)
    key: str = ""


def load_plot_runs(paths: Sequence[str | Path], labels: Sequence[str] | None = None,
                   keep_labels: bool = False) -> list[PlotRun]:
    """The runs of a figure; ``labels`` name them, with the pool shape (and seed count) appended
    unless ``keep_labels`` (a paper figure: the labels are printed as the user gave them)."""
    import json

    from vpo_harness.reports.compare import default_ks
    from vpo_harness.reports.pools import load_pools
    from vpo_harness.harness.core.results import is_evolve_run

    if labels is not None and len(labels) != len(paths):
        raise ValueError(f"--labels has {len(labels)} names for {len(paths)} runs")
    out = []
    for i, p in enumerate(paths):
        if is_evolve_run(p):
            res_path = Path(p) / "results.json"
            if not res_path.exists():
                raise ValueError(f"{p}: no results.json yet (re-run the evolve command to finish it)")
            res = json.loads(res_path.read_text())
            lab = labels[i] if labels else f"{str(res.get('model', '?')).split('/')[-1]} (evolve)"
            out.append(PlotRun(lab, evolve=res, key=str(p)))
            continue
        pools = load_pools(p)
        if not pools.problem_ids:
            raise ValueError(f"{p}: no candidates stored yet")
        ks = [k for k in (pools.ks or default_ks([pools])) if 1 <= k <= pools.min_pool] or default_ks([pools])
        f = pools.facts
        shape = f"{f.get('n', '?')}x{f.get('m', '?')}"
        model = str(f.get("model") or "?").split(":", 1)[-1].rstrip("/").split("/")[-1]
        if pools.seeds:  # a seed group: its entries are (problem, seed) pairs
            shape += f", {pools.seeds_label}"
        if labels:
            lab = labels[i] if keep_labels or shape in labels[i] else f"{labels[i]} ({shape})"
        else:
            lab = f"{model} ({shape})"
        out.append(PlotRun(lab, pools=pools, ks=ks, key=str(p)))
    return out


def expand_metrics(spec: str, runs: Sequence[PlotRun]) -> list[str]:
    """``"best,pass^k,components"`` -> panel names; "components" is every reward component the
    evaluation runs share, ``component:NAME`` one of them; an unknown name is one clear error."""
    names: list[str] = []
    comps = [r.pools.component_names() for r in runs if r.pools is not None]
    shared = comps[0] if comps and all(c is not None and c == comps[0] for c in comps) else []
    for raw in (x.strip() for x in spec.split(",")):
        if not raw:
            continue
        nm = _ALIASES.get(raw, raw)
        if nm == "components":
            if not shared:
                raise ValueError("--metric components: the runs share no named reward components "
                                 "(code tasks have one per test)")
            names += [f"component:{c}" for c in shared]
        elif nm.startswith("component:"):
            if nm.split(":", 1)[1] not in shared:
                hint = did_you_mean(nm.split(":", 1)[1], shared)
                raise ValueError(f"--metric {raw}: no such reward component{f' ({hint})' if hint else ''}; "
                                 f"these runs have {', '.join(shared) or 'none'}")
            names.append(nm)
        elif nm in PLOT_METRICS:
            names.append(nm)
        else:
            hint = did_you_mean(raw, [*PLOT_METRICS, *_ALIASES, "components", *(f"component:{c}" for c in shared)])
            raise ValueError(f"--metric: unknown metric {raw!r}{f' ({hint})' if hint else ''}; expected one of "
                             f"{', '.join(PLOT_METRICS)}, components, component:NAME or selected:STRATEGY")
    if not names:
        raise ValueError("--metric: no metric named")
    return names


def _kind(metric: str) -> tuple[str, str, str]:
    if metric.startswith("component:"):
        c = metric.split(":", 1)[1]
        return "bar", f"mean reward on {c}", f"reward component: {c}"
    return PLOT_METRICS[metric]


def _per_problem(run: PlotRun, taus: Sequence[float], budgets: Sequence[int] = ()) -> dict[str, np.ndarray]:
    from vpo_harness.reports.pools import per_problem_metrics

    return per_problem_metrics(run.pools, run.ks, ["oracle"], 0, run.pools.metric_seed, taus, budgets)


def _est(values: np.ndarray) -> tuple[float, float]:
    from vpo_harness.harness.core.metrics import mean_se

    e = mean_se(values)
    return e.mean, e.stderr


def _series(run: PlotRun, metric: str, taus: Sequence[float]) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(x, mean, s.e.) of a line panel for one run; None when the run cannot draw it."""
    kind = _kind(metric)[0]
    if kind == "evolve":
        if run.evolve is not None:
            key = "best_vs_candidates" if metric == "evolve" else "solved_vs_candidates"
            ev = run.evolve.get("evolve") or {}
            cur = ev.get(key) or (ev.get("best_vs_iteration") if metric == "evolve" else None) or {}
        elif run.pools is not None and metric == "evolve":  # plain sampling: best@k at k candidates
            per = _per_problem(run, taus)
            cur = {"x": run.ks, "mean": [], "stderr": []}
            for k in run.ks:
                m, s = _est(per[f"best@{k}"])
                cur["mean"].append(m)
                cur["stderr"].append(s)
        elif run.pools is not None:  # solved = some candidate passes within k (pass@k)
            per = _per_problem(run, taus)
            cur = {"x": run.ks, "mean": [_est(per[f"pass@{k}"])[0] for k in run.ks],
                   "stderr": [_est(per[f"pass@{k}"])[1] for k in run.ks]}
        else:
            return None
        x, m, s = (np.asarray(cur.get(f, []), dtype=float) for f in ("x", "mean", "stderr"))
        return (x, m, np.nan_to_num(s)) if x.size else None
    if run.pools is None:
        return None
    if kind == "k":
        per = _per_problem(run, taus)
        name = {"best": "best@{}", "pass": "pass@{}", "pass^k": "pass^{}"}[metric]
        est = [_est(per[name.format(k)]) for k in run.ks]
        return np.array(run.ks, float), np.array([e[0] for e in est]), np.array([e[1] for e in est])
    if kind == "tau":
        # Cover@tau is a step function of tau (it drops at each problem's pass rate): a fine grid draws the steps
        grid = sorted({round(t, 6) for t in np.linspace(0.005, 1.0, 200)} | {float(t) for t in taus})
        from vpo_harness.harness.core.metrics import cover_at_tau

        est = [_est(cover_at_tau(run.pools.passed, t)) for t in grid]  # only this: no full metric pass per tau grid
        return np.array(grid), np.array([e[0] for e in est]), np.array([e[1] for e in est])
    if kind == "tokens":
        from vpo_harness.harness.core import metrics as hm

        maxima = [hm.chain_maxima(s, z) for s, z in zip(run.pools.scalars, run.pools.chain_sizes)]
        cur = hm.tokens_curve(maxima, run.pools.chain_tokens)
        if not cur["x"]:
            return None
        return np.array(cur["x"], float), np.array(cur["mean"], float), np.nan_to_num(np.array(cur["stderr"], float))
    return None


def _flat_limits(lo: float, hi: float, bounded: bool) -> tuple[float, float]:
    """y-limits with room around the data; a panel whose values are all 0 gets the metric's natural
    axis (0..1 for scores and rates) instead of matplotlib's -0.04..0.04 around nothing."""
    if not (lo == lo and hi == hi):
        return 0.0, 1.0
    if hi - lo < 1e-12 and abs(hi) < 1e-12:
        return ZERO_YLIM
    span = max(hi - lo, 0.1 * max(abs(hi), abs(lo)), 0.05)
    lo2, hi2 = lo - 0.08 * span, hi + 0.08 * span
    if lo >= 0 and lo2 < 0:  # non-negative values (bars, rates): the axis starts at 0
        lo2 = -0.02 * max(hi2, 1e-9)
    return lo2, hi2


def metric_figure(runs: Sequence[PlotRun], metrics: Sequence[str], title: str | None = None,
                  style: str = "default", taus: Sequence[float] | None = None, share_y: bool = True) -> Figure:
    """One panel per metric, one line (or bar) per run, ±1 standard-error bands named in the legend;
    panels share their y-limits unless ``share_y`` is False."""
    from matplotlib.patches import Patch

    from vpo_harness.harness.core.metrics import DEFAULT_TAUS

    taus = tuple(taus or DEFAULT_TAUS)
    st = STYLES[style]
    paper = style == "paper"
    # the colours are handed out over all the figure's runs, so a bar panel (evaluation runs only)
    # colours a run as the line panels next to it do; a paper figure takes a colour-blind-safe palette
    styles = paper_styles(len(runs)) if paper else run_styles(r.key or r.label for r in runs)
    colour = [s.colour if paper else (r.colour or s.colour) for r, s in zip(runs, styles)]
    dash = [s.dash if paper else "solid" for s in styles]
    cols = min(len(metrics), 2 if paper else 3)
    rows = (len(metrics) + cols - 1) // cols
    rc = {"font.size": st["font"], "axes.titlesize": st["font"], "axes.labelsize": st["font"],
          "legend.fontsize": st["font"] - 1.5, "xtick.labelsize": st["font"] - 1, "ytick.labelsize": st["font"] - 1,
          "lines.linewidth": st["lw"], "pdf.fonttype": 42, "ps.fonttype": 42, "svg.fonttype": "none"}
    width = st["w"] * cols if style != "paper" or cols == 1 else 6.9
    with plt.rc_context(rc):
        # paper: constrained layout keeps every label inside the figure and makes room for the legend
        # placed outside the panels, below them
        fig, axes = plt.subplots(rows, cols, figsize=(width, st["h"] * rows + (0.35 if paper else 0.0)),
                                 dpi=st["dpi"], squeeze=False, layout="constrained" if paper else None)
        limits: list[tuple[float, float]] = []
        bounded_all = True
        for ax, metric in zip(axes.ravel(), metrics):
            kind, ylabel, ptitle = _kind(metric)
            bounded_all &= metric in _BOUNDED
            lo, hi = np.inf, -np.inf
            drawn = 0
            if kind == "bar":
                vals, errs, names, cols = [], [], [], []
                for r, c in zip(runs, colour):
                    if r.pools is None:
                        continue
                    cols.append(c)
                    per = _per_problem(r, taus)
                    key = _BAR_KEYS.get(metric, metric)
                    m, s = _est(per.get(key, np.array([np.nan])))
                    vals.append(m)
                    errs.append(0.0 if s != s else s)
                    names.append(r.label)
                if not names:
                    raise ValueError(f"--metric {metric}: needs an evaluation run (evolve runs have no pools here)")
                x = np.arange(len(names))
                ax.bar(x, vals, yerr=errs, capsize=3, color=cols,
                       error_kw={"lw": st["lw"] * 0.8, **({"ecolor": "0.2"} if paper else {})})
                tilt = len(names) > 2
                if paper:  # the shared legend names the colours; tilted names ran into the y label
                    ax.set_xticks(x, [])
                else:
                    ax.set_xticks(x, names, rotation=15 if tilt else 0, ha="right" if tilt else "center")
                lo = min(0.0, float(np.nanmin(np.array(vals) - errs)))
                hi = max(0.0, float(np.nanmax(np.array(vals) + errs)))
                ax.set_title(ptitle + " (bars: ±1 s.e.)")
                drawn = len(names)
            else:
                for i, r in enumerate(runs):
                    ser = _series(r, metric, taus)
                    if ser is None:
                        continue
                    x, m, s = ser
                    dashed = kind == "evolve" and r.evolve is None
                    lab = r.label + (" (plain sampling: best@k)" if dashed and metric == "evolve" else
                                     " (plain sampling: pass@k)" if dashed else "")
                    marker = "o" if x.size <= 40 and kind != "tau" else None
                    ax.plot(x, m, ls="--" if dashed else dash[i], marker=marker, ms=st["ms"],
                            color=colour[i], label=lab, zorder=3)
                    ax.fill_between(x, m - s, m + s, color=colour[i], alpha=0.2, lw=0)
                    if r.evolve is not None and metric == "evolve-solved" and r.evolve.get("baseline"):
                        b = r.evolve["baseline"].get("solved_vs_candidates") or {}
                        bx, bm = np.asarray(b.get("x", []), float), np.asarray(b.get("mean", []), float)
                        if bx.size:
                            ax.plot(bx, bm, ls=":", color=colour[i], label=f"{r.label} (plain sampling)")
                    lo, hi = min(lo, float(np.nanmin(m - s))), max(hi, float(np.nanmax(m + s)))
                    drawn += 1
                if not drawn:
                    need = {"tokens": "completion token counts (the backend reported none)",
                            "evolve": "an evolve run or an evaluation run"}.get(kind, "an evaluation run")
                    raise ValueError(f"--metric {metric}: no run can draw it (needs {need})")
                if kind == "k":
                    k_axis(ax, sorted({k for r in runs for k in r.ks}))
                elif kind == "tau":
                    for t in taus:  # the thresholds tables report (--tau)
                        ax.axvline(t, color="0.5", lw=0.6, ls=":", zorder=1)
                    ax.set_xlabel("τ (per-problem pass-rate threshold)")
                    ax.set_xlim(0, 1.02)
                elif kind == "tokens":
                    ax.set_xscale("log", base=2)
                    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(
                        lambda v, _p: f"{v / 1000:g}k" if v >= 1000 else f"{v:g}"))
                    ax.set_xlabel("completion tokens per problem")
                else:  # candidates are counted: whole numbers only
                    ax.set_xlabel("candidates evaluated per problem")
                    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
                ax.set_title(ptitle)
                if not paper:  # a paper figure has one legend for all panels, outside them (below)
                    handles, labs = ax.get_legend_handles_labels()
                    handles.append(Patch(facecolor="0.6", alpha=0.35, lw=0))
                    labs.append("band: ±1 standard error")
                    ax.legend(handles, labs, loc="best")
            ax.set_ylabel(ylabel)
            ax.grid(alpha=0.3)
            limits.append((lo, hi))
        for ax in axes.ravel()[len(metrics):]:
            ax.axis("off")
        used: list[Axes] = list(axes.ravel()[:len(metrics)])
        if share_y and not paper:  # a paper figure's panels each show their own curves (their own limits)
            lo = min(a for a, _ in limits)
            hi = max(b for _, b in limits)
            ylim = _flat_limits(lo, hi, bounded_all)
            for ax in used:
                ax.set_ylim(*ylim)
        else:
            for ax, (lo, hi), metric in zip(used, limits, metrics):
                ax.set_ylim(*_flat_limits(lo, hi, metric in _BOUNDED))
        for ax, (lo, hi) in zip(used, limits):
            if hi - lo < 1e-12 and abs(hi) < 1e-12:
                ax.text(0.5, 0.5, ZERO_NOTE, transform=ax.transAxes, ha="center", color="0.35")
        if title:
            fig.suptitle(title)
        if paper:
            _figure_legend(fig, used, runs, colour, dash)
        else:
            fig.tight_layout()
    return fig


def _figure_legend(fig: Figure, used: Sequence[Axes], runs: Sequence[PlotRun], colour: Sequence[str],
                   dash: Sequence[str]) -> None:
    """One legend for every panel, outside the data (below the panels): each run once (a line, or a
    patch when only bars are drawn), the extra lines the panels drew (plain sampling), and the band."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    seen: dict[str, Any] = {}
    for ax in used:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    lines = bool(seen)
    for r, c, d in zip(runs, colour, dash):
        if r.label not in seen:
            seen[r.label] = Line2D([], [], color=c, ls=d) if lines else Patch(facecolor=c)
    if lines:  # (a bar panel's title says its error bars are ±1 s.e.)
        seen["±1 standard error"] = Patch(facecolor="0.6", alpha=0.35, lw=0)
    wide = fig.get_size_inches()[0] > 4  # a two-column figure: three entries a row; one column: two
    fig.legend(list(seen.values()), list(seen), loc="outside lower center", ncol=min(len(seen), 3 if wide else 2),
               frameon=False)


def plot_metrics(paths: Sequence[str | Path], out: str | Path, metric: str, labels: Sequence[str] | None = None,
                 title: str | None = None, style: str = "default", taus: Sequence[float] | None = None,
                 share_y: bool = True) -> Path:
    """:func:`metric_figure` of run folders, saved by extension (.pdf/.svg are vector, fonts embedded)."""
    if style not in STYLES:
        raise ValueError(f"--style: expected {' or '.join(STYLES)}, got {style!r}")
    runs = load_plot_runs(paths, labels, keep_labels=style == "paper")
    fig = metric_figure(runs, expand_metrics(metric, runs), title, style, taus, share_y)
    with plt.rc_context({"pdf.fonttype": 42, "ps.fonttype": 42, "svg.fonttype": "none"}):  # text stays text
        return _save(fig, out)
