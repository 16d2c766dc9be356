"""`vpo evolve` gives the same rows (every field but timings, parent, inspirations and island
included) whatever the string-hash seed, the concurrency, the number of iterations in flight, the
order and latency of the server's answers, and kill -9 + resume. The scripted server's reply depends
on the parent's text, so a different parent anywhere shows up as different children."""
from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from vpo_harness.search.evolve import EvolveConfig, run_evolve
from vpo_harness.harness.core.store import latest_rows
from vpo_harness.search.engine import schedule
from vpo_harness.harness.core.paths import child_pythonpath
from tests.fakes.scripted_openai import ScriptedOpenAIServer

REPO = Path(__file__).resolve().parents[2]
TIMINGS = ("latency_s", "score_s")
MOVES = ("UP", "DOWN", "LEFT", "RIGHT")
CURRENT = re.compile(r"# Current Program\n```[^\n]*\n(.*?)\n```", re.S)  # OpenEvolve's prompt
PARENT = re.compile(r"^Parent: (.*?) \|", re.M)  # the Maze task's own mutation prompt


def _mazes() -> list[tuple[str, list[list[str]]]]:
    """(rendered grid, best routes for a few reward weightings) of the test split's first mazes."""
    from vpo_harness.benchmarks import get_task
    from vpo_harness.benchmarks.maze import best_route
    from vpo_harness.benchmarks.maze_env import MazeInstance

    out = []
    for p in get_task("maze").load("test", limit=3):
        inst = MazeInstance.from_problem(p)
        out.append((inst.render(), [list(best_route(inst, w, "convex_bonus")) for w in WEIGHTS]))
    return out


WEIGHTS = ((1, 0, 0, 0), (0.25, 0.25, 0.25, 0.25), (0.1, 0.7, 0.1, 0.1), (0.1, 0.1, 0.7, 0.1))
MAZES = _mazes()


def mutate(body: dict[str, Any], idx: int) -> str:
    """Iteration 0 (the task's prompt): a random route from the request seed. Evolve prompts: the
    parent's route (read from the prompt) with seeded edits, now and then a best route of its maze
    for some weighting (so scores vary and a good parent has good children). The child is a function of the parent's text, the
    maze and the seed only: a different parent anywhere gives different children."""
    text = "\n".join(m["content"] for m in body["messages"])
    goods = next(routes for grid, routes in MAZES if grid in text)
    user = body["messages"][-1]["content"]
    found = PARENT.search(user)
    own = found is not None  # the task's mutation prompt answers in the task's format
    if found is None and body["messages"][0]["role"] == "system":
        found = CURRENT.search(user)
    if found is None:
        rng = random.Random(body.get("seed"))
        return "<answer>" + ", ".join(rng.choice(MOVES) for _ in range(rng.randint(4, 24))) + "</answer>"
    parent = found.group(1).replace(",", " ").split()
    rng = random.Random(f"{body.get('seed')}|{' '.join(parent)}")  # str seeds do not use hash()
    route = list(rng.choice(goods)) if rng.random() < 0.3 else list(parent)
    for _ in range(rng.randint(0, 2)):
        op = rng.random()
        if op < 0.5 or not route:  # a detour there and back: often still reaches the exit
            at, mv = rng.randint(0, len(route)), rng.choice(MOVES)
            route[at:at] = [mv, {"UP": "DOWN", "DOWN": "UP", "LEFT": "RIGHT", "RIGHT": "LEFT"}[mv]]
        elif op < 0.8:
            route[rng.randrange(len(route))] = rng.choice(MOVES)
        else:
            del route[rng.randrange(len(route))]
    text = " ".join(route or ["UP"])
    return f"<answer>{text}</answer>" if own else "```text\n" + text + "\n```"


def jitter() -> float:
    """Random latency per request: answers come back in a random order."""
    return random.uniform(0.0, 0.03)


def cfg(url: str, out: Path, **kw: Any) -> EvolveConfig:
    base = dict(task="maze", model="openai:scripted", base_url=url, problems="all", limit=2, iterations=14, m=1,
                prompt_mode="evolve", prompt_style="compact", out=str(out), progress=False, baseline=False,
                lag=4)
    base.update(kw)
    return EvolveConfig(**base)


def rows_of(folder: Path) -> dict[tuple[str, int, int], dict[str, Any]]:
    out = {}
    for r in latest_rows(folder):
        out[(r["problem_id"], r["iteration"], r["answer_index"])] = {k: v for k, v in r.items() if k not in TIMINGS}
    return out


def prompts_of(requests: list[dict[str, Any]]) -> dict[int, Any]:
    return {b["seed"]: b["messages"] for b in requests}


def assert_same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    diff = [k for k in a if a[k] != b[k]]
    assert not diff, f"{len(diff)} of {len(a)} rows differ, first {diff[0]}: {a[diff[0]]} vs {b[diff[0]]}"


def cli(url: str, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "vpo_harness.harness.app.cli", "evolve", "--task", "maze", "--model", "openai:scripted",
            "--base-url", url, "--limit", "2", "--iterations", "14", "-m", "1", "--prompt-mode", "evolve",
            "--prompt-style", "compact", "--out", str(out), "--no-progress", "--no-baseline", "--lag", "4", *extra]


def env(hash_seed: int) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": child_pythonpath(), "PYTHONHASHSEED": str(hash_seed)}


def kill_9_then_resume(command: Callable[..., list[str]], url: str, out: Path, config: Path,
                       ref: dict[tuple[str, int, int], dict[str, Any]]) -> None:
    """Start ``command(url, out, ...)`` (a `vpo evolve` command line) three times, each in a process
    with its own hash seed, and SIGKILL it once ``out`` holds a random number of rows (rising), then
    resume it to the end and check its rows equal ``ref``'s. Shared by every evolve mode's kill test
    so all of them kill the same way; the random kill points' seed is in every failure message, to
    replay it. ``config`` is the OpenEvolve YAML (checkpoints often, so a kill lands between two)."""
    seed = random.SystemRandom().randrange(10**6)
    rng = random.Random(seed)
    kills = sorted(rng.sample(range(2, len(ref) - 2), 3))
    for k, at in enumerate(kills):
        proc = subprocess.Popen(command(url, out, "--concurrency", "4", "--config", str(config)), cwd=REPO,
                                env=env(10 + k), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 300
        f = out / "samples.jsonl"
        while time.time() < deadline and proc.poll() is None:
            if f.exists() and f.read_bytes().count(b"\n") >= at:
                break
            time.sleep(0.005)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    res = subprocess.run(command(url, out, "--config", str(config)), cwd=REPO, env=env(99),
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    got = rows_of(out)
    assert got.keys() == ref.keys(), f"kill points {kills} (seed {seed})"
    diff = [k for k in ref if ref[k] != got[k]]
    assert not diff, f"kill points {kills} (seed {seed}): {len(diff)} rows differ, first {diff[0]}"


# ---- the schedule ------------------------------------------------------------------------------------

@pytest.mark.parametrize("n,lag", [(0, 1), (5, 1), (9, 3), (4, 8), (12, 4)])
def test_schedule_draws_from_exactly_the_iterations_lag_behind(n: int, lag: int) -> None:
    ops = schedule(n, lag)
    assert sorted(ops) == sorted([("draw", i) for i in range(n + 1)] + [("admit", i) for i in range(n + 1)])
    assert [i for k, i in ops if k == "admit"] == list(range(n + 1))
    assert [i for k, i in ops if k == "draw"] == list(range(n + 1))
    for pos, (kind, i) in enumerate(ops):
        if kind == "draw":
            admitted = {j for k, j in ops[:pos] if k == "admit"}
            assert admitted == (set() if i == 0 else set(range(max(0, i - lag) + 1)))
        else:
            assert ("draw", i) in ops[:pos]


def test_lag_one_is_the_sequential_loop() -> None:
    assert schedule(3, 1) == [("draw", 0), ("admit", 0), ("draw", 1), ("admit", 1), ("draw", 2), ("admit", 2),
                              ("draw", 3), ("admit", 3)]


# ---- in one process: concurrency, in-flight width, answer order ---------------------------------------

def test_rows_do_not_depend_on_concurrency_parallel_or_answer_order(tmp_path: Path) -> None:
    runs = {}
    with ScriptedOpenAIServer(mutate, delay_s=jitter) as srv:
        for name, kw in {"c1w1": dict(concurrency=1, parallel=1), "c8w4": dict(concurrency=8, parallel=4),
                         "c3w2": dict(concurrency=3, parallel=2), "c1w4": dict(concurrency=1, parallel=4)}.items():
            n0 = len(srv.requests)
            run_evolve(cfg(srv.base_url, tmp_path / name, **kw))
            runs[name] = (rows_of(tmp_path / name), prompts_of(srv.requests[n0:]))
        n0 = len(srv.requests)
        run_evolve(cfg(srv.base_url, tmp_path / "lag1", lag=1, parallel=1))
        lag1 = rows_of(tmp_path / "lag1")
    ref_rows, ref_prompts = runs["c1w1"]
    assert len(ref_rows) == 2 * 15
    for name, (rows, prompts) in runs.items():
        assert_same(ref_rows, rows)
        assert prompts == ref_prompts  # the same request for every iteration, not just the same rows
    # the search is a real one: parents vary, scores vary, children differ from their parents
    later = [r for r in ref_rows.values() if r["iteration"] > 0]
    assert len({r["parent_id"] for r in later}) >= 4
    assert len({r["scalars"][0] for r in ref_rows.values()}) >= 3
    assert all(r["parent_id"] and r["inspiration_ids"] is not None for r in later)
    assert sum(bool(r["inspiration_ids"]) for r in later) >= 5
    # the lag is what decides the database state: another lag is another search
    assert lag1.keys() == ref_rows.keys() and any(lag1[k] != ref_rows[k] for k in lag1)


def test_parallel_keeps_w_requests_in_flight_within_the_cap(tmp_path: Path) -> None:
    """One problem, --parallel 4: after iteration 0 the next four requests are answered only once all
    four are waiting at the server (a barrier: a driver with fewer in flight fails the run instead
    of being timed). With --concurrency 2 no more than two are ever in flight."""
    def gated(width: int):
        barrier = threading.Barrier(width, timeout=60)
        state = {"now": 0, "max": 0}
        lock = threading.Lock()

        def respond(body: dict[str, Any], idx: int) -> str:
            with lock:
                state["now"] += 1
                state["max"] = max(state["max"], state["now"])
            try:
                if 1 <= idx <= width:
                    barrier.wait()
                else:
                    time.sleep(0.01)
                return mutate(body, idx)
            finally:
                with lock:
                    state["now"] -= 1
        return respond, state

    for concurrency, width in ((8, 4), (2, 2)):
        respond, state = gated(width)
        with ScriptedOpenAIServer(respond) as srv:
            run_evolve(cfg(srv.base_url, tmp_path / f"c{concurrency}", limit=1, iterations=8, parallel=4,
                           concurrency=concurrency, timeout_s=120))
        assert width <= state["max"] <= min(concurrency, 4)


def test_parallel_above_the_lag_is_one_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from vpo_harness.harness.app.cli import main

    rc = main(["evolve", "--task", "maze", "--model", "openai:x", "--base-url", "http://127.0.0.1:9/v1",
               "--lag", "2", "--parallel", "3", "--out", str(tmp_path / "e"), "--no-progress"])
    err = capsys.readouterr().err
    assert rc != 0 and "Traceback" not in err
    assert [ln for ln in err.splitlines() if "error" in ln] == [ln for ln in err.splitlines() if ln.strip()]
    assert "--parallel 3 exceeds --lag 2" in err
    yaml = tmp_path / "oe.yaml"
    yaml.write_text("evaluator:\n  parallel_evaluations: 5\n")
    rc = main(["evolve", "--task", "maze", "--model", "openai:x", "--base-url", "http://127.0.0.1:9/v1",
               "--lag", "4", "--config", str(yaml), "--out", str(tmp_path / "f"), "--no-progress"])
    err = capsys.readouterr().err
    assert rc != 0 and f"{yaml}: evaluator.parallel_evaluations 5 exceeds --lag 4" in err


# ---- across processes: string-hash seed, kill -9 + resume ---------------------------------------------

@pytest.mark.integration
def test_hash_seed_does_not_change_rows(tmp_path: Path) -> None:
    """Two processes with different PYTHONHASHSEED (OpenEvolve keeps islands and archive in sets of
    strings, whose order follows it)."""
    got = {}
    with ScriptedOpenAIServer(mutate, delay_s=jitter) as srv:
        for hs in (1, 2):
            n0 = len(srv.requests)
            res = subprocess.run(cli(srv.base_url, tmp_path / f"h{hs}", "--concurrency", "4"), cwd=REPO,
                                 env=env(hs), capture_output=True, text=True, timeout=600)
            assert res.returncode == 0, res.stderr[-2000:]
            got[hs] = (rows_of(tmp_path / f"h{hs}"), prompts_of(srv.requests[n0:]))
    assert len(got[1][0]) == 2 * 15
    assert_same(got[1][0], got[2][0])
    assert got[1][1] == got[2][1]
    later = [r for r in got[1][0].values() if r["iteration"] > 0]
    assert len({r["parent_id"] for r in later}) >= 4  # enough choice for set order to have mattered


@pytest.mark.integration
def test_kill_9_at_random_points_then_resume_gives_the_same_rows(tmp_path: Path) -> None:
    """Killed three times at random row counts (in different processes with different hash seeds, with
    answers arriving in random order), then resumed to the end: the rows equal an uninterrupted run's."""
    yaml = tmp_path / "oe.yaml"
    yaml.write_text("checkpoint_interval: 3\n")  # checkpoints all along: a kill lands between any two
    with ScriptedOpenAIServer(mutate, delay_s=jitter) as srv:
        run_evolve(cfg(srv.base_url, tmp_path / "ref", concurrency=2, parallel=2, config_path=str(yaml)))
        ref = rows_of(tmp_path / "ref")
        out = tmp_path / "killed"
        kill_9_then_resume(cli, srv.base_url, out, yaml, ref)
    assert json.loads((out / "results.json").read_text())["n_chains"] == len(ref)
