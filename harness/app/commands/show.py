"""`vpo show`: a table of one or more runs' metrics (mean ± standard error)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from dataclasses import replace
from typing import Any, Sequence

from vpo_harness.harness.app.commands._args import int_list, tau_list

EXAMPLES = """\
vpo show runs/smol runs/other
vpo show runs/demo/*              # files that are not runs are skipped
vpo show runs/smol --k 1,3,10     # other ks, computed from the stored rows (nothing sampled)
vpo show runs/smol --metrics      # and the VPO authors' pool metrics (union coverage, witnesses, ...)
"""


def register(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("show", help="table of a run's metrics")
    p.add_argument("runs", nargs="+", metavar="RUN",
                   help="run folders (written by vpo run / demo / rescore), or the parent folder of a `vpo run "
                        "--seeds` group: its seeds as one row, mean over seeds with the between-seed s.e.")
    p.add_argument("--json", action="store_true", help="print results.json")
    p.add_argument("--k", dest="ks", type=int_list, default=None,
                   help="read best@k / pass@k at these ks, computed from the stored rows (default: the run's own)")
    p.add_argument("--tau", dest="taus", type=tau_list, default=None,
                   help="Cover@tau thresholds: share of problems whose pass rate is >= tau (default 0.1,0.5,0.9)")
    p.add_argument("--metrics", action="store_true",
                   help="also the VPO authors' pool metrics: union coverage, best individual, pass@1-3 per "
                        "solution and per chain, witness count and fraction (mean ± s.e. over problems)")
    p.add_argument("--select", default="majority,random",
                   help="selection strategies for a selected@k table under the main one ('' for none)")
    p.add_argument("--all-metrics", action="store_true",
                   help="keep the metrics a task makes 0 by construction (Maze: pass@k, pass^k, cover@tau, "
                        "which are otherwise left out with one note saying why)")
    return p


def run_task(run: Any) -> str:
    """The task of a loaded run (from its results, else its config)."""
    if run.summary is not None:
        return str(run.summary.task)
    return str(run.config.get("task") or (run.config.get("identity") or {}).get("task", {}).get("name", "?"))


def format_table(runs: Sequence[Any], constant: Any = None) -> str:
    """best@k / pass@k / diversity of runs (LoadedRun) side by side (mean ± standard error; a seed
    group adds the between-seed s.e., vpo_harness.reports.tables). ``constant``
    (:func:`~vpo_harness.reports.constant_metrics.constant_metrics` of the runs' tasks): the pass
    columns are left out, with its note under the table."""
    from vpo_harness.reports.tables import legend_for, write_table

    if not runs:
        return "(no runs)"
    ks = sorted({k for r in runs if r.summary is not None for k in r.summary.ks})
    pass_ks = [] if constant else sorted(set(ks[:1] + ks[-1:]))
    taus = [] if constant else sorted({t for r in runs if r.summary is not None for t in r.summary.cover})
    last = [] if constant else ks[-1:]
    head = ["run", "task", "pool"] + [f"best@{k}" for k in ks] + [f"pass@{k}" for k in pass_ks] + \
        [f"pass^{k}" for k in last] + [f"cover@{t:g}" for t in taus] + ["diversity", "errors"]
    lines: list[list[Any]] = []
    for r in runs:
        res = r.summary
        if res is None:
            lines.append([r.path.name, run_task(r), "?"] + ["-"] * (len(head) - 3))
            continue
        name = r.path.name + (f" ({res.seeds_label})" if res.seeds else "") + (
            " (partial)" if res.raw.get("partial") and "partial" not in res.seeds_label
            else " (recomputed)" if res.raw.get("stale_results") else "")
        lines.append([name, res.task, res.pool_shape]
                     + [res.best.get(k) for k in ks] + [res.pass_at.get(k) for k in pass_ks]
                     + [res.pass_all.get(k) for k in last] + [res.cover.get(t) for t in taus]
                     + [res.diversity, str(res.n_errors)])
    legend = legend_for([str(r.summary.raw.get("seed_axis")) for r in runs if r.summary is not None and r.summary.seeds])
    return write_table(head, [[("-" if c is None else c) for c in ln] for ln in lines], align="l" * len(head),
                       seed_legend=legend, notes=[constant.note()] if constant else [])


def run(args: argparse.Namespace) -> int:
    from vpo_harness.harness.core.results import is_evolve_run, load_run

    from vpo_harness.harness.core.store import CONFIG

    # `vpo show runs/demo/*` also matches plots and notes: skip what is not a run folder, say so
    from vpo_harness.harness.core.seed_groups import is_seed_group

    paths = [r for r in args.runs if (Path(r) / CONFIG).is_file() or is_seed_group(r)]
    for r in args.runs:
        if r not in paths:
            print(f"vpo show: skipping {r}: not a run folder (no {CONFIG})", file=sys.stderr)
    if not paths:
        raise ValueError(f"none of the {len(args.runs)} paths is a run folder (a folder with {CONFIG})")
    evolve_paths = [r for r in paths if is_evolve_run(r)]
    paths = [r for r in paths if r not in evolve_paths]
    loaded = [load_run(r) for r in paths]
    from vpo_harness.harness.core.results import results_at

    for i, r in enumerate(loaded):
        if r.summary is not None and r.summary.raw.get("stale_results"):
            print(f"{r.path}: results.json was computed from other rows than samples.jsonl holds now: ignored, "
                  f"metrics recomputed from the {len(r.chains)} chains stored", file=sys.stderr)
        if r.results is None:  # running or interrupted: the rows stored so far
            loaded[i] = r = replace(r, summary=results_at(r.path, args.ks))
            if r.summary is None and len(loaded) == 1 and not evolve_paths:
                raise ValueError(f"{r.path}: samples.jsonl holds no rows yet (nothing sampled): nothing to show")
            done = f"metrics over the {len(r.chains)} chains stored so far" if r.summary else "no chains stored"
            print(f"{r.path}: no results.json yet (still running, or interrupted: re-run the same command to "
                  f"resume); {done}", file=sys.stderr)
        elif args.ks or args.taus or (r.summary is not None and not r.summary.cover):
            # other ks or taus, or a results.json from before pass^k / Cover@tau: metrics over the
            # stored pools, nothing is sampled
            loaded[i] = replace(r, summary=results_at(r.path, list(args.ks) if args.ks else None, args.taus))
    evolved = _load_evolve(evolve_paths, alone=len(evolve_paths) == 1 and not loaded)
    if args.json:
        out = [r.results for r in loaded]
        if getattr(args, "metrics", False):
            from vpo_harness.reports.pool_table import pool_metrics_json

            out = [{**(res or {}), "authors_pool_metrics": pool_metrics_json(r.path)} for r, res in zip(loaded, out)]
        print(json.dumps(out + [_evolve_json(e, args.ks) for e in evolved], indent=2))
        return 0
    from vpo_harness.reports.constant_metrics import constant_metrics

    constant = None if getattr(args, "all_metrics", False) else constant_metrics(run_task(r) for r in loaded)
    blocks = []
    if loaded:
        blocks.append(format_table(loaded, constant))
    if evolved:  # the search's own table at candidate budgets, next to plain sampling (its baseline/)
        from vpo_harness.reports.evolve import format_budget_table

        blocks += [format_budget_table(e, args.ks) for e in evolved]
    events = [ln for r in [*loaded, *evolved] for f in _folders(r.path) for ln in format_events(f)]
    if events:
        blocks.append("\n".join(events))
    strategies = [x.strip() for x in (args.select or "").split(",") if x.strip()]
    if strategies and loaded:  # selection without an oracle, next to best@k (reports/selected.py)
        from vpo_harness.reports.selected import format_selected

        blocks.append(format_selected([r.path for r in loaded], strategies, ks=args.ks))
    if getattr(args, "metrics", False) and loaded:  # (callers from Python may pass a Namespace without it)
        from vpo_harness.reports.pool_table import format_pool_metrics

        blocks.append(format_pool_metrics([r.path for r in loaded if r.summary is not None], constant))
    print("\n\n".join(blocks))
    return 0


def _folders(path: str | Path) -> list[Path]:
    """The run folders behind a path: each seed of a seed group, else the path itself."""
    from vpo_harness.harness.core.seed_groups import is_seed_group, seed_runs

    return [f for _, f in seed_runs(path)] if is_seed_group(path) else [Path(path)]


def _load_evolve(paths: Sequence[str], alone: bool = False) -> list[Any]:
    from vpo_harness.reports.evolve import load_evolve, require_candidates

    runs = [load_evolve(p) for p in paths]
    if alone:  # one search that has evaluated nothing: one line, not a table of dashes
        require_candidates(runs[0], "show")
    return runs


def _evolve_json(run: Any, ks: Sequence[int] | None) -> dict[str, Any]:
    """results.json of an evolve run (when written, and computed from the rows now stored) with the
    budget table computed from its rows."""
    from vpo_harness.harness.core.results import results_stale
    from vpo_harness.harness.core.store import RESULTS
    from vpo_harness.reports.evolve import budget_table

    path = Path(run.path) / RESULTS
    stale = results_stale(run.path)
    try:
        base = json.loads(path.read_text(encoding="utf-8")) if path.is_file() and not stale else {}
    except ValueError:
        base = {}
    return {**(base if isinstance(base, dict) else {}), "kind": "evolve", "path": str(run.path),
            "partial": run.partial, "stale_results": stale, "solved_definition": run.solved_definition,
            "budgets": budget_table(run, ks)}


def format_events(folder: str | Path) -> list[str]:
    """Lines for the execution events config.json records (Ray replicas lost and restarted)."""
    from vpo_harness.harness.core.store import RunStore

    events = RunStore(folder).events()
    if not events:
        return []
    out = [f"{Path(folder).name}: {len(events)} execution event{'s' if len(events) != 1 else ''} "
           "(config.json execution.events)"]
    for e in events:
        what = e.get("event", "?")
        detail = ", ".join(f"{k}={v}" for k, v in e.items() if k not in ("event", "time"))
        out.append(f"  {e.get('time', '?')}  {what}" + (f"  {detail}" if detail else ""))
    return out
