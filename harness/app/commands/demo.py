"""`vpo demo`: the bundled tiny VPO vs GRPO policies on the Maze test split (best@k, pass@k, diversity)."""
from __future__ import annotations

import argparse
from pathlib import Path

from vpo_harness.harness.app.commands._args import add_cache_flag
from vpo_harness.harness.core.paths import BUNDLED_CHECKPOINTS


EXAMPLES = """\
vpo demo                      # the 100 test mazes, 6 to 14 minutes on 2 CPUs (idle to shared)
vpo demo --limit 5 --out runs/demo-small
"""

def register(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("demo", help="bundled tiny VPO vs GRPO on the Maze test split: best@k, pass@k, diversity")
    p.add_argument("--checkpoints", default=str(BUNDLED_CHECKPOINTS), help="folder holding maze-tiny-<method>/")
    p.add_argument("--out", default="runs/demo", help="folder for the runs, plots and report")
    p.add_argument("--limit", type=int, default=None, help="number of test mazes (default all 100)")
    p.add_argument("--batch-size", type=int, default=200, help="chains decoded together")
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    p.add_argument("--seed", type=int, default=0, help="sampling seed")
    p.add_argument("--only", nargs="*", default=["vpo", "grpo"],
                   help="methods to evaluate (default and 'all': vpo grpo, the bundled checkpoints)")
    add_cache_flag(p)
    return p


def run(args: argparse.Namespace) -> int:
    import torch

    from vpo_harness.harness.app.demo import run_demo

    torch.set_num_threads(args.threads)
    run_demo(Path(args.checkpoints), Path(args.out), limit=args.limit, batch_size=args.batch_size,
             seed=args.seed, only=args.only, cache=args.cache)
    return 0
