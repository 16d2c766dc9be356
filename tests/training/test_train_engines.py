"""`vpo train --engine` and `vpo export-verl`: bad combinations fail with one line, verl data and launch
script are written for a task without running anything heavy."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from vpo_harness.harness.app.cli import main


@pytest.mark.parametrize("argv, msg", [
    (["train", "--engine", "trl", "--task", "maze"], "--engine trl needs --init"),
    (["train", "--engine", "trl", "--stage", "sft", "--init", "x"], "--stage sft is the native warm start"),
    (["train", "--use-vllm"], "--use-vllm applies to --engine trl only (this run: --engine native)"),
    (["train", "--engine", "trl", "--init", "x", "--nnodes", "4"], "--nnodes applies to --engine verl only"),
    (["train", "--engine", "trl", "--init", "x", "--no-launch"], "apply to --engine verl only"),
    (["train", "--task", "toolrl"], "only --task maze has a bundled trainer"),
    (["train", "--prefix-fraction", "1.5"], "--prefix-fraction must be between 0 and 1"),
    (["train", "--val-every", "10", "--patience", "0"], "--patience >= 1"),
    (["train", "--engine", "trl", "--init", "x", "--val-every", "5"], "--val-every applies to --engine native only"),
    (["train", "--augment", "ture"], "argument --augment: expected true or false, got 'ture'"),
])
def test_bad_engine_combinations_fail_with_one_line(argv, msg, capsys):
    try:
        rc = main(argv)
    except SystemExit as exc:                 # the parser's own refusal (a bad value)
        rc = exc.code
    err = capsys.readouterr().err
    assert rc != 0 and msg in err and len(err.strip().splitlines()) == 1


def test_engine_verl_without_verl_is_one_line(monkeypatch, capsys):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "verl" else real(name, *a))
    assert main(["train", "--engine", "verl", "--task", "maze"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--engine verl needs verl" in err and "\n" not in err


def test_export_verl_writes_rows_the_reward_manager_reads(tmp_path, capsys):
    assert main(["export-verl", "--task", "toolrl", "--split", "test", "--out", str(tmp_path), "--limit", "4",
                 "--method", "goal_cond"]) == 0
    df = pd.read_parquet(tmp_path / "test.parquet")
    assert list(df.columns) == ["data_source", "prompt", "ability", "reward_model", "extra_info"]
    assert len(df) == 4 and df.data_source.iloc[0] == "vpo/toolrl"
    info = df.extra_info.iloc[0]
    assert info["method"] == "goal_cond" and len(info["goal_weights"]) == 4
    assert "Objective weights" in df.prompt.iloc[0][-1]["content"]
    assert json.loads(info["problem"])["id"] == info["problem_id"]
    assert main(["export-verl", "--task", "toolrl", "--split", "nope", "--out", str(tmp_path)]) == 2
    assert "split" in capsys.readouterr().err


def test_engine_verl_writes_data_and_launch_script(tmp_path, capsys):
    pytest.importorskip("verl")
    out = tmp_path / "run"
    assert main(["train", "--engine", "verl", "--task", "maze", "--method", "multi_rlvr", "--limit", "3", "--init", "maze-tiny-vpo",
                 "--out", str(out), "--no-launch", "--nnodes", "4"]) == 0
    script = (out / "launch.sh").read_text()
    assert "algorithm.adv_estimator=multi_rlvr" in script and "trainer.nnodes=4" in script
    assert "data.train_batch_size=128" in script and "actor_rollout_ref.actor.optim.lr=1e-06" in script
    assert len(pd.read_parquet(out / "data" / "train.parquet")) == 3
    assert "not launched" in capsys.readouterr().out
