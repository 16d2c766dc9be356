"""`vpo evolve` end to end on Maze against a loopback scripted server: rows, checkpoints, curves,
kill -9 + resume without double counting, a finished run as a no-op."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from harness.evolve import EvolveConfig, run_evolve
from tests.fakes.scripted_openai import ScriptedOpenAIServer, maze_routes_responder

REPO = Path(__file__).resolve().parents[2]


def _rows(folder: Path) -> list[dict]:
    return [json.loads(l) for l in (folder / "samples.jsonl").read_text().splitlines() if l.strip()]


def _cfg(url: str, out: Path, **kw) -> EvolveConfig:
    base = dict(task="maze", model="openai:scripted", base_url=url, problems="all", limit=3, iterations=6, m=3,
                prompt_mode="task", prompt_style="compact", out=str(out), progress=False, baseline=True)
    base.update(kw)
    return EvolveConfig(**base)


def test_task_mode_rows_checkpoints_and_curves(tmp_path: Path) -> None:
    with ScriptedOpenAIServer(maze_routes_responder(3)) as srv:
        folder = run_evolve(_cfg(srv.base_url, tmp_path / "evo"))
        n_calls = len(srv.requests)
    rows = _rows(folder)
    # one LLM call per problem and iteration (0..6), 3 children per call; the baseline asks for
    # 7 chains per problem with n=7
    assert len(rows) == 3 * 7 * 3
    assert n_calls == 3 * 7 + 3
    keys = Counter((r["problem_id"], r["chain_index"]) for r in rows)
    assert max(keys.values()) == 1
    for r in rows:
        assert r["island"] == r["iteration"] % 3
        assert len(r["rewards"][0]) == 4 and r["metrics"]["combined_score"] == r["scalars"][0]
        assert (r["parent_id"] is None) == (r["iteration"] == 0)
    # parents are earlier candidates of the same problem
    ids = {r["program_id"]: r for r in rows}
    for r in rows:
        if r["parent_id"] is not None:
            par = ids[r["parent_id"]]
            assert par["problem_id"] == r["problem_id"] and par["iteration"] < r["iteration"]
    # seeds differ per iteration, so the children differ
    assert len({r["answers"][0] for r in rows}) > len(rows) // 2
    for pid in {r["problem_id"] for r in rows}:
        ck = folder / "openevolve" / pid / "checkpoints"
        names = sorted(p.name for p in ck.iterdir())
        assert "checkpoint_6" in names
        meta = json.loads((ck / "checkpoint_6" / "metadata.json").read_text())
        assert meta["last_iteration"] == 6 and len(meta["islands"]) == 3
    res = json.loads((folder / "results.json").read_text())
    ev = res["evolve"]
    assert ev["solved_vs_candidates"]["x"] == list(range(1, 22))
    means = np.array(ev["solved_vs_candidates"]["mean"])
    assert np.all(np.diff(means) >= -1e-12)
    # the curve's end equals the per-problem solved flags recomputed from the rows
    thr = res["thresholds"]
    solved = [any(r["scalars"][0] >= thr[pid] - 1e-6 for r in rows if r["problem_id"] == pid) for pid in thr]
    assert means[-1] == pytest.approx(np.mean(solved))
    assert res["baseline"]["pool"] == 21 and len(res["baseline"]["solved_vs_candidates"]["x"]) == 21
    assert (folder / "openevolve.yaml").exists() and (folder / "baseline" / "results.json").exists()
    # `vpo show` reads it like any run folder
    from harness.cli import main

    assert main(["show", str(folder)]) == 0


def test_killed_run_resumes_without_double_counting(tmp_path: Path) -> None:
    out = tmp_path / "evo"
    with ScriptedOpenAIServer(maze_routes_responder(3), delay_s=0.03) as srv:
        cmd = [sys.executable, "-m", "harness.cli", "evolve", "--task", "maze", "--model", "openai:scripted",
               "--base-url", srv.base_url, "--limit", "3", "--iterations", "12", "-m", "3", "--prompt-mode",
               "task", "--prompt-style", "compact", "--out", str(out), "--no-progress", "--no-baseline",
               "--concurrency", "3"]
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 120
        while time.time() < deadline:
            f = out / "samples.jsonl"
            if f.exists() and f.read_text().count("\n") >= 40:
                break
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        before = _rows(out)
        assert 40 <= len(before) < 3 * 13 * 3
        assert not (out / "results.json").exists()
        n_before = len(srv.requests)
        res = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stderr[-2000:]
        n_resumed = len(srv.requests) - n_before
        after = _rows(out)
        # nothing written before the kill is lost or changed
        assert after[: len(before)] == before
        from harness.store import latest_rows

        latest = latest_rows(out)
        assert len(latest) == 3 * 13 * 3
        assert Counter((r["problem_id"], r["iteration"]) for r in latest) == Counter(
            {(p, it): 3 for p in {r["problem_id"] for r in latest} for it in range(13)})
        # only the missing iterations were asked for again (at most one redone per problem)
        done_its = len({(r["problem_id"], r["iteration"]) for r in before})
        assert 3 * 13 - done_its <= n_resumed <= 3 * 13 - done_its + 3
        results = json.loads((out / "results.json").read_text())
        assert results["n_chains"] == 3 * 13 * 3
        # a finished run is a no-op: no request, no new row
        n_final = len(srv.requests)
        res = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
        assert res.returncode == 0 and "already complete" in res.stderr
        assert len(srv.requests) == n_final and _rows(out) == after


def test_unreachable_server_is_one_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from harness.cli import main
    from search.server_process import free_port

    url = f"http://127.0.0.1:{free_port()}/v1"
    t0 = time.time()
    rc = main(["evolve", "--task", "maze", "--model", "openai:x", "--base-url", url, "--limit", "1",
               "--iterations", "1", "--out", str(tmp_path / "e"), "--no-progress"])
    err = capsys.readouterr().err
    assert rc != 0 and time.time() - t0 < 30
    lines = [ln for ln in err.splitlines() if "error" in ln]
    assert len(lines) == 1 and url in lines[0] and "Traceback" not in err


def test_log_handlers_do_not_pile_up(tmp_path: Path) -> None:
    import logging

    root = logging.getLogger()
    before = list(root.handlers)
    with ScriptedOpenAIServer(maze_routes_responder(1)) as srv:
        for i in range(2):
            run_evolve(_cfg(srv.base_url, tmp_path / f"e{i}", m=1, iterations=2, baseline=False, limit=2))
    assert root.handlers == before
