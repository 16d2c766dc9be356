"""`vpo export RUN --format FORMAT --out FILE`: a run's samples in another tool's input format.

Formats: ``lcb``, LiveCodeBench's ``[{question_id, code_list}]`` for its official grader
(``lcb_runner.runner.custom_evaluator --custom_output_file``). The file is written whole or not at all.
"""
from __future__ import annotations

import argparse
from pathlib import Path

EXAMPLES = """\
vpo export runs/lcb --format lcb --out lcb_outputs.json   # then LiveCodeBench's custom_evaluator
"""

FORMATS = ("lcb",)


def register(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("export", help="write a run's samples in another tool's format (LiveCodeBench grader input)")
    p.add_argument("run", metavar="RUN", help="a run folder or seed group")
    p.add_argument("--format", required=True, choices=FORMATS, dest="fmt",
                   help="lcb: LiveCodeBench's [{question_id, code_list}], one list per problem, every answer")
    p.add_argument("--out", required=True, help="the file to write (replaced whole)")
    return p


def run(args: argparse.Namespace) -> int:
    from vpo_harness.harness.core.store import write_json_atomic
    from vpo_harness.reports.export_lcb import lcb_custom_outputs

    out = Path(args.out)
    if out.is_dir():
        raise ValueError(f"--out {out}: is a folder; name the file to write")
    entries = lcb_custom_outputs(args.run)
    write_json_atomic(out, entries)
    n = sum(len(e["code_list"]) for e in entries)
    print(f"wrote {out}: {len(entries)} problems, {n} answers (LiveCodeBench custom_evaluator input)")
    return 0
