"""Spread one run over a Ray cluster: N actors, each owning one backend, fed batches from the driver.

Why it is built this way:
- The driver keeps the single writer (the run store) and the queue. Each replica holds at most
  ``prefetch`` batches (one running, one waiting behind it) and gets the next only when it returns
  one, so fast replicas take more work and a slow one never hoards it.
- Results come back per batch as plain Generations (or scored rows with ``score_on="replica"``),
  and the runner appends them as today; crash-resume of the driver is the store's usual resume.
- A replica that dies (``ray.kill``, OOM kill, node lost) fails its in-flight calls; those batches
  return to the front of the queue and a replacement actor is started, within a restart budget.
  Delivery is filtered by key, so a chain is written exactly once even if a batch ran twice.
- Batches are consecutive slices of the same chain order the local executor uses, sized like the
  backend's own batches, so per-chain seeded backends (hf) give the same rows for any replica count.

``ray`` is imported only here, and only when a Ray run starts (``pip install vpo-harness[ray]``).
"""
from __future__ import annotations

import logging
import os
import time
import uuid
from typing import Any, Callable, Iterator, Mapping, Sequence

from vpo_harness.harness.core.executors.base import BackendSpec, ChainScorer, Executor, ScoringPool, make_batches, seeds_of
from vpo_harness.harness.core.executors.config import ExecutorConfig
from vpo_harness.harness.core.executors.workqueue import WorkQueue
from vpo_harness.harness.core.models.base import GenRequest, SamplingConfig

_log = logging.getLogger(__name__)  # notes and warnings: the caller decides where they go (harness/core/log.py)

INSTALL_HINT = "--executor ray needs Ray: pip install 'vpo-harness[ray]'"


class ExecutorError(RuntimeError):
    pass


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise ExecutorError(INSTALL_HINT) from exc
    return ray


def _lost_errors(ray: Any) -> tuple[type[BaseException], ...]:
    """Failures that mean 'the replica is gone', not 'the code is wrong': re-queue and replace."""
    ex = ray.exceptions
    names = ("RayActorError", "ActorDiedError", "ActorUnavailableError", "WorkerCrashedError", "NodeDiedError",
             "ObjectLostError", "OwnerDiedError", "OutOfMemoryError", "LocalRayletDiedError")
    return tuple(getattr(ex, n) for n in names if hasattr(ex, n))


def default_batch_chains(spec: BackendSpec) -> int:
    """One replica call = one backend batch: hf's batch_size (bitwise equal rows to a local run),
    enough chains to keep vLLM's scheduler full, the client's concurrency for servers."""
    args = dict(spec.model_args)
    if spec.kind == "hf":
        return int(args.get("batch_size", 16))
    if spec.kind == "vllm":
        return int(args.get("chunk_size", 256))
    return int(args.get("concurrency", 32))


def replica_gpus(spec: BackendSpec, cluster_gpus: float) -> float:
    """GPUs one replica reserves by default: T x PP for vllm, one for hf, none for clients or CPU clusters."""
    if cluster_gpus <= 0:
        return 0.0
    args = dict(spec.model_args)
    if spec.kind == "vllm":
        return float(int(args.get("tensor_parallel_size", 1)) * int(args.get("pipeline_parallel_size", 1)))
    return 1.0 if spec.kind == "hf" else 0.0


def replica_spec(spec: BackendSpec, gpus: float) -> BackendSpec:
    """vLLM with T > 1 GPUs inside an actor: its workers are processes on the actor's own GPUs
    (``mp``), not a nested Ray placement group."""
    args = dict(spec.model_args)
    if spec.kind == "vllm" and gpus > 1:
        args.setdefault("distributed_executor_backend", "mp")
    return BackendSpec(spec.model, spec.base_url, args)


class RayExecutor(Executor):
    name = "ray"

    def __init__(self, spec: BackendSpec, config: ExecutorConfig, prefetch: int = 2,
                 init_kwargs: Mapping[str, Any] | None = None, ready_timeout_s: float = 1800.0):
        config.validate()
        self.spec, self.config = spec, config
        self.prefetch = max(1, int(prefetch))
        self.batch_chains = config.batch_chains or default_batch_chains(spec)
        self.max_restarts = 2 * config.replicas if config.max_restarts is None else int(config.max_restarts)
        self.init_kwargs = dict(init_kwargs or {})
        self.ready_timeout_s = float(ready_timeout_s)  # model download + load; then it is a resource problem
        self._tag = uuid.uuid4().hex[:6]
        self._ray: Any = None
        self._started_ray = False
        self._actor_cls: Any = None
        self._replica_spec: BackendSpec | None = None
        self._scorer: ChainScorer | None = None
        self._gpus = 0.0
        self.actors: list[Any] = []  # current handle per slot (None once a slot is given up)
        self._generation: list[int] = []  # how many actors each slot has had
        self.placement: list[dict[str, Any]] = []
        self._sent_gen: dict[Any, int] = {}  # in-flight call -> generation of the actor it went to
        self.stats: dict[str, Any] = {"actor_deaths": 0, "restarts": 0, "batches": 0, "chains_per_replica": []}
        #: where replica losses and restarts are recorded (the runner points it at the run store's
        #: config.json ``execution.events``); None: logged only
        self.on_event: Callable[[dict[str, Any]], None] | None = None

    # ---- cluster and actors --------------------------------------------------------------------------
    def _connect(self) -> Any:
        ray = _import_ray()
        if not ray.is_initialized():
            address = self.config.address or os.environ.get("RAY_ADDRESS")
            if address:
                ray.init(address=address, **self.init_kwargs)
            else:
                kwargs = {"include_dashboard": False, **self.init_kwargs}
                ray.init(**kwargs)
                self._started_ray = True
        return ray

    def _spawn(self, slot: int) -> Any:
        self._generation[slot] += 1
        name = f"vpo-{self._tag}-replica{slot}-{self._generation[slot]}"
        handle = self._actor_cls.options(name=name, num_cpus=self.config.cpus_per_replica, num_gpus=self._gpus,
                                         max_restarts=0).remote(self._replica_spec, self._scorer)
        self.actors[slot] = handle
        return handle

    def start(self, scorer: ChainScorer) -> None:
        if self._ray is not None:
            return
        t0 = time.perf_counter()
        ray = self._connect()
        self._ray = ray
        from vpo_harness.harness.core.executors.replica import Replica

        cluster_gpus = float(ray.cluster_resources().get("GPU", 0.0))
        self._gpus = (self.config.gpus_per_replica if self.config.gpus_per_replica is not None
                      else replica_gpus(self.spec, cluster_gpus))
        self._replica_spec = replica_spec(self.spec, self._gpus)
        self._scorer = scorer if self.config.score_on == "replica" else None
        self._actor_cls = ray.remote(Replica)
        n = self.config.replicas
        self.actors, self._generation = [None] * n, [0] * n
        self.stats["chains_per_replica"] = [0] * n
        for slot in range(n):
            self._spawn(slot)
        try:  # surface a bad model path or missing package once, clearly, before any work is sent
            self.placement = ray.get([a.info.remote() for a in self.actors], timeout=self.ready_timeout_s)
        except ray.exceptions.GetTimeoutError as exc:
            self.close()
            raise ExecutorError(
                f"{n} Ray replicas not ready after {self.ready_timeout_s:g}s: does the cluster have "
                f"{self.config.cpus_per_replica:g} CPU + {self._gpus:g} GPU free per replica? (see `ray status`)") from exc
        except Exception as exc:
            self.close()
            cause = getattr(exc, "cause", None) or exc
            detail = (str(cause).strip().splitlines() or ["?"])[-1][:400]
            if not isinstance(cause, ray.exceptions.RayError):  # Ray's own text already ends "Type: msg"
                detail = f"{type(cause).__name__}: {detail}"
            raise ExecutorError(f"a Ray replica failed to start its {self.spec.kind} backend: {detail}") from exc
        self.stats["start_s"] = round(time.perf_counter() - t0, 3)  # cluster connect + actors + backends

    def _replace(self, slot: int, generation: int, exc: BaseException) -> None:
        """The actor of ``slot`` (its ``generation``-th) is gone; start another within the budget."""
        if self._generation[slot] != generation or self.actors[slot] is None:
            return  # already handled (one dead actor fails all its in-flight calls)
        self.stats["actor_deaths"] += 1
        _log.warning(f"[vpo] ray replica {slot} lost ({type(exc).__name__}); its in-flight work is re-queued")
        self._event({"event": "replica_lost", "slot": slot, "actor": generation, "error": type(exc).__name__,
                     "deaths": self.stats["actor_deaths"]})
        if self.stats["restarts"] < self.max_restarts:
            self.stats["restarts"] += 1
            self._spawn(slot)
            self._event({"event": "replica_restarted", "slot": slot, "actor": self._generation[slot],
                         "restarts": self.stats["restarts"], "restart_budget": self.max_restarts})
        else:
            self.actors[slot] = None
            self._event({"event": "replica_given_up", "slot": slot, "restart_budget": self.max_restarts})

    def _event(self, event: dict[str, Any]) -> None:
        """Record one event; a record that cannot be written is said, never a reason to stop the run."""
        if self.on_event is None:
            return
        try:
            self.on_event(event)
        except Exception as exc:  # noqa: BLE001 - the rows matter more than the record of the loss
            _log.warning(f"[vpo] could not record {event.get('event')} in the run folder: {exc}")

    # ---- the dispatch loop ---------------------------------------------------------------------------
    def rows(self, requests: Sequence[GenRequest], problems: Mapping[str, Any], sampling: SamplingConfig,
             scorer: ChainScorer, on_generated: Callable[[int], None] | None = None,
             on_leftover: Callable[[Any], None] | None = None) -> Iterator[Any]:
        self.start(scorer)
        ray = self._ray
        lost = _lost_errors(ray)
        queue = WorkQueue(make_batches(requests, self.batch_chains))
        pool = ScoringPool(scorer, problems, seeds_of(requests)) if self._scorer is None else None
        ship_problems = self._scorer is not None
        self.stats["work_queue"] = queue.stats
        try:
            while True:
                for slot, actor in enumerate(self.actors):  # each live replica holds up to `prefetch` batches
                    while actor is not None and queue.waiting and queue.load(slot) < self.prefetch:
                        batch = queue.take()
                        probs = {r.problem_id: problems[r.problem_id] for r in batch.requests} if ship_problems else None
                        ref = actor.run.remote(list(batch.requests), sampling, probs)
                        queue.sent(ref, slot, batch)
                        self._sent_gen[ref] = self._generation[slot]
                if not queue.inflight:
                    if queue.waiting:
                        raise ExecutorError(f"every Ray replica died ({self.stats['actor_deaths']} deaths, "
                                            f"restart budget {self.max_restarts} spent); "
                                            "re-run the same command to resume")
                    break
                timeout = 0.2 if pool is not None and pool.backlog else None
                ready, _ = ray.wait(list(queue.inflight), num_returns=1, timeout=timeout)
                for ref in ready:
                    slot, _batch = queue.inflight[ref]
                    gen_no = self._sent_gen.pop(ref)
                    try:
                        out = ray.get(ref)
                    except lost as exc:
                        queue.lost(ref)
                        self._replace(slot, gen_no, exc)
                        continue
                    except ray.exceptions.RayTaskError as exc:  # a bug in a backend or scorer: stop, loudly
                        raise ExecutorError(f"Ray replica {slot} raised: {exc.cause!r}") from exc
                    queue.done(ref)
                    self.stats["batches"] += 1
                    for item in out:
                        if not queue.accept((item.problem_id, item.chain_index)):  # Generation or row
                            continue
                        self.stats["chains_per_replica"][slot] += 1
                        if on_generated:
                            on_generated(1)
                        if pool is None:
                            yield item
                        else:
                            pool.submit(item)
                if pool is not None:
                    yield from pool.drain(block=False)
            if pool is not None:
                yield from pool.drain_all()
        finally:
            if pool is not None:
                pool.close(on_leftover)
            self._sent_gen.clear()

    def describe(self) -> dict[str, Any]:
        return {**self.config.as_record(), "batch_chains": self.batch_chains,
                "gpus_per_replica": self._gpus,
                "placement": [{k: v for k, v in p.items() if k != "describe"} for p in self.placement]}

    def describe_backend(self) -> dict[str, Any]:
        """Replica 0's backend (all replicas build the same spec) and where each replica ran."""
        if not self.placement:
            raise ExecutorError("describe_backend() before start()")
        return {**self.placement[0]["describe"], "ray": self.describe()}

    def close(self) -> None:
        ray = self._ray
        if ray is None:
            return
        for actor in self.actors:
            if actor is not None:
                try:
                    ray.kill(actor)
                except Exception:  # already dead or the cluster is going away
                    pass
        self.actors = []
        if self._started_ray:
            ray.shutdown()
        self._ray = None
