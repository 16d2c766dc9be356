"""`vpo report RUN [RUN ...] --out report.html`: one self-contained HTML report (figures and data inline)."""
from __future__ import annotations

import argparse


EXAMPLES = """\
vpo report runs/demo/maze-tiny-grpo runs/demo/maze-tiny-vpo --labels GRPO,VPO --out report.html
"""

def register(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("report", help="self-contained HTML report of runs: curves, diversity, reward-space "
                                      "projections, paired comparison, per-problem table, provenance")
    p.add_argument("runs", nargs="+", help="run folders (evaluation or evolve runs); the first is the baseline")
    p.add_argument("--out", default="report.html", help="HTML file to write")
    p.add_argument("--labels", default=None, help="comma-separated run labels")
    p.add_argument("--problems", default=None,
                   help="comma-separated problem ids to project (default: largest VPO-minus-GRPO best@k gaps)")
    p.add_argument("--n-problems", type=int, default=4, help="how many problems to project by default")
    p.add_argument("--projection", default=None,
                   help="reward-space axes: two component names, e.g. gold,diamond, or 'pca' "
                        "(default: the two components that vary most for each shown problem)")
    p.add_argument("--strategies", default="majority,random,public-tests",
                   help="selection strategies for selected@k (those a run cannot evaluate are left out)")
    p.add_argument("--resamples", type=int, default=10_000, help="paired bootstrap resamples over problems")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and of Monte Carlo selection")
    p.add_argument("--title", default=None, help="page title")
    return p


def run(args: argparse.Namespace) -> int:
    from vpo_harness.harness.eval.selection import get_strategy
    from vpo_harness.reports.report import build_report

    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    for s in strategies:
        get_strategy(s)
    out = build_report(args.runs, args.out, labels=args.labels.split(",") if args.labels else None,
                       problems=args.problems.split(",") if args.problems else None, n_problems=args.n_problems,
                       projection=args.projection, strategies=strategies, resamples=args.resamples,
                       seed=args.seed, title=args.title)
    print(f"wrote {out}")
    return 0
