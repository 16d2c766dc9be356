"""The in-process executor: one backend, generation streamed, scoring in threads beside it.

This is the laptop path and the default; it needs nothing beyond the backend itself.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator, Mapping, Sequence

from vpo_harness.harness.core.executors.base import BackendSpec, ChainScorer, Executor, ScoringPool, seeds_of
from vpo_harness.harness.core.models.base import Backend, GenRequest, SamplingConfig, check_prefill


class LocalExecutor(Executor):
    """Drives one backend in this process. A backend passed in is borrowed (not closed here)."""

    name = "local"

    def __init__(self, spec: BackendSpec | None = None, backend: Backend | None = None, score_workers: int = 1):
        if spec is None and backend is None:
            raise ValueError("LocalExecutor needs a BackendSpec or a built backend")
        self.spec = spec
        self._backend = backend
        self._own = backend is None
        self.score_workers = max(1, int(score_workers))

    @property
    def backend(self) -> Backend:
        if self._backend is None:
            assert self.spec is not None
            self._backend = self.spec.build()
        return self._backend

    def describe_backend(self) -> dict[str, Any]:
        return self.backend.describe()  # the executor's settings are in config.json's execution section

    def rows(self, requests: Sequence[GenRequest], problems: Mapping[str, Any], sampling: SamplingConfig,
             scorer: ChainScorer, on_generated: Callable[[int], None] | None = None,
             on_leftover: Callable[[Any], None] | None = None) -> Iterator[Any]:
        check_prefill(self.backend, requests)
        pool = ScoringPool(scorer, problems, seeds_of(requests), self.score_workers)
        try:
            for gen in self.backend.generate(requests, sampling):
                if on_generated:
                    on_generated(1)
                pool.submit(gen)
                # bounded backlog: generation never runs far ahead of scoring (memory, crash loss)
                yield from pool.drain(block=pool.backlog >= 4 * pool.workers)
            yield from pool.drain_all()
        finally:
            pool.close(on_leftover)

    def describe(self) -> dict[str, Any]:
        return {"executor": self.name, "score_workers": self.score_workers}

    def close(self) -> None:
        if self._own and self._backend is not None:
            self._backend.close()
            self._backend = None
