"""`vpo run`'s runner with SmolLM2-135M (zoo) on 3 items of each non-maze task, m = 3, on CPU.

A 135M model scores near zero here; what is checked is the plumbing on real prompts: the run
completes, every chain is parsed into 3 answers, every answer has a full reward vector, metrics are
computed, and (code) no sandbox process survives the run.

One model load serves the four tasks (a module-scoped backend handed to the runner, as `vpo run`
builds it): loading SmolLM2 in a fresh interpreter per task cost more than the tasks' generation on
a loaded 2-core machine. The model runs on `vpo serve`'s thread count (``vpo_harness.search.serve.default_threads``:
one on 2 cores), because torch's default of every core spin-waits whenever another process holds one, and
then each decoding step took ~9x the CPU time. The command line itself, with the same zoo model, is what
``tests/harness/test_smollm2_run.py`` runs.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pytest

from vpo_harness.harness.core.models.base import Backend
from vpo_harness.harness.core.results import load_run

FIXTURES = Path(__file__).resolve().parent.parent / "benchmarks" / "fixtures"
SPEC, MODEL_ARGS = "hf:smollm2-135m", {"batch_size": 5}
LIMIT = 3  # the checks hold per chain; 3 problems of each task are enough real prompts

CASES = {
    # task: (split, data path, max tokens)
    "musique": ("validation", None, 96),
    "toolrl": ("test", None, 96),
    "eureqa": ("test", str(FIXTURES / "eureqa_synthetic.jsonl"), 96),  # synthetic fixture
    "livecodebench": ("test", None, 160),
}


def _sandbox_processes() -> list[str]:
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "_zygote.py" in cmd or "lcb_driver" in cmd:
            found.append(f"{pid}: {cmd[:120]}")
    return found


@pytest.fixture(scope="module")
def smollm2() -> Iterator[Backend]:
    """SmolLM2 loaded once for every task of this module (the runner borrows it, never closes it)."""
    import torch

    from vpo_harness.harness.core.models import load_backend
    from vpo_harness.search.serve import default_threads

    threads = torch.get_num_threads()
    torch.set_num_threads(default_threads())
    backend = load_backend(SPEC, model_args=MODEL_ARGS)
    try:
        yield backend
    finally:
        backend.close()
        torch.set_num_threads(threads)


@pytest.mark.integration
@pytest.mark.parametrize("task", sorted(CASES))
def test_smollm2_five_items_m3(task: str, smollm2: Backend, tmp_path: Path) -> None:
    from vpo_harness.benchmarks import get_task
    from vpo_harness.harness.eval.runner import RunConfig, run

    split, data_path, max_tokens = CASES[task]
    cfg = RunConfig.of(task=task, split=split, data_path=data_path, model=SPEC, model_args=MODEL_ARGS, limit=LIMIT,
                       n=1, m=3, ks=(1, 3), max_tokens=max_tokens, out=str(tmp_path / task), progress=False)
    loaded = load_run(run(cfg, backend=smollm2))
    assert loaded.config["identity"]["model"]["spec"] == SPEC
    assert len(loaded.chains) == LIMIT and loaded.chains["error"].isna().all(), loaded.chains["error"].tolist()
    assert all(len(a) == 3 for a in loaded.chains["answers"])
    for _, row in loaded.chains.iterrows():
        assert len(row["rewards"]) == 3
        assert all(0.0 <= v <= 1.0 for r in row["rewards"] for v in r)
    metrics = loaded.results["metrics"]
    assert metrics["n_candidates"] == 3 * LIMIT and metrics["best@3"]["n"] == LIMIT
    if task == "livecodebench":
        # one reward component per kept public test of each problem
        lcb = get_task("livecodebench")
        by_id = {p.id: p for p in lcb.load("test", limit=LIMIT)}
        for _, row in loaded.chains.iterrows():
            n_tests = len(lcb.components_for(by_id[row["problem_id"]]))
            assert all(len(r) == n_tests for r in row["rewards"])
        assert _sandbox_processes() == []
    else:
        d = get_task(task).d
        assert all(len(r) == d for rr in loaded.chains["rewards"] for r in rr)
