"""`vpo plot`: best@k (or pass@k) curves with standard-error bands, one line per run."""
from __future__ import annotations

import argparse

from vpo_harness.harness.app.commands._args import tau_list


EXAMPLES = """\
vpo plot runs/a runs/b --labels VPO,GRPO --out best_at_k.png
vpo plot runs/a runs/b --metric selected:majority --out majority.png
vpo plot runs/a runs/b --metric best,pass^k,cover,tokens --style paper --out fig.pdf   # shared y-limits
vpo plot runs/a runs/b --metric components --out components.svg    # one panel per reward component
"""

def register(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("plot", help="best@k curves with standard-error bands, one line per run "
                                    "(evolve runs: solved vs candidates next to plain sampling)")
    p.add_argument("runs", nargs="+", metavar="RUN", help="run folders (vpo run / demo / rescore / evolve)")
    p.add_argument("--out", default="best_at_k.png", help="image file (.png, .pdf, .svg)")
    p.add_argument("--metric", default="best",
                   help="one or more (comma-separated, one panel each): best | pass | pass^k | cover | tokens "
                        "(best vs completion tokens, compute-matched) | diversity | pareto | objective | mean | "
                        "components | component:NAME | evolve / evolve-solved (sampling runs' best@k and solved "
                        "within k, on a candidates axis); or selected:STRATEGY (majority, random, public-tests: "
                        "drawn with best@k dashed). Evolve runs take the default only: their figure is solved "
                        "and best scalar vs candidates next to their baseline/")
    p.add_argument("--style", default="default", choices=("default", "paper"),
                   help="paper: 3.3 in column-width panels, print-size fonts; use .pdf/.svg for vector output")
    p.add_argument("--tau", dest="taus", type=tau_list, default=None,
                   help="Cover@tau thresholds marked on the cover panel (default 0.1,0.5,0.9)")
    p.add_argument("--free-y", action="store_true", help="let each panel pick its own y-limits (default: shared)")
    p.add_argument("--labels", default=None, help="comma-separated line labels")
    p.add_argument("--title", default=None, help="figure title")
    return p


def run(args: argparse.Namespace) -> int:
    from vpo_harness.harness.core.results import check_same_task
    from vpo_harness.reports.evolve import refuse_mixed
    from vpo_harness.harness.core.results import is_evolve_run
    from vpo_harness.reports.evolve_plots import plot_evolve

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
    from vpo_harness.harness.core.results import load_run
    from vpo_harness.reports.plots import plot_best_at_k

    labels = args.labels.split(",") if args.labels else None
    if args.metric.startswith("selected:"):
        from vpo_harness.harness.eval.selection import get_strategy
        from vpo_harness.reports.selected import plot_selected

        strategy = get_strategy(args.metric.split(":", 1)[1]).name
        print(f"wrote {plot_selected(args.runs, args.out, strategy, labels=labels, title=args.title)}")
        return 0
    if args.metric not in ("best", "pass") or args.style != "default" or args.taus or args.free_y:
        from vpo_harness.reports.plots import plot_metrics

        out = plot_metrics(args.runs, args.out, args.metric, labels=labels, title=args.title, style=args.style,
                           taus=args.taus, share_y=not args.free_y)
        print(f"wrote {out}")
        return 0
    loaded = [load_run(r) for r in args.runs]
    out = plot_best_at_k(loaded, args.out, metric=args.metric, labels=labels, title=args.title)
    print(f"wrote {out}")
    return 0
