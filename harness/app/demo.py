"""The demo protocol: every bundled Maze checkpoint evaluated the paper's way, side by side.

Shared by `vpo demo` and ``harness/app/val_eval.py`` (the validation pick of the bundled RL step), so
the two can never drift apart.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Sequence

from vpo_harness.harness.core.config import RunConfig
from vpo_harness.harness.core.metrics import DEFAULT_KS as DEMO_KS
from vpo_harness.harness.core.models.zoo import BUNDLED_POLICIES, TINY_MAZE_DEFAULTS
from vpo_harness.harness.core.results import RunResults
from vpo_harness.training.advantages import MULTI_ANSWER

DEMO_POOL = DEMO_KS[-1]  # candidates per maze: 10 chains x 3 answers, or 30 samples
#: table label of a bundled policy (by training method)
LABELS: dict[str, str] = {"max_at_k": "Max@k"}


def demo_config(ckpt: Path | str, multi: bool, out: Path | str, limit: int | None, batch_size: int,
                seed: int = 0) -> RunConfig:
    """The paper's Maze protocol for one checkpoint: pool of 30 (multi-answer: 10 chains x 3 answers,
    single-answer: 30 samples), the task's temperature and top-p (the paper's 0.7 and 1.0), compact
    prompts, test split. For a bundled checkpoint this is the run the README Quickstart's
    ``vpo run --task maze --model hf:maze-tiny-<method> -n 10 -m 3`` (``-n 30 -m 1``) names: the
    runner identifies both by the zoo name and the resolved temperature (tests/harness/test_identity.py)."""
    m = 3 if multi else 1
    return RunConfig.of(
        task="maze", split="test", prompt_style=TINY_MAZE_DEFAULTS.prompt_style, m=m, n=DEMO_POOL // m,
        ks=DEMO_KS, max_tokens=TINY_MAZE_DEFAULTS.max_tokens(m), seed=seed,
        model=f"hf:{ckpt}", model_args={"batch_size": batch_size}, out=str(out), limit=limit, progress=True)


def demo_configs(checkpoints: Path, out: Path, limit: int | None, batch_size: int, seed: int = 0,
                 only: Sequence[str] | None = None) -> list[tuple[str, RunConfig]]:
    """The demo protocol for every bundled checkpoint found under ``checkpoints`` (``only``: methods
    to keep, None or containing "all" for every one)."""
    keep = None if not only or "all" in only else {o.lower().replace("max@k", "max_at_k") for o in only}
    cfgs = []
    for name in BUNDLED_POLICIES:
        if keep is not None and name not in keep:
            continue
        ck = checkpoints / f"maze-tiny-{name}"
        if (ck / "config.json").exists():
            cfgs.append((LABELS.get(name, name.upper()), demo_config(ck, name in MULTI_ANSWER, out / f"maze-tiny-{name}", limit,
                                            batch_size, seed)))
    return cfgs


def format_table(rows: Sequence[tuple[str, RunResults]], ks: Sequence[int] = DEMO_KS) -> str:
    """Markdown table: best@k at every k, pass@1 and pass@k_max, diversity, mean task scalar."""
    from vpo_harness.reports.tables import write_table

    head = ["model"] + [f"best@{k}" for k in ks] + ["pass@1", f"pass@{ks[-1]}", "diversity", "mean"]
    lines = [[name] + [res.best.get(k) for k in ks] + [res.pass_at.get(1), res.pass_at.get(ks[-1]),
                                                        res.diversity, res.mean_scalar] for name, res in rows]
    return write_table(head, [[("-" if c is None else c) for c in ln] for ln in lines], "markdown")


def run_demo(checkpoints: Path, out: Path, *, limit: int | None = None, batch_size: int = 200, seed: int = 0,
             only: Sequence[str] | None = ("vpo", "grpo"), cache: bool | None = None) -> Path:
    """Evaluate the bundled checkpoints, print the table, write demo_table.md, demo_metrics.json, plots.
    ``cache``: the generation cache (``--cache/--no-cache``; None: on, the checkpoints are seeded hf)."""
    from vpo_harness.harness.core.results import load_run
    from vpo_harness.harness.eval.runner import run

    cfgs = demo_configs(checkpoints, out, limit, batch_size, seed, only)
    if not cfgs:
        raise SystemExit(f"vpo demo: no bundled checkpoints ({', '.join(only or ['all'])}) under {checkpoints}")
    runs, rows = [], []
    t0 = time.time()
    for name, cfg in cfgs:
        t = time.time()
        cfg.execution.cache = cache
        folder = run(cfg)
        loaded = load_run(folder)
        runs.append((name, loaded))
        rows.append((name, loaded.summary))
        print(f"{name}: {folder} ({time.time() - t:.0f}s)")
    table = format_table(rows)
    print(table)
    out.mkdir(parents=True, exist_ok=True)
    (out / "demo_table.md").write_text(table + "\n")
    (out / "demo_metrics.json").write_text(json.dumps({n: r.raw["metrics"] for n, r in rows}, indent=2))
    from vpo_harness.reports.plots import plot_best_at_k, plot_diversity

    labels = [n for n, _ in runs]
    p1 = plot_best_at_k([r for _, r in runs], out / "best_at_k.png", labels=labels,
                        title=f"Maze test ({len(runs[0][1].chains.problem_id.unique())} mazes), pool of 30")
    p2 = plot_diversity([r for _, r in runs], out / "diversity.png", labels=labels)
    print(f"plots: {p1} {p2}")
    from vpo_harness.reports.report import build_report

    # GRPO first: the report's paired comparison is every run minus the first one
    order = sorted(range(len(runs)), key=lambda i: runs[i][0] != "GRPO")
    rep = build_report([runs[i][1].path for i in order], out / "report.html", labels=[labels[i] for i in order])
    print(f"report: {rep}")
    print(f"demo wall time: {time.time() - t0:.0f}s")
    return out
