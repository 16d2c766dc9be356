"""The execution flags every sampling command shares (`vpo run`, and any command that samples)."""
from __future__ import annotations

import argparse

from vpo_harness.harness.core.executors.config import EXECUTORS, SCORE_ON, ExecutorConfig


def add_executor_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("execution (how, not what: a run may be resumed with other values)")
    g.add_argument("--executor", choices=EXECUTORS, default="local",
                   help="local: one backend in this process; ray: --replicas actors on a Ray cluster")
    g.add_argument("--replicas", type=int, default=None,
                   help="ray: number of actors, each owning one backend (vllm: tensor_parallel_size GPUs each)")
    g.add_argument("--score-on", choices=SCORE_ON, default="driver",
                   help="ray: score on the driver (cheap tasks) or on the replicas (code tasks)")
    g.add_argument("--batch-chains", type=int, default=None,
                   help="ray: chains per batch sent to a replica (default: hf batch_size, vllm 256, openai concurrency)")
    g.add_argument("--ray-address", default=None,
                   help="ray: cluster address (default: $RAY_ADDRESS, else a local cluster on this machine)")
    g.add_argument("--gpus-per-replica", type=float, default=None,
                   help="ray: GPUs reserved per actor (default: tensor x pipeline parallel size for vllm on GPUs)")
    g.add_argument("--cpus-per-replica", type=float, default=1.0, help="ray: CPUs reserved per actor")


def executor_config(args: argparse.Namespace) -> ExecutorConfig:
    replicas = args.replicas if args.replicas is not None else 1
    if args.executor == "local" and replicas != 1:
        raise ValueError("--replicas needs --executor ray (the local executor runs one backend)")
    cfg = ExecutorConfig(kind=args.executor, replicas=replicas, score_on=args.score_on,
                         batch_chains=args.batch_chains, address=args.ray_address,
                         cpus_per_replica=args.cpus_per_replica, gpus_per_replica=args.gpus_per_replica)
    cfg.validate()
    return cfg
