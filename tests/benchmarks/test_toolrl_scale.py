"""ToolRL on the authors' reporting scale: option ``scale=sum`` makes the task scalar the sum of the four
components (0..4), as ``vpo_tasks/tool.py`` ``evaluate`` feeds ``best_of_k_curve``. A stored run read on
that scale goes through ``vpo rescore --task-args scale=sum`` (nothing is sampled); best@k and its
standard error are then exactly 4 times the mean-scale values and the other metrics are unchanged."""
from __future__ import annotations

import json
from typing import Iterator, Sequence

import numpy as np
import pytest

from vpo_harness.benchmarks import get_task
from vpo_harness.harness.core.models.base import Backend, GenRequest, Generation, SamplingConfig


def test_scalar_is_the_sum_or_the_mean():
    r = np.array([[1.0, 0.5, 0.25, 0.0], [0.0, 0.0, 0.0, 0.0]])
    assert get_task("toolrl").scalar(r).tolist() == [0.4375, 0.0]
    assert get_task("toolrl", scale="sum").scalar(r).tolist() == [1.75, 0.0]
    assert get_task("toolrl", scale="sum").describe()["scalar"].startswith("format + tool_name")
    with pytest.raises(ValueError, match="scale='max'"):
        get_task("toolrl", scale="max")


class _GoldOrWorse(Backend):
    """Chain c of a problem: the gold turn (c = 0), the gold with every tool renamed (c = 1), the gold's
    think block alone (c = 2): three different reward vectors per problem."""

    name = "scripted-toolrl"

    def __init__(self, gold: dict[str, str]):
        self.gold = gold

    def text(self, pid: str, c: int) -> str:
        g = self.gold[pid]
        if c == 0:
            return g
        if c == 1:
            return g.replace('"name": "', '"name": "not_')
        return g.split("</think>")[0] + "</think>"

    def generate(self, requests: Sequence[GenRequest], sampling: SamplingConfig) -> Iterator[Generation]:
        for req in requests:
            for c in req.chain_indices:
                yield Generation(req.problem_id, c, self.text(req.problem_id, c), completion_tokens=10)


def test_rescored_sum_scale_is_four_times_the_mean_scale(tmp_path):
    from vpo_harness.harness.app.rescore import rescore
    from vpo_harness.harness.core.store import latest_rows
    from vpo_harness.harness.eval.runner import RunConfig, run

    problems = get_task("toolrl").load("test", limit=6)
    backend = _GoldOrWorse({p.id: p.data["gold"] for p in problems})
    cfg = RunConfig.of(task="toolrl", model="scripted:toolrl", split="test", limit=6, n=3, m=1, ks=(1, 2, 3),
                       out=str(tmp_path / "mean"), progress=False)
    src = run(cfg, backend=backend)
    out = rescore(src, tmp_path / "sum", {"scale": "sum"}, progress=False)
    a = json.loads((src / "results.json").read_text())["metrics"]
    b = json.loads((out / "results.json").read_text())["metrics"]
    assert 0 < a["best@1"]["mean"] < a["best@3"]["mean"] <= 1  # the pool really varies
    for k in (1, 2, 3):
        assert b[f"best@{k}"]["mean"] == pytest.approx(4 * a[f"best@{k}"]["mean"], abs=1e-12)
        assert b[f"best@{k}"]["stderr"] == pytest.approx(4 * a[f"best@{k}"]["stderr"], abs=1e-12)
        assert b[f"pass@{k}"] == a[f"pass@{k}"]
    assert b["diversity"] == a["diversity"]
    for row in latest_rows(out):
        assert np.allclose(row["scalars"], np.sum(row["rewards"], axis=-1))
