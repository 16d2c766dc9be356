"""`vpo demo`: the paper's Maze row (GRPO, Max-at-K, Multi-RLVR, VPO), the bundled tiny policies on the
Maze test split: best@k, pass@k and diversity, the paper's best@30 beside ours."""
from __future__ import annotations

import argparse
from pathlib import Path

from vpo_harness.harness.app.commands._args import add_cache_flag, kv
from vpo_harness.harness.core.paths import BUNDLED_CHECKPOINTS


EXAMPLES = """\
vpo demo                      # the four methods of training seed 0 on the 100 test mazes
vpo demo --seeds 0-4          # all twenty policies: mean over training seeds, each training run one draw
vpo demo --seeds 0-4 --task-args base_seed=610001 --out runs/demo-610001   # 100 mazes nobody trained or selected on
vpo demo --only vpo,grpo --limit 5 --out runs/demo-small
vpo compare runs/demo/seeds/maze-tiny-grpo runs/demo/seeds/maze-tiny-vpo   # paired over (maze, training seed)
"""

def register(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("demo", help="the paper's Maze row (GRPO, Max-at-K, Multi-RLVR, VPO) on the Maze test split: "
                                    "best@k, pass@k, diversity")
    p.add_argument("--checkpoints", default=str(BUNDLED_CHECKPOINTS), help="folder holding maze-tiny-<method>/")
    p.add_argument("--out", default="runs/demo", help="folder for the runs, plots and report")
    p.add_argument("--limit", type=int, default=None, help="number of test mazes (default all 100)")
    p.add_argument("--split", default="test", help="maze split (test, val, train); with --task-args base_seed=B, "
                                                   "mazes no policy was trained or selected on")
    p.add_argument("--task-args", type=kv, default={}, help="maze options k=v,... (e.g. base_seed=610001)")
    p.add_argument("--batch-size", type=int, default=200, help="chains decoded together")
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    p.add_argument("--seeds", type=_train_seeds, default=[0],
                   help="training seeds, e.g. 0-2 or 0,1 (default 0): one policy per method and seed")
    p.add_argument("--seed", type=int, default=0, help="sampling seed of every run (the training seeds are --seeds)")
    p.add_argument("--only", nargs="*", default=None,
                   help="methods to evaluate, space- or comma-separated: grpo max_at_k multi_rlvr vpo (default: all)")
    p.add_argument("--write-cards", action="store_true",
                   help="write each policy's row into the evaluation section of its model card (checkpoints/)")
    add_cache_flag(p)
    return p


def _train_seeds(text: str) -> list[int]:
    from vpo_harness.harness.core.models.zoo import TRAINING_SEEDS
    from vpo_harness.harness.core.seed_groups import parse_seeds

    try:
        seeds = parse_seeds(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--seeds: ")) from None
    bad = [s for s in seeds if s not in TRAINING_SEEDS]
    if bad:
        raise argparse.ArgumentTypeError(f"training seed {bad[0]} is not one of the zoo's "
                                         f"({', '.join(map(str, TRAINING_SEEDS))})")
    return seeds


def run(args: argparse.Namespace) -> int:
    import torch

    from vpo_harness.harness.app.demo import run_demo

    torch.set_num_threads(args.threads)
    run_demo(Path(args.checkpoints), Path(args.out), limit=args.limit, batch_size=args.batch_size,
             seed=args.seed, only=args.only, cache=args.cache, train_seeds=args.seeds,
             write_cards=args.write_cards, split=args.split, task_args=args.task_args)
    return 0
