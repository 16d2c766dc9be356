"""Executors: where chains are sampled and scored. ``local`` (one backend in this process, the
default) or ``ray`` (N replicas on a Ray cluster). The runner only asks an executor for finished
rows and appends them; see ``base.py`` for the contract and ``docs/ray.md`` for clusters."""
from __future__ import annotations

from vpo_harness.harness.core.executors.base import BackendSpec, Batch, ChainScorer, Executor, ScoringPool, make_batches
from vpo_harness.harness.core.executors.config import EXECUTORS, SCORE_ON, ExecutorConfig
from vpo_harness.harness.core.executors.local import LocalExecutor
from vpo_harness.harness.core.models.base import Backend

__all__ = ["BackendSpec", "Batch", "ChainScorer", "EXECUTORS", "Executor", "ExecutorConfig", "LocalExecutor",
           "SCORE_ON", "ScoringPool", "make_batches", "make_executor"]


def make_executor(config: ExecutorConfig, spec: BackendSpec, backend: Backend | None = None,
                  score_workers: int = 1) -> Executor:
    """The executor a run's ``ExecutorConfig`` names. A prebuilt ``backend`` only fits the local one."""
    config.validate()
    if config.kind == "local":
        return LocalExecutor(spec, backend=backend, score_workers=score_workers)
    if backend is not None:
        raise ValueError("a prebuilt backend cannot be shipped to Ray replicas; pass a model spec instead")
    from vpo_harness.harness.core.executors.ray_executor import RayExecutor

    return RayExecutor(spec, config)
