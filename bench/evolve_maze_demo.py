"""The CPU evolve demo: bundled maze-tiny-vpo (-m 3) and maze-tiny-grpo (-m 1) inside
`vpo evolve --prompt-mode task` on the hardest test mazes of a demo-protocol run, at equal candidate
budgets, each next to plain sampling of the same model at the same budget.

    python bench/evolve_maze_demo.py --out runs/evo-demo [--budget 30] [--hardest 32] [--task-args ...]

Every step is a plain `vpo` command (printed before it runs), so the figures in docs/results.md can be
reproduced by hand. "Solved" for Maze = reaching the maze's optimal task scalar (exact search).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout this file sits in runs (its vpo_harness/)

REPO = Path(__file__).resolve().parents[1]


def vpo(*args: str) -> float:
    cmd = [sys.executable, "-m", "vpo_harness.harness.app.cli", *args]
    print("$ vpo " + " ".join(args), flush=True)
    t0 = time.time()
    # one torch thread: on a shared 2-core machine torch's default (spin-waiting on every core) is
    # many times slower than one thread; `vpo evolve`'s own server child already uses one
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    subprocess.run(cmd, cwd=REPO, check=True, env=env)
    return time.time() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="runs/evo-demo")
    ap.add_argument("--budget", type=int, default=30, help="candidates per maze for every method")
    ap.add_argument("--hardest", type=int, default=32)
    ap.add_argument("--task-args", default="", help="maze options, e.g. parse=lenient,reward_mode=linear")
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--rank-runs", default=None, help="existing demo-protocol runs to rank mazes by (comma-separated)")
    ap.add_argument("--progress", action="store_true")
    a = ap.parse_args()
    if a.budget % 3:
        raise SystemExit("--budget must be a multiple of 3 (VPO writes chains of 3 answers)")
    out = Path(a.out)
    ta = ["--task-args", a.task_args] if a.task_args else []
    quiet = [] if a.progress else ["--no-progress"]
    times: dict[str, float] = {}
    if a.rank_runs:
        rank = a.rank_runs
    else:  # the demo protocol: pool of 30 per maze, 10 chains x 3 (VPO) or 30 samples (GRPO)
        for name, m, n, mt in (("vpo", 3, 10, 110), ("grpo", 1, 30, 40)):
            times[f"rank-{name}"] = vpo("run", "--task", "maze", *ta, "--model", f"hf:maze-tiny-{name}", "-m", str(m),
                                        "-n", str(n), "--prompt-style", "compact", "--max-tokens", str(mt),
                                        "--temperature", "0.7", "--top-p", "1.0", "--model-args", "batch_size=100",
                                        "--out", str(out / f"rank-{name}"), "--no-cache", *quiet)
        rank = f"{out / 'rank-vpo'},{out / 'rank-grpo'}"
    runs = []
    for name, m in (("vpo", 3), ("grpo", 1)):
        folder = out / f"evo-{name}"
        times[f"evolve-{name}"] = vpo("evolve", "--task", "maze", *ta, "--model", f"hf:maze-tiny-{name}",
                                      "--prompt-mode", "task", "-m", str(m), "--iterations", str(a.budget // m - 1),
                                      "--problems", f"hardest:{a.hardest}@{rank}", "--concurrency", str(a.concurrency),
                                      "--out", str(folder), *quiet)
        runs.append(folder)
    vpo("plot", *map(str, runs), "--labels", "maze-tiny-vpo (m=3),maze-tiny-grpo (m=1)",
        "--out", str(out / "evolve_maze.png"))
    from vpo_harness.harness.core.metrics import Estimate
    from vpo_harness.reports.tables import as_estimate, write_table

    head = ["model", "candidates/maze", "solved: evolve", "solved: plain sampling", "best scalar: evolve",
            "best scalar: plain sampling (best@k)"]
    rows = []
    for folder in runs:
        r = json.loads((folder / "results.json").read_text())
        ev, b = r["evolve"]["solved"], r["baseline"]["solved"]
        best, bb = r["evolve"]["best_vs_candidates"], r["baseline"]["best_vs_candidates"]
        # the curve's last point: the whole budget (a curve without per-point counts is one estimate)
        last = lambda c: Estimate(c["mean"][-1], c["stderr"][-1], int((c.get("n") or [1])[-1]))  # noqa: E731
        rows.append([f"{r['model']} (m={r['m']})", r["pool_size"], as_estimate(ev), as_estimate(b), last(best),
                     last(bb)])
    text = write_table(head, rows, "markdown")
    print(text)
    print("wall time (s): " + ", ".join(f"{k} {v:.0f}" for k, v in times.items()))
    (out / "evolve_table.md").write_text(text + "\n\nwall time (s): " +
                                         ", ".join(f"{k} {v:.0f}" for k, v in times.items()) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
