"""Figures of evolve runs: fraction solved and best task scalar vs candidates evaluated (evolve solid,
plain sampling of the same model at the same budget dashed, one colour per run)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import numpy as np


def is_evolve_run(folder: str | Path) -> bool:
    cfg = Path(folder) / "config.json"
    try:
        return json.loads(cfg.read_text()).get("kind") == "evolve"
    except (OSError, ValueError):
        return False


def _band(ax, cur: dict, label: str, color: str, style: str = "-") -> None:
    x = np.asarray(cur["x"], dtype=float)
    m = np.asarray(cur["mean"], dtype=float)
    se = np.asarray(cur["stderr"], dtype=float)
    ax.plot(x, m, style, color=color, label=label, lw=1.8)
    ax.fill_between(x, m - se, m + se, color=color, alpha=0.15, lw=0)


def plot_evolve(runs: Sequence[str | Path], out: str | Path, labels: Sequence[str] | None = None,
                title: str | None = None) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = []
    for r in runs:
        path = Path(r) / "results.json"
        if not path.exists():
            raise FileNotFoundError(f"{r}: no results.json yet (re-run the evolve command to finish it)")
        results.append(json.loads(path.read_text()))
    labels = list(labels) if labels else [f"{r['model']} ({r['prompt_mode']}, m={r['m']})" for r in results]
    if len(labels) != len(results):
        raise ValueError(f"--labels has {len(labels)} names for {len(results)} runs")
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for i, (res, lab) in enumerate(zip(results, labels)):
        c = colors[i % len(colors)]
        _band(a1, res["evolve"]["solved_vs_candidates"], f"{lab}: evolve", c)
        if res.get("baseline"):
            _band(a1, res["baseline"]["solved_vs_candidates"], f"{lab}: sampling", c, "--")
        if "best_vs_candidates" in res["evolve"]:
            _band(a2, res["evolve"]["best_vs_candidates"], f"{lab}: evolve", c)
            if res.get("baseline") and "best_vs_candidates" in res["baseline"]:
                _band(a2, res["baseline"]["best_vs_candidates"], f"{lab}: sampling (best@k)", c, "--")
        else:  # results written before best-vs-candidates existed
            _band(a2, res["evolve"]["best_vs_iteration"], lab, c)
    a1.set_xlabel("candidates evaluated per problem")
    a1.set_ylabel("fraction of problems solved")
    a1.set_title(f"solved ({results[0].get('solved_definition', 'passed')})", fontsize=9)
    a1.grid(alpha=0.3)
    a1.legend(fontsize=8)
    a2.set_xlabel("candidates evaluated per problem")
    a2.set_ylabel("best task scalar (mean over problems)")
    a2.grid(alpha=0.3)
    a2.legend(fontsize=8)
    n = results[0]["metrics"].get("n_problems", "?")
    fig.suptitle(title or f"vpo evolve on {results[0]['task']} ({n} problems), mean ± s.e.", fontsize=11)
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
