"""The Ray executor end to end on a local 2-CPU Ray cluster, driving the hf backend on the bundled
Maze checkpoint: rows equal a single-process run for 1 and 2 replicas, a replica killed mid-run
(``ray.kill``) loses nothing, and a driver killed with -9 resumes. One cluster serves the module and
is shut down at the end, with a check that no Ray process is left behind."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")

from vpo_harness.harness.core.executors import BackendSpec, ExecutorConfig  # noqa: E402
from vpo_harness.harness.core.executors.ray_executor import RayExecutor  # noqa: E402
from vpo_harness.harness.eval.runner import RunConfig, run  # noqa: E402
from vpo_harness.harness.core.paths import child_pythonpath

pytestmark = pytest.mark.integration

CKPT = "maze-tiny-grpo"
WORK = dict(task="maze", split="test", prompt_style="compact", m=1, n=4, ks=(1, 4), temperature=0.7,
            max_tokens=40, limit=8, seed=0, flush_every=1, progress=False)
MODEL_ARGS = {"batch_size": 4}


def rows(folder: Path) -> list[dict[str, Any]]:
    p = folder / "samples.jsonl"
    return [json.loads(l) for l in p.read_text().splitlines() if l.endswith("}")] if p.exists() else []


def content(folder: Path) -> dict[tuple[str, int], tuple]:
    """What a chain is, minus timings: the seeded text and everything scored from it."""
    got = rows(folder)
    keys = [(r["problem_id"], r["chain_index"]) for r in got]
    assert len(keys) == len(set(keys)), "a chain was written twice"
    return {(r["problem_id"], r["chain_index"]): (r["seed"], r["text"], r["answers"], r["rewards"], r["error"])
            for r in got}


@pytest.fixture(scope="module")
def cluster() -> Any:
    import psutil

    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # loopback test cluster; also for the CLI drivers
    ctx = ray.init(num_cpus=2, include_dashboard=False, object_store_memory=80 * 2**20, log_to_driver=False)
    yield ctx.address_info["gcs_address"]
    ray.shutdown()
    deadline = time.time() + 20
    while time.time() < deadline and psutil.Process().children(recursive=True):
        time.sleep(0.2)
    left = [p.name() for p in psutil.Process().children(recursive=True)]
    assert not left, f"Ray processes left running: {left}"


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The single-process run (local executor, hf in this process)."""
    import torch

    out = tmp_path_factory.mktemp("local") / "run"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # like each replica (Ray sets OMP_NUM_THREADS=1); 2 threads crawl on a loaded box
    try:
        run(RunConfig.of(model=f"hf:{CKPT}", model_args=MODEL_ARGS, out=str(out), **WORK))
    finally:
        torch.set_num_threads(threads)
    ref = content(out)
    assert len(ref) == 32 and not any(v[4] for v in ref.values())
    assert len({v[1] for v in ref.values()}) > 8, "seeded chains must differ"
    return ref


def ray_executor(replicas: int, score_on: str = "driver") -> RayExecutor:
    return RayExecutor(BackendSpec(f"hf:{CKPT}", None, MODEL_ARGS),
                       ExecutorConfig(kind="ray", replicas=replicas, score_on=score_on))


@pytest.mark.parametrize("replicas,score_on", [(1, "driver"), (2, "replica")])
def test_rows_equal_single_process_run(cluster: str, reference: dict, tmp_path: Path, replicas: int,
                                       score_on: str) -> None:
    """Same rows for 1 and 2 replicas, scored on the driver or on the replicas (task rebuilt there)."""
    ex = ray_executor(replicas, score_on)
    try:
        folder = run(RunConfig.of(model=f"hf:{CKPT}", model_args=MODEL_ARGS, out=str(tmp_path / "run"),
                               executor=ex.config, **WORK), executor=ex)
    finally:
        ex.close()
    assert content(folder) == reference
    assert sum(ex.stats["chains_per_replica"]) == 32 and ex.stats["actor_deaths"] == 0
    if replicas == 2:
        assert min(ex.stats["chains_per_replica"]) > 0, f"both replicas must work: {ex.stats}"
        assert len({p["pid"] for p in ex.placement}) == 2


def test_replica_killed_mid_run_loses_nothing(cluster: str, reference: dict, tmp_path: Path) -> None:
    out = tmp_path / "run"
    ex = ray_executor(2)
    killed: list[int] = []

    def killer() -> None:  # kill replica 0 once some rows are on disk and most work is still queued
        deadline = time.time() + 300
        while time.time() < deadline and len(rows(out)) < 6:
            time.sleep(0.01)
        if len(rows(out)) < 24:
            killed.append(len(rows(out)))
            ray.kill(ex.actors[0])

    th = threading.Thread(target=killer, daemon=True)
    th.start()
    try:
        folder = run(RunConfig.of(model=f"hf:{CKPT}", model_args=MODEL_ARGS, out=str(out), executor=ex.config, **WORK),
                     executor=ex)
    finally:
        th.join(timeout=10)
        ex.close()
    assert killed, "the run finished before the replica could be killed"
    assert ex.stats["actor_deaths"] == 1 and ex.stats["restarts"] == 1
    assert ex.stats["work_queue"]["requeued_chains"] > 0, ex.stats
    assert content(folder) == reference
    # the loss and the restart are on record in the run folder (config.json execution.events)
    from vpo_harness.harness.core.store import RunStore

    events = RunStore(folder).events()
    assert [e["event"] for e in events] == ["replica_lost", "replica_restarted"], events
    assert events[0]["slot"] == 0 and events[1]["restarts"] == 1


def _vpo(args: list[str]) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=child_pythonpath())
    return subprocess.Popen([sys.executable, "-m", "vpo_harness.harness.app.cli", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True, env=env)


def test_driver_killed_with_sigkill_then_resumed(cluster: str, reference: dict, tmp_path: Path) -> None:
    out = tmp_path / "run"
    cmd = ["run", "--task", "maze", "--model", f"hf:{CKPT}", "--model-args", "batch_size=4", "--prompt-style",
           "compact", "-n", "4", "-m", "1", "--k", "1,4", "--temperature", "0.7", "--max-tokens", "40",
           "--limit", "8", "--flush-every", "1", "--no-progress", "--out", str(out),
           "--executor", "ray", "--replicas", "2", "--ray-address", cluster]
    proc = _vpo(cmd)
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None and len(rows(out)) < 6:
        time.sleep(0.01)
    assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    partial = content(out)
    assert 6 <= len(partial) < 32
    again = _vpo(cmd)
    assert again.wait(timeout=600) == 0, again.stderr.read().decode()[-2000:]
    assert b"resuming" in again.stderr.read()
    assert content(out) == reference
    # the killed driver's actors were reaped by the cluster: all CPUs free again
    deadline = time.time() + 60
    while time.time() < deadline and ray.available_resources().get("CPU", 0) < 2:
        time.sleep(0.5)
    assert ray.available_resources().get("CPU", 0) == 2


def test_replica_that_cannot_build_its_backend_is_one_clear_error(cluster: str, tmp_path: Path) -> None:
    from vpo_harness.harness.core.executors.ray_executor import ExecutorError

    ex = RayExecutor(BackendSpec("hf:/nonexistent/model", None, {}), ExecutorConfig(kind="ray", replicas=1))
    with pytest.raises(ExecutorError, match="failed to start its hf backend: FileNotFoundError"):
        run(RunConfig.of(model="hf:/nonexistent/model", out=str(tmp_path / "run"), executor=ex.config, **WORK),
            executor=ex)
    assert not ex.actors  # cleaned up
