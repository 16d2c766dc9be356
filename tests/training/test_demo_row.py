"""`vpo demo`'s row without running a model: which runs it plans (each method and, per training seed,
the warm start in each answer format the asked methods use), on which mazes, and the movement from the
warm start computed over (maze, training seed) with each training run one draw."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vpo_harness.harness.app.demo import demo_configs, movement, warm_of
from vpo_harness.harness.core.metrics import crossed_estimate
from vpo_harness.harness.core.models import zoo


def _policy(root: Path, method: str, seed: int) -> None:
    folder = root / zoo.policy_folder_name(method, seed)
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")


def test_the_row_plans_each_warm_start_once_per_format(tmp_path: Path) -> None:
    for seed in (0, 1):
        for method in ("grpo", "vpo", zoo.WARM_START):
            _policy(tmp_path, method, seed)
    runs, missing = demo_configs(tmp_path, tmp_path / "out", 3, 10, train_seeds=(0, 1), only=["grpo", "vpo"],
                                 split="val", task_args={"base_seed": 610001})
    got = sorted((r.method, r.train_seed, r.cfg.sampling.n, r.cfg.sampling.m) for r in runs)
    assert got == sorted([("grpo", s, 30, 1) for s in (0, 1)] + [("vpo", s, 10, 3) for s in (0, 1)]
                         + [("warm-m1", s, 30, 1) for s in (0, 1)] + [("warm-m3", s, 10, 3) for s in (0, 1)])
    assert not missing
    assert all(r.cfg.task.split == "val" and r.cfg.task.options == {"base_seed": 610001} for r in runs)
    assert warm_of("max_at_k") == "warm-m1" and warm_of("multi_rlvr") == "warm-m3"
    only_single, missing = demo_configs(tmp_path, tmp_path / "out", 3, 10, train_seeds=(0, 1, 2), only=["grpo"])
    assert {r.method for r in only_single} == {"grpo", "warm-m1"}
    assert any("maze-tiny-warm@2" in m and "--seeds 2" in m for m in missing)


def test_movement_pairs_maze_and_training_seed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """best@30 of the method minus the warm start's on the same (maze, training seed), crossed over both."""
    import vpo_harness.harness.core.results as results
    import vpo_harness.harness.core.seed_groups as seed_groups

    rng = np.random.default_rng(0)
    ids = [f"m{i}" for i in range(8)]
    method = {s: rng.random(8) for s in (0, 1, 2)}
    warm = {s: rng.random(8) for s in (0, 1, 2)}
    folders = {("a", s): tmp_path / f"a{s}" for s in (0, 1, 2)} | {("w", s): tmp_path / f"w{s}" for s in (0, 1, 3)}

    class State:
        def __init__(self, side: str):
            self.runs = [(s, f) for (k, s), f in folders.items() if k == side]

    monkeypatch.setattr(seed_groups, "group_state", lambda g: State(Path(g).name))
    values = {f: (method if k == "a" else warm)[s] for (k, s), f in folders.items() if s in (0, 1, 2)}
    monkeypatch.setattr(results, "problem_values", lambda f, ks: (ids, {"best@30": values[f]}))
    est = movement(tmp_path / "a", tmp_path / "w")
    want = crossed_estimate(np.stack([method[s] - warm[s] for s in (0, 1)]))   # seed 2 has no warm start, 3 no run
    assert (est.mean, est.stderr, est.n_seeds) == (want.mean, want.stderr, 2)
