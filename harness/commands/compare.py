"""`vpo compare RUN_A RUN_B [RUN_C ...]`: paired differences against the first run with 95% bootstrap CIs."""
from __future__ import annotations

import argparse
from pathlib import Path

from harness.commands._args import int_list, tau_list


EXAMPLES = """\
vpo compare runs/demo/maze-tiny-grpo runs/demo/maze-tiny-vpo
vpo compare runs/a runs/b --k 1,30 --csv --out diff.csv
vpo compare runs/grpo runs/vpo --latex --out table.tex   # mean ± s.e. [95% CI] per cell, bold where the CI excludes 0
vpo compare runs/grpo runs/vpo --markdown --tau 0.5 --token-budgets 500,2000
"""

def register(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("compare", help="paired best@k/pass@k/selected@k/diversity/VPO-objective differences "
                                       "vs the first run, 95%% bootstrap CI, win/tie/loss")
    p.add_argument("runs", nargs="+", help="run folders; the first is the baseline")
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
    p.add_argument("--out", default=None, help="also write the output to this file")
    return p


def run(args: argparse.Namespace) -> int:
    from harness.selection import get_strategy
    from harness.metrics import DEFAULT_TAUS
    from reports.compare import compare_runs, format_table, to_csv, to_json, to_latex, to_markdown
    from reports.pools import load_pools

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
    comp = compare_runs([load_pools(r) for r in args.runs], ks=ks, strategies=strategies,
                        resamples=args.resamples, seed=args.seed, taus=args.taus or DEFAULT_TAUS,
                        budgets=list(args.budgets) if args.budgets else None)
    text = (to_json(comp) if args.json else to_csv(comp) if args.csv else to_latex(comp) if args.latex
            else to_markdown(comp) if args.markdown else format_table(comp))
    print(text)
    if args.out:
        Path(args.out).write_text(text if text.endswith("\n") else text + "\n")
    return 0
