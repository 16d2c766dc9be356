"""Grading throughput on real third-party LiveCodeBench solutions: sandbox vs a naive baseline.

Ours: one sandboxed child per solution, all its tests batched inside (harness/sandbox + the LCB
driver), ``--workers`` slots. Baseline, in the same run and on the same rows: one fresh, unsandboxed
interpreter per *test case* running the same driver on that single test, same number of worker
threads. Both judge with the same comparison code, so they also agree on verdicts (printed).

Also prints the agreement table against LiveCodeBench's own verdicts (public+private tests; we only
have the public ones, so an LCB failure that only private tests expose is a pass here).

    python bench/grading_throughput.py [--workers 2] [--limit N] [--skip-naive] [--json out.json]
"""
from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.paths import shared_data_dir  # noqa: E402
from harness.sandbox import SandboxPool  # noqa: E402
from benchmarks.livecodebench_judge import (  # noqa: E402
    CE, PASS, RTE, TLE, TIMEOUT_S, WRONG, lcb_driver_source, grade_program, stdout_matches,
    value_matches)

_NAIVE_MAIN = """
import json, sys
ns = {"__name__": "naive"}
exec(compile(sys.argv[1], "<driver>", "exec"), ns)
payload = json.loads(sys.stdin.read())
ns["main"](payload, lambda rec: print("\\x00REC" + json.dumps(rec), file=sys.__stdout__, flush=True))
"""


def load_rows(data_dir: Path, limit: int | None) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    probs: dict[str, dict[str, Any]] = {}
    for name in ("code_generation_lite.v5v6.public.jsonl", "graded_problems.jsonl"):
        with open(data_dir / name) as fh:
            for line in fh:
                row = json.loads(line)
                tests = json.loads(row["public_test_cases"])
                meta = json.loads(row.get("metadata") or "{}")
                probs[row["question_id"]] = {
                    "mode": "functional" if tests and tests[0]["testtype"] == "functional" else "stdin",
                    "func_name": meta.get("func_name"),
                    "tests": [{"input": t["input"], "output": t["output"]} for t in tests]}
    with open(data_dir / "graded_solutions.jsonl") as fh:
        rows = [json.loads(line) for line in fh]
    return (rows[:limit] if limit else rows), probs


def naive_grade(code: str, prob: dict[str, Any], timeout_s: float) -> list[str]:
    """One fresh ``python3`` per test case, no sandbox, same driver and judge."""
    driver = lcb_driver_source()
    out = []
    for t in prob["tests"]:
        payload = {"code": code, "mode": prob["mode"], "func_name": prob["func_name"],
                   "inputs": [t["input"]], "timeout_s": timeout_s}
        try:
            r = subprocess.run([sys.executable, "-I", "-c", _NAIVE_MAIN, driver], input=json.dumps(payload),
                               capture_output=True, text=True, timeout=timeout_s + 5)
        except subprocess.TimeoutExpired:
            out.append(TLE)
            continue
        recs = [json.loads(ln[4:]) for ln in r.stdout.split("\n") if ln.startswith("\x00REC")]
        comp = next((x for x in recs if x.get("kind") == "compile"), None)
        test = next((x for x in recs if x.get("kind") == "test"), None)
        if comp is None:
            out.append(RTE)
        elif comp["status"] != "ok":
            out.append(TLE if comp["status"] == "timeout" else CE)
        elif test is None:
            out.append(RTE)
        elif test["status"] == "ok":
            ok = (stdout_matches(test["out"], t["output"]) if prob["mode"] == "stdin"
                  else value_matches(test["out"], t["output"]))
            out.append(PASS if ok else WRONG)
        else:
            out.append({"timeout": TLE, "output_limit": WRONG}.get(test["status"], RTE))
    return out


def lcb_label(row: dict[str, Any]) -> str:
    if row["source_verdict"]:
        return "LCB pass"
    return {-2: "LCB WA (-2)", -3: "LCB TLE (-3)", -4: "LCB RE (-4)"}.get(row["source_error_code"],
                                                                          f"LCB {row['source_error_code']}")


def ours_label(verdicts: list[str]) -> str:
    return "pass" if verdicts and all(v == PASS for v in verdicts) else next(v for v in verdicts if v != PASS)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--timeout", type=float, default=TIMEOUT_S)
    ap.add_argument("--skip-naive", action="store_true")
    ap.add_argument("--data", default=str(shared_data_dir() / "livecodebench"))
    ap.add_argument("--json", default=None, help="write the figures here")
    args = ap.parse_args(argv)
    rows, probs = load_rows(Path(args.data), args.limit)
    n_tests = sum(len(probs[r["question_id"]]["tests"]) for r in rows)
    print(f"{len(rows)} solutions, {n_tests} public test cases, {args.workers} workers, "
          f"{args.timeout:g}s per test")

    with SandboxPool(args.workers) as pool:
        t0 = time.monotonic()
        with ThreadPoolExecutor(args.workers) as ex:
            grades = list(ex.map(lambda r: grade_program(pool, r["code"], probs[r["question_id"]]["mode"],
                                                         probs[r["question_id"]]["func_name"],
                                                         probs[r["question_id"]]["tests"],
                                                         timeout_s=args.timeout), rows))
        ours_s = time.monotonic() - t0
    iso = grades[0].isolation if grades else {}
    n_tle = sum(v == TLE for g in grades for v in g.verdicts)
    ours_rate = len(rows) / ours_s
    print(f"sandbox (batched, isolated): {ours_s:.1f}s  -> {ours_rate:.2f} solutions/s  "
          f"[isolation: netns={iso.get('netns')} pidns={iso.get('pidns')} mountns={iso.get('mountns')} "
          f"uid={iso.get('uid')}]")
    print(f"  {n_tle} test cases hit the {args.timeout:g}s limit: about {n_tle * args.timeout / args.workers:.0f}s "
          f"of the wall time of either method is spent waiting for them")
    result: dict[str, Any] = {"rows": len(rows), "tests": n_tests, "workers": args.workers, "tle_tests": n_tle,
                              "ours_s": ours_s, "ours_per_s": ours_rate, "isolation": iso}

    if not args.skip_naive:
        t0 = time.monotonic()
        with ThreadPoolExecutor(args.workers) as ex:
            naive = list(ex.map(lambda r: naive_grade(r["code"], probs[r["question_id"]], args.timeout), rows))
        naive_s = time.monotonic() - t0
        naive_rate = len(rows) / naive_s
        same = sum(g.verdicts == n for g, n in zip(grades, naive))
        print(f"naive (fresh interpreter per test, no sandbox): {naive_s:.1f}s  -> {naive_rate:.2f} solutions/s")
        print(f"speed-up sandbox/naive: {ours_rate / naive_rate:.2f}x   per-test verdicts identical on "
              f"{same}/{len(rows)} solutions")
        diff = [{"question_id": r["question_id"], "row": i, "ours": g.verdicts, "naive": n,
                 "details": g.details}
                for i, (r, g, n) in enumerate(zip(rows, grades, naive)) if g.verdicts != n]
        for d in diff[:20]:
            print(f"  differs: row {d['row']} {d['question_id']}: sandbox {d['ours']} vs naive {d['naive']}")
        result.update(naive_s=naive_s, naive_per_s=naive_rate, ratio=ours_rate / naive_rate,
                      naive_identical=same, naive_differences=diff)

    table: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for r, g in zip(rows, grades):
        table[lcb_label(r)][ours_label(g.verdicts)] += 1
    cols = ["pass", WRONG, TLE, RTE, CE]
    print("\nagreement with LiveCodeBench's verdicts (rows: LCB on public+private; columns: ours on public)")
    print(f"{'':14}" + "".join(f"{c:>15}" for c in cols) + f"{'total':>8}")
    for label in sorted(table):
        print(f"{label:14}" + "".join(f"{table[label][c]:>15}" for c in cols) + f"{sum(table[label].values()):>8}")
    true_rows = [g for r, g in zip(rows, grades) if r["source_verdict"]]
    missed = sum(not all(v == PASS for v in g.verdicts) for g in true_rows)
    print(f"LCB-correct solutions failing here: {missed} of {len(true_rows)}")
    result["agreement"] = {k: dict(v) for k, v in table.items()}
    result["lcb_true_failing"] = missed
    result["verdicts"] = [{"question_id": r["question_id"], "lcb": r["source_verdict"],
                           "ours": g.verdicts} for r, g in zip(rows, grades)]
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
