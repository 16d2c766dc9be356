"""Faults and crashes end to end: a flaky loopback server, and `vpo run` killed with SIGKILL then resumed."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vpo_harness.harness.eval.runner import RunConfig, run
from vpo_harness.harness.core.results import load_run
from bench.loopback_openai import FakeOpenAIServer, FakeServerConfig


def rows(folder: Path) -> list[dict]:
    p = folder / "samples.jsonl"
    return [json.loads(l) for l in p.read_text().splitlines() if l.endswith("}")] if p.exists() else []


def sample_set(folder: Path) -> set[tuple[str, int, str]]:
    return {(r["problem_id"], r["chain_index"], r["text"]) for r in rows(folder)}


def test_faulty_server_run_completes_with_failures_recorded(tmp_path: Path) -> None:
    cfg = FakeServerConfig(fault_rate=0.2, hang_s=0.6, rng_seed=3)
    with FakeOpenAIServer(cfg) as srv:
        rc = RunConfig.of(task="maze", model="openai:fake", base_url=srv.base_url, limit=10, n=6, m=1, ks=(1, 6),
                       out=str(tmp_path / "run"), progress=False, max_tokens=16,
                       model_args={"timeout": 0.3, "max_retries": 1, "backoff_base": 0.01, "backoff_max": 0.02,
                                   "use_n": False, "concurrency": 8})
        folder = run(rc)
        outcomes = srv.outcomes()
    got = rows(folder)
    assert len(got) == 60 and len({(r["problem_id"], r["chain_index"]) for r in got}) == 60
    errors = [r for r in got if r["error"]]
    assert errors, f"with 20% faults and 1 retry some chains must fail (server saw {outcomes})"
    assert all(r["attempts"] == 2 and r["text"] == "" and r["answers"] == [] for r in errors)
    assert all(r["attempts"] >= 1 and r["text"] for r in got if not r["error"])
    assert sum(v for k, v in outcomes.items() if k != "ok") >= len(errors)
    res = load_run(folder).results
    assert res["n_errors"] == len(errors)
    assert res["metrics"]["n_candidates"] == 60 - len(errors)


def _vpo(args: list[str], **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "vpo_harness.harness.app.cli", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True, **kw)


@pytest.mark.integration
def test_kill9_at_several_points_then_resume_equals_uninterrupted(tmp_path: Path) -> None:
    with FakeOpenAIServer(FakeServerConfig(delay_s=0.03)) as srv:
        common = ["run", "--task", "maze", "--model", "openai:fake", "--base-url", srv.base_url, "--limit", "8",
                  "-n", "6", "-m", "1", "--k", "1,6", "--max-tokens", "16", "--no-progress", "--flush-every", "2",
                  "--model-args", "use_n=false,concurrency=2"]
        ref = tmp_path / "ref"
        assert _vpo(common + ["--out", str(ref)]).wait(timeout=120) == 0
        out = tmp_path / "crashy"
        kills = 0
        for target in (3, 11, 20, 33):  # kill once at least this many rows are on disk
            proc = _vpo(common + ["--out", str(out)])
            deadline = time.time() + 60
            while time.time() < deadline and proc.poll() is None and len(rows(out)) < target:
                time.sleep(0.005)
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                kills += 1
            proc.wait(timeout=30)
            got = rows(out)
            assert len({(r["problem_id"], r["chain_index"]) for r in got}) == len(got), "duplicate chains"
        assert kills >= 3
        assert _vpo(common + ["--out", str(out)]).wait(timeout=120) == 0
        again = _vpo(common + ["--out", str(out)])
        assert again.wait(timeout=60) == 0 and b"already complete" in again.stderr.read()
    assert sample_set(out) == sample_set(ref) and len(rows(out)) == 48
    assert load_run(out).results["metrics"] == load_run(ref).results["metrics"]
