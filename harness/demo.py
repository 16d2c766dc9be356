"""The demo protocol: every bundled Maze checkpoint evaluated the paper's way, side by side.

Shared by `vpo demo` and ``training/val_eval.py`` (the validation pick of the bundled RL step), so
the two can never drift apart.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Sequence

from harness.runner import RunConfig
from training.advantages import MULTI_ANSWER

DEMO_KS = (1, 2, 4, 8, 16, 30)
#: bundled checkpoint suffix (= training method) -> table label
DEMO_METHODS: dict[str, str] = {"vpo": "VPO", "grpo": "GRPO", "multi_rlvr": "MULTI_RLVR", "max_at_k": "Max@k"}


def demo_config(ckpt: Path | str, multi: bool, out: Path | str, limit: int | None, batch_size: int,
                seed: int = 0) -> RunConfig:
    """The paper's Maze protocol for one checkpoint: pool of 30 (multi-answer: 10 chains x 3 answers,
    single-answer: 30 samples), temperature 0.7, top-p 1.0, compact prompts, test split."""
    return RunConfig(
        task="maze", split="test", prompt_style="compact", m=3 if multi else 1, n=10 if multi else 30,
        ks=DEMO_KS, temperature=0.7, top_p=1.0, max_tokens=110 if multi else 40, seed=seed,
        model=f"hf:{ckpt}", model_args={"batch_size": batch_size}, out=str(out), limit=limit, progress=True)


def demo_configs(checkpoints: Path, out: Path, limit: int | None, batch_size: int,
                 seed: int = 0) -> list[tuple[str, RunConfig]]:
    """The demo protocol for every bundled checkpoint found under ``checkpoints``."""
    cfgs = []
    for name, label in DEMO_METHODS.items():
        ck = checkpoints / f"maze-tiny-{name}"
        if (ck / "config.json").exists():
            cfgs.append((label, demo_config(ck, name in MULTI_ANSWER, out / f"maze-tiny-{name}", limit,
                                            batch_size, seed)))
    return cfgs


def format_table(rows: list[tuple[str, dict[str, Any]]], ks: tuple[int, ...] = DEMO_KS) -> str:
    head = ["model"] + [f"best@{k}" for k in ks] + ["pass@1", "pass@30", "diversity", "mean"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, mt in rows:
        def g(key: str) -> str:
            v = mt.get(key, {})
            return f"{v['mean']:.3f}±{v['stderr']:.3f}" if v else "-"
        lines.append("| " + " | ".join([name] + [g(f"best@{k}") for k in ks]
                                       + [g("pass@1"), g(f"pass@{ks[-1]}"), g("diversity"), g("mean_scalar")]) + " |")
    return "\n".join(lines)


def run_demo(checkpoints: Path, out: Path, *, limit: int | None = None, batch_size: int = 200, seed: int = 0,
             only: Sequence[str] | None = ("vpo", "grpo")) -> Path:
    """Evaluate the bundled checkpoints, print the table, write demo_table.md, demo_metrics.json, plots."""
    from harness.runner import run
    from harness.store import load_run

    cfgs = demo_configs(checkpoints, out, limit, batch_size, seed)
    if not cfgs:
        raise SystemExit(f"vpo demo: no bundled checkpoints under {checkpoints}")
    if only and "all" not in only:
        keep = {o.lower().replace("max_at_k", "max@k") for o in only}
        cfgs = [(n, c) for n, c in cfgs if n.lower() in keep]
    runs, rows = [], []
    t0 = time.time()
    for name, cfg in cfgs:
        t = time.time()
        folder = run(cfg)
        loaded = load_run(folder)
        runs.append((name, loaded))
        rows.append((name, loaded.results["metrics"]))
        print(f"{name}: {folder} ({time.time() - t:.0f}s)")
    table = format_table(rows)
    print(table)
    out.mkdir(parents=True, exist_ok=True)
    (out / "demo_table.md").write_text(table + "\n")
    (out / "demo_metrics.json").write_text(json.dumps({n: m for n, m in rows}, indent=2))
    from reports.plots import plot_best_at_k, plot_diversity

    labels = [n for n, _ in runs]
    p1 = plot_best_at_k([r for _, r in runs], out / "best_at_k.png", labels=labels,
                        title=f"Maze test ({len(runs[0][1].chains.problem_id.unique())} mazes), pool of 30")
    p2 = plot_diversity([r for _, r in runs], out / "diversity.png", labels=labels)
    print(f"plots: {p1} {p2}")
    print(f"demo wall time: {time.time() - t0:.0f}s")
    return out
