"""The paper's search experiment in small: two Maze mutation operators (VPO-trained, m = 3; GRPO-trained,
m = 1) inside `vpo evolve --prompt-mode evolve`, each next to plain sampling of the same operator at the
same candidate budget (the evolve run's own `baseline/`), on two sets of 32 mazes:

- ``test-hardest``: the 32 test mazes with the lowest best@30 in the `vpo demo` runs (mean of its VPO and
  GRPO runs; `--rank-runs`), the set the issue names;
- ``fresh``: 32 mazes of a base seed used by neither training (42), snapshot choice (val, 777000) nor
  test (4242): ``--fresh-seed`` (default 900000).

    python bench/evolve_operators.py --out runs/evo-operators --rank-runs runs/demo/maze-tiny-vpo,runs/demo/maze-tiny-grpo
    python bench/evolve_operators.py --out runs/evo-operators-fresh3 --sets fresh --fresh-seed 910000,920000,930000

With several fresh seeds each is its own set of 32 mazes (``fresh-s<seed>``), reported on its own and pooled.

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
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.search_arms import curves_of, pair, plot as plot_arms, pool, summarize, vpo  # noqa: E402

ARMS = ("evolve-vpo", "sample-vpo", "evolve-grpo", "sample-grpo")
CONTRASTS = (("evolve-vpo", "sample-vpo"), ("evolve-grpo", "sample-grpo"), ("evolve-vpo", "evolve-grpo"))
STYLE = {"evolve-vpo": ("C0", "-"), "sample-vpo": ("C0", ":"), "evolve-grpo": ("C3", "-"), "sample-grpo": ("C3", ":")}


def analyse(folders: dict[str, Path], budget: int, ids: list[str], thr: dict[str, float]) -> tuple[str, dict[str, Any]]:
    return summarize(curves_of(folders, budget, ids, thr), ids, budget, ARMS, [pair(a, b) for a, b in CONTRASTS])


def plot(results: dict[str, dict[str, Any]], budget: int, path: Path) -> None:
    plot_arms(results, budget, path, ARMS, STYLE)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="runs/evo-operators")
    ap.add_argument("--vpo-model", default="hf:maze-tiny-evo-vpo")
    ap.add_argument("--grpo-model", default="hf:maze-tiny-evo-grpo")
    ap.add_argument("--budget", type=int, default=90, help="candidates per maze for every arm (multiple of 3)")
    ap.add_argument("--rank-runs", default="runs/demo/maze-tiny-vpo,runs/demo/maze-tiny-grpo",
                    help="the `vpo demo` runs whose lowest best@30 mazes form the test set")
    ap.add_argument("--fresh-seed", default="900000",
                    help="base seed(s) of the fresh set: 900000, or 910000,920000,930000 for one set of 32 mazes "
                         "per seed (fresh-s<seed>), reported each and pooled")
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
    from vpo_harness.benchmarks import get_task
    from vpo_harness.search.solved import thresholds

    results: dict[str, dict[str, Any]] = {}
    texts = []
    times: dict[str, float] = {}
    fresh_seeds = [int(x) for x in str(a.fresh_seed).split(",") if x.strip()]
    sets: list[tuple[str, int | None]] = []
    for name in a.sets.split(","):
        if name == "test-hardest":
            sets.append((name, None))
        elif name == "fresh":
            sets += [("fresh" if len(fresh_seeds) == 1 else f"fresh-s{s}", s) for s in fresh_seeds]
        else:
            raise SystemExit(f"unknown set {name!r}: test-hardest, fresh")
    for name, seed in sets:
        if seed is None:
            sel, ta, split = ["--problems", f"hardest:32@{a.rank_runs}"], [], "test"
        else:
            sel, ta, split = ["--problems", "all"], ["--task-args", f"base_seed={seed},n=32"], "test"
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
        task = get_task("maze", **({"base_seed": seed, "n": 32} if seed is not None else {}))
        problems = [p for p in task.load(split) if p.id in set(ids)]
        thr = thresholds(task, problems)
        text, res = analyse(folders, a.budget, ids, thr)
        res["_ids"] = ids
        results[name] = res
        texts.append(f"### {name}\n\n{text}\n")
        print(f"\n### {name}\n{text}\n", flush=True)
    if len(results) > 1:  # a claim holds only over several sets: every set above, and their pool
        ids = [i for r in results.values() for i in r["_ids"]]
        text, res = summarize(pool([r["_curves"] for r in results.values()]), ids, a.budget, ARMS,
                              [pair(x, y) for x, y in CONTRASTS])
        name = "pool"  # of every set above
        results[name] = res
        texts.append(f"### {name}\n\n{text}\n")
        print(f"\n### {name}\n{text}\n", flush=True)
    plot(results, a.budget, out / "operators.png")
    report = "\n".join(texts) + "\nwall time (s): " + ", ".join(f"{k} {v:.0f}" for k, v in times.items()) + "\n"
    (out / "operators.md").write_text(report)
    (out / "operators.json").write_text(json.dumps({k: {kk: vv for kk, vv in v.items() if not kk.startswith("_")}
                                                    for k, v in results.items()}, indent=2))
    print(f"wrote {out / 'operators.md'} and {out / 'operators.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
