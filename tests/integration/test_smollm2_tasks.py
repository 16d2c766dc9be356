"""`vpo run` with SmolLM2-135M (zoo) on 5 items of each non-maze task, m = 3, on CPU.

A 135M model scores near zero here; what is checked is the plumbing on real prompts: the run
completes, every chain is parsed into 3 answers, every answer has a full reward vector, metrics are
computed, and (code) no sandbox process survives the run.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.core.results import load_run

FIXTURES = Path(__file__).resolve().parent.parent / "benchmarks" / "fixtures"

CASES = {
    # task: (split, extra args, max tokens)
    "musique": ("validation", [], 96),
    "toolrl": ("test", [], 96),
    "eureqa": ("test", ["--data-path", str(FIXTURES / "eureqa_synthetic.jsonl")], 96),  # synthetic fixture
    "livecodebench": ("test", [], 160),
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


@pytest.mark.integration
@pytest.mark.parametrize("task", sorted(CASES))
def test_smollm2_five_items_m3(task: str, tmp_path: Path) -> None:
    split, extra, max_tokens = CASES[task]
    out = tmp_path / task
    limit = "5"
    cmd = [sys.executable, "-m", "harness.app.cli", "run", "--task", task, "--split", split, "--model", "hf:smollm2-135m",
           "--limit", limit, "-n", "1", "-m", "3", "--k", "1,3", "--max-tokens", str(max_tokens), "--no-progress",
           "--model-args", "batch_size=5", "--out", str(out), *extra]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
    assert res.returncode == 0, res.stderr[-3000:]
    run = load_run(out)
    assert len(run.chains) == int(limit) and run.chains["error"].isna().all()
    assert all(len(a) == 3 for a in run.chains["answers"])
    for _, row in run.chains.iterrows():
        assert len(row["rewards"]) == 3
        assert all(0.0 <= v <= 1.0 for r in row["rewards"] for v in r)
    metrics = run.results["metrics"]
    assert metrics["n_candidates"] == 3 * int(limit) and metrics["best@3"]["n"] == int(limit)
    if task == "livecodebench":
        # one reward component per kept public test of each problem
        from benchmarks import get_task

        lcb = get_task("livecodebench")
        by_id = {p.id: p for p in lcb.load("test", limit=5)}
        for _, row in run.chains.iterrows():
            n_tests = len(lcb.components_for(by_id[row["problem_id"]]))
            assert all(len(r) == n_tests for r in row["rewards"])
        assert _sandbox_processes() == []
    else:
        d = get_d(task)
        assert all(len(r) == d for rr in run.chains["rewards"] for r in rr)


def get_d(task: str) -> int:
    from benchmarks import get_task

    return get_task(task).d
