"""Choose a Maze mutation operator's RL snapshot on validation mazes, by a rule fixed before any test run.

The rule: every snapshot (``step_NNNN/`` of an RL run with ``--snapshots true``, plus the warm start as
step 0) runs `vpo evolve --prompt-mode evolve` with its m on the first ``--mazes`` mazes of the `val`
split (base seed 777000, used by neither training nor test) at ``--budget`` candidates per maze; the
chosen snapshot has the highest mean best task scalar at that budget, ties to the earlier step.

    python bench/operator_snapshots.py --run runs/train/rl-evo-vpo -m 3 --warm-start runs/train/sft-evo/checkpoint
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout this file sits in runs (its vpo_harness/)

REPO = Path(__file__).resolve().parents[1]
#: the RL runs' own generation budgets (single answer, chain of 3); a warm start's record has none
TOKENS = (40, 110)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", required=True, help="an RL run folder holding step_NNNN/ snapshots")
    ap.add_argument("-m", type=int, required=True, help="routes per call (VPO operator 3, GRPO operator 1)")
    ap.add_argument("--warm-start", default=None, help="also score the warm start as step 0")
    ap.add_argument("--mazes", type=int, default=16)
    ap.add_argument("--budget", type=int, default=30)
    ap.add_argument("--out", default=None, help="default: <run>/val-evolve")
    a = ap.parse_args()
    run = Path(a.run)
    snaps = sorted((int(p.name[5:]), p) for p in run.glob("step_*") if p.name[5:].isdigit())
    if a.warm_start:
        snaps.insert(0, (0, Path(a.warm_start)))
    if not snaps:
        raise SystemExit(f"{run}: no step_NNNN/ snapshots (train with --snapshots true)")
    out = Path(a.out) if a.out else run / "val-evolve"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    table = []
    for step, path in snaps:
        folder = out / f"step_{step:04d}"
        cmd = [sys.executable, "-m", "vpo_harness.harness.app.cli", "evolve", "--task", "maze", "--split", "val",
               "--limit", str(a.mazes), "--model", f"hf:{path.resolve()}", "--prompt-mode", "evolve",
               "--prompt-style", "compact", "-m", str(a.m), "--iterations", str(a.budget // a.m - 1),
               "--max-tokens", str(TOKENS[a.m > 1]), "--no-baseline", "--no-progress", "--out", str(folder)]
        print("$ vpo " + " ".join(cmd[3:]), flush=True)
        subprocess.run(cmd, cwd=REPO, check=True, env=env)
        r = json.loads((folder / "results.json").read_text())
        best = r["evolve"]["best_vs_candidates"]
        i = best["x"].index(a.budget) if a.budget in best["x"] else -1
        table.append((step, best["mean"][i], best["stderr"][i], r["evolve"]["solved"]["mean"]))
    chosen = max(table, key=lambda t: (t[1], -t[0]))
    from vpo_harness.harness.core.metrics import Estimate
    from vpo_harness.reports.tables import write_table

    print(write_table(["step", f"best scalar @{a.budget} (val)", "solved"],
                      [[f"{step}{' **(chosen)**' if step == chosen[0] else ''}", Estimate(mean, se, a.mazes),
                        float(solved)] for step, mean, se, solved in table], "markdown"))
    (out / "choice.json").write_text(json.dumps({"table": table, "chosen_step": chosen[0], "rule":
                                                 "highest mean best scalar at the budget on val; ties: earlier"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
