"""A real TRL run on a text task: SmolLM2-135M-Instruct, ToolRL, VPO chains of m = 3, a few steps on
CPU. The loss is finite, every reward component is logged, and the checkpoint runs in `vpo run`."""
from __future__ import annotations

import json
import math

import pytest

pytest.importorskip("trl")


@pytest.mark.integration
def test_trl_vpo_on_toolrl_with_smollm2(tmp_path):
    from vpo_harness.benchmarks import get_task
    from vpo_harness.harness.app.cli import main
    from vpo_harness.training.trl_vpo import TRLVPOConfig, train_trl

    from vpo_harness.search.serve import default_threads

    # kept small for CI: 2 rounds of 1 prompt x G = 2 chains, no reference model (beta 0); `vpo serve`'s
    # thread count (one on 2 cores): torch's every-core default spin-waits for a core another process holds
    cfg = TRLVPOConfig(init="hf:smollm2-135m", out=str(tmp_path / "trl"), task="toolrl", method="vpo", split="sft",
                       limit=2, m=3, group_size=2, prompts_per_step=1, steps=2, lr=1e-5, beta=0.0,
                       max_completion_length=32, K=32, threads=default_threads(), seed=3)
    ckpt = train_trl(cfg)
    rows = [json.loads(x) for x in (tmp_path / "trl" / "trl_curves.jsonl").read_text().splitlines()]
    assert rows and all(math.isfinite(r["loss"]) for r in rows if "loss" in r)
    gen_rows = [r for r in rows if "vpo/objective" in r]
    assert len(gen_rows) == cfg.steps
    for name in get_task("toolrl").component_names:
        assert all(f"rewards/{name}/mean" in r for r in gen_rows), name
    card = (ckpt / "README.md").read_text()
    assert "vpo" in card and "toolrl" in card and (ckpt / "vpo_training.json").exists()

    out = tmp_path / "eval"
    assert main(["run", "--task", "toolrl", "--model", f"hf:{ckpt}", "--limit", "1", "-n", "2", "-m", "3",
                 "--max-tokens", "32", "--out", str(out), "--no-progress"]) == 0
    res = json.loads((out / "results.json").read_text())
    assert "best@1" in json.dumps(res)
    cfg_rec = json.loads((out / "config.json").read_text())
    assert str(ckpt) in json.dumps(cfg_rec)
