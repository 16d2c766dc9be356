"""bench/search_arms.py: contrasts are weighted sums of arms per maze (a difference of differences
included), with paired bootstrap intervals and win/tie/loss; pooling stacks the sets' mazes."""
from __future__ import annotations

import numpy as np
import pytest

from bench.search_arms import pair, pool, summarize


def _curves(final: dict[str, list[float]], budget: int = 3) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    out = {}
    for arm, v in final.items():
        last = np.array(v, dtype=float)[:, None]
        best = np.repeat(last, budget, axis=1)
        out[arm] = (best, (best >= 1.0).astype(float))
    return out


def test_difference_of_differences_and_wtl():
    c = _curves({"ev": [1.0, 0.5, 0.2, 0.9], "ea": [0.5, 0.5, 0.1, 0.9],
                 "sv": [0.4, 0.4, 0.2, 0.3], "sa": [0.4, 0.3, 0.2, 0.3]})
    did = ("did", {"ev": 1.0, "ea": -1.0, "sv": -1.0, "sa": 1.0})
    _, out = summarize(c, ["a", "b", "c", "d"], 3, ("ev", "ea", "sv", "sa"), [pair("ev", "ea"), did])
    per = np.array([0.5, 0.0, 0.1, 0.0]) - np.array([0.0, 0.1, 0.0, 0.0])
    got = out["contrasts"]["did:best"]
    assert got["mean"] == pytest.approx(per.mean())
    assert got["wtl"] == [2, 1, 1]
    assert got["ci"][0] <= got["mean"] <= got["ci"][1]
    assert out["contrasts"]["ev − ea:best"]["wtl"] == [2, 2, 0]
    assert out["contrasts"]["ev − ea:solved"]["mean"] == pytest.approx(0.25)  # only maze a is solved, by ev only
    assert out["solved_by_one_arm_only"]["ev"] == ["a"]


def test_pool_stacks_mazes():
    a, b = _curves({"x": [0.1, 0.2]}), _curves({"x": [0.3]})
    best, solved = pool([a, b])["x"]
    assert best.shape == (3, 3) and list(best[:, -1]) == pytest.approx([0.1, 0.2, 0.3])


def _write(folder, rows) -> None:
    import json

    folder.mkdir()
    (folder / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_per_maze_counts_as_the_package_does(tmp_path):
    """Evolve: candidates in evaluation order over complete iterations (iteration 2 has one of its two
    answers: it ends what is known); sampling: the unbiased expectation over c draws of the pool."""
    from bench.search_arms import per_maze

    ev = [{"problem_id": "a", "chain_index": i, "iteration": i, "answer_index": 0, "of": of, "scalars": [s],
           "solved": s >= 0.9} for i, (of, s) in enumerate(((1, 0.2), (1, 0.9), (2, 0.95)))]
    _write(tmp_path / "evo", ev)
    best, solved = per_maze(tmp_path / "evo", 3, {"a": 0.9}, ["a"], evolve=True)
    assert best[0, :2].tolist() == [0.2, 0.9] and solved[0, :2].tolist() == [0.0, 1.0]
    assert np.isnan(best[0, 2]) and np.isnan(solved[0, 2])
    base = [{"problem_id": "a", "chain_index": 0, "scalars": [0.5], "passed": [False]},
            {"problem_id": "a", "chain_index": 1, "scalars": [1.0], "passed": [False]}]
    _write(tmp_path / "base", base)
    best, solved = per_maze(tmp_path / "base", 3, {"a": 1.0}, ["a"], evolve=False)
    assert best[0, :2].tolist() == pytest.approx([0.75, 1.0]) and solved[0, :2].tolist() == pytest.approx([0.5, 1.0])
    assert np.isnan(best[0, 2]) and np.isnan(solved[0, 2])
