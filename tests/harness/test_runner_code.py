"""The runner on LiveCodeBench: real graded solutions as chain answers; verdicts and isolation stored."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator, Sequence

from vpo_harness.benchmarks import get_task
from vpo_harness.harness.core.models.base import Backend, GenRequest, Generation, SamplingConfig
from vpo_harness.harness.core.paths import shared_data_dir
from vpo_harness.harness.eval.runner import RunConfig, run
from vpo_harness.harness.core.results import load_run


class FixedAnswers(Backend):
    """Every chain of a problem is the same text (a chain of m fenced programs)."""

    name = "fixed"

    def __init__(self, texts: dict[str, str]):
        self.texts = texts

    def generate(self, requests: Sequence[GenRequest], sampling: SamplingConfig) -> Iterator[Generation]:
        for req in requests:
            for c in req.chain_indices:
                yield Generation(req.problem_id, c, self.texts[req.problem_id])


def test_chain_of_programs_gets_per_test_verdicts(tmp_path: Path) -> None:
    task = get_task("livecodebench")
    problems = {p.id: p for p in task.load("test")}
    good = None
    for line in (shared_data_dir() / "livecodebench" / "graded_solutions.jsonl").open():
        row = json.loads(line)
        if row["source_verdict"] is True and row["question_id"] in problems:
            good = row
            break
    assert good is not None
    prob = problems[good["question_id"]]
    wrong = "print('no')" if prob.data["mode"] == "stdin" else "class Solution:\n    pass"
    chain = (f"First approach:\n```python\n{good['code']}\n```\n---\nSecond:\n```python\n{wrong}\n```\n---\n"
             "Third: no code here")
    cfg = RunConfig.of(task="livecodebench", model="fixed:x", n=1, m=3, ks=(1, 3), out=str(tmp_path / "r"),
                    progress=False)
    folder = run(cfg, backend=FixedAnswers({prob.id: chain}), problems=[prob])
    loaded = load_run(folder)
    row = loaded.chains.iloc[0]
    n_tests = len(task.components_for(prob))
    assert row["rewards"][0] == [1.0] * n_tests
    assert row["passed"] == [True, False, False]
    det = row["details"]
    assert det[0]["verdicts"] == ["pass"] * n_tests
    assert set(det[1]["verdicts"]) <= {"wrong_answer", "runtime_error", "compile_error"} and "pass" not in det[1]["verdicts"]
    assert det[2]["verdicts"] is None
    assert det[0]["isolation"]  # the isolation actually in force travels with every graded answer
    assert loaded.results["metrics"]["pass@3"]["mean"] == 1.0
