"""`vpo plot`: best@k (or pass@k) curves with standard-error bands, one line per run."""
from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("plot", help="best@k curves with standard-error bands, one line per run")
    p.add_argument("runs", nargs="+")
    p.add_argument("--out", default="best_at_k.png")
    p.add_argument("--metric", default="best", choices=["best", "pass"])
    p.add_argument("--labels", default=None, help="comma-separated line labels")
    p.add_argument("--title", default=None)
    return p


def run(args: argparse.Namespace) -> int:
    from harness.store import load_run
    from reports.plots import plot_best_at_k

    loaded = [load_run(r) for r in args.runs]
    labels = args.labels.split(",") if args.labels else None
    out = plot_best_at_k(loaded, args.out, metric=args.metric, labels=labels, title=args.title)
    print(f"wrote {out}")
    return 0
