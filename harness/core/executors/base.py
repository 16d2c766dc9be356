"""What every executor shares: how to build a backend anywhere, how to score a chain anywhere, and
how the work is cut into batches.

An executor turns the runner's work (GenRequests of chains not yet in the store) into finished,
scored rows. The runner stays the single writer: it appends whatever rows the executor yields, in
whatever order they come, so an executor only has to guarantee that every chain is yielded exactly
once. Everything an executor ships to another process (the backend recipe, the scorer, a batch) is a
plain picklable dataclass; heavy objects (models, tasks) are built where they are used.
"""
from __future__ import annotations

import concurrent.futures as cf
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Sequence

from vpo_harness.harness.core.models.base import Backend, GenRequest, Generation, SamplingConfig

Key = tuple[str, int]  # (problem_id, chain_index): the store's row key


@dataclass(frozen=True)
class BackendSpec:
    """The recipe of a backend (``load_backend`` arguments), so each replica builds its own."""

    model: str
    base_url: str | None = None
    model_args: Mapping[str, Any] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return self.model.split(":", 1)[0].strip().lower()

    def build(self) -> Backend:
        from vpo_harness.harness.core.models import load_backend

        return load_backend(self.model, base_url=self.base_url, model_args=dict(self.model_args))


@dataclass
class ChainScorer:
    """Scores one finished chain into its stored row. Picklable: the task object is rebuilt by
    ``task_factory`` (e.g. ``partial(get_task, name, **options)``) on first use in another process
    (a Ray actor), and reused on the driver."""

    task_factory: Callable[[], Any]
    m: int
    fn: Callable[..., Any]  # fn(task, problem, generation, m, seed) -> row; module-level, so it pickles
    task: Any = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["task"] = None  # tasks may hold sandboxes, data, file handles: rebuilt remotely
        return state

    def __call__(self, problem: Any, gen: Generation, seed: int) -> dict[str, Any]:
        if self.task is None:
            self.task = self.task_factory()
        return self.fn(self.task, problem, gen, self.m, seed)


@dataclass(frozen=True)
class Batch:
    """A unit of work handed to one replica: whole GenRequests or slices of them."""

    index: int
    requests: tuple[GenRequest, ...]

    @property
    def keys(self) -> list[Key]:
        return [(r.problem_id, c) for r in self.requests for c in r.chain_indices]

    def __len__(self) -> int:
        return sum(len(r.chain_indices) for r in self.requests)


def make_batches(requests: Sequence[GenRequest], batch_chains: int) -> list[Batch]:
    """Cut the chains, in request order, into consecutive batches of ``batch_chains``.

    Why consecutive and fixed-size: the hf backend pads rows into batches of ``batch_size`` in the
    same order, so with ``batch_chains == batch_size`` every replica sees exactly the batches a
    single process would, and the sampled text is identical bit for bit whatever the replica count.
    """
    if batch_chains < 1:
        raise ValueError(f"batch_chains must be >= 1, got {batch_chains}")
    batches: list[Batch] = []
    cur: list[GenRequest] = []
    size = 0
    for req in requests:
        pairs = list(zip(req.chain_indices, req.seeds))
        while pairs:
            take = pairs[: batch_chains - size]
            pairs = pairs[len(take):]
            cur.append(GenRequest(req.problem_id, req.messages, tuple(c for c, _ in take), tuple(s for _, s in take)))
            size += len(take)
            if size == batch_chains:
                batches.append(Batch(len(batches), tuple(cur)))
                cur, size = [], 0
    if cur:
        batches.append(Batch(len(batches), tuple(cur)))
    return batches


def seeds_of(requests: Sequence[GenRequest]) -> dict[Key, int]:
    return {(r.problem_id, c): s for r in requests for c, s in zip(r.chain_indices, r.seeds)}


class ScoringPool:
    """Scores generations in worker threads beside generation, so a slow grader (the code sandbox)
    never stalls the model; finished rows are collected with ``drain``."""

    def __init__(self, scorer: ChainScorer, problems: Mapping[str, Any], seeds: Mapping[Key, int], workers: int = 1):
        self.scorer, self.problems, self.seeds = scorer, problems, seeds
        self.workers = max(1, int(workers))
        self._pool = cf.ThreadPoolExecutor(max_workers=self.workers)
        self._pending: set[cf.Future] = set()

    def submit(self, gen: Generation) -> None:
        key = (gen.problem_id, gen.chain_index)
        self._pending.add(self._pool.submit(self.scorer, self.problems[gen.problem_id], gen, self.seeds[key]))

    @property
    def backlog(self) -> int:
        return len(self._pending)

    def drain(self, block: bool = False) -> Iterator[Any]:
        """Rows finished so far; with ``block``, wait for at least one (or all with ``drain_all``)."""
        if not self._pending:
            return
        done, _ = cf.wait(self._pending, timeout=None if block else 0, return_when=cf.FIRST_COMPLETED)
        for f in done:
            self._pending.discard(f)
            yield f.result()

    def drain_all(self) -> Iterator[Any]:
        while self._pending:
            yield from self.drain(block=True)

    def close(self, on_leftover: Callable[[Any], None] | None = None) -> None:
        """Stop. With ``on_leftover``, chains still being scored are finished and handed to it (an
        interrupted run keeps every chain it already generated); without, they are dropped."""
        if on_leftover is None:
            for f in self._pending:
                f.cancel()
        self._pool.shutdown(wait=True)
        if on_leftover is not None:
            for f in self._pending:
                if not f.cancelled() and f.exception() is None:
                    on_leftover(f.result())
        self._pending.clear()


class Executor(ABC):
    """Turns chains to sample into scored rows, yielded as they finish (each chain exactly once)."""

    name = "base"

    def start(self, scorer: ChainScorer) -> None:
        """Build the backend(s) before any work is sent (idempotent); ``rows`` calls it too."""

    @abstractmethod
    def describe_backend(self) -> dict[str, Any]:
        """The backend's ``describe()`` plus how it was executed, for the run's config.json."""

    @abstractmethod
    def rows(self, requests: Sequence[GenRequest], problems: Mapping[str, Any], sampling: SamplingConfig,
             scorer: ChainScorer, on_generated: Callable[[int], None] | None = None,
             on_leftover: Callable[[Any], None] | None = None) -> Iterator[Any]:
        """Yield one scored row per (request, chain index). ``on_generated(k)`` reports k chains sampled;
        when the iteration stops early, rows already scored but not yet yielded go to ``on_leftover``."""

    def describe(self) -> dict[str, Any]:
        return {"executor": self.name}

    def close(self) -> None:
        """Release backends, actors, clusters this executor started."""

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
