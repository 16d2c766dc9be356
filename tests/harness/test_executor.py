"""Executors without Ray: batching, the work queue's exactly-once guarantee under replica deaths,
replica-side scoring, config/CLI refusal. The Ray end-to-end checks are in test_executor_ray.py."""
from __future__ import annotations

import pickle
import random
from pathlib import Path

import pytest

from vpo_harness.benchmarks import get_task
from vpo_harness.harness.core.executors import BackendSpec, ChainScorer, ExecutorConfig, LocalExecutor, make_batches
from vpo_harness.harness.core.executors.ray_executor import default_batch_chains, replica_gpus, replica_spec
from vpo_harness.harness.core.executors.replica import Replica
from vpo_harness.harness.core.executors.workqueue import WorkQueue
from vpo_harness.harness.core.models.base import GenRequest, SamplingConfig
import functools

from vpo_harness.benchmarks.scoring import score_generation
from vpo_harness.harness.eval.runner import RunConfig, run
from tests.fakes.scripted_backend import register
from tests.harness.scripted import ScriptedBackend


def requests_of(shape: list[int]) -> list[GenRequest]:
    """One request per problem with the given chain indices count (seeds = distinct ints)."""
    return [GenRequest(f"p{i}", [{"role": "user", "content": f"q{i}"}], tuple(range(k)),
                       tuple(1000 * i + c for c in range(k))) for i, k in enumerate(shape)]


@pytest.mark.parametrize("seed", range(20))
def test_batches_cover_every_chain_once_in_order(seed: int) -> None:
    rng = random.Random(seed)
    reqs = requests_of([rng.randint(1, 9) for _ in range(rng.randint(1, 12))])
    size = rng.randint(1, 10)
    batches = make_batches(reqs, size)
    flat = [(r.problem_id, c, s) for r in reqs for c, s in zip(r.chain_indices, r.seeds)]
    got = [(r.problem_id, c, s) for b in batches for r in b.requests for c, s in zip(r.chain_indices, r.seeds)]
    assert got == flat  # same order as the local executor walks them: same hf padding batches
    assert all(len(b) == size for b in batches[:-1]) and 1 <= len(batches[-1]) <= size
    assert [b.index for b in batches] == list(range(len(batches)))
    # messages travel with every slice of a request
    assert all(r.messages == reqs[int(r.problem_id[1:])].messages for b in batches for r in b.requests)


@pytest.mark.parametrize("seed", range(10))
def test_work_queue_delivers_every_chain_exactly_once_despite_deaths(seed: int) -> None:
    """Simulate the dispatch loop: replicas die with batches in flight, some after their result was
    already delivered (a late duplicate). Every chain must be delivered once and only once."""
    rng = random.Random(seed)
    reqs = requests_of([rng.randint(1, 6) for _ in range(15)])
    queue = WorkQueue(make_batches(reqs, 4))
    alive, tickets = [True, True, True], 0
    delivered: list[tuple[str, int]] = []
    deaths = 0
    while not queue.finished:
        for slot in range(3):
            while alive[slot] and queue.waiting and queue.load(slot) < 2:
                tickets += 1
                queue.sent(tickets, slot, queue.take())
        if not queue.inflight:
            alive = [True, True, True]  # replacement actors
            continue
        ticket = rng.choice(list(queue.inflight))
        slot, batch = queue.inflight[ticket]
        fate = rng.random()
        if fate < 0.25:  # the replica dies with this batch: re-queued
            queue.lost(ticket)
            deaths += 1
            alive[slot] = rng.random() < 0.5
        elif fate < 0.35:  # it ran, was delivered, then reported lost: re-run gives duplicates
            delivered += [k for k in batch.keys if queue.accept(k)]
            queue.lost(ticket)
        else:
            queue.done(ticket)
            delivered += [k for k in batch.keys if queue.accept(k)]
        if not any(alive):
            alive[0] = True
    every = [(r.problem_id, c) for r in reqs for c in r.chain_indices]
    assert sorted(delivered) == sorted(every) and len(set(delivered)) == len(delivered)
    assert queue.stats["requeued_batches"] >= deaths


def test_work_queue_refuses_double_send_and_counts_duplicates() -> None:
    queue = WorkQueue(make_batches(requests_of([3]), 2))
    b = queue.take()
    queue.sent("t", 0, b)
    with pytest.raises(ValueError):
        queue.sent("t", 1, b)
    assert queue.accept(("p0", 0)) and not queue.accept(("p0", 0))
    assert queue.stats["duplicates_dropped"] == 1


def test_replica_scoring_equals_driver_scoring() -> None:
    """score_on=replica ships the scorer (without its task) and the problems; rows must be the same."""
    register()
    task = get_task("maze")
    problems = {p.id: p for p in task.load("test", limit=3)}
    reqs = [GenRequest(pid, task.prompt(p), (0, 1, 2), (11, 12, 13)) for pid, p in problems.items()]
    scorer = ChainScorer(functools.partial(get_task, "maze"), 1, score_generation, task=task)
    shipped = pickle.loads(pickle.dumps(scorer))
    assert shipped.task is None
    replica = Replica(BackendSpec("scripted:x"), shipped)
    sampling = SamplingConfig(max_tokens=8)
    rows = replica.run(reqs, sampling, problems)
    plain = Replica(BackendSpec("scripted:x")).run(reqs, sampling)
    by_driver = [scorer(problems[g.problem_id], g, g.extra["seed"]) for g in plain]
    strip = lambda rs: sorted(({k: v for k, v in r.to_json().items() if k != "score_s"} for r in rs),
                              key=lambda r: (r["problem_id"], r["chain_index"]))
    assert strip(rows) == strip(by_driver) and len(rows) == 9
    with pytest.raises(ValueError):
        replica.run(reqs, sampling)  # a scoring replica without problems is a bug, not a silent skip


def test_backend_defaults_per_kind() -> None:
    assert default_batch_chains(BackendSpec("hf:x", model_args={"batch_size": 8})) == 8
    assert default_batch_chains(BackendSpec("openai:x", model_args={"concurrency": 5})) == 5
    vllm = BackendSpec("vllm:x", model_args={"tensor_parallel_size": 4})
    assert replica_gpus(vllm, cluster_gpus=8) == 4 and replica_gpus(vllm, cluster_gpus=0) == 0
    assert replica_gpus(BackendSpec("openai:x"), cluster_gpus=8) == 0
    assert dict(replica_spec(vllm, 4).model_args)["distributed_executor_backend"] == "mp"
    assert "distributed_executor_backend" not in dict(replica_spec(vllm, 1).model_args)


def test_executor_config_is_validated_and_not_part_of_identity(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="--executor ray"):
        ExecutorConfig(kind="local", replicas=2).validate()
    with pytest.raises(ValueError, match="score_on"):
        ExecutorConfig(kind="ray", score_on="gpu").validate()
    a = RunConfig.of(task="maze", model="hf:x")
    b = RunConfig.of(task="maze", model="hf:x", executor=ExecutorConfig(kind="ray", replicas=4))
    assert a.default_out() == b.default_out() and a.identity() == b.identity()
    assert RunConfig.from_json(b.to_json()).execution.executor == b.execution.executor
    # a run started locally resumes under another executor config (the record differs only there)
    base = dict(task="maze", model="scripted:x", limit=2, n=3, ks=(1, 3), out=str(tmp_path / "r"), progress=False)
    folder = run(RunConfig.of(**base), backend=ScriptedBackend())
    again = ScriptedBackend()
    run(RunConfig.of(**base, executor=ExecutorConfig(kind="local", score_on="replica")), backend=again)
    assert not again.calls and len((folder / "samples.jsonl").read_text().splitlines()) == 6
    with pytest.raises(ValueError, match="--executor ray"):
        run(RunConfig.of(**base, executor=ExecutorConfig(kind="local", replicas=3)), backend=ScriptedBackend())


def test_local_executor_borrows_a_backend_and_closes_its_own() -> None:
    register()
    borrowed = ScriptedBackend()
    ex = LocalExecutor(backend=borrowed)
    ex.close()
    own = LocalExecutor(BackendSpec("scripted:x"))
    built = own.backend
    own.close()
    assert built.closed and not getattr(borrowed, "closed", False)


def test_cli_refuses_replicas_without_ray(capsys: pytest.CaptureFixture[str]) -> None:
    from vpo_harness.harness.app.cli import main

    rc = main(["run", "--task", "maze", "--model", "hf:x", "--replicas", "2"])
    err = capsys.readouterr().err
    assert rc == 2 and "--replicas needs --executor ray" in err and "Traceback" not in err


def test_ray_executor_without_ray_is_the_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from vpo_harness.harness.core.executors.ray_executor import ExecutorError, RayExecutor

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    ex = RayExecutor(BackendSpec("hf:x"), ExecutorConfig(kind="ray", replicas=2))
    with pytest.raises(ExecutorError, match=r"pip install 'vpo-harness\[ray\]'"):
        ex.start(ChainScorer(lambda: None, 1, score_generation))
