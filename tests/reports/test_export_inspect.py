"""`vpo export RUN --format inspect`: a Maze run, a seed group and an evolve run written as Inspect
logs and read back with inspect_ai's own reader, score for score."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from vpo_harness.harness.app.cli import main
from vpo_harness.harness.core.seed_groups import register_seeds

inspect_log = pytest.importorskip("inspect_ai.log", reason="inspect_ai is an optional extra (pip install '.[inspect]')")

COMPONENTS = ["completion", "gold", "diamond", "avoid_lava"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    from tests.fakes.scripted_openai import ScriptedOpenAIServer, maze_routes_responder
    from tests.reports.conftest import write_run
    from vpo_harness.search.evolve import EvolveConfig, run_evolve

    root = tmp_path_factory.mktemp("inspect")
    out = {"run": write_run(root / "maze", "hf:a", 3, 2, 4, spread=0.6, seed=1)}
    for s in (0, 1):
        write_run(root / "group" / f"seed-{s}", "hf:a", 2, 2, 3, spread=0.6, seed=30 + s, run_seed=s)
    register_seeds(root / "group", [0, 1], {})
    out["group"] = root / "group"
    with ScriptedOpenAIServer(maze_routes_responder(2)) as srv:
        out["evolve"] = run_evolve(EvolveConfig(
            task="maze", model="openai:scripted", base_url=srv.base_url, problems="all", limit=2, iterations=2,
            m=2, prompt_mode="task", prompt_style="compact", out=str(root / "evo"), progress=False, baseline=False))
    return out


def _rows(folder: Path) -> list[dict]:
    return [json.loads(x) for x in (folder / "samples.jsonl").read_text().splitlines() if x.strip()]


def _export(run: Path, out: Path, capsys) -> object:
    assert main(["export", str(run), "--format", "inspect", "--out", str(out)]) == 0
    assert "Inspect eval log" in capsys.readouterr().out
    return inspect_log.read_eval_log(str(out))


def _check_scores(sample, row: dict) -> None:
    assert sample.output.completion == (row.get("text") or "")
    assert sorted(sample.scores) == [f"answer_{j}" for j in range(1, len(row["answers"]) + 1)]
    for j, (answer, reward, scalar, passed) in enumerate(zip(row["answers"], row["rewards"], row["scalars"],
                                                              row["passed"]), 1):
        score = sample.scores[f"answer_{j}"]
        assert score.value == {**dict(zip(COMPONENTS, reward)), "scalar": scalar}
        assert score.answer == answer and score.metadata == {"passed": passed}


@pytest.mark.parametrize("fmt", ["eval", "json"])
def test_a_maze_run_reads_back_score_for_score(runs, tmp_path, capsys, fmt) -> None:
    log = _export(runs["run"], tmp_path / f"maze.{fmt}", capsys)
    rows = _rows(runs["run"])
    assert log.status == "success" and log.eval.model == "hf:a" and log.eval.task == "maze"
    assert log.eval.config.epochs == 3 and log.eval.dataset.samples == 4
    assert log.eval.model_generate_config.temperature == 0.7
    assert log.eval.metadata["vpo_harness"]["kind"] == "run" and log.eval.metadata["vpo_harness"]["m"] == 2
    by_key = {(s.id, s.epoch): s for s in log.samples}
    assert len(by_key) == len(rows) == len(log.samples)
    for row in rows:
        _check_scores(by_key[(row["problem_id"], row["chain_index"] + 1)], row)
    results = json.loads((runs["run"] / "results.json").read_text())["metrics"]
    got = log.results.scores[0].metrics
    assert got["best@4"].value == pytest.approx(results["best@4"]["mean"])


def test_a_seed_group_numbers_its_seeds_chains_as_epochs(runs, tmp_path, capsys) -> None:
    log = _export(runs["group"], tmp_path / "g.eval", capsys)
    meta = log.eval.metadata["vpo_harness"]
    assert meta["kind"] == "seed_group" and meta["seeds"] == [0, 1] and not meta["partial"]
    assert log.eval.config.epochs == 4  # 2 chains x 2 seeds
    by_key = {(s.id, s.metadata["run_seed"], s.metadata["chain_index"]): s for s in log.samples}
    for seed in (0, 1):
        for row in _rows(runs["group"] / f"seed-{seed}"):
            sample = by_key[(row["problem_id"], seed, row["chain_index"])]
            assert sample.epoch == seed * 2 + row["chain_index"] + 1
            _check_scores(sample, row)


def test_an_evolve_run_says_what_each_candidate_is(runs, tmp_path, capsys) -> None:
    log = _export(runs["evolve"], tmp_path / "evo.eval", capsys)
    assert log.eval.metadata["vpo_harness"]["kind"] == "evolve"
    rows = _rows(runs["evolve"])
    by_key = {(s.id, s.epoch): s for s in log.samples}
    assert len(by_key) == len(rows) == 2 * 3 * 2  # 2 problems, iterations 0..2, a candidate per child
    for row in rows:
        sample = by_key[(row["problem_id"], row["chain_index"] + 1)]
        assert sample.metadata["iteration"] == row["iteration"] and sample.metadata["parent_id"] == row["parent_id"]
        assert sample.metadata["answer_index"] == row["answer_index"]
        _check_scores(sample, row)


def test_bad_output_names_are_refused_before_anything_is_written(runs, tmp_path, capsys) -> None:
    assert main(["export", str(runs["run"]), "--format", "inspect", "--out", str(tmp_path / "x.txt")]) == 2
    assert "an Inspect log ends in .eval or .json" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
