"""One replica: a backend instance (and optionally the task's scorer) living in a Ray actor.

A plain class, so it is tested without Ray and wrapped with ``ray.remote`` only by the Ray executor.
"""
from __future__ import annotations

import os
import socket
from typing import Any, Mapping, Sequence

from vpo_harness.harness.core.executors.base import BackendSpec, ChainScorer, seeds_of
from vpo_harness.harness.core.models.base import GenRequest, SamplingConfig


class Replica:
    def __init__(self, spec: BackendSpec, scorer: ChainScorer | None = None):
        self.spec = spec
        self.backend = spec.build()
        self.scorer = scorer

    def info(self) -> dict[str, Any]:
        """Where this replica runs; also the readiness probe (returns once the backend is built)."""
        return {"pid": os.getpid(), "host": socket.gethostname(), "describe": self.backend.describe(),
                "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")}

    def run(self, requests: Sequence[GenRequest], sampling: SamplingConfig,
            problems: Mapping[str, Any] | None = None) -> list[Any]:
        """Sample one batch; returns Generations, or scored rows when this replica scores."""
        from vpo_harness.harness.core.models.base import check_prefill

        check_prefill(self.backend, requests)
        gens = list(self.backend.generate(requests, sampling))
        if self.scorer is None:
            return gens
        if problems is None:
            raise ValueError("a scoring replica needs the batch's problems")
        seeds = seeds_of(requests)
        return [self.scorer(problems[g.problem_id], g, seeds[(g.problem_id, g.chain_index)]) for g in gens]

    def close(self) -> None:
        self.backend.close()
