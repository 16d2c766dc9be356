"""`vpo import FILE --out RUN`: another tool's repeated samples as a run folder, scored by that tool
or, with `--task`, rescored by one of ours.

Sources: an Inspect eval log (``.eval`` or ``.json``, epochs = repeated samples) and an
lm-evaluation-harness ``--log_samples`` file of a task with repeats (``samples_<task>_<date>.jsonl``).
Each sample is a problem, each epoch or repeat a chain, each named score a reward component. Then
`vpo show / compare / plot / report / view RUN` work on it as on our own runs.
"""
from __future__ import annotations

import argparse

EXAMPLES = """\
vpo import logs/2026-01-01T00-00-00_arith.eval --out runs/arith-inspect
vpo import out/model/samples_arith_2026-01-01T00-00-00.jsonl --out runs/arith-lmeval
vpo import logs/maze.eval --task maze --split test --out runs/maze-rescored   # our task's reward
vpo show runs/arith-inspect --metrics      # best@k / pass@k / diversity from Inspect's own scores
"""


def register(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("import", help="another tool's samples (an Inspect eval log, lm-eval --log_samples with "
                                      "repeats) as a run folder")
    p.add_argument("log", metavar="FILE", help="an Inspect eval log (.eval or .json) or an lm-eval samples file "
                                               "(samples_<task>_<date>.jsonl)")
    p.add_argument("--out", required=True, help="the run folder to write (new or empty)")
    p.add_argument("--task", default=None, help="rescore the answers with this task of ours (a registered name or "
                                                "a task reference) instead of the tool's scores")
    p.add_argument("--split", default="test", help="with --task: the split whose problems the samples are (by id)")
    p.add_argument("--id-field", default="id", help="lm-eval: the doc field holding the problem id")
    return p


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from vpo_harness.harness.app.import_run import write_imported
    from vpo_harness.reports.pools import load_pools

    if Path(args.log).suffix == ".jsonl":
        from vpo_harness.harness.app.import_lmeval import read_lmeval

        samples = read_lmeval(args.log, scored=args.task is None, id_field=args.id_field)
    else:
        from vpo_harness.harness.app.import_inspect import read_inspect

        samples = read_inspect(args.log, scored=args.task is None)
    folder = write_imported(samples, args.out, args.task, args.split)
    pools = load_pools(folder)
    partial = (pools.results or {}).get("partial_reason")
    print(f"wrote {folder}: {len(pools.problem_ids)} problems, {sum(s.size for s in pools.scalars)} scored samples, "
          f"components {', '.join(pools.component_names() or [])}" + (f" (partial: {partial})" if partial else ""))
    return 0
