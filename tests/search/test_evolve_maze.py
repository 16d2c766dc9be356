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

from vpo_harness.search.evolve import EvolveConfig, run_evolve
from vpo_harness.harness.core.paths import child_pythonpath
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
    # the baseline is a real `vpo run` folder: it ranks problems for a follow-up search
    from vpo_harness.benchmarks import get_task
    from vpo_harness.search.problems import select

    probs = get_task("maze").load("test", limit=3)
    hardest = select(f"hardest:2@{folder / 'baseline'}", probs, "maze")
    assert len(hardest) == 2
    # `vpo show` reads it like any run folder
    from vpo_harness.harness.app.cli import main

    assert main(["show", str(folder)]) == 0


def test_killed_run_resumes_without_double_counting(tmp_path: Path) -> None:
    out = tmp_path / "evo"
    with ScriptedOpenAIServer(maze_routes_responder(3), delay_s=0.03) as srv:
        cmd = [sys.executable, "-m", "vpo_harness.harness.app.cli", "evolve", "--task", "maze", "--model", "openai:scripted",
               "--base-url", srv.base_url, "--limit", "3", "--iterations", "12", "-m", "3", "--prompt-mode",
               "task", "--prompt-style", "compact", "--out", str(out), "--no-progress", "--no-baseline",
               "--concurrency", "3"]
        env = {**os.environ, "PYTHONPATH": child_pythonpath()}
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
        from vpo_harness.harness.core.store import latest_rows

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
    from vpo_harness.harness.app.cli import main
    from vpo_harness.search.server_process import free_port

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


def _route_block(body: dict, idx: int) -> str:
    """An evolve-mode reply: OpenEvolve asks for a rewrite in a fenced block; -m asks for several."""
    import random

    rng = random.Random(body.get("seed"))
    user = body["messages"][-1]["content"]
    k = 2 if "2 different complete new versions" in user else 1
    blocks = [", ".join(rng.choice(("UP", "DOWN", "LEFT", "RIGHT")) for _ in range(rng.randint(4, 20)))
              for _ in range(k)]
    if body["messages"][0]["role"] != "system":  # iteration 0: the task's own prompt
        return "".join(f"<route_{i}>{b}</route_{i}>" for i, b in enumerate(blocks, 1)) if k > 1 or "route_2" in user \
            else f"<answer>{blocks[0]}</answer>"
    return "\n---\n".join(f"```text\n{b}\n```" for b in blocks)


@pytest.mark.parametrize("m", [1, 2])
def test_evolve_mode_uses_the_maze_mutation_prompt(tmp_path: Path, m: int) -> None:
    """Maze in evolve mode: each request after the seeding iteration is the task's mutation prompt
    showing that iteration's recorded parent with its reward vector; children come back in the task's
    answer format and are scored by the task."""
    from vpo_harness.benchmarks.maze import Maze

    with ScriptedOpenAIServer(_route_block) as srv:
        folder = run_evolve(_cfg(srv.base_url, tmp_path / "evo", prompt_mode="evolve", m=m, iterations=3,
                                 limit=2, baseline=False))
        bodies = list(srv.requests)
    rows = _rows(folder)
    assert len(rows) == 2 * 4 * m
    later = [r for r in rows if r["iteration"] > 0]
    assert {r["evolution_mode"] for r in later} == {"mutation"}
    assert all(r["parent_id"] for r in later)
    by_id = {r["program_id"]: r for r in rows}
    by_seed = {b["seed"]: b["messages"][-1]["content"] for b in bodies}
    task = Maze()
    for r in later:
        prompt = by_seed[r["seed"]]
        parent = by_id[r["parent_id"]]
        moves = " ".join(task.moves(parent["answers"][0]))
        shown = " ".join(f"{x:.2f}".rstrip("0").rstrip(".") if x else "0" for x in parent["rewards"][0])
        assert f"Parent: {moves} | {shown}" in prompt
        assert ("<route_2>" in prompt) == (m > 1)
    assert any(r["answers"][0] is not None for r in later)
    problems = {p.id: p for p in task.load("test", limit=2)}
    for r in later:  # children are scored by the task's own reward
        assert np.allclose(r["rewards"][0], task.reward(problems[r["problem_id"]], r["answers"][0]), atol=1e-6)


def test_same_seed_same_run(tmp_path: Path) -> None:
    with ScriptedOpenAIServer(maze_routes_responder(3)) as srv:
        a = run_evolve(_cfg(srv.base_url, tmp_path / "a", limit=2, iterations=5, baseline=False))
        b = run_evolve(_cfg(srv.base_url, tmp_path / "b", limit=2, iterations=5, baseline=False))
        c = run_evolve(_cfg(srv.base_url, tmp_path / "c", limit=2, iterations=5, baseline=False, seed=1))
    key = lambda rows: sorted((r["problem_id"], r["chain_index"], r["answers"][0], r["parent_id"]) for r in rows)  # noqa: E731
    assert key(_rows(a)) == key(_rows(b))
    assert key(_rows(a)) != key(_rows(c))


def test_plot_draws_evolve_runs(tmp_path: Path) -> None:
    from vpo_harness.harness.app.cli import main

    with ScriptedOpenAIServer(maze_routes_responder(3)) as srv:
        f1 = run_evolve(_cfg(srv.base_url, tmp_path / "a", limit=2, iterations=3))
        f2 = run_evolve(_cfg(srv.base_url, tmp_path / "b", limit=2, iterations=3, seed=4))
    out = tmp_path / "evo.png"
    assert main(["plot", str(f1), str(f2), "--labels", "a,b", "--out", str(out)]) == 0
    assert out.stat().st_size > 10_000


def test_server_errors_end_the_run_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A server that keeps failing (HTTP 500 after the client's retries) stops the run with one
    line; the rows written before stay, and the same command resumes."""
    from vpo_harness.harness.app.cli import main

    state = {"n": 0}
    ok = maze_routes_responder(3)

    def flaky(body: dict, idx: int) -> str:
        state["n"] += 1
        if state["n"] > 4:
            raise RuntimeError("boom")  # the fake answers HTTP 500
        return ok(body, idx)

    with ScriptedOpenAIServer(flaky) as srv:
        args = ["evolve", "--task", "maze", "--model", "openai:s", "--base-url", srv.base_url, "--limit", "2",
                "--iterations", "5", "-m", "3", "--prompt-mode", "task", "--out", str(tmp_path / "e"),
                "--no-progress", "--no-baseline", "--timeout", "5"]
        rc = main(args)
        err = capsys.readouterr().err
        assert rc != 0 and "Traceback" not in err
        # one error line; the retries before it each have a line of their own ("[vpo] URL: attempt ...")
        assert len([ln for ln in err.splitlines() if "error" in ln and not ln.startswith("[vpo] ")]) == 1
        assert any(ln.startswith("[vpo] ") and ": attempt 1 failed (StatusError: HTTP 500" in ln for ln in err.splitlines())
        n_rows = len(_rows(tmp_path / "e"))
        assert 3 <= n_rows < 2 * 6 * 3
        srv.respond = ok
        assert main(args) == 0
    assert len(_rows(tmp_path / "e")) >= 2 * 6 * 3
