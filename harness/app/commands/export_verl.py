"""`vpo export-verl`: a task split as verl parquet rows for the `vpo` reward manager (docs/verl.md).

    vpo export-verl --task maze --split train --out runs/verl/maze --method vpo --prompt-style compact
"""
from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    from vpo_harness.harness.app.commands._args import TASK_HELP, kv, task_ref
    from vpo_harness.training.advantages import METHODS

    p = sub.add_parser("export-verl", help="write a task split in verl's parquet format (for `vpo train --engine verl`)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", required=True, type=task_ref, help=TASK_HELP)
    p.add_argument("--split", required=True)
    p.add_argument("--out", required=True, help="folder; writes <split>.parquet and <split>.export.json")
    p.add_argument("--method", choices=METHODS, default="vpo", help="prompt format and set reward of the rows")
    p.add_argument("--m", type=int, default=3)
    p.add_argument("--K", type=int, default=100)
    p.add_argument("--alpha", type=float, default=1.0)
    p.add_argument("--sobol", action="store_true")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--prompt-style", default="full")
    p.add_argument("--path", default=None, help="local data files of the task")
    p.add_argument("--task-args", type=kv, default={})
    return p


def run(args: argparse.Namespace) -> int:
    from vpo_harness.training.verl_export import VerlExport, export

    path = export(VerlExport(task=args.task, split=args.split, out=args.out, method=args.method, m=args.m, K=args.K,
                             alpha=args.alpha, sobol=args.sobol, seed=args.seed, limit=args.limit,
                             prompt_style=args.prompt_style, path=args.path, task_args=dict(args.task_args)))
    print(path)
    return 0
