"""Figures of evolve runs: fraction solved, best task scalar and the hypervolume of the reward vectors
found vs candidates evaluated (evolve solid, plain sampling of the same model at the same budget
dashed, one colour per run), computed from the stored rows of the run and of its ``baseline/``
(reports/evolve.py)."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence


def plot_evolve(runs: Sequence[str | Path], out: str | Path, labels: Sequence[str] | None = None,
                title: str | None = None) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from vpo_harness.harness.core.results import check_same_task
    from vpo_harness.reports.evolve import draw, draw_hypervolume, load_evolve, require_candidates

    if labels is not None and len(labels) != len(runs):
        raise ValueError(f"--labels has {len(labels)} names for {len(runs)} runs")
    check_same_task(runs)
    loaded = [load_evolve(r, labels[i] if labels else None) for i, r in enumerate(runs)]
    for r in loaded:
        require_candidates(r, "plot")
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.2))
    draw(axes[:2], loaded)
    draw_hypervolume(axes[2], loaded)
    f = loaded[0].facts
    fig.suptitle(title or f"vpo evolve on {f.get('task')} {f.get('split') or ''} "
                          f"({len(loaded[0].problem_ids)} problems), mean ± s.e.", fontsize=11)
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
