"""`vpo compare RUN_A RUN_B [RUN_C ...]`: paired differences against the first run with 95% bootstrap CIs."""
from __future__ import annotations

import argparse
from pathlib import Path

from vpo_harness.harness.app.commands._args import int_list, tau_list


EXAMPLES = """\
vpo compare runs/demo/maze-tiny-grpo runs/demo/maze-tiny-vpo
vpo compare runs/a runs/b --k 1,30 --csv --out diff.csv
vpo compare runs/grpo runs/vpo --latex --out table.tex   # mean ± s.e. [95% CI] per cell, bold where the CI excludes 0
vpo compare runs/grpo runs/vpo --markdown --tau 0.5 --token-budgets 500,2000
"""

def register(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("compare", help="paired best@k/pass@k/selected@k/diversity/VPO-objective differences "
                                       "vs the first run, 95%% bootstrap CI, win/tie/loss")
    p.add_argument("runs", nargs="+", help="run folders or seed groups (`vpo run --seeds`: pairs are then (problem, "
                                           "seed), a single run counting as its own seed); the first is the baseline")
    p.add_argument("--k", dest="ks", default=None, help="comma-separated ks (default: those every run has)")
    p.add_argument("--strategies", default="majority,random,public-tests",
                   help="selection strategies for selected@k (those a run cannot evaluate are left out)")
    p.add_argument("--resamples", type=int, default=10_000, help="paired bootstrap resamples over problems")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and of Monte Carlo selection")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print JSON")
    fmt.add_argument("--csv", action="store_true", help="print CSV (one row per metric, k and run)")
    fmt.add_argument("--latex", action="store_true",
                     help="print a booktabs LaTeX table: mean ± s.e. per side, difference ± s.e. [95%% CI], "
                          "the better side bold where the CI excludes 0")
    fmt.add_argument("--markdown", action="store_true", help="print the --latex table as a Markdown pipe table")
    p.add_argument("--tau", dest="taus", type=tau_list, default=None,
                   help="Cover@tau thresholds (default 0.1,0.5,0.9): share of problems with pass rate >= tau")
    p.add_argument("--token-budgets", dest="budgets", type=int_list, default=None,
                   help="completion-token budgets per problem for the compute-matched best_tokens@T "
                        "(default: 4 budgets every run can spend; none when a run has no token counts)")
    p.add_argument("--all-metrics", action="store_true",
                   help="keep the metrics a task makes 0 by construction in the tables (Maze: pass@k, pass^k, "
                        "cover@tau, otherwise left out with one note; --json and --csv always hold every metric)")
    p.add_argument("--out", default=None, help="also write the output to this file")
    return p


def run(args: argparse.Namespace) -> int:
    from vpo_harness.harness.eval.selection import get_strategy
    from vpo_harness.harness.core.metrics import DEFAULT_TAUS
    from vpo_harness.reports.compare import compare_runs, format_table, to_csv, to_json, to_latex, to_markdown
    from vpo_harness.reports.pools import load_pools

    if len(args.runs) < 2:
        raise ValueError("compare needs at least two run folders (the first is the baseline)")
    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    for s in strategies:
        get_strategy(s)
    if args.resamples < 100:
        raise ValueError(f"--resamples must be >= 100, got {args.resamples}")
    try:
        ks = [int(x) for x in args.ks.split(",") if x.strip()] if args.ks else None
    except ValueError:
        raise ValueError(f"--k: expected comma-separated integers like 1,2,4, got {args.ks!r}") from None
    evolve = _compare_evolve(args, ks)  # evolve runs: paired differences at candidate budgets
    if evolve is not None:
        comp, table = evolve
        text = to_json(comp) if args.json else to_csv(comp) if args.csv else table(comp)
    else:
        runs = _readable([load_pools(r) for r in args.runs])
        comp = compare_runs(runs, ks=ks, strategies=strategies,
                            resamples=args.resamples, seed=args.seed, taus=args.taus or DEFAULT_TAUS,
                            budgets=list(args.budgets) if args.budgets else None)
        if not (args.json or args.csv or getattr(args, "all_metrics", False)):  # data files keep every metric
            from vpo_harness.reports.compare import identity
            from vpo_harness.reports.constant_metrics import constant_metrics

            comp = comp.without_constant(constant_metrics(identity(r)["task"] for r in runs))
        text = (to_json(comp) if args.json else to_csv(comp) if args.csv else to_latex(comp) if args.latex
                else to_markdown(comp) if args.markdown else format_table(comp))
    print(text)
    if args.out:
        Path(args.out).write_text(text if text.endswith("\n") else text + "\n")
    return 0


def _compare_evolve(args: argparse.Namespace, ks: list[int] | None) -> tuple | None:
    """(comparison, formatter) when the runs are evolve runs, or an evolve run and its own
    ``baseline/``; None for sampling runs; a sampling run next to an evolve run is refused."""
    from vpo_harness.reports import evolve as ev

    own = ev.own_baseline_pair(args.runs)
    if own is not None:  # the search minus plain sampling at the same budget
        return ev.compare_with_baseline(ev.load_evolve(own), ks, args.resamples, args.seed), ev.format_comparison
    ev.refuse_mixed(args.runs, "compare")
    if ev.run_kind(args.runs[0]) != "evolve":
        return None
    runs = [ev.load_evolve(r) for r in args.runs]
    return ev.compare_evolve(runs, ks, args.resamples, args.seed), ev.format_comparison


def _readable(runs: list) -> list:
    """Runs a paired comparison can be made of: each has scored candidates, and shares problems with
    the first (an empty run would otherwise print a table of dashes and exit 0)."""
    for r in runs:
        if not any(s.size for s in r.scalars):
            why = "holds no rows yet (nothing sampled)" if not r.problem_ids else \
                f"has no scored candidate ({r.n_errors} error rows; re-run with --retry-errors)"
            raise ValueError(f"{r.path}: samples.jsonl {why}: nothing to compare")
    from vpo_harness.reports.compare import pair_keys

    keys = pair_keys(runs)  # (problem, seed) when a seed group is among them
    for r, k in zip(runs[1:], keys[1:]):
        if not set(keys[0]) & set(k):
            what = "no (problem, seed) pair" if any(x.seeds for x in runs) else "no problem"
            raise ValueError(f"{runs[0].path} and {r.path} share {what}: nothing to pair")
    return runs
