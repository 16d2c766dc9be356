"""search/evaluator.py: task reward vector -> OpenEvolve metrics and artifacts."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from vpo_harness.benchmarks import Problem, get_task
from vpo_harness.benchmarks.maze_env import MazeInstance
from vpo_harness.benchmarks.maze_search import best_route_detail
from vpo_harness.harness.core.paths import shared_data_dir
from vpo_harness.search.evaluator import TaskEvaluator, default_feature_dimensions
from vpo_harness.search.solved import maze_optimal_scalar, solved_fn

LCB_SOLUTIONS = shared_data_dir() / "livecodebench" / "graded_solutions.jsonl"


@pytest.fixture(scope="module")
def maze():
    t = get_task("maze")
    return t, t.load("test", limit=4)


def test_maze_metrics_are_the_task_reward(maze) -> None:
    task, problems = maze
    p = problems[0]
    optimal = best_route_detail(MazeInstance.from_problem(p), (0.25,) * 4)["moves"]
    routes = ["RIGHT, RIGHT, DOWN", ", ".join(optimal), None]
    ev = TaskEvaluator(task, p).evaluate_many(routes)
    for route, e in zip(routes, ev):
        want = task.reward(p, route)
        assert np.allclose(e.reward, want)
        assert e.metrics["combined_score"] == pytest.approx(float(task.scalar(want)))
        assert [e.metrics[c] for c in task.component_names] == pytest.approx(list(want))
        assert e.metrics["passed"] in (0.0, 1.0)
    # the exact search's route reaches the optimal scalar: "solved"; a random route does not
    solved = solved_fn(task)
    assert solved(p, ev[1]) and ev[1].scalar == pytest.approx(maze_optimal_scalar(task, p))
    assert not solved(p, ev[0])
    assert ev[2].artifacts == {"error": "no answer could be parsed from the model output"}
    assert "reward" in ev[0].artifacts and "gold=" in ev[0].artifacts["reward"]


def test_openevolve_file_contract(maze, tmp_path: Path) -> None:
    from openevolve.evaluation_result import EvaluationResult

    task, problems = maze
    f = tmp_path / "cand.txt"
    f.write_text("DOWN, DOWN, RIGHT")
    res = TaskEvaluator(task, problems[1])(str(f))
    assert isinstance(res, EvaluationResult)
    assert res.metrics["combined_score"] == pytest.approx(float(task.scalar(task.reward(problems[1], "DOWN, DOWN, RIGHT"))))


def test_default_feature_dimensions() -> None:
    assert default_feature_dimensions(get_task("maze")) == ["gold", "diamond"]
    assert default_feature_dimensions(get_task("livecodebench")) == ["tests_passed", "code_length"]
    assert default_feature_dimensions(get_task("toolrl")) == list(get_task("toolrl").component_names)


@pytest.mark.skipif(not LCB_SOLUTIONS.exists(), reason="shared LiveCodeBench data missing")
def test_lcb_artifacts_show_public_failures_only() -> None:
    wrong = next(json.loads(l)["code"] for l in LCB_SOLUTIONS.read_text().splitlines()
                 if json.loads(l)["question_id"] == "abc393_b" and not json.loads(l)["source_verdict"])
    with get_task("livecodebench", workers=2) as task:
        p = next(x for x in task.load("test") if x.id == "abc393_b")
        ev = TaskEvaluator(task, p).evaluate(wrong)
        verdicts = ev.artifacts["verdicts"].split()
        assert len(verdicts) == p.data["n_tests"] and "wrong_answer" in verdicts
        first = verdicts.index("wrong_answer")
        assert ev.metrics["tests_passed"] == float(verdicts.count("pass")) == float(ev.reward.sum())
        assert ev.metrics["code_length"] == len(wrong)
        assert ev.artifacts["failing_input"] == p.data["tests"][first]["input"]
        out = ev.artifacts["program_output"]
        assert out.strip() and out.strip() != p.data["tests"][first]["output"].strip()
        # graded on hidden tests: no input, output or expected output leaves the grader
        hidden = Problem(p.id, p.data, {**p.meta, "test_source": "private"})
        ev2 = TaskEvaluator(task, hidden).evaluate(wrong)
        assert ev2.artifacts["verdicts"] == ev.artifacts["verdicts"]
        text = json.dumps(ev2.artifacts)
        assert "failing_input" not in ev2.artifacts and "program_output" not in ev2.artifacts
        for t in p.data["tests"]:
            assert t["output"].strip() not in text or len(t["output"].strip()) < 3
