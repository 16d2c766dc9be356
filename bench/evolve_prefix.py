"""Search that the task-trained policies drive: `vpo evolve --prompt-mode prefix` with the Maze row's
policies as the mutation operator, each next to plain sampling of the same policy at the same budget,
for every training seed of the policies.

Arms (per set of mazes and training seed s; ``@s`` is the zoo's name of seed s, bare for seed 0):

- ``evolve-vpo``: ``hf:maze-tiny-vpo@s -m 3 --prompt-mode prefix``: each call continues the start of a
  parent route (cut uniformly over its moves) as route 1 of a set of 3, as the policy was trained;
- ``sample-vpo``: that run's own ``baseline/`` (plain sampling of the same policy, same prompt);
- ``evolve-grpo`` / ``sample-grpo``: the same with ``hf:maze-tiny-grpo@s -m 1``;
- with ``--select scalar,pareto`` (the default) each evolve arm runs under both parent selections in
  the same run: ``evolve-vpo`` / ``evolve-grpo`` with `vpo evolve`'s scalar selection, and
  ``evolve-vpo-pareto`` / ``evolve-grpo-pareto`` with ``--select pareto`` (parents drawn from the
  front of the reward components, search/pareto.py). The sampling arms are shared: only the first
  selection's run samples its baseline, the others are run with ``--no-baseline`` (the baseline is
  the same `vpo run` either way).

Sets: ``test-hardest`` (the N test mazes with the lowest best@30 in the `vpo demo` runs, ``--rank-runs``;
the same mazes for every training seed) and fresh mazes from base seeds that no split (train 42, test
4242, val 777000) and no earlier experiment uses: ``s610001``, ``s620002``, ``s630003`` (earlier: 900000
for the operator bench, 910000/920000/930000 for the seed-42 pair, a review's two sets); N =
``--n-mazes`` (default 32) each. Every arm gets ``--budget`` candidates per maze (default 201 >= 200; a
multiple of 3), counted per candidate slot for evolve and sampling alike (bench/search_arms.py).

Hypotheses, stated before any run (each for every selection; ``pareto − scalar`` compares them):

- (H1) prefix-evolve beats sampling for each policy: ``evolve-vpo − sample-vpo`` > 0 and
  ``evolve-grpo − sample-grpo`` > 0 (solved and best scalar at the largest budget);
- (H2) VPO beats GRPO inside the search at the largest budget: ``evolve-vpo − evolve-grpo`` > 0;
- (H3) the VPO−GRPO gap inside the search is larger than under sampling at equal budget:
  ``(evolve-vpo − evolve-grpo) − (sample-vpo − sample-grpo)`` > 0 (difference of differences, paired
  over mazes).

Prints, per set and training seed, per set pooled over training seeds, per training seed pooled over
sets, and for everything pooled (pairs are then (maze, training seed), as `vpo compare` pairs
training-seed groups): solved and best scalar at budgets 1..B (mean ± s.e.), paired 95% bootstrap
intervals (10,000 resamples, seed 0) with win/tie/loss for every contrast above, and, per evolve arm,
the mean normalised edit distance (over moves) of a child to its parent next to its distance to other
earlier candidates (``vpo_harness.search.metrics.locality``) and how often the first route of a prefix
call parsed; then one summary table of H1-H3 over all those scopes, and the first-answer parse rate of
every method's policy of every training seed when it continues a prefilled route (the four methods,
bench/prefix_parse_rate.py on ``--parse-mazes`` val mazes), and per scope the hypervolume of the reward
vectors each arm found at the whole budget (mean ± s.e., and each contrast's paired interval over
mazes; search/metrics.py's reference). Pooled locality keys each candidate by its run as well as its
maze: runs of different training seeds share candidate ids on the same mazes. Writes ``<out>/prefix.md``,
``<out>/prefix.json``, ``<out>/parse_rate.json`` and ``<out>/prefix.png`` (all arms, one column per set
pooled over training seeds, plus everything pooled). Every step is a plain `vpo` command, printed
before it runs; re-running skips finished runs (a finished `vpo evolve` is a no-op).

    python bench/evolve_prefix.py --out runs/evo-prefix-row --jobs 2                 # the experiment
    python bench/evolve_prefix.py --out runs/evo-prefix-smoke --n-mazes 4 --budget 12 --train-seeds 0 \
        --parse-mazes 4                                                              # a smoke run
    python bench/evolve_prefix.py --out runs/evo-prefix --train-seeds 0 --sets test-hardest,s910000,s920000,s930000 \
        --select scalar                                  # the earlier experiment's sets, seed-0 policies
    python bench/evolve_prefix.py --smoke --out /tmp/evo-prefix-smoke   # plumbing only, seconds (see --smoke)
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.search_arms import Contrast, curves_of, pair, plot, pool, summarize, vpo  # noqa: E402

#: (operator: the training method, answers per call); training seed s is the zoo's
#: ``policy_name(method, s)`` (``maze-tiny-vpo``, ``maze-tiny-vpo@1``, ...)
POLICIES = (("vpo", 3), ("grpo", 1))
#: `vpo evolve --select` values the experiment can run side by side (search/pareto.py: SELECTIONS)
SELECTS = ("scalar", "pareto")
COLOURS = {"vpo": "C0", "grpo": "C3"}
LINES = {"scalar": "-", "pareto": "--"}
#: --smoke: what it runs (seconds, plumbing only: one `vpo serve` of the mock policy serves every arm)
SMOKE = {"sets": "s610001", "n_mazes": 2, "budget": 6, "train_seeds": "0", "parse_mazes": 0, "concurrency": 4}
SMOKE_MODEL = "mock:moves"


def evolve_arm(op: str, select: str) -> str:
    """The arm (and folder) name of operator ``op``'s search under ``select`` (scalar keeps the
    name the earlier experiments used)."""
    return f"evolve-{op}" if select == "scalar" else f"evolve-{op}-{select}"


def arms(selects: list[str]) -> list[str]:
    return [a for op, _ in POLICIES for a in [evolve_arm(op, s) for s in selects] + [f"sample-{op}"]]


def contrasts(selects: list[str]) -> tuple[list[Contrast], dict[str, str]]:
    """Every contrast of the experiment and its short name for the summary table: H1-H3 for each
    selection (the sampling gap once), then ``pareto − scalar`` per operator when both ran."""
    out: list[Contrast] = []
    short: dict[str, str] = {}
    for s in selects:
        v, g = evolve_arm("vpo", s), evolve_arm("grpo", s)
        tag = "" if s == "scalar" else f" {s}"
        for c, name in ((pair(v, "sample-vpo"), f"H1 vpo{tag}"), (pair(g, "sample-grpo"), f"H1 grpo{tag}"),
                        (pair(v, g), f"H2{tag}")):
            out.append(c)
            short[c[0]] = name
        if s == selects[0]:
            c = pair("sample-vpo", "sample-grpo")
            out.append(c)
            short[c[0]] = "sampling gap"
        label = f"({v} − {g}) − (sample-vpo − sample-grpo)"
        out.append((label, {v: 1.0, g: -1.0, "sample-vpo": -1.0, "sample-grpo": 1.0}))
        short[label] = f"H3{tag}"
    if "scalar" in selects and "pareto" in selects:
        for op, _ in POLICIES:
            c = pair(evolve_arm(op, "pareto"), evolve_arm(op, "scalar"))
            out.append(c)
            short[c[0]] = f"pareto − scalar {op}"
    return out, short


def styles(selects: list[str]) -> dict[str, tuple[str, str]]:
    out = {}
    for op, _ in POLICIES:
        out.update({evolve_arm(op, s): (COLOURS[op], LINES[s]) for s in selects})
        out[f"sample-{op}"] = (COLOURS[op], ":")
    return out


def parse_selects(text: str) -> list[str]:
    sel = [s for s in text.split(",") if s]
    bad = [s for s in sel if s not in SELECTS]
    if not sel or bad or len(set(sel)) != len(sel):
        raise SystemExit(f"--select: a comma-separated list of {', '.join(SELECTS)}, each once; got {text!r}")
    return sel
#: fresh base seeds of the Maze row's search experiment: no split (train 42, test 4242, val 777000) and
#: no earlier experiment (900000 operators; 910000, 920000, 930000 the bundled-pair experiment; a
#: review's two sets) uses them
FRESH = ("s610001", "s620002", "s630003")
#: the sets of the earlier experiment with the seed-42 pair, kept addressable to restate it
EARLIER_FRESH = ("s910000", "s920000", "s930000")
#: the methods whose prefix parse rate the experiment prints (bench/prefix_parse_rate.py, val mazes)
PARSE_METHODS = ("grpo", "max_at_k", "multi_rlvr", "vpo")


def set_args(name: str, n: int, rank_runs: str) -> tuple[list[str], dict[str, Any]]:
    """The `vpo evolve` flags choosing a set's mazes, and the maze task options that load them."""
    if name == "test-hardest":
        return ["--split", "test", "--problems", f"hardest:{n}@{rank_runs}"], {}
    if name.startswith("s") and name[1:].isdigit():
        seed = int(name[1:])
        return ["--split", "test", "--task-args", f"base_seed={seed},n={n}"], {"base_seed": seed, "n": n}
    raise SystemExit(f"unknown set {name!r}: test-hardest or sSEED (e.g. {', '.join(FRESH)})")


def evolve_stats(folders: list[Path]) -> dict[str, Any]:
    """Locality of an evolve arm's children and how often a prefix call's first answer parsed. Each
    candidate is keyed by its run as well as its maze: runs of different training seeds on the same
    mazes give their candidates the same ids (``program_id`` is a function of maze, iteration and
    slot), so pooled without the run a child would be measured against another run's parent."""
    from vpo_harness.benchmarks import get_task
    from bench.search_arms import rows
    from vpo_harness.search.metrics import locality

    task = get_task("maze")  # reading moves does not depend on which mazes
    rs = [{**r, "problem_id": f"{k}/{r['problem_id']}"} for k, f in enumerate(folders) for r in rows(f)]
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


def _interval(c: dict[str, Any]) -> str:
    """mean [95% CI], bold where the interval excludes 0."""
    from vpo_harness.reports.tables import format_number

    txt = (f"{format_number(c['mean'], sign=True)} [{format_number(c['ci'][0], sign=True)}, "
           f"{format_number(c['ci'][1], sign=True)}]")
    return f"**{txt}**" if c["ci"][0] > 0 or c["ci"][1] < 0 else txt


def summary_table(results: dict[str, dict[str, Any]], cons: list[Contrast], short: dict[str, str],
                  key: str = "best") -> str:
    """One row per scope (set x training seed, pooled ones): every contrast at the largest budget,
    mean [95% CI] (bold where the interval excludes 0), on the best task scalar (``key`` "best"),
    the fraction solved ("solved") or the hypervolume of the front found ("hypervolume")."""
    from vpo_harness.reports.tables import write_table

    rows = []
    for scope, res in results.items():
        table = res["hypervolume"]["contrasts"] if key == "hypervolume" else \
            {label: res["contrasts"][f"{label}:{key}"] for label, _ in cons}
        rows.append([scope, str(res["n_mazes"])] + [_interval(table[label]) for label, _ in cons])
    return write_table(["scope", "pairs"] + [short[label] for label, _ in cons], rows, "markdown",
                       align="l" * (2 + len(cons)))


def front_hypervolumes(folders: dict[str, Path], ids: list[str], budget: int) -> dict[str, np.ndarray]:
    """Per arm, (mazes,) hypervolume of the reward vectors it found within ``budget`` candidates
    (search/metrics.py's rule and reference; NaN where a maze has fewer): evolve arms in evaluation
    order, sampling arms their first ``budget`` samples in chain order."""
    from bench.search_arms import rows
    from vpo_harness.search.metrics import evolve_rewards, hypervolume_at_budgets, sampling_rewards

    out = {}
    for a, f in folders.items():
        rs = rows(f)
        vectors = evolve_rewards(rs, ids) if a.startswith("evolve") else sampling_rewards(rs, ids)
        out[a] = hypervolume_at_budgets(vectors, ids, [budget])[:, 0]
    return out


def hypervolume_summary(hv: dict[str, np.ndarray], arm_names: list[str], cons: list[Contrast]) -> tuple[str, dict]:
    """Mean ± s.e. of each arm's front hypervolume over mazes, and every contrast's mean with its
    paired 95% bootstrap interval over mazes (10,000 resamples, seed 0, as the other contrasts)."""
    from vpo_harness.harness.core.metrics import mean_se
    from vpo_harness.reports.compare import paired_bootstrap
    from vpo_harness.reports.tables import write_table

    out: dict[str, Any] = {"arms": {a: mean_se(hv[a]).as_dict() for a in arm_names}, "contrasts": {}}
    for label, weights in cons:
        d = sum(w * hv[a] for a, w in weights.items())
        lo, hi = paired_bootstrap(d[None, :])
        out["contrasts"][label] = {"mean": float(np.nanmean(d)), "ci": [float(lo[0]), float(hi[0])]}
    text = write_table(["arm", "hypervolume of the front found"], [[a, mean_se(hv[a])] for a in arm_names],
                       "markdown")
    return text, out


def parse_rates(out: Path, seeds: list[int], n_mazes: int, cuts: int) -> tuple[str, list[dict[str, Any]]]:
    """First-answer parse rate of every method's policy of every training seed when it continues a
    prefilled route (bench/prefix_parse_rate.py, on val mazes), resumable through ``parse_rate.json``."""
    from bench.prefix_parse_rate import answers_per_call, measure
    from vpo_harness.harness.core.models.zoo import policy_name
    from vpo_harness.reports.tables import write_table

    path = out / "parse_rate.json"
    done = {r["model"]: r for r in (json.loads(path.read_text()) if path.is_file() else [])}
    for method in PARSE_METHODS:
        for ts in seeds:
            name = policy_name(method, ts)
            if name in done and done[name].get("n_mazes_asked") == n_mazes and done[name].get("cuts") == cuts:
                continue
            print(f"parse rate: {name}", flush=True)
            r = measure(name, answers_per_call(name), split="val", n_mazes=n_mazes, cuts=cuts)
            done[name] = {**r, "method": method, "training_seed": ts, "n_mazes_asked": n_mazes, "cuts": cuts}
            out.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(list(done.values()), indent=2))
    rows = [done[policy_name(m, ts)] for m in PARSE_METHODS for ts in seeds]
    table = write_table(["method", "training seed", "m", "prefix calls", "first answer parsed", "s.e."],
                        [[r["method"], str(r["training_seed"]), str(r["m"]), str(r["calls"]),
                          r["first_answer_parse_rate"], r["se"]] for r in rows], "markdown")
    return table, rows


def main(argv: list[str] | None = None) -> int:
    from concurrent.futures import ThreadPoolExecutor

    from vpo_harness.harness.core.models.zoo import policy_name
    from vpo_harness.harness.core.seed_groups import parse_seeds

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="runs/evo-prefix-row")
    ap.add_argument("--budget", type=int, default=201, help="candidates per maze for every arm (multiple of 3)")
    ap.add_argument("--sets", default=",".join(("test-hardest",) + FRESH),
                    help="comma-separated: test-hardest and/or sSEED fresh sets")
    ap.add_argument("--train-seeds", default="0-2", help="training seeds of the policies, e.g. 0-2 or 0")
    ap.add_argument("--n-mazes", type=int, default=32, help="mazes per set")
    ap.add_argument("--select", default=",".join(SELECTS),
                    help="comma-separated `vpo evolve --select` values run side by side (scalar, pareto)")
    ap.add_argument("--rank-runs", default="runs/demo/maze-tiny-vpo,runs/demo/maze-tiny-grpo",
                    help="the `vpo demo` runs whose lowest best@30 mazes form test-hardest")
    ap.add_argument("--cut", default="uniform", choices=("uniform", "plateau"), help="vpo evolve --cut")
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--parallel", type=int, default=None, help="iterations of one maze in flight (vpo evolve --parallel)")
    ap.add_argument("--jobs", type=int, default=1, help="`vpo evolve` commands run at once (one CPU thread each)")
    ap.add_argument("--parse-mazes", type=int, default=50, help="val mazes of the per-method parse rate (0: skip it)")
    ap.add_argument("--parse-cuts", type=int, default=4, help="prefix calls per val maze of the parse rate")
    ap.add_argument("--smoke", action="store_true",
                    help=f"plumbing only, in seconds: set {SMOKE['sets']}, {SMOKE['n_mazes']} mazes, budget "
                         f"{SMOKE['budget']}, training seed 0, no parse rate, and one `vpo serve` of {SMOKE_MODEL} "
                         "standing in for every policy (its numbers mean nothing)")
    ap.add_argument("--runs-only", action="store_true",
                    help="run (or finish) the `vpo evolve` commands and stop before the analysis: lets parts of a "
                         "grid run in separate commands and one later command analyse them")
    ap.add_argument("--progress", action="store_true")
    a = ap.parse_args(argv)
    if a.smoke:
        for k, v in SMOKE.items():
            setattr(a, k, v)
    if a.budget % 3 or a.budget < 3:
        raise SystemExit("--budget must be a positive multiple of 3 (the VPO policy writes sets of 3 routes)")
    if a.n_mazes < 2:
        raise SystemExit("--n-mazes must be >= 2 (paired intervals over mazes)")
    try:
        seeds = parse_seeds(a.train_seeds)
    except ValueError as exc:
        raise SystemExit(str(exc).replace("--seeds", "--train-seeds")) from None
    selects = parse_selects(a.select)
    arm_names = arms(selects)
    cons, short = contrasts(selects)
    out = Path(a.out)
    quiet = [] if a.progress else ["--no-progress"]
    par = ["--parallel", str(a.parallel)] if a.parallel else []
    from vpo_harness.benchmarks import get_task
    from vpo_harness.search.solved import thresholds

    t_start = time.time()
    sets = [s for s in a.sets.split(",") if s]
    for name in sets:
        set_args(name, a.n_mazes, a.rank_runs)  # an unknown set stops here, before any run
    server = None
    if a.smoke:  # one mock server for every arm: the smoke checks the plumbing, not the policies
        from vpo_harness.search.server_process import ManagedServer

        server = ManagedServer(SMOKE_MODEL, served_name="smoke", max_batch=64).start()

    def model(op: str, ts: int) -> list[str]:
        if server is not None:
            return ["--model", "openai:smoke", "--base-url", server.base_url]
        return ["--model", f"hf:{policy_name(op, ts)}"]

    # every `vpo evolve` of the experiment (the first selection's with its sampling baseline), then the analysis
    jobs: list[tuple[str, list[str]]] = []
    folders: dict[tuple[str, int], dict[str, Path]] = {}
    for name in sets:
        sel, _ = set_args(name, a.n_mazes, a.rank_runs)
        for ts in seeds:
            f: dict[str, Path] = {}
            for op, m in POLICIES:
                for k, select in enumerate(selects):
                    folder = out / name / f"seed{ts}" / evolve_arm(op, select)
                    jobs.append((f"{name}/seed{ts}/{evolve_arm(op, select)}", [
                        "evolve", "--task", "maze", *sel, *model(op, ts), "-m", str(m),
                        "--prompt-mode", "prefix", "--cut", a.cut, "--iterations", str(a.budget // m - 1),
                        "--select", select, "--concurrency", str(a.concurrency), *par, "--out", str(folder),
                        *([] if k == 0 else ["--no-baseline"]), *quiet]))
                    f[evolve_arm(op, select)] = folder
                f[f"sample-{op}"] = out / name / f"seed{ts}" / evolve_arm(op, selects[0]) / "baseline"
            folders[(name, ts)] = f
    times: dict[str, float] = {}
    try:
        with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool_:
            for key, secs in zip([k for k, _ in jobs], pool_.map(lambda j: vpo(*j[1]), jobs)):
                times[key] = secs
    except subprocess.CalledProcessError as exc:
        raise SystemExit(f"evolve_prefix: `vpo {' '.join(exc.cmd[3:])}` failed with exit status {exc.returncode} "
                         "(its error is above); finished runs are kept, re-run the script once it is fixed") from None
    finally:
        if server is not None:
            server.stop()
    if a.runs_only:
        print(f"evolve_prefix: {len(jobs)} `vpo evolve` runs finished under {out} (--runs-only: no analysis)")
        return 0
    evolve_arms = [evolve_arm(op, s) for op, _ in POLICIES for s in selects]
    results: dict[str, dict[str, Any]] = {}
    texts: list[str] = []
    by_set: dict[str, list[tuple[dict, list[str], dict]]] = {}
    by_seed: dict[int, list[tuple[dict, list[str], dict]]] = {}
    for (name, ts), f in folders.items():
        _, opts = set_args(name, a.n_mazes, a.rank_runs)
        ids = json.loads((f[evolve_arms[0]] / "config.json").read_text())["identity"]["problems"]["ids"]
        task = get_task("maze", **opts)
        problems = [p for p in task.load("test") if p.id in set(ids)]
        curves = curves_of(f, a.budget, ids, thresholds(task, problems))
        hv = front_hypervolumes(f, ids, a.budget)
        text, res = summarize(curves, ids, a.budget, arm_names, cons)
        scope = f"{name} / training seed {ts}"
        res["evolve_stats"] = {arm: evolve_stats([f[arm]]) for arm in evolve_arms}
        hv_text, res["hypervolume"] = hypervolume_summary(hv, arm_names, cons)
        results[scope] = res
        by_set.setdefault(name, []).append((curves, [f"seed{ts}/{i}" for i in ids], hv))
        by_seed.setdefault(ts, []).append((curves, [f"{name}/{i}" for i in ids], hv))
        texts.append(f"### {scope}\n\n{text}\n\n{hv_text}\n\n{stats_table(res['evolve_stats'])}\n")
        print(f"\n{texts[-1]}", flush=True)

    def pooled(scope: str, parts: list[tuple[dict, list[str], dict]], keys: list[tuple[str, int]]) -> None:
        text, res = summarize(pool([c for c, _, _ in parts]), [i for _, ids, _ in parts for i in ids], a.budget,
                              arm_names, cons)
        res["evolve_stats"] = {arm: evolve_stats([folders[k][arm] for k in keys]) for arm in evolve_arms}
        hv = {arm: np.concatenate([h[arm] for _, _, h in parts]) for arm in arm_names}
        hv_text, res["hypervolume"] = hypervolume_summary(hv, arm_names, cons)
        results[scope] = res
        texts.append(f"### {scope} ({res['n_mazes']} (maze, training seed) pairs)\n\n{text}\n\n{hv_text}\n\n"
                     f"{stats_table(res['evolve_stats'])}\n")
        print(f"\n{texts[-1]}", flush=True)

    if len(seeds) > 1:
        for name in sets:
            pooled(f"{name} / pooled training seeds", by_set[name], [(name, ts) for ts in seeds])
    if len(sets) > 1:
        for ts in seeds:
            pooled(f"pooled sets / training seed {ts}", by_seed[ts], [(n, ts) for n in sets])
    if len(folders) > 1:
        pooled("all", [p for v in by_set.values() for p in v], list(folders))
    head = f"at {a.budget} candidates per maze (selections: {', '.join(selects)})"
    summary = "\n\n".join(
        f"## H1-H3 on the {what} {head}\n\n{summary_table(results, cons, short, key)}"
        for key, what in (("best", "best task scalar"), ("solved", "fraction solved"),
                          ("hypervolume", "hypervolume of the front found")))
    print(f"\n{summary}\n", flush=True)
    parse_text = ""
    if a.parse_mazes > 0:
        parse_text, rates = parse_rates(out, seeds, a.parse_mazes, a.parse_cuts)
        print(f"\n## First-answer parse rate when continuing a prefilled route (val mazes)\n\n{parse_text}\n",
              flush=True)
    shown = ([k for k in results if k.endswith("/ pooled training seeds")]
             or [k for k in results if " / training seed " in k and not k.startswith("pooled")])
    plot({k: results[k] for k in shown + (["all"] if "all" in results else [])}, a.budget, out / "prefix.png",
         arm_names, styles(selects))
    wall = time.time() - t_start
    report = (f"{summary}\n\n"
              + (f"## First-answer parse rate when continuing a prefilled route ({a.parse_mazes} val mazes, "
                 f"{a.parse_cuts} cuts each)\n\n{parse_text}\n\n" if parse_text else "")
              + "\n".join(texts) + "\nwall time of each `vpo evolve` (s; one already complete takes seconds): " +
              ", ".join(f"{k} {v:.0f}" for k, v in times.items()) + f"; whole script {wall:.0f} s\n")
    out.mkdir(parents=True, exist_ok=True)
    (out / "prefix.md").write_text(report)
    (out / "prefix.json").write_text(json.dumps({k: {kk: vv for kk, vv in v.items() if kk != "_curves"}
                                                 for k, v in results.items()}, indent=2))
    print(f"wrote {out / 'prefix.md'}, {out / 'prefix.json'} and {out / 'prefix.png'} ({wall:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
