"""Grading speed and verdicts on 957 real LiveCodeBench solutions: this project's sealed sandbox next to
LiveCodeBench's official grader, in one run, on the same rows (public tests, 2 workers, 6 s per test).

Measured, alternating official / ours so that machine load hits both alike:
- fixed cost per solution: a trivial ``print(42)`` graded on one test through our sandbox (warm slot),
  through the official grader's ``check_correctness``, and run as a bare ``python -I -S -c``;
- rows/s of the official grader (its own driver, ../shared/anchors/lcb_grader/run_official.py, in a
  numpy-only venv as its README says), of ours in full per-test mode (every test runs: the per-test
  reward vector) and of ours in first-failure mode (stops at the first failing test, as LCB does);
- peak memory: the largest resident set of any process of each grader (``wait4`` of its process tree);
- verdict parity: official pass/fail vs ours on every row, and the rows where they differ.

Goals: fixed cost <= 1.3x bare python; first-failure >= 1.7x official rows/s; full >= 1.0x.

    python -m venv .venv-lcb && .venv-lcb/bin/pip install numpy==2.2.5 tqdm==4.67.1
    python bench/grading_throughput.py [--pairs 2] [--limit N] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from vpo_harness.benchmarks.livecodebench_judge import PASS, TIMEOUT_S, TLE, grade_program  # noqa: E402
from vpo_harness.harness.core.paths import shared_data_dir  # noqa: E402
from vpo_harness.harness.core.sandbox import Sandbox, SandboxPool  # noqa: E402
from vpo_harness.harness.core.sandbox.pool import UID_BLOCK, default_uid_base  # noqa: E402

PROBLEM_FILES = ("code_generation_lite.v5v6.public.jsonl", "graded_problems.jsonl")
_OFFICIAL_FIXED = """
import json, sys, time
sys.path.insert(0, sys.argv[1]); sys.dont_write_bytecode = True
from lcb_runner.evaluation.compute_code_generation_metrics import check_correctness
sample = {"input_output": json.dumps({"inputs": [""], "outputs": ["42"], "fn_name": None})}
out = []
for _ in range(int(sys.argv[2])):
    t0 = time.perf_counter(); res, _ = check_correctness(sample, "print(42)", 6, debug=False)
    out.append(time.perf_counter() - t0); assert res == [True], res
print(json.dumps(out))
"""


def load_rows(data_dir: Path, limit: int | None) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    probs: dict[str, dict[str, Any]] = {}
    for name in PROBLEM_FILES:
        with open(data_dir / name) as fh:
            for line in fh:
                row = json.loads(line)
                tests = json.loads(row["public_test_cases"])
                meta = json.loads(row.get("metadata") or "{}")
                probs.setdefault(row["question_id"], {
                    "mode": "functional" if tests and tests[0]["testtype"] == "functional" else "stdin",
                    "func_name": meta.get("func_name"),
                    "tests": [{"input": t["input"], "output": t["output"]} for t in tests]})
    with open(data_dir / "graded_solutions.jsonl") as fh:
        rows = [json.loads(line) for line in fh]
    return (rows[:limit] if limit else rows), probs


# ---- one measurement per subprocess (so wait4 sees exactly that grader's processes) --------------
def grade_ours(data: Path, limit: int | None, workers: int, timeout: float, first_failure: bool) -> dict[str, Any]:
    rows, probs = load_rows(data, limit)
    with SandboxPool(workers) as pool:
        t0 = time.monotonic()
        with ThreadPoolExecutor(workers) as ex:
            grades = list(ex.map(lambda r: grade_program(
                pool, r["code"], probs[r["question_id"]]["mode"], probs[r["question_id"]]["func_name"],
                probs[r["question_id"]]["tests"], timeout_s=timeout, first_failure=first_failure), rows))
        wall = time.monotonic() - t0
        iso = pool.isolation_record()
    # tests that ran into the per-test limit (not those marked after a first failure without running)
    at_limit = sum(v == TLE and not d.startswith("not run") for g in grades for v, d in zip(g.verdicts, g.details))
    return {"wall_s": wall, "verdicts": [g.passed for g in grades], "per_test": [g.verdicts for g in grades],
            "tests_at_limit": at_limit,
            "peak_kb_per_row": [g.peak_kb for g in grades], "isolation": iso}


def _measured(argv: list[str]) -> tuple[int, float, int]:
    """(exit code, wall seconds, peak RSS KiB of the largest process in its tree)."""
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, cwd=str(ROOT))
    _, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, time.monotonic() - t0, ru.ru_maxrss


def run_official(args: argparse.Namespace, tmp: Path, k: int) -> dict[str, Any]:
    data = Path(args.data)
    out = tmp / f"official_{k}.jsonl"
    argv = [args.lcb_python, str(Path(args.lcb_root) / "run_official.py"),
            "--solutions", str(data / "graded_solutions.jsonl"),
            "--problems", *[str(data / p) for p in PROBLEM_FILES], "--workers", str(args.workers),
            "--timeout", str(int(args.timeout)), "--out", str(out), "--lcb-root", args.lcb_root]
    if args.limit:
        argv += ["--rows", ",".join(map(str, range(args.limit)))]
    code, _, peak = _measured(argv)
    if code != 0:
        raise SystemExit(f"official grader failed (exit {code}): {' '.join(argv)}")
    summary = json.loads(Path(str(out) + ".summary.json").read_text())
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    return {"wall_s": summary["wall_s"], "verdicts": [r["lcb_public_verdict"] for r in recs], "peak_kb": peak,
            "tests_at_limit": sum(t == -3 for r in recs for t in r["lcb_test_results"])}


def run_ours(args: argparse.Namespace, tmp: Path, k: int, mode: str) -> dict[str, Any]:
    out = tmp / f"ours_{mode}_{k}.json"
    argv = [sys.executable, str(Path(__file__).resolve()), "--worker", mode, "--worker-out", str(out),
            "--data", args.data, "--workers", str(args.workers), "--timeout", str(args.timeout)]
    if args.limit:
        argv += ["--limit", str(args.limit)]
    code, _, peak = _measured(argv)
    if code != 0:
        raise SystemExit(f"our grader failed (exit {code})")
    res = json.loads(out.read_text())
    res["peak_kb"] = peak
    return res


# ---- fixed cost --------------------------------------------------------------------------------
def fixed_costs(args: argparse.Namespace, n: int) -> dict[str, float]:
    """Mean seconds per trivial solution, ours and bare python interleaved."""
    test = [{"input": "", "output": "42"}]
    bare, ours = [], []
    uid = default_uid_base() + UID_BLOCK - 1  # as a pool slot runs: unprivileged uid, sealed
    with Sandbox(uid=uid, gid=uid) as sb:
        grade_program(sb, "print(42)", "stdin", None, test)  # start the zygote (once per slot)
        for _ in range(n):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-I", "-S", "-c", "print(42)"], stdout=subprocess.DEVNULL, check=True)
            bare.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            g = grade_program(sb, "print(42)", "stdin", None, test)
            ours.append(time.perf_counter() - t0)
            assert g.passed, g.as_dict()
    res = {"bare_s": statistics.median(bare), "ours_s": statistics.median(ours)}
    r = subprocess.run([args.lcb_python, "-c", _OFFICIAL_FIXED, args.lcb_root, str(n)], capture_output=True,
                       text=True, cwd=tempfile.gettempdir(), stdin=subprocess.DEVNULL)
    if r.returncode == 0:
        res["official_s"] = statistics.median(json.loads(r.stdout.strip().splitlines()[-1]))
    return res


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--timeout", type=float, default=TIMEOUT_S)
    ap.add_argument("--pairs", type=int, default=2, help="alternating rounds (official, ours-ff, ours-full)")
    ap.add_argument("--fixed-n", type=int, default=40)
    ap.add_argument("--data", default=str(shared_data_dir() / "livecodebench"))
    ap.add_argument("--lcb-root", default=str(shared_data_dir().parent / "anchors" / "lcb_grader"))
    ap.add_argument("--lcb-python", default=str(ROOT / ".venv-lcb" / "bin" / "python"))
    ap.add_argument("--json", default=None, help="write the figures here")
    ap.add_argument("--worker", choices=("full", "ff"), help=argparse.SUPPRESS)
    ap.add_argument("--worker-out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        res = grade_ours(Path(args.data), args.limit, args.workers, args.timeout, args.worker == "ff")
        Path(args.worker_out).write_text(json.dumps(res))
        return res
    if not Path(args.lcb_python).exists():
        raise SystemExit(f"no official-grader venv at {args.lcb_python}: python -m venv .venv-lcb && "
                         ".venv-lcb/bin/pip install numpy==2.2.5 tqdm==4.67.1 (or pass --lcb-python)")
    rows, _ = load_rows(Path(args.data), args.limit)
    load0 = os.getloadavg()
    print(f"{len(rows)} solutions, public tests, {args.workers} workers, {args.timeout:g}s per test; "
          f"load average at start {load0[0]:.1f} on {os.cpu_count()} CPUs")
    fixed = fixed_costs(args, args.fixed_n)
    print(f"fixed cost per solution (median of {args.fixed_n}, trivial print(42)): bare python -I -S -c "
          f"{fixed['bare_s'] * 1e3:.1f} ms, ours {fixed['ours_s'] * 1e3:.1f} ms "
          f"({fixed['ours_s'] / fixed['bare_s']:.2f}x bare; goal <= 1.3x)"
          + (f", official check_correctness {fixed['official_s'] * 1e3:.1f} ms" if "official_s" in fixed else ""))
    pairs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="vpo-bench-") as tmp:
        for k in range(args.pairs):
            order = [("official", lambda: run_official(args, Path(tmp), k)),
                     ("ff", lambda: run_ours(args, Path(tmp), k, "ff")),
                     ("full", lambda: run_ours(args, Path(tmp), k, "full"))]
            if k % 2:
                order.reverse()
            rec: dict[str, Any] = {"load_before": os.getloadavg()[0]}
            for name, fn in order:
                rec[name] = fn()
                rec[name]["rows_per_s"] = len(rows) / rec[name]["wall_s"]
            rec["load_after"] = os.getloadavg()[0]
            o = rec["official"]["rows_per_s"]
            print(f"round {k + 1}: official {o:.2f} rows/s | ours first-failure "
                  f"{rec['ff']['rows_per_s']:.2f} ({rec['ff']['rows_per_s'] / o:.2f}x) | ours full "
                  f"{rec['full']['rows_per_s']:.2f} ({rec['full']['rows_per_s'] / o:.2f}x) | load "
                  f"{rec['load_before']:.1f} -> {rec['load_after']:.1f}")
            pairs.append(rec)
    mean = {m: statistics.mean(p[m]["rows_per_s"] for p in pairs) for m in ("official", "ff", "full")}
    peak = {m: max(p[m]["peak_kb"] for p in pairs) for m in ("official", "ff", "full")}
    print("\n| grader | rows/s (mean of rounds) | vs official | peak RSS of one process |")
    print("|---|---|---|---|")
    for m, label in (("official", "LiveCodeBench official (run_official.py)"),
                     ("ff", "ours, first-failure mode"), ("full", "ours, full per-test mode")):
        print(f"| {label} | {mean[m]:.2f} | {mean[m] / mean['official']:.2f}x | {peak[m] / 1024:.0f} MiB |")
    print(f"| fixed cost, trivial program | ours {fixed['ours_s'] * 1e3:.1f} ms | bare python "
          f"{fixed['bare_s'] * 1e3:.1f} ms ({fixed['ours_s'] / fixed['bare_s']:.2f}x) | official "
          f"{fixed.get('official_s', float('nan')) * 1e3:.1f} ms |")
    # Why full mode is bounded: a test at the limit holds a worker for the whole timeout (every such
    # program here is CPU-bound, so more slots than cores would only slow the others), so no grader
    # that runs every test can finish before tests_at_limit * timeout / workers seconds.
    last = pairs[-1]
    n_lim = {m: last[m]["tests_at_limit"] for m in ("official", "ff", "full")}
    floor_s = n_lim["full"] * args.timeout / args.workers
    off_wall = statistics.mean(p["official"]["wall_s"] for p in pairs)
    print(f"\ntests at the {args.timeout:g}s limit: official {n_lim['official']}, ours first-failure {n_lim['ff']}, "
          f"ours full {n_lim['full']}. Full mode must wait {n_lim['full']} x {args.timeout:g}s / {args.workers} "
          f"workers = {floor_s:.1f} s at the limit alone, against the official grader's whole run of "
          f"{off_wall:.1f} s: even with every other test free, full mode could reach at most "
          f"{off_wall / floor_s if floor_s else float('inf'):.2f}x")
    # verdict parity on the last round
    off, ours_full, ours_ff = last["official"]["verdicts"], last["full"]["verdicts"], last["ff"]["verdicts"]
    diff = [i for i in range(len(rows)) if off[i] != ours_full[i]]
    print(f"\nverdict parity (last round): official vs ours-full differ on {len(diff)} of {len(rows)} rows"
          f" {diff}; ours-full vs ours-first-failure differ on "
          f"{sum(a != b for a, b in zip(ours_full, ours_ff))} rows")
    iso = last["full"]["isolation"]
    print(f"isolation: sealed={iso.get('sealed')} seccomp={iso.get('seccomp')} uid={iso.get('uid')} "
          f"memory limit {iso['rlimits']['address_space_bytes'] >> 20} MiB")
    result = {"rows": len(rows), "workers": args.workers, "timeout": args.timeout, "fixed": fixed,
              "rows_per_s": mean, "peak_kb": peak, "load_start": load0[0],
              "rounds": [{m: {"rows_per_s": p[m]["rows_per_s"], "peak_kb": p[m]["peak_kb"]}
                          for m in ("official", "ff", "full")} | {"load_before": p["load_before"],
                                                                  "load_after": p["load_after"]}
                         for p in pairs],
              "tests_at_limit": n_lim, "full_floor_s": floor_s,
              "parity_diff_rows": diff, "isolation": iso,
              "official_passes": sum(off), "ours_passes": sum(ours_full)}
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
