"""Figures for papers: best@k curves with standard-error bands, and per-run diversity."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import matplotlib

matplotlib.use("Agg")  # headless by default: plots are files, never windows
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def _save(fig: plt.Figure, out: str | Path) -> Path:
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    plt.close(fig)
    return out


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
    if labels is not None and len(labels) != len(runs):
        raise ValueError(f"--labels has {len(labels)} names for {len(runs)} runs")
    fig, ax = plt.subplots(figsize=(5.5, 4.0), dpi=150)
    for i, run in enumerate(runs):
        if run.summary is None:
            raise ValueError(f"{run.path}: no results.json (finish or resume the run first)")
        ks, mean, se = _curve(run, metric)
        if ks.size == 0:
            raise ValueError(f"{run.path}: results.json has no {metric}@k metrics")
        lab = labels[i] if labels else _label(run)
        (line,) = ax.plot(ks, mean, marker="o", ms=3, label=lab)
        ax.fill_between(ks, mean - se, mean + se, color=line.get_color(), alpha=0.2, lw=0)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("k (candidates)")
    ax.set_ylabel(f"{metric}@k" + (" (task scalar)" if metric == "best" else ""))
    tasks = sorted({r.summary.task for r in runs})
    ax.set_title(title or f"{metric}@k on {', '.join(tasks)}")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    return _save(fig, out)


def plot_diversity(runs: Sequence[Any], out: str | Path, labels: Sequence[str] | None = None) -> Path:
    """Bar chart of mean pairwise L1 reward distance per run (the paper's diversity column)."""
    fig, ax = plt.subplots(figsize=(4.5, 3.5), dpi=150)
    names, means, ses = [], [], []
    for i, run in enumerate(runs):
        d = run.summary.diversity if run.summary is not None else None
        names.append(labels[i] if labels else _label(run))
        means.append(d.mean if d is not None else np.nan)
        ses.append(d.stderr if d is not None else 0.0)
    ax.bar(range(len(names)), means, yerr=ses, capsize=4, color=[f"C{i}" for i in range(len(names))])
    ax.set_xticks(range(len(names)), names, rotation=15, fontsize=8)
    ax.set_ylabel("diversity (mean pairwise L1 of reward vectors)")
    ax.grid(alpha=0.3, axis="y")
    return _save(fig, out)
