"""Figures for papers: best@k curves with standard-error bands, and per-run diversity."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import matplotlib

matplotlib.use("Agg")  # headless by default: plots are files, never windows
import matplotlib.ticker  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def _save(fig: plt.Figure, out: str | Path) -> Path:
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


def _readable_ylim(ax: plt.Axes, lows: list[float], highs: list[float]) -> bool:
    """Limits that keep a flat line visible, with a floor of 0.25 on the range so a flat zero reads as
    zero on a labelled scale (autoscaling put it on the axis edge or blew up rounding noise); returns
    True when every value is zero."""
    lo, hi = min(lows + [0.0]), max(highs + [0.0])
    span = max(hi - lo, 0.25)
    ax.set_ylim(lo - 0.06 * span, lo + 1.12 * span)
    return hi <= 0.0 and lo >= 0.0


def _curve(run: Any, metric: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ks, means, stderrs) of best@k or pass@k from the run's typed results (harness.results)."""
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
    """One line per run (LoadedRun from harness.results.load_run), shaded ±1 standard error, log2 k axis."""
    return _save(best_at_k_figure(runs, metric=metric, labels=labels, title=title), out)


def best_at_k_figure(runs: Sequence[Any], metric: str = "best", labels: Sequence[str] | None = None,
                     title: str | None = None) -> plt.Figure:
    """The figure of :func:`plot_best_at_k`: a tick at every plotted k, pool shapes in the legend, the
    band named (±1 standard error over problems), and a flat-zero metric still readable."""
    from matplotlib.patches import Patch

    if labels is not None and len(labels) != len(runs):
        raise ValueError(f"--labels has {len(labels)} names for {len(runs)} runs")
    fig, ax = plt.subplots(figsize=(5.5, 4.0), dpi=150)
    all_ks: set[int] = set()
    lows, highs = [], []
    for i, run in enumerate(runs):
        if run.summary is None:
            raise ValueError(f"{run.path}: no results.json (finish or resume the run first)")
        ks, mean, se = _curve(run, metric)
        if ks.size == 0:
            raise ValueError(f"{run.path}: results.json has no {metric}@k metrics")
        lab = _with_shape(labels[i], run) if labels else _label(run)
        (line,) = ax.plot(ks, mean, marker="o", ms=3, label=lab, zorder=3)
        se = np.nan_to_num(se)
        ax.fill_between(ks, mean - se, mean + se, color=line.get_color(), alpha=0.2, lw=0)
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
    ax.bar(range(len(names)), means, yerr=ses, capsize=4, color=[f"C{i}" for i in range(len(names))])
    ax.set_title("diversity (error bars: ±1 standard error)", fontsize=9)
    ax.set_xticks(range(len(names)), names, rotation=15, fontsize=8, ha="right")
    ax.set_ylabel("diversity (mean pairwise L1\nof reward vectors)")
    if _readable_ylim(ax, [0.0], [float(np.nanmax(np.array(means) + np.array(ses)))] if names else [0.0]):
        ax.text(0.5, 0.5, "diversity is 0 for every run", transform=ax.transAxes, ha="center", color="0.3")
    ax.grid(alpha=0.3, axis="y")
    return _save(fig, out)
