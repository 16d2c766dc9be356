"""`vpo rescore RUN --out NEW [--task-args k=v,...]`: grade stored completions again, no generation."""
from __future__ import annotations

import argparse

from vpo_harness.harness.app.commands._args import add_unsafe_sandbox, apply_unsafe_sandbox, kv


EXAMPLES = """\
vpo rescore runs/demo/maze-tiny-vpo --out runs/vpo-linear --task-args reward_mode=linear
"""

def register(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("rescore", help="re-grade a run's stored completions with the current task code or other "
                                       "task options into a new run folder (no generation; code in the sandbox)")
    p.add_argument("run", help="source run folder")
    p.add_argument("--out", required=True, help="new run folder (records its source run)")
    p.add_argument("--task-args", type=kv, default={},
                   help="task options to change, k=v,... (e.g. reward_mode=convex_bonus, visible_tests=half)")
    p.add_argument("--workers", type=int, default=1, help="chains graded in parallel")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_unsafe_sandbox(p)
    return p


def run(args: argparse.Namespace) -> int:
    from vpo_harness.harness.app.rescore import rescore
    from vpo_harness.harness.core.results import load_run

    apply_unsafe_sandbox(args)
    folder = rescore(args.run, args.out, args.task_args, workers=args.workers, progress=not args.no_progress)
    from vpo_harness.harness.app.commands.show import format_table

    print(format_table([load_run(folder)]))
    print(f"\nrescored run folder: {folder} (source: {args.run})")
    return 0
