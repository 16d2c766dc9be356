"""Scale-out: candidates/s of the Ray executor with 1 and 2 replicas vs the local executor, same work.

Two workloads, each run three ways (local executor in-process, Ray with 1 replica, Ray with 2), on
a local Ray cluster started here with ``--cpus`` CPUs:
- ``hf``: the bundled Maze checkpoint through the hf backend (the real model path). The local
  executor gets ``--local-threads`` torch threads; each replica gets 1 CPU (Ray sets
  OMP_NUM_THREADS=1), so 2 replicas on 2 cores is the fair "same hardware" comparison.
- ``mock``: the shipped ``mock:moves`` backend (no model), so the time is the harness itself; the
  difference between Ray and local per chain is the Ray overhead per item (dispatch, pickling,
  object store, driver loop).
Throughput excludes startup (cluster connect + actors + model load, reported separately), and the
rows of the three runs are checked equal (same seeded text). On a shared machine absolute numbers
move with the load; ratios measured in the same run are what to read.

    python bench/scaleout.py [--problems 24] [--chains 8] [--m 3] [--cpus 2]
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vpo_harness.benchmarks import get_task  # noqa: E402
from vpo_harness.benchmarks.scoring import score_generation  # noqa: E402
from vpo_harness.harness.core.executors import BackendSpec, ChainScorer, ExecutorConfig, LocalExecutor  # noqa: E402
from vpo_harness.harness.core.executors.ray_executor import RayExecutor  # noqa: E402
from vpo_harness.harness.eval.runner import RunConfig, run  # noqa: E402


def content(folder: Path) -> dict:
    rows = [json.loads(l) for l in (folder / "samples.jsonl").read_text().splitlines()]
    return {(r["problem_id"], r["chain_index"]): (r["text"], r["rewards"]) for r in rows}


def one(kind: str, replicas: int, spec: BackendSpec, work: dict, out: Path, local_threads: int) -> dict:
    # --no-cache: every configuration samples its chains (a cached chain would time nothing)
    cfg = RunConfig.of(model=spec.model, model_args=dict(spec.model_args), out=str(out), cache=False, **work)
    scorer = ChainScorer(functools.partial(get_task, work["task"]), work["m"], score_generation)
    t0 = time.perf_counter()
    if kind == "local":
        import torch

        torch.set_num_threads(local_threads)
        ex = LocalExecutor(spec)
        ex.describe_backend()  # builds the backend: startup, not throughput
    else:
        ex = RayExecutor(spec, ExecutorConfig(kind="ray", replicas=replicas))
        ex.start(scorer)
    start_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    try:
        run(cfg, executor=ex)
    finally:
        ex.close()
    wall = time.perf_counter() - t1
    n = len(content(out))
    return {"executor": kind if kind == "local" else f"ray x{replicas}", "chains": n,
            "candidates_per_s": n * work["m"] / wall, "run_s": wall, "startup_s": start_s,
            "rows": content(out)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", type=int, default=24)
    ap.add_argument("--chains", type=int, default=8)
    ap.add_argument("--m", type=int, default=3)
    ap.add_argument("--checkpoint", default="maze-tiny-vpo")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray cluster")
    ap.add_argument("--local-threads", type=int, default=1)
    ap.add_argument("--mock-problems", type=int, default=100)
    args = ap.parse_args()

    import ray

    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    t0 = time.perf_counter()
    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False, object_store_memory=200 * 2**20)
    cluster_s = time.perf_counter() - t0
    print(f"local Ray cluster ({args.cpus} CPUs) started in {cluster_s:.1f} s; machine load "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    workloads = {
        "hf": (BackendSpec(f"hf:{args.checkpoint}", None, {"batch_size": args.batch_size}),
               dict(task="maze", prompt_style="compact", m=args.m, n=args.chains, ks=(1,), temperature=0.7,
                    max_tokens=110 if args.m > 1 else 40, limit=args.problems, progress=False)),
        "mock": (BackendSpec("mock:moves", None, {"length": 12}),
                 dict(task="maze", prompt_style="compact", m=args.m, n=args.chains, ks=(1,), max_tokens=64,
                      limit=args.mock_problems, progress=False)),
    }
    summary = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for name, (spec, work) in workloads.items():
                res = [one(k, r, spec, work, Path(tmp) / f"{name}-{k}{r}", args.local_threads)
                       for k, r in (("local", 1), ("ray", 1), ("ray", 2))]
                same = all(r["rows"] == res[0]["rows"] for r in res[1:])
                base = res[0]["candidates_per_s"]
                print(f"\n[{name}] {res[0]['chains']} chains x m={args.m}; rows identical across executors: {same}")
                print(f"{'executor':<10}{'cand/s':>10}{'ratio':>8}{'run s':>9}{'startup s':>11}")
                for r in res:
                    print(f"{r['executor']:<10}{r['candidates_per_s']:>10.1f}{r['candidates_per_s'] / base:>8.2f}"
                          f"{r['run_s']:>9.2f}{r['startup_s']:>11.2f}")
                per_item = (res[1]["run_s"] - res[0]["run_s"]) / res[0]["chains"] * 1e3
                bound = res[1]["run_s"] / res[1]["chains"] * 1e3
                # negative when the replica's generation overlaps the driver's scoring (two processes)
                print(f"Ray overhead per chain (ray x1 - local, steady state): {per_item:.2f} ms; "
                      f"whole ray x1 path per chain (an upper bound on it): {bound:.2f} ms")
                summary[name] = {"rows_identical": same, "overhead_ms_per_chain": per_item,
                                 "ray_ms_per_chain": bound,
                                 **{r["executor"]: {k: v for k, v in r.items() if k != "rows"} for r in res}}
    finally:
        ray.shutdown()
    print("\n" + json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
