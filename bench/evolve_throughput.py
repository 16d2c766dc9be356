"""Candidates evaluated per second through `vpo evolve` on Maze vs the bare evaluator on the same
candidates, and where an evolve run's time goes (LLM calls, grading, OpenEvolve bookkeeping).

The model is the shipped ``mock:moves`` backend (seeded random routes, no weights) behind a real
`vpo serve` process, so the LLM side is a loopback HTTP server that answers at once: what is left is
the search's own cost. Both measurements run in this process, one after the other:

- evolve: `run_evolve` (task prompt, -m 3) over P mazes for I iterations, problems concurrently;
- bare: ``TaskEvaluator.evaluate_text`` on exactly the completions the evolve run received.

A second evolve run with one problem at a time splits wall time into LLM (request latency), grading
(evaluator time) and bookkeeping (the rest: database sampling/adds, migration, checkpoints, rows).

    python bench/evolve_throughput.py [--problems 16] [--iterations 20]
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import get_task  # noqa: E402
from harness.evolve import EvolveConfig, run_evolve  # noqa: E402
from search.evaluator import TaskEvaluator  # noqa: E402
from search.server_process import ManagedServer  # noqa: E402


def evolve_once(url: str, out: Path, problems: int, iterations: int, concurrency: int) -> tuple[float, list[dict]]:
    cfg = EvolveConfig(task="maze", model="openai:mock:moves", base_url=url, problems="all", limit=problems,
                       iterations=iterations, m=3, prompt_mode="task", prompt_style="compact", max_tokens=110,
                       out=str(out), concurrency=concurrency, baseline=False, progress=False)
    t0 = time.perf_counter()
    run_evolve(cfg)
    wall = time.perf_counter() - t0
    rows = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    return wall, rows


def bare(rows: list[dict], limit: int) -> float:
    task = get_task("maze")
    probs = {p.id: p for p in task.load("test", limit=limit)}
    calls = [(r["problem_id"], r["text"]) for r in rows if r["answer_index"] == 0]
    evals = {pid: TaskEvaluator(task, p) for pid, p in probs.items()}
    t0 = time.perf_counter()
    for pid, text in calls:
        evals[pid].evaluate_text(text, 3)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", type=int, default=16)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--concurrency", type=int, default=8)
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="vpo-evolve-bench-"))
    try:
        with ManagedServer("mock:moves", threads=None) as srv:
            wall, rows = evolve_once(srv.base_url, tmp / "par", a.problems, a.iterations, a.concurrency)
            wall1, rows1 = evolve_once(srv.base_url, tmp / "seq", a.problems, a.iterations, 1)
        n = len(rows)
        t_bare = bare(rows, a.problems)
        llm = sum(r["latency_s"] for r in rows1)
        grade = sum(r["score_s"] for r in rows1)
        book = wall1 - llm - grade
        print(f"Maze, {a.problems} problems x {a.iterations + 1} iterations x 3 answers = {n} candidates "
              f"(mock:moves behind vpo serve)")
        print(f"| path | candidates/s |\n|---|---|")
        print(f"| vpo evolve, {a.concurrency} problems at once | {n / wall:.0f} |")
        print(f"| vpo evolve, one problem at a time | {len(rows1) / wall1:.0f} |")
        print(f"| bare evaluator on the same completions | {n / t_bare:.0f} |")
        print(f"ratio evolve/bare: {(n / wall) / (n / t_bare):.3f}")
        print(f"where one-at-a-time wall time goes ({wall1:.2f} s): LLM {llm:.2f} s ({100 * llm / wall1:.0f}%), "
              f"grading {grade:.2f} s ({100 * grade / wall1:.0f}%), OpenEvolve bookkeeping + rows "
              f"{book:.2f} s ({100 * book / wall1:.0f}%, {1000 * book / (len(rows1) / 3):.1f} ms per iteration)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
