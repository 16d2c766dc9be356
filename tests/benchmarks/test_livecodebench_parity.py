"""Verdict parity with LiveCodeBench's official evaluator on 957 real graded model solutions
(integration; public tests, which is all the data has).

``lcb_official_public_verdicts.jsonl`` holds the official grader's pass/fail per row on the public
tests (../shared/anchors/lcb_grader, unmodified). Ours must agree on every row except those in
EXCEPTIONS, where the official grader is demonstrably wrong: each exception is re-run here as a plain
Python process (its real stdin and stdout, non-daemon threads joined at exit, as ``python prog.py <
input`` behaves), and that real output must be correct, i.e. our verdict. Graded in first-failure
mode (pass/fail is all that is compared; the full per-test mode is checked against it on a sample).
"""
from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from vpo_harness.benchmarks.livecodebench import LiveCodeBench
from vpo_harness.benchmarks.livecodebench_judge import LCB_CODE, TLE, stdout_matches
from vpo_harness.harness.core.paths import shared_data_dir
from vpo_harness.harness.core.sandbox import Limits, Sandbox, detect_isolation
from vpo_harness.harness.core.sandbox.sandbox import live_pids_of_uid

DIR = shared_data_dir() / "livecodebench"
TLE_CODE = LCB_CODE[TLE]  # -3

#: row -> why the official verdict is wrong (also listed in docs/engineering.md)
EXCEPTIONS = {
    652: "abc374_e: main() runs in a threading.Thread that is never joined; LiveCodeBench restores "
         "stdout as soon as the module-level code returns and loses the thread's correct output (-2)",
    685: "abc380_f: same unjoined-thread pattern; the official run lost the second test's output (-2)",
    715: "arc185_c: same unjoined-thread pattern; the second test's answer (-1 after 500000 random "
         "trials) comes after LiveCodeBench stopped capturing (-2)",
}

#: runs a program as a plain process would: stdin is a real file on fd 0, prints go to fd 1
PLAIN_DRIVER = """
import os, sys, threading
def main(p, emit):
    fd = os.memfd_create("stdin")
    os.write(fd, p["input"].encode())
    os.lseek(fd, 0, 0)
    os.dup2(fd, 0)
    sys.stdin = open(0, closefd=False)
    before = set(threading.enumerate())
    try:
        exec(compile(p["code"], "<program>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
    except SystemExit:
        pass
    for t in threading.enumerate():  # the interpreter joins non-daemon threads before exiting
        if t not in before and not t.daemon:
            t.join()
    sys.stdout.flush()
    emit({"ran": True})
"""

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]


def _load():
    task = LiveCodeBench(workers=2, max_tests=10**6, max_test_bytes=10**12, first_failure=True)
    probs = {}
    for name in ("code_generation_lite.v5v6.public.jsonl", "graded_problems.jsonl"):
        probs.update({p.id: p for p in task.load("all", path=str(DIR / name))})
    rows = [json.loads(line) for line in open(DIR / "graded_solutions.jsonl")]
    official = [json.loads(line) for line in open(DIR / "lcb_official_public_verdicts.jsonl")]
    return task, probs, rows, official


def time_limited_rows(grades, official) -> list[int]:
    """Rows whose verdict involves a time limit on either side: ours, or LCB's -3 on some test."""
    return [i for i, (g, o) in enumerate(zip(grades, official))
            if TLE in g.verdicts or TLE_CODE in (o["lcb_test_results"] or []) or o["lcb_error_code"] == TLE_CODE]


def test_official_verdict_on_every_row_except_listed_errors():
    assert detect_isolation().sealed, "parity is measured in the sealed sandbox (as CI runs it)"
    task, probs, rows, official = _load()
    assert len(rows) == len(official) == 957 and all(r["question_id"] in probs for r in rows)
    try:
        with ThreadPoolExecutor(task.pool.workers) as ex:
            grades = list(ex.map(lambda r: task.grade(probs[r["question_id"]], r["code"]), rows))
        uids = task.pool.uids
    finally:
        task.close()
    assert all(live_pids_of_uid(u) == [] for u in uids)
    # the official verdicts were taken on an idle machine; a per-test wall-clock limit (LCB's, our
    # default) makes slow-but-correct rows (e.g. 204, 715) time out on a loaded one, and a loaded
    # official run may have timed out where ours did not. Every row whose verdict involves a time
    # limit on either side is graded again with CPU time deciding (wall_factor=3): that is what the
    # program needs, load aside
    slow = time_limited_rows(grades, official)
    if slow:
        cpu = LiveCodeBench(workers=2, max_tests=10**6, max_test_bytes=10**12, first_failure=True,
                            wall_factor=3.0)
        try:
            with ThreadPoolExecutor(2) as ex:
                again = list(ex.map(lambda i: cpu.grade(probs[rows[i]["question_id"]], rows[i]["code"]), slow))
        finally:
            cpu.close()
        for i, g in zip(slow, again):
            print(f"row {i}: time limit on one side (ours {grades[i].verdicts}, official "
                  f"{official[i]['lcb_test_results']}); CPU-time regrade: {g.verdicts}")
            grades[i] = g
    differ = {i: (o["lcb_test_results"], g.verdicts) for i, (g, o) in enumerate(zip(grades, official))
              if g.passed != o["lcb_public_verdict"]}
    assert set(differ) == set(EXCEPTIONS), differ
    assert sum(g.passed for g in grades) == sum(o["lcb_public_verdict"] for o in official) + len(EXCEPTIONS)
    # every solution LCB judged correct on public + private tests passes the public tests here
    assert not [i for i, (r, g) in enumerate(zip(rows, grades)) if r["source_verdict"] and not g.passed]
    assert all(g.isolation["sealed"] for g in grades)


def test_listed_exceptions_are_correct_as_plain_processes():
    task, probs, rows, official = _load()
    with Sandbox(Limits(wall_s=30)) as sb:
        for i in EXCEPTIONS:
            assert not official[i]["lcb_public_verdict"]
            prob = probs[rows[i]["question_id"]]
            for t in prob.data["tests"]:
                r = sb.run(PLAIN_DRIVER, {"code": rows[i]["code"], "input": t["input"]})
                assert r.records == [{"ran": True}], (i, r.stderr_tail[-500:])
                assert stdout_matches(r.stdout_tail, t["output"]), (i, r.stdout_tail[-200:])


def test_full_mode_agrees_with_first_failure_mode_on_a_sample():
    task, probs, rows, _ = _load()
    full = LiveCodeBench(workers=2, max_tests=10**6, max_test_bytes=10**12)
    sample = rows[::19]
    try:
        with ThreadPoolExecutor(2) as ex:
            a = list(ex.map(lambda r: task.grade(probs[r["question_id"]], r["code"]).passed, sample))
            b = list(ex.map(lambda r: full.grade(probs[r["question_id"]], r["code"]), sample))
    finally:
        task.close()
        full.close()
    assert a == [g.passed for g in b]
    # full mode runs every test: no verdict is a "not run" placeholder
    assert not any(d.startswith("not run") for g in b for d in g.details)
