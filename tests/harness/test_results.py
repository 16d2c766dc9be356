"""The typed results reader: metric names parsed once, k as ints, NaN-safe, same numbers as results.json."""
from __future__ import annotations

import json
import math
from pathlib import Path

from vpo_harness.harness.core.results import RunResults, load_run, read_results
from vpo_harness.harness.eval.runner import RunConfig, run
from tests.harness.scripted import ScriptedBackend


def test_from_json_parses_ks_numerically_and_keeps_estimates() -> None:
    mt = {f"best@{k}": {"mean": k / 100, "stderr": 0.01, "n": 5} for k in (16, 2, 1, 30)}
    mt.update({"pass@2": {"mean": 0.5, "stderr": 0.1, "n": 5}, "diversity": {"mean": None, "stderr": None, "n": 0},
               "mean_scalar": {"mean": 0.3, "stderr": 0.02, "n": 5}, "n_problems": 5, "n_candidates": 150})
    r = RunResults.from_json({"task": "maze", "model": "hf:x", "m": 3, "n": 10, "metrics": mt, "n_errors": 2})
    assert r.ks == [1, 2, 16, 30] and list(r.best) == [1, 2, 16, 30]
    assert r.best[16].mean == 0.16 and r.pass_at[2].stderr == 0.1 and set(r.pass_at) == {2}
    assert r.pool_shape == "10x3" and r.pool_size == 30 and r.n_errors == 2 and r.n_problems == 5
    assert r.diversity is not None and math.isnan(r.diversity.mean) and not r.diversity.defined
    assert r.mean_scalar.defined and r.get("vpo_objective") is None


def test_reader_agrees_with_results_json(tmp_path: Path) -> None:
    cfg = RunConfig.of(task="maze", model="scripted:x", limit=3, n=4, m=3, ks=(1, 4, 12), out=str(tmp_path / "r"),
                       progress=False)
    folder = run(cfg, backend=ScriptedBackend(m=3))
    raw = json.loads((folder / "results.json").read_text())
    res = read_results(folder)
    assert res is not None and res.ks == [1, 4, 12]
    for k in res.ks:
        assert res.best[k].mean == raw["metrics"][f"best@{k}"]["mean"]
        assert res.pass_at[k].n == raw["metrics"][f"pass@{k}"]["n"]
    loaded = load_run(folder)
    assert loaded.summary.best[12].mean == res.best[12].mean and loaded.results == raw
    assert read_results(tmp_path) is None
