"""Search that the task-trained policies drive: `vpo evolve --prompt-mode prefix` with the bundled Maze
policies as the mutation operator, each next to plain sampling of the same policy at the same budget.

Arms (per set of mazes):

- ``evolve-vpo``: ``hf:maze-tiny-vpo -m 3 --prompt-mode prefix``: each call continues the start of a
  parent route (cut uniformly over its moves) as route 1 of a set of 3, as the policy was trained;
- ``sample-vpo``: that run's own ``baseline/`` (plain sampling of the same policy, same prompt);
- ``evolve-grpo`` / ``sample-grpo``: the same with ``hf:maze-tiny-grpo -m 1``.

Sets: ``test-hardest`` (the N test mazes with the lowest best@30 in the `vpo demo` runs, ``--rank-runs``)
and fresh mazes from base seeds no split uses (train 42, test 4242, val 777000, the operator bench's
900000): ``s910000``, ``s920000``, ``s930000``; N = ``--n-mazes`` (default 32) each. Every arm gets
``--budget`` candidates per maze (default 201 >= 200; a multiple of 3), counted per candidate slot for
evolve and sampling alike (bench/search_arms.py).

Hypotheses, stated before any run:

- (H1) prefix-evolve beats sampling for each policy: ``evolve-vpo − sample-vpo`` > 0 and
  ``evolve-grpo − sample-grpo`` > 0 (solved and best scalar at the largest budget);
- (H2) VPO beats GRPO inside the search at the largest budget: ``evolve-vpo − evolve-grpo`` > 0;
- (H3) the VPO−GRPO gap inside the search is larger than under sampling at equal budget:
  ``(evolve-vpo − evolve-grpo) − (sample-vpo − sample-grpo)`` > 0 (difference of differences, paired
  over mazes).

Prints, per set and for the pool of all sets: solved and best scalar at budgets 1..B (mean ± s.e.),
paired 95% bootstrap intervals over mazes (10,000 resamples, seed 0) with win/tie/loss for every
contrast above, and, per evolve arm, the mean normalised edit distance (over moves) of a child to its
parent next to its distance to other earlier candidates (``vpo_harness.search.metrics.locality``) and how often
the first route of a prefix call parsed. Writes ``<out>/prefix.md``, ``<out>/prefix.json`` and
``<out>/prefix.png`` (all arms, one column per set plus the pool). Every step is a plain `vpo` command,
printed before it runs; re-running skips finished runs (a finished `vpo evolve` is a no-op).

    python bench/evolve_prefix.py --out runs/evo-prefix                        # the experiment
    python bench/evolve_prefix.py --out runs/evo-prefix-smoke --n-mazes 4 --budget 12   # a smoke run
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.search_arms import Contrast, curves_of, pair, plot, pool, summarize, vpo  # noqa: E402

ARMS = ("evolve-vpo", "sample-vpo", "evolve-grpo", "sample-grpo")
POLICIES = (("vpo", "hf:maze-tiny-vpo", 3), ("grpo", "hf:maze-tiny-grpo", 1))
CONTRASTS: list[Contrast] = [
    pair("evolve-vpo", "sample-vpo"), pair("evolve-grpo", "sample-grpo"),   # H1
    pair("evolve-vpo", "evolve-grpo"),                                       # H2
    pair("sample-vpo", "sample-grpo"),                                       # the sampling gap, for H3
    ("(evolve-vpo − evolve-grpo) − (sample-vpo − sample-grpo)",              # H3
     {"evolve-vpo": 1.0, "evolve-grpo": -1.0, "sample-vpo": -1.0, "sample-grpo": 1.0}),
]
STYLE = {"evolve-vpo": ("C0", "-"), "sample-vpo": ("C0", ":"), "evolve-grpo": ("C3", "-"), "sample-grpo": ("C3", ":")}
FRESH = ("s910000", "s920000", "s930000")


def set_args(name: str, n: int, rank_runs: str) -> tuple[list[str], dict[str, Any]]:
    """The `vpo evolve` flags choosing a set's mazes, and the maze task options that load them."""
    if name == "test-hardest":
        return ["--split", "test", "--problems", f"hardest:{n}@{rank_runs}"], {}
    if name.startswith("s") and name[1:].isdigit():
        seed = int(name[1:])
        return ["--split", "test", "--task-args", f"base_seed={seed},n={n}"], {"base_seed": seed, "n": n}
    raise SystemExit(f"unknown set {name!r}: test-hardest or sSEED (e.g. {', '.join(FRESH)})")


def evolve_stats(folders: list[Path]) -> dict[str, Any]:
    """Locality of an evolve arm's children and how often a prefix call's first answer parsed."""
    from vpo_harness.benchmarks import get_task
    from bench.search_arms import rows
    from vpo_harness.search.metrics import locality

    task = get_task("maze")  # reading moves does not depend on which mazes
    rs = [r for f in folders for r in rows(f)]
    loc = locality(rs, lambda pid, ans: task.moves(ans))
    firsts = [r for r in rs if r.get("evolution_mode") == "prefix" and int(r["answer_index"]) == 0]
    parsed = sum(r["answers"][0] is not None for r in firsts)
    return {"child_parent": loc["child_parent"], "child_other": loc["child_other"], "children": loc["n"],
            "prefix_calls": len(firsts), "first_answer_parsed": parsed / len(firsts) if firsts else None}


def stats_table(stats: dict[str, dict[str, Any]]) -> str:
    """:func:`evolve_stats` of each evolve arm as a Markdown table (the project's table writer:
    fractions to 3 decimals, "-" where a fraction is undefined)."""
    from vpo_harness.reports.tables import write_table

    def frac(v: float | None) -> float:
        return float("nan") if v is None else float(v)  # nan: the writer's "-"

    rows = [[arm, frac(s["child_parent"]), frac(s["child_other"]), s["children"], s["prefix_calls"],
             frac(s["first_answer_parsed"])] for arm, s in stats.items()]
    return write_table(["evolve arm", "child−parent distance", "child−other distance", "children", "prefix calls",
                        "first answer parsed"], rows, "markdown")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="runs/evo-prefix")
    ap.add_argument("--budget", type=int, default=201, help="candidates per maze for every arm (multiple of 3)")
    ap.add_argument("--sets", default=",".join(("test-hardest",) + FRESH),
                    help="comma-separated: test-hardest and/or sSEED fresh sets")
    ap.add_argument("--n-mazes", type=int, default=32, help="mazes per set")
    ap.add_argument("--rank-runs", default="runs/demo/maze-tiny-vpo,runs/demo/maze-tiny-grpo",
                    help="the `vpo demo` runs whose lowest best@30 mazes form test-hardest")
    ap.add_argument("--cut", default="uniform", choices=("uniform", "plateau"), help="vpo evolve --cut")
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--parallel", type=int, default=None, help="iterations of one maze in flight (vpo evolve --parallel)")
    ap.add_argument("--progress", action="store_true")
    a = ap.parse_args()
    if a.budget % 3 or a.budget < 3:
        raise SystemExit("--budget must be a positive multiple of 3 (the VPO policy writes sets of 3 routes)")
    if a.n_mazes < 2:
        raise SystemExit("--n-mazes must be >= 2 (paired intervals over mazes)")
    out = Path(a.out)
    quiet = [] if a.progress else ["--no-progress"]
    par = ["--parallel", str(a.parallel)] if a.parallel else []
    from vpo_harness.benchmarks import get_task
    from vpo_harness.search.solved import thresholds

    t_start = time.time()
    results: dict[str, dict[str, Any]] = {}
    all_curves, all_ids, texts = [], [], []
    times: dict[str, float] = {}
    stats: dict[str, dict[str, dict[str, Any]]] = {}
    evolve_folders: list[dict[str, Path]] = []
    for name in [s for s in a.sets.split(",") if s]:
        sel, opts = set_args(name, a.n_mazes, a.rank_runs)
        folders: dict[str, Path] = {}
        for op, model, m in POLICIES:
            folder = out / name / f"evolve-{op}"
            times[f"{name}/{op}"] = vpo("evolve", "--task", "maze", *sel, "--model", model, "-m", str(m),
                                        "--prompt-mode", "prefix", "--cut", a.cut,
                                        "--iterations", str(a.budget // m - 1),
                                        "--concurrency", str(a.concurrency), *par, "--out", str(folder), *quiet)
            folders[f"evolve-{op}"], folders[f"sample-{op}"] = folder, folder / "baseline"
        ids = json.loads((folders["evolve-vpo"] / "config.json").read_text())["identity"]["problems"]["ids"]
        task = get_task("maze", **opts)
        problems = [p for p in task.load("test") if p.id in set(ids)]
        curves = curves_of(folders, a.budget, ids, thresholds(task, problems))
        text, res = summarize(curves, ids, a.budget, ARMS, CONTRASTS)
        evolve_folders.append(folders)
        stats[name] = {f"evolve-{op}": evolve_stats([folders[f"evolve-{op}"]]) for op, _, _ in POLICIES}
        res["evolve_stats"] = stats[name]
        results[name] = res
        all_curves.append(curves)
        all_ids += [f"{name}/{i}" for i in ids]
        texts.append(f"### {name}\n\n{text}\n\n{stats_table(stats[name])}\n")
        print(f"\n{texts[-1]}", flush=True)
    if len(all_curves) > 1:
        text, res = summarize(pool(all_curves), all_ids, a.budget, ARMS, CONTRASTS)
        pooled = {f"evolve-{op}": evolve_stats([f[f"evolve-{op}"] for f in evolve_folders]) for op, _, _ in POLICIES}
        res["evolve_stats"] = pooled
        results["pool"] = res
        texts.append(f"### pool of all sets ({len(all_ids)} mazes)\n\n{text}\n\n{stats_table(pooled)}\n")
        print(f"\n{texts[-1]}", flush=True)
    plot(results, a.budget, out / "prefix.png", ARMS, STYLE)
    wall = time.time() - t_start
    report = ("\n".join(texts) + "\nwall time of each `vpo evolve` (s; one already complete takes seconds): " +
              ", ".join(f"{k} {v:.0f}" for k, v in times.items()) + f"; whole script {wall:.0f} s\n")
    (out / "prefix.md").write_text(report)
    (out / "prefix.json").write_text(json.dumps({k: {kk: vv for kk, vv in v.items() if kk != "_curves"}
                                                 for k, v in results.items()}, indent=2))
    print(f"wrote {out / 'prefix.md'}, {out / 'prefix.json'} and {out / 'prefix.png'} ({wall:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
