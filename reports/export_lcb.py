"""A LiveCodeBench run as LiveCodeBench's own grader input, so a reader can check our pass@1 on the
official path.

LiveCodeBench's ``lcb_runner/runner/custom_evaluator.py`` (``--custom_output_file``) reads a JSON list
of ``{"question_id", "code_list"}``, sorts it by ``str(question_id)`` and grades ``code_list[i]`` as
the i-th generation of that question. We write one entry per problem: every answer of its pool in
chain order (the seeds of a seed group one after the other). An answer we could not parse is the
empty string, which is what LiveCodeBench's own code extractor returns for a completion without a
code block, so ``code_list`` lines up with our pool and both sides count it as a failure.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from vpo_harness.reports.pools import load_pools

TASK = "livecodebench"


def lcb_custom_outputs(folder: str | Path) -> list[dict[str, Any]]:
    """``[{question_id, code_list}]`` of a LiveCodeBench run folder or seed group, sorted as LCB sorts."""
    run = load_pools(folder)
    if run.task != TASK:
        raise ValueError(f"{folder}: a {run.task} run; --format lcb takes a LiveCodeBench run "
                         f"(task {TASK})")
    if not run.problem_ids:
        raise ValueError(f"{folder}: samples.jsonl holds no scored rows yet: nothing to export")
    codes: dict[str, list[str]] = {}
    pids = [u[0] for u in run.units] if run.units else run.problem_ids
    for pid, answers in zip(pids, run.answers):
        codes.setdefault(pid, []).extend("" if a is None else str(a) for a in answers)
    return [{"question_id": q, "code_list": codes[q]} for q in sorted(codes, key=str)]
