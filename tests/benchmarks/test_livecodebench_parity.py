"""Parity with LiveCodeBench's own evaluator on 957 real graded model solutions (integration).

Every solution LCB judged correct (on public + private tests) must pass our grading on the public
tests; we also check that no sandboxed process survives grading the lot.
"""
from __future__ import annotations

import collections
import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from benchmarks.livecodebench import LiveCodeBench
from harness.paths import shared_data_dir
from harness.sandbox.sandbox import live_pids_of_uid

DIR = shared_data_dir() / "livecodebench"

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]


def test_all_lcb_correct_solutions_pass_and_nothing_survives():
    # all public tests (no 16 / 8192-byte cut): the stricter check
    task = LiveCodeBench(workers=2, max_tests=10**6, max_test_bytes=10**12)
    probs = {}
    for name in ("code_generation_lite.v5v6.public.jsonl", "graded_problems.jsonl"):
        probs.update({p.id: p for p in task.load("all", path=str(DIR / name))})
    rows = [json.loads(line) for line in open(DIR / "graded_solutions.jsonl")]
    assert len(rows) == 957 and all(r["question_id"] in probs for r in rows)
    try:
        with ThreadPoolExecutor(task.pool.workers) as ex:
            grades = list(ex.map(lambda r: task.grade(probs[r["question_id"]], r["code"]), rows))
        uids = task.pool.uids
    finally:
        task.close()
    assert all(live_pids_of_uid(u) == [] for u in uids)
    true_failing = [(r["question_id"], g.verdicts) for r, g in zip(rows, grades)
                    if r["source_verdict"] and not g.passed]
    assert sum(r["source_verdict"] for r in rows) == 203
    assert true_failing == []
    # the others: a failure on public tests is expected but not guaranteed (private-only failures)
    table = collections.Counter((r["source_error_code"], g.passed) for r, g in zip(rows, grades)
                                if not r["source_verdict"])
    print("LCB false rows (error_code, passes public here):", dict(table))
    assert sum(n for (code, ok), n in table.items() if not ok) > 600
