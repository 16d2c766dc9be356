"""`vpo export RUN --format FORMAT --out FILE`: a run's samples in another tool's format.

Formats: ``inspect``, an Inspect eval log (``.eval`` or ``.json``) that ``inspect_ai.log.read_eval_log``
reads and ``inspect view`` opens: a problem is a sample, a chain an epoch, each answer a named score
with its reward components (run folders, seed groups and evolve runs); ``lcb``, LiveCodeBench's
``[{question_id, code_list}]`` for its official grader (``lcb_runner.runner.custom_evaluator
--custom_output_file``). The file is written whole or not at all.
"""
from __future__ import annotations

import argparse
from pathlib import Path

EXAMPLES = """\
vpo export runs/maze --format inspect --out maze.eval             # then: inspect view --log-dir .
vpo export runs/lcb --format lcb --out lcb_outputs.json           # then LiveCodeBench's custom_evaluator
"""

FORMATS = ("inspect", "lcb")


def register(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("export", help="write a run's samples in another tool's format (Inspect log, LiveCodeBench grader input)")
    p.add_argument("run", metavar="RUN", help="a run folder, seed group or evolve run")
    p.add_argument("--format", required=True, choices=FORMATS, dest="fmt",
                   help="inspect: an Inspect eval log (.eval or .json); lcb: LiveCodeBench's [{question_id, code_list}], "
                        "one list per problem, every answer")
    p.add_argument("--out", required=True, help="the file to write (replaced whole)")
    return p


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if out.is_dir():
        raise ValueError(f"--out {out}: is a folder; name the file to write")
    if args.fmt == "inspect":
        from vpo_harness.reports.export_inspect import write_inspect_log

        n = write_inspect_log(args.run, out)
        print(f"wrote {out}: {n} samples (Inspect eval log)")
        return 0
    from vpo_harness.harness.core.store import write_json_atomic
    from vpo_harness.reports.export_lcb import lcb_custom_outputs

    entries = lcb_custom_outputs(args.run)
    write_json_atomic(out, entries)
    n = sum(len(e["code_list"]) for e in entries)
    print(f"wrote {out}: {len(entries)} problems, {n} answers (LiveCodeBench custom_evaluator input)")
    return 0
