"""The paper's search experiment in small: two Maze mutation operators (VPO-trained, m = 3; GRPO-trained,
m = 1) inside `vpo evolve --prompt-mode evolve`, each next to plain sampling of the same operator at the
same candidate budget (the evolve run's own `baseline/`), on two sets of 32 mazes:

- ``test-hardest``: the 32 test mazes with the lowest best@30 in the `vpo demo` runs (mean of its VPO and
  GRPO runs; `--rank-runs`), the set the issue names;
- ``fresh``: 32 mazes of a base seed used by neither training (42), snapshot choice (val, 777000) nor
  test (4242): ``--fresh-seed`` (default 900000).

    python bench/evolve_operators.py --out runs/evo-operators --rank-runs runs/demo/maze-tiny-vpo,runs/demo/maze-tiny-grpo

Every step is a plain `vpo` command, printed before it runs. Hypotheses, stated before any run: (H1)
evolve beats plain sampling for each operator; (H2) the VPO operator beats the GRPO operator at the
largest budget. Prints, per set: solved and best scalar at budgets 1..B (mean ± s.e.), paired 95%
bootstrap intervals over mazes (10,000 resamples, seed 0) with win/tie/loss for the three contrasts,
and the mazes solved by one arm only; writes ``<out>/operators.md`` and ``<out>/operators.png``.
"Solved" = reaching the maze's optimal task scalar (exact search, ``search/solved.py``).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
ARMS = ("evolve-vpo", "sample-vpo", "evolve-grpo", "sample-grpo")
CONTRASTS = (("evolve-vpo", "sample-vpo"), ("evolve-grpo", "sample-grpo"), ("evolve-vpo", "evolve-grpo"))


def vpo(*args: str) -> float:
    print("$ vpo " + " ".join(args), flush=True)
    t0 = time.time()
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    subprocess.run([sys.executable, "-m", "harness.app.cli", *args], cwd=REPO, check=True, env=env)
    return time.time() - t0


def _rows(folder: Path) -> list[dict[str, Any]]:
    from harness.core.store import latest_rows

    return [r for r in latest_rows(folder) if not r.get("error")]


def per_maze(folder: Path, budget: int, thr: dict[str, float], ids: list[str], evolve: bool) -> tuple[np.ndarray, np.ndarray]:
    """(P, budget) best scalar so far and solved-so-far per maze. Evolve: candidates in the order the
    search evaluated them. Sampling: the unbiased expectation over draws without replacement from the
    pool (best@c, and solved-within-c as pass@c of the solved flags)."""
    from harness.core.metrics import best_at_k, pass_at_k

    best = np.full((len(ids), budget), np.nan)
    solved = np.full((len(ids), budget), np.nan)
    by: dict[str, list[dict[str, Any]]] = {}
    for r in _rows(folder):
        by.setdefault(r["problem_id"], []).append(r)
    for i, pid in enumerate(ids):
        rs = by.get(pid, [])
        if evolve:
            rs = sorted(rs, key=lambda r: (int(r["iteration"]), int(r["answer_index"])))
            sc = np.array([float(r["scalars"][0]) for r in rs])[:budget]
            if sc.size:
                best[i, : sc.size] = np.maximum.accumulate(sc)
                solved[i, : sc.size] = np.maximum.accumulate(sc >= thr[pid] - 1e-6)
        else:
            sc = np.array([float(s) for r in sorted(rs, key=lambda r: int(r["chain_index"])) for s in r["scalars"]])
            n = min(sc.size, budget)
            for c in range(1, n + 1):
                best[i, c - 1] = best_at_k([sc], c)[0]
                solved[i, c - 1] = pass_at_k([sc >= thr[pid] - 1e-6], c)[0]
    return best, solved


def analyse(folders: dict[str, Path], budget: int, ids: list[str], thr: dict[str, float]) -> tuple[str, dict[str, Any]]:
    from harness.core.metrics import mean_se
    from reports.compare import paired_bootstrap

    curves = {a: per_maze(f, budget, thr, ids, a.startswith("evolve")) for a, f in folders.items()}
    marks = sorted({b for b in (1, 3, 10, 30, 60, budget) if b <= budget})
    from reports.tables import format_number, write_table

    arm_rows = []
    out: dict[str, Any] = {"budgets": marks, "arms": {}, "contrasts": {}}
    for a in ARMS:
        best, solved = curves[a]
        s = [mean_se(solved[:, b - 1]) for b in marks]
        v = [mean_se(best[:, b - 1]) for b in marks]
        out["arms"][a] = {"solved": [e.as_dict() for e in s], "best": [e.as_dict() for e in v]}
        arm_rows.append([a, *s, *v])
    lines = [write_table(["arm"] + [f"solved@{b}" for b in marks] + [f"best@{b}" for b in marks], arm_rows,
                         "markdown")]
    lines += ["", f"Paired differences at the largest budget ({budget} candidates per maze), 95% bootstrap "
              "interval over mazes, win/tie/loss:", ""]
    contrast_rows = []
    for a, b in CONTRASTS:
        cells = []
        for j in (1, 0):  # solved, then best
            d = curves[a][j][:, -1] - curves[b][j][:, -1]
            lo, hi = paired_bootstrap(d[None, :])
            w, t, lo_n = int((d > 1e-9).sum()), int((np.abs(d) <= 1e-9).sum()), int((d < -1e-9).sum())
            cells += [f"{format_number(float(np.nanmean(d)), sign=True)} [{format_number(lo[0], sign=True)}, "
                      f"{format_number(hi[0], sign=True)}]", f"{w}/{t}/{lo_n}"]
            out["contrasts"][f"{a} - {b}:{'solved' if j else 'best'}"] = {
                "mean": float(np.nanmean(d)), "ci": [float(lo[0]), float(hi[0])], "wtl": [w, t, lo_n]}
        contrast_rows.append([f"{a} − {b}", *cells])
    lines.append(write_table(["contrast", "solved diff [CI]", "w/t/l", "best diff [CI]", "w/t/l"], contrast_rows,
                             "markdown", align="lllll"))
    only = {}
    for a in ARMS:
        mine = {pid for i, pid in enumerate(ids) if curves[a][1][i, -1] >= 1 - 1e-9}
        others = {pid for o in ARMS if o != a for i, pid in enumerate(ids) if curves[o][1][i, -1] >= 1 - 1e-9}
        only[a] = sorted(mine - others)
    out["solved_by_one_arm_only"] = only
    lines += ["", "Mazes solved by one arm only (sampling arms: solved with certainty in the pool): " +
              "; ".join(f"{a}: {', '.join(v) if v else 'none'}" for a, v in only.items())]
    return "\n".join(lines), {**out, "_curves": curves}


def plot(results: dict[str, dict[str, Any]], budget: int, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    sets = list(results)
    fig, axes = plt.subplots(2, len(sets), figsize=(5.2 * len(sets), 7.2), squeeze=False)
    style = {"evolve-vpo": ("C0", "-"), "sample-vpo": ("C0", ":"), "evolve-grpo": ("C3", "-"), "sample-grpo": ("C3", ":")}
    xs = np.arange(1, budget + 1)
    for c, name in enumerate(sets):
        curves = results[name]["_curves"]
        for r, (j, label) in enumerate(((1, "solved (fraction of mazes)"), (0, "best task scalar"))):
            ax = axes[r][c]
            for a in ARMS:
                v = curves[a][j]
                m = np.nanmean(v, axis=0)
                se = np.nanstd(v, axis=0, ddof=1) / np.sqrt(np.sum(~np.isnan(v), axis=0).clip(min=1))
                col, ls = style[a]
                ax.plot(xs, m, color=col, ls=ls, label=a)
                ax.fill_between(xs, m - se, m + se, color=col, alpha=0.12)
            ax.set_xlabel("candidates per maze")
            ax.set_ylabel(label)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_title(f"{name} (32 mazes; bands: ±1 s.e.)")
            ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=130)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="runs/evo-operators")
    ap.add_argument("--vpo-model", default="hf:maze-tiny-evo-vpo")
    ap.add_argument("--grpo-model", default="hf:maze-tiny-evo-grpo")
    ap.add_argument("--budget", type=int, default=90, help="candidates per maze for every arm (multiple of 3)")
    ap.add_argument("--rank-runs", default="runs/demo/maze-tiny-vpo,runs/demo/maze-tiny-grpo",
                    help="the `vpo demo` runs whose lowest best@30 mazes form the test set")
    ap.add_argument("--fresh-seed", type=int, default=900000)
    ap.add_argument("--sets", default="test-hardest,fresh")
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--parallel", type=int, default=None, help="iterations of one maze in flight (vpo evolve --parallel)")
    ap.add_argument("--progress", action="store_true")
    a = ap.parse_args()
    if a.budget % 3:
        raise SystemExit("--budget must be a multiple of 3 (the VPO operator writes chains of 3 routes)")
    out = Path(a.out)
    quiet = [] if a.progress else ["--no-progress"]
    par = ["--parallel", str(a.parallel)] if a.parallel else []
    from benchmarks import get_task
    from search.solved import thresholds

    results: dict[str, dict[str, Any]] = {}
    texts = []
    times: dict[str, float] = {}
    for name in a.sets.split(","):
        if name == "test-hardest":
            sel, ta, split = ["--problems", f"hardest:32@{a.rank_runs}"], [], "test"
        elif name == "fresh":
            sel, ta, split = ["--problems", "all"], ["--task-args", f"base_seed={a.fresh_seed},n=32"], "test"
        else:
            raise SystemExit(f"unknown set {name!r}: test-hardest, fresh")
        folders: dict[str, Path] = {}
        for op, model, m in (("vpo", a.vpo_model, 3), ("grpo", a.grpo_model, 1)):
            folder = out / name / f"evolve-{op}"
            times[f"{name}/{op}"] = vpo("evolve", "--task", "maze", *ta, "--split", split, "--model", model,
                                        "--prompt-mode", "evolve", "--prompt-style", "compact", "-m", str(m),
                                        "--max-tokens", "110" if m > 1 else "40",
                                        "--iterations", str(a.budget // m - 1), *sel,
                                        "--concurrency", str(a.concurrency), *par, "--out", str(folder), *quiet)
            folders[f"evolve-{op}"], folders[f"sample-{op}"] = folder, folder / "baseline"
        ids = json.loads((folders["evolve-vpo"] / "config.json").read_text())["identity"]["problems"]["ids"]
        task = get_task("maze", **({"base_seed": a.fresh_seed, "n": 32} if name == "fresh" else {}))
        problems = [p for p in task.load(split) if p.id in set(ids)]
        thr = thresholds(task, problems)
        text, res = analyse(folders, a.budget, ids, thr)
        results[name] = res
        texts.append(f"### {name}\n\n{text}\n")
        print(f"\n### {name}\n{text}\n", flush=True)
    plot(results, a.budget, out / "operators.png")
    report = "\n".join(texts) + "\nwall time (s): " + ", ".join(f"{k} {v:.0f}" for k, v in times.items()) + "\n"
    (out / "operators.md").write_text(report)
    (out / "operators.json").write_text(json.dumps({k: {kk: vv for kk, vv in v.items() if kk != "_curves"}
                                                    for k, v in results.items()}, indent=2))
    print(f"wrote {out / 'operators.md'} and {out / 'operators.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
