"""The shipped ``mock:`` backend: loadable by spec, answers in the prompt's format, seeded, scored for real."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from vpo_harness.harness.app.cli import main
from vpo_harness.harness.core.models import load_backend
from vpo_harness.harness.core.models.base import GenRequest, SamplingConfig
from vpo_harness.harness.core.models.mock import answer_format
from vpo_harness.harness.core.results import load_run
from vpo_harness.harness.eval.runner import RunConfig, run


def test_answer_format_read_from_the_prompt() -> None:
    msg = [{"role": "user", "content": "give <route_1>...</route_1> <route_2>..</route_2> <route_3>..</route_3>"}]
    assert answer_format(msg) == ("route", 3)
    assert answer_format([{"role": "user", "content": "inside <answer></answer>"}]) == (None, 1)


def test_seeded_and_incremental() -> None:
    be = load_backend("mock:moves", model_args={"length": 5})
    req = GenRequest("p", [{"role": "user", "content": "<route_1> <route_2>"}], (0, 1, 2), (11, 12, 11))
    gens = list(be.generate([req], SamplingConfig()))
    assert [g.chain_index for g in gens] == [0, 1, 2]
    assert gens[0].text == gens[2].text != gens[1].text  # same seed, same text
    assert gens[0].text.count("<route_") == 2 and "<route_2>" in gens[0].text
    with pytest.raises(ValueError, match="unknown mock mode"):
        load_backend("mock:nonsense")


def test_maze_run_through_the_spec_scores_a_spread(tmp_path: Path) -> None:
    cfg = RunConfig.of(task="maze", model="mock:moves", limit=4, n=6, m=3, ks=(1, 18), out=str(tmp_path / "r"),
                       progress=False, prompt_style="compact", model_args={"fail_every": 7})
    folder = run(cfg)  # no backend object passed: built from the spec like any real one
    loaded = load_run(folder)
    ok = loaded.chains[loaded.chains["error"].isna()]
    assert loaded.summary.n_errors == 24 // 7 and len(ok) == 24 - 24 // 7
    # every answer parsed (the format is the task's) and scored with the task's own reward
    assert loaded.candidates["answer"].notna().all() and len(loaded.candidates) == 3 * len(ok)
    from vpo_harness.benchmarks import get_task

    task = get_task("maze")
    probs = {p.id: p for p in task.load("test", limit=4)}
    for _, c in loaded.candidates.head(12).iterrows():
        assert np.allclose(task.reward(probs[c.problem_id], c.answer), c[list(task.component_names)].to_numpy(float))
    assert len(set(loaded.candidates["answer"])) > 20  # seeded chains differ
    backends = json.loads((folder / "config.json").read_text())["backends"]
    assert backends[0]["backend"] == "mock" and backends[0]["mode"] == "moves"


def test_cli_first_run_without_a_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "first"
    assert main(["run", "--task", "maze", "--model", "mock:moves", "--limit", "2", "-n", "2", "-m", "2",
                 "--out", str(out), "--no-progress"]) == 0
    assert "best@4" in capsys.readouterr().out and (out / "results.json").exists()


def test_unknown_model_arg_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["run", "--task", "maze", "--model", "mock:moves", "--model-args", "bogus=1", "--limit", "1",
               "-n", "1", "--out", str(tmp_path / "r"), "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "bogus" in err[0] and "latency_s" in err[0]
