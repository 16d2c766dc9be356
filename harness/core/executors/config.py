"""How a run is executed (not what it samples): kept out of the run's identity, so a run started on a
laptop can be resumed on a cluster and vice versa."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

EXECUTORS = ("local", "ray")
SCORE_ON = ("driver", "replica")


@dataclass
class ExecutorConfig:
    kind: str = "local"  # local | ray
    replicas: int = 1  # ray: number of actors, each owning one backend instance
    score_on: str = "driver"  # driver (cheap tasks) | replica (costly graders: code tasks)
    batch_chains: int | None = None  # chains per batch handed to a replica (default: backend-specific)
    address: str | None = None  # ray cluster address (default: RAY_ADDRESS, else a local cluster)
    cpus_per_replica: float = 1.0
    gpus_per_replica: float | None = None  # default: tensor_parallel_size x pipeline_parallel_size for vllm on GPU clusters
    max_restarts: int | None = None  # replacement actors after deaths (default: 2 x replicas)

    def validate(self) -> None:
        if self.kind not in EXECUTORS:
            raise ValueError(f"executor must be one of {', '.join(EXECUTORS)}, got {self.kind!r}")
        if self.score_on not in SCORE_ON:
            raise ValueError(f"score_on must be one of {', '.join(SCORE_ON)}, got {self.score_on!r}")
        if self.replicas < 1:
            raise ValueError(f"replicas must be >= 1, got {self.replicas}")
        if self.kind == "local" and self.replicas != 1:
            raise ValueError("--replicas needs --executor ray (the local executor runs one backend)")
        if self.batch_chains is not None and self.batch_chains < 1:
            raise ValueError(f"batch_chains must be >= 1, got {self.batch_chains}")
        if self.cpus_per_replica < 0 or (self.gpus_per_replica is not None and self.gpus_per_replica < 0):
            raise ValueError("replica resources must be >= 0")

    def as_record(self) -> dict[str, Any]:
        return dict(self.__dict__)
