"""Run folders written the way the runner writes them, with pools whose scores vary: a spread
"VPO" policy and a collapsed "GRPO" policy on the same maze problems (real Maze rewards)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

if TYPE_CHECKING:
    from vpo_harness.reports.view.api import ViewData



def write_run(folder: Path, model: str, n: int, m: int, n_problems: int, spread: float, seed: int,
              problem_offset: int = 0, run_seed: int = 0, **cfg_extra) -> Path:
    """A maze run folder scored by the real Maze task (so answers, rewards and scalars agree);
    ``run_seed``: the sampling seed its identity records (a seed group's seed-N holds N)."""
    from vpo_harness.benchmarks import get_task

    task = get_task("maze", **cfg_extra.pop("task_options", {}))
    problems = task.load("test", limit=n_problems + problem_offset)[problem_offset:]
    from vpo_harness.benchmarks.maze import MazeInstance, best_route

    from vpo_harness.harness.core.config import RunConfig
    from vpo_harness.harness.core.models.base import SamplingConfig
    from vpo_harness.harness.eval.runner import build_config_record, compute_results

    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    cfg = RunConfig.of(task="maze", model=model, split="test", task_options=dict(task.options),
                       limit=n_problems + problem_offset, prompt_style="compact", m=m, n=n,
                       ks=tuple(k for k in (1, 2, 4, 8) if k <= n * m), seed=run_seed, temperature=0.7, top_p=1.0,
                       out=str(folder), **cfg_extra)
    record = build_config_record(cfg, task, SamplingConfig(0.7, 1.0, 110), problems, "loaded")
    (folder / "config.json").write_text(json.dumps(record))
    rows = []
    for p in problems:
        maze = MazeInstance.from_problem(p)
        # real routes: optimal for gold only, diamonds only, the mean, the exit alone (it may collect a
        # fraction of the items: convex_bonus then changes its reward), and a truncated one that fails
        routes = [", ".join(best_route(maze, w)) for w in ((0.1, 0.8, 0.0, 0.1), (0.1, 0.0, 0.8, 0.1),
                                                             (0.25, 0.25, 0.25, 0.25), (1.0, 0.0, 0.0, 0.0))]
        routes.append(", ".join(routes[2].split(", ")[:3]))
        # spread: any of the five; collapsed: the mean route, now and then the failing one
        probs = np.full(5, 0.2) if spread > 0.5 else np.array([0.0, 0.0, 0.8, 0.0, 0.2])
        for c in range(n):
            picked = [routes[i] for i in rng.choice(5, size=m, p=probs)]
            text = picked[0] if m == 1 else "".join(f"<route_{j + 1}>{a}</route_{j + 1}>\n" for j, a in enumerate(picked))
            answers = task.parse(text, None if m == 1 else m)  # what the runner would store
            r = np.stack([task.reward(p, a) for a in answers])
            # completion tokens as a tokenizer would roughly count them: longer chains cost more
            rows.append({"problem_id": p.id, "chain_index": c, "seed": c, "text": text,
                         "completion_tokens": len(text) // 3 + 5, "answers": answers,
                         "rewards": r.tolist(), "scalars": np.atleast_1d(task.scalar(r)).tolist(),
                         "passed": np.atleast_1d(task.passed(r)).tolist(), "error": None})
    (folder / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    from vpo_harness.harness.core.store import RunStore

    RunStore(folder).write_results(compute_results(folder, task, problems, cfg, record))  # as the runner does
    return folder


@pytest.fixture(scope="session")
def demo_like_runs(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("runs")
    vpo = write_run(root / "maze-tiny-vpo", "hf:checkpoints/maze-tiny-vpo", 4, 2, 6, spread=0.6, seed=1)
    grpo = write_run(root / "maze-tiny-grpo", "hf:checkpoints/maze-tiny-grpo", 8, 1, 6, spread=0.1, seed=2)
    return vpo, grpo


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """The `vpo view` tests' run folders (tests/reports/view_runs.py), written once per test module."""
    from tests.reports.view_runs import all_runs

    return all_runs(tmp_path_factory.mktemp("viewruns"))


@pytest.fixture(scope="module")
def data(runs) -> ViewData:
    """The view's data layer over the folder holding :func:`runs`."""
    from vpo_harness.reports.view.api import ViewData

    return ViewData([runs["vpo"].parent])


def maze_mixed_responder(problems, good: float, m: int):
    """Replies to the Maze task prompt of one of ``problems`` with ``m`` routes: with chance ``good``
    (seeded by the request) a real best route for random item weights (the uniform one is optimal,
    so the problem is solved), otherwise random moves. Scores then vary within and across problems."""
    import random

    from vpo_harness.benchmarks import get_task
    from vpo_harness.benchmarks.maze import MazeInstance, best_route

    task = get_task("maze")
    keys = {p.id: (task.prompt(p, style="compact")[-1]["content"].split("Budget")[0].strip(),
                   MazeInstance.from_problem(p)) for p in problems}
    weights = [(0.25, 0.25, 0.25, 0.25), (0.1, 0.8, 0.0, 0.1), (0.1, 0.0, 0.8, 0.1), (0.4, 0.1, 0.1, 0.4),
               (1.0, 0.0, 0.0, 0.0)]

    def respond(body, idx):
        text = "\n".join(str(msg.get("content")) for msg in body.get("messages") or [])
        maze = next(mz for key, mz in keys.values() if key in text)
        rng = random.Random(body.get("seed"))
        routes = []
        for _ in range(m):
            if rng.random() < good:
                routes.append(", ".join(best_route(maze, rng.choice(weights))))
            else:
                routes.append(", ".join(rng.choice(("UP", "DOWN", "LEFT", "RIGHT")) for _ in range(rng.randint(3, 12))))
        if m == 1:
            return f"<answer>{routes[0]}</answer>"
        return "".join(f"<route_{i}>{r}</route_{i}>" for i, r in enumerate(routes, 1))

    return respond


def write_evolve(folder: Path, good: float, limit: int = 4, iterations: int = 3, m: int = 2,
                 baseline: bool = True) -> Path:
    """A real `vpo evolve` folder (task prompt mode) against a loopback server that answers with
    ``maze_mixed_responder``, with its plain-sampling ``baseline/``."""
    from vpo_harness.benchmarks import get_task
    from vpo_harness.search.evolve import EvolveConfig, run_evolve
    from tests.fakes.scripted_openai import ScriptedOpenAIServer

    problems = get_task("maze").load("test", limit=limit)
    with ScriptedOpenAIServer(maze_mixed_responder(problems, good, m)) as srv:
        return run_evolve(EvolveConfig(task="maze", model="openai:scripted", base_url=srv.base_url, problems="all",
                                       limit=limit, iterations=iterations, m=m, prompt_mode="task",
                                       prompt_style="compact", out=str(folder), progress=False, baseline=baseline,
                                       concurrency=4))


@pytest.fixture(scope="session")
def evolve_runs(tmp_path_factory) -> tuple[Path, Path]:
    """Two evolve runs on the same 4 Maze problems: one whose model rarely writes a real route, one
    that mostly does."""
    root = tmp_path_factory.mktemp("evolve")
    return write_evolve(root / "evo-weak", 0.25), write_evolve(root / "evo-strong", 0.75)
