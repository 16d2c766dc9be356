"""The one chain-scoring function and the row schema: checked against the task's own per-answer rewards."""
from __future__ import annotations

import numpy as np
import pytest

from vpo_harness.benchmarks import get_task
from vpo_harness.benchmarks.maze import MazeInstance, best_route
from vpo_harness.benchmarks.scoring import score_chain, score_generation
from vpo_harness.harness.core.models.base import Generation
from vpo_harness.harness.core.rows import ChainRow, RowError


@pytest.fixture(scope="module")
def maze():
    task = get_task("maze")
    return task, task.load("test", limit=2)


def _routes(task, problem) -> list[str]:
    """Routes with different reward vectors: optimal for several weightings, plus a bad one."""
    inst = MazeInstance.from_problem(problem)
    routes = [", ".join(best_route(inst, w)) for w in ([1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0.25] * 4)]
    return routes + ["UP, UP, LEFT"]


def test_chain_scores_match_per_answer_rewards(maze) -> None:
    task, problems = maze
    for p in problems:
        routes = _routes(task, p)
        chain = [routes[0], routes[4], routes[0], None, routes[1]]  # a duplicate and a missing answer
        text = "\n".join(f"<route_{i}>{r}</route_{i}>" for i, r in enumerate(chain, 1) if r is not None)
        sc = score_chain(task, p, text, m=5)
        brute = np.stack([task.reward(p, a) for a in chain])
        assert np.allclose(sc.rewards, brute)
        assert np.allclose(sc.scalars, brute.mean(axis=1))
        assert list(sc.passed) == [bool(np.all(b >= 1 - 1e-12)) for b in brute]
        assert sc.answers[3] is None and sc.keys[3] is None
        distinct = {tuple(x.strip() for x in a.split(",")) for a in chain if a is not None}
        assert sc.n_unique == len(distinct) == 3
        assert sc.keys[0] == sc.keys[2] and sc.keys[0] != sc.keys[1]
    # the rewards vary across answers (the test would not notice a constant scorer otherwise)
    assert len({tuple(r) for r in sc.rewards}) >= 3


def test_single_answer_sample(maze) -> None:
    task, (p, _) = maze
    route = _routes(task, p)[3]
    sc = score_chain(task, p, f"<answer>{route}</answer>", m=1)
    assert sc.rewards.shape == (1, task.d) and np.allclose(sc.rewards[0], task.reward(p, route))
    assert sc.rewards[0].sum() > 0


def test_row_round_trip_and_error_rows(maze) -> None:
    task, (p, _) = maze
    route = _routes(task, p)[0]
    gen = Generation(p.id, 3, f"<route_1>{route}</route_1>", completion_tokens=12, extra={"ids": [1, 2]})
    row = score_generation(task, p, gen, m=2, seed=7)
    d = row.to_json()
    assert d["seed"] == 7 and d["chain_index"] == 3 and d["answers"][1] is None and d["extra"] == {"ids": [1, 2]}
    assert "details" not in d  # maze has no per-answer details
    assert ChainRow.from_json(d) == row
    d["future_field"] = {"x": 1}
    assert ChainRow.from_json(d).to_json()["future_field"] == {"x": 1}  # unknown keys survive a rewrite
    err = score_generation(task, p, Generation(p.id, 0, "", error="boom", attempts=3), m=2, seed=1)
    assert err.error == "boom" and err.answers == [] and err.rewards == [] and not err.ok
    with pytest.raises(RowError, match="chain_index"):
        ChainRow.from_json({"problem_id": "x"})
