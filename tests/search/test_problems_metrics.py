"""`--problems` selection and the evolve curves, against brute-force references."""
from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from vpo_harness.benchmarks import get_task
from vpo_harness.search.metrics import baseline_curves, evolve_curves, sampling_curve
from vpo_harness.search.problems import select


def _fake_run(folder: Path, task: str, pools: dict[str, list[float]]) -> Path:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"identity": {"task": {"name": task, "split": "test"}}}))
    with open(folder / "samples.jsonl", "w") as f:
        for pid, scores in pools.items():
            for c, s in enumerate(scores):
                f.write(json.dumps({"problem_id": pid, "chain_index": c, "scalars": [s], "error": None}) + "\n")
    return folder


def test_hardest_ranks_by_best_at_k_then_id(tmp_path: Path) -> None:
    probs = get_task("maze").load("test", limit=6)
    ids = [p.id for p in probs]
    # best@3 of a pool of 3 is its max: 0.2, 0.9, 0.2, 0.5, 0.1, 0.95
    pools = {ids[0]: [0.2, 0.1, 0.0], ids[1]: [0.9, 0.0, 0.0], ids[2]: [0.0, 0.2, 0.2],
             ids[3]: [0.5, 0.5, 0.5], ids[4]: [0.1, 0.1, 0.0], ids[5]: [0.95, 0.9, 0.9]}
    run = _fake_run(tmp_path / "r", "maze", pools)
    got = [p.id for p in select(f"hardest:3@{run}", probs, "maze")]
    assert got == [ids[4], ids[0], ids[2]]  # 0.1, then the 0.2 tie broken by id
    # two runs: the mean of their best@k
    run2 = _fake_run(tmp_path / "r2", "maze", {i: [1.0 if i == ids[4] else 0.0] * 3 for i in ids})
    got2 = [p.id for p in select(f"hardest:2@{run},{run2}", probs, "maze")]
    assert got2 == [ids[0], ids[2]]
    assert [p.id for p in select(f"{ids[3]},{ids[1]}", probs, "maze")] == [ids[3], ids[1]]
    assert len(select("all", probs, "maze")) == 6


def test_problem_spec_errors_are_clear(tmp_path: Path) -> None:
    probs = get_task("maze").load("test", limit=2)
    with pytest.raises(ValueError, match="not in the loaded split"):
        select("maze-test-9999", probs, "maze")
    with pytest.raises(FileNotFoundError, match="not a run folder"):
        select(f"hardest:1@{tmp_path}", probs, "maze")
    run = _fake_run(tmp_path / "lcb", "livecodebench", {"x": [0.0]})
    with pytest.raises(ValueError, match="not 'maze'"):
        select(f"hardest:1@{run}", probs, "maze")
    with pytest.raises(ValueError, match="N must be"):
        select("hardest:x@r", probs, "maze")


def _brute_solved_within(flags: list[bool], c: int) -> float:
    subsets = list(itertools.combinations(range(len(flags)), c))
    return float(np.mean([any(flags[i] for i in s) for s in subsets]))


def test_sampling_curve_matches_brute_force() -> None:
    rng = np.random.default_rng(0)
    pools = [rng.random(7) < q for q in (0.0, 0.15, 0.5, 1.0)]
    cur = sampling_curve([p.astype(float) for p in pools], range(1, 8))
    for j, c in enumerate(range(1, 8)):
        want = np.mean([_brute_solved_within(list(p), c) for p in pools])
        assert cur["mean"][j] == pytest.approx(want, abs=1e-6)


def test_evolve_curves_first_solved_and_running_best() -> None:
    rows = []
    # problem a: solved by candidate 5 (iteration 2, answer 0); b: never solved
    for it in range(4):
        for j in range(2):
            rows.append({"problem_id": "a", "iteration": it, "answer_index": j,
                         "scalars": [0.1 * it + 0.01 * j], "solved": (it, j) >= (2, 0)})
            rows.append({"problem_id": "b", "iteration": it, "answer_index": j,
                         "scalars": [0.5 if (it, j) == (1, 1) else 0.0], "solved": False})
    cur = evolve_curves(rows, ["a", "b"], 3)
    assert cur["solved_vs_candidates"]["mean"] == [0, 0, 0, 0, 0.5, 0.5, 0.5, 0.5]
    assert cur["solved_vs_iteration"]["mean"] == [0, 0, 0.5, 0.5]
    assert cur["per_problem"]["a"]["solved_at_candidate"] == 5
    assert cur["per_problem"]["b"]["best_vs_iteration"] == [0.0, 0.5, 0.5, 0.5]
    assert cur["per_problem"]["a"]["best_vs_iteration"] == pytest.approx([0.01, 0.11, 0.21, 0.31])
    base = baseline_curves([{"problem_id": "a", "scalars": [0.0, 1.0], "passed": [False, True]},
                            {"problem_id": "b", "scalars": [0.0, 0.0], "passed": [False, False]}],
                           ["a", "b"], lambda pid, s, ok: ok, budget=8)
    assert base["pool"] == 2 and base["solved_vs_candidates"]["mean"] == [0.25, 0.5]


def test_best_vs_candidates_curves() -> None:
    rows = [{"problem_id": "a", "iteration": it, "answer_index": 0, "scalars": [s], "solved": False}
            for it, s in enumerate([0.2, 0.1, 0.5, 0.3])]
    cur = evolve_curves(rows, ["a"], 3)
    assert cur["best_vs_candidates"]["mean"] == [0.2, 0.2, 0.5, 0.5]
    base = baseline_curves([{"problem_id": "a", "scalars": [0.2, 0.1, 0.5, 0.3], "passed": [False] * 4}],
                           ["a"], lambda pid, s, ok: ok, budget=4)
    # unbiased best@c of the pool {0.1, 0.2, 0.3, 0.5}: brute force over subsets
    for j, c in enumerate(range(1, 5)):
        want = np.mean([max(sub) for sub in itertools.combinations([0.2, 0.1, 0.5, 0.3], c)])
        assert base["best_vs_candidates"]["mean"][j] == pytest.approx(want, abs=1e-6)
