"""`vpo plot`: best@k (or pass@k) curves with standard-error bands, one line per run."""
from __future__ import annotations

import argparse


EXAMPLES = """\
vpo plot runs/a runs/b --labels VPO,GRPO --out best_at_k.png
vpo plot runs/a runs/b --metric selected:majority --out majority.png
"""

def register(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("plot", help="best@k curves with standard-error bands, one line per run "
                                    "(evolve runs: solved vs candidates next to plain sampling)")
    p.add_argument("runs", nargs="+", metavar="RUN", help="run folders (vpo run / demo / rescore / evolve)")
    p.add_argument("--out", default="best_at_k.png", help="image file (.png, .pdf, .svg)")
    p.add_argument("--metric", default="best",
                   help="best | pass | selected:STRATEGY (majority, random, public-tests: drawn with best@k dashed)")
    p.add_argument("--labels", default=None, help="comma-separated line labels")
    p.add_argument("--title", default=None, help="figure title")
    return p


def run(args: argparse.Namespace) -> int:
    from harness.results import check_same_task
    from reports.evolve import refuse_mixed
    from search.plots import is_evolve_run, plot_evolve

    check_same_task(args.runs)  # one figure, one task and split
    refuse_mixed(args.runs, "plot")
    if all(is_evolve_run(r) for r in args.runs):  # solved and best vs candidates next to plain sampling
        if args.metric != "best":
            raise ValueError(f"--metric {args.metric}: evolve runs are drawn as solved and best task scalar vs "
                             "candidates (best@k of a search's candidates estimates nothing)")
        out = plot_evolve(args.runs, args.out, labels=args.labels.split(",") if args.labels else None,
                          title=args.title)
        print(f"wrote {out}")
        return 0
    from harness.results import load_run
    from reports.plots import plot_best_at_k

    labels = args.labels.split(",") if args.labels else None
    if args.metric.startswith("selected:"):
        from harness.selection import get_strategy
        from reports.selected import plot_selected

        strategy = get_strategy(args.metric.split(":", 1)[1]).name
        print(f"wrote {plot_selected(args.runs, args.out, strategy, labels=labels, title=args.title)}")
        return 0
    if args.metric not in ("best", "pass"):
        raise ValueError(f"--metric: expected best, pass or selected:STRATEGY, got {args.metric!r}")
    loaded = [load_run(r) for r in args.runs]
    out = plot_best_at_k(loaded, args.out, metric=args.metric, labels=labels, title=args.title)
    print(f"wrote {out}")
    return 0
