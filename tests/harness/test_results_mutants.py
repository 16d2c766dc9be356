"""The summarising code and the results reader field by field, on runs with varied scores and failed
chains: the tests that kill mutants scripts/mutation.sh found surviving in runner.compute_results and
harness/core/results.py (renamed keys, dropped rows, a break for a continue, ignored fields)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from vpo_harness.benchmarks import get_task
from vpo_harness.harness.core.results import RunResults, load_run, read_results
from vpo_harness.harness.eval.runner import RunConfig, run
from vpo_harness.harness.core.store import RESULTS, RunStoreError
from tests.harness.test_pools import FIXTURE, EntityBackend


class Partial(EntityBackend):
    """Fails chain 1 of every problem and every chain of the first problem; no token counts."""

    def generate(self, requests, sampling):
        first = requests[0].problem_id
        for g in super().generate(requests, sampling):
            if g.problem_id == first and not g.error:
                g.error, g.text = "scripted failure", ""
            g.completion_tokens = None if g.chain_index == 2 else g.completion_tokens
            yield g


@pytest.fixture(scope="module")
def partial_run(tmp_path_factory):
    problems = get_task("eureqa").load("test", path=str(FIXTURE))
    gold = {p.id: list(p.data["entities"]) for p in problems}
    cfg = RunConfig.of(task="eureqa", model="scripted:entities", data_path=str(FIXTURE), n=4, m=2, ks=(1, 2, 4),
                       out=str(tmp_path_factory.mktemp("partial") / "run"), progress=False)
    backend = Partial(gold, 2, fail=[1])
    return run(cfg, backend=backend), backend, [p.id for p in problems]


def test_results_fields(partial_run):
    folder, backend, ids = partial_run
    raw = json.loads((folder / RESULTS).read_text())
    assert (raw["task"], raw["split"], raw["model"], raw["m"], raw["n"], raw["pool_size"]) == \
        ("eureqa", "test", "scripted:entities", 2, 4, 8)
    assert raw["n_chains"] == 4 * len(ids)
    assert raw["n_errors"] == 4 + (len(ids) - 1)  # all of problem 0, chain 1 of the others
    rows = [json.loads(x) for x in (folder / "samples.jsonl").read_text().splitlines()]
    ok = [r for r in rows if not r["error"]]
    assert raw["mean_completion_tokens"] == pytest.approx(np.mean([r["completion_tokens"] or 0 for r in ok]))
    mt = raw["metrics"]
    assert mt["n_problems"] == len(ids) and mt["n_candidates"] == 2 * len(ok)
    assert mt["best@1"]["n"] == len(ids) - 1  # the problem without a good chain is undefined, not 0
    for name in ("pass@1", "mean_scalar", "diversity", "pareto_fraction", "vpo_objective"):
        assert mt[name]["n"] == len(ids) - 1, name  # ... in every metric (no phantom zero candidate)
    assert set(mt["components"]) == set(get_task("eureqa").component_names)
    from vpo_harness.harness.core.metrics import METRIC_SEED

    assert raw["config"]["identity"]["metric_seed"] == METRIC_SEED


def test_reader_parses_every_field(partial_run):
    folder, _, ids = partial_run
    raw = json.loads((folder / RESULTS).read_text())
    res = read_results(folder)
    assert isinstance(res, RunResults) and res.raw == raw
    assert (res.task, res.model, res.split, res.m, res.n) == ("eureqa", "scripted:entities", "test", 2, 4)
    assert res.ks == [1, 2, 4] and sorted(res.pass_at) == [1, 2, 4]
    for k in (1, 2, 4):
        assert res.best[k].mean == raw["metrics"][f"best@{k}"]["mean"]
        assert res.best[k].stderr == raw["metrics"][f"best@{k}"]["stderr"]
        assert res.pass_at[k].n == raw["metrics"][f"pass@{k}"]["n"]
    for name in ("mean_scalar", "diversity", "pareto_fraction", "vpo_objective"):
        assert res.get(name).mean == raw["metrics"][name]["mean"]
    assert res.get("nope") is None
    assert res.diversity is res.summary["diversity"] and res.mean_scalar is res.summary["mean_scalar"]
    assert res.components == raw["metrics"]["components"] and res.spread == raw["metrics"]["spread"]
    assert (res.n_problems, res.n_candidates, res.n_chains, res.n_errors) == (
        raw["metrics"]["n_problems"], raw["metrics"]["n_candidates"], raw["n_chains"], raw["n_errors"])
    assert res.mean_completion_tokens == raw["mean_completion_tokens"]
    assert (res.pool_size, res.pool_shape) == (8, "4x2")
    empty = RunResults.from_json({"metrics": {"best@x": {}, "pass@2": {"mean": 0.5, "stderr": 0, "n": 1}, "oops": 1}})
    assert (empty.task, empty.model, empty.split, empty.m, empty.n) == ("?", "?", "?", 1, 0)
    assert empty.best == {} and empty.pass_at[2].mean == 0.5 and empty.summary == {}


def test_candidates_frame(partial_run):
    folder, backend, ids = partial_run
    loaded = load_run(folder)
    cand = loaded.candidates
    names = list(get_task("eureqa").component_names)
    assert list(cand.columns) == ["problem_id", "chain_index", "answer_index", "answer", "scalar", "passed", *names]
    good = {k for k, v in backend.truth.items() if k[0] != ids[0] and k[1] != 1}
    assert set(zip(cand.problem_id, cand.chain_index)) == good  # failed chains have no candidates, the rest all do
    assert len(cand) == 2 * len(good) and set(cand.answer_index) == {0, 1}
    for (pid, c, j), row in cand.set_index(["problem_id", "chain_index", "answer_index"]).iterrows():
        np.testing.assert_allclose(row[names].to_numpy(dtype=float), backend.truth[(pid, c)][j])
        assert row["scalar"] == pytest.approx(backend.truth[(pid, c)][j].mean())
        assert row["passed"] == bool((backend.truth[(pid, c)][j] >= 1).all())
    assert len(loaded.chains) == 4 * len(ids)


def test_not_a_run_folder_names_it(tmp_path: Path):
    with pytest.raises(RunStoreError, match=rf"{tmp_path}: not a run folder \(no config.json\)"):
        load_run(tmp_path)
    assert read_results(tmp_path) is None
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / RESULTS).write_text("{not json")
    with pytest.raises(RunStoreError, match=r"results.json: not valid JSON"):
        read_results(tmp_path)
