"""`vpo export RUN --format lcb`: a LiveCodeBench run (the real runner, real graded model solutions)
handed to LiveCodeBench's official grader (../shared/anchors/lcb_grader, unmodified) as its
custom_evaluator reads it; the grader's verdict on every answer equals ours."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Iterator, Sequence

import pytest

from vpo_harness.benchmarks import get_task
from vpo_harness.harness.app.cli import main
from vpo_harness.harness.core.models.base import Backend, GenRequest, Generation, SamplingConfig
from vpo_harness.harness.core.paths import shared_data_dir
from vpo_harness.harness.eval.runner import RunConfig, run

DATA = shared_data_dir() / "livecodebench"
GRADER = shared_data_dir().parent / "anchors" / "lcb_grader"
#: a functional and a stdin problem whose graded solutions the official grader splits into pass and fail
PROBLEMS = ("3743", "abc393_b")

#: what LiveCodeBench's custom_evaluator does with --custom_output_file for code generation: sort by
#: str(question_id), grade code_list[i] as generation i against the problem's evaluation sample
#: (public tests here: run_official.evaluation_sample), verdict per generation by extract_instance_results
OFFICIAL = """
import json, sys
sys.path.insert(0, sys.argv[1])
sys.dont_write_bytecode = True
from run_official import evaluation_sample, load_problems
from lcb_runner.evaluation.compute_code_generation_metrics import codegen_metrics
from lcb_runner.evaluation.pass_k_utils import extract_instance_results
outputs = json.load(open(sys.argv[2]))
problems = load_problems([sys.argv[3]])
outputs = sorted(outputs, key=lambda x: str(x["question_id"]))
samples = [evaluation_sample(problems[o["question_id"]]) for o in outputs]
metrics, results, _ = codegen_metrics(samples, [o["code_list"] for o in outputs], num_process_evaluate=2, timeout=6)
graded = extract_instance_results(results)
print("VERDICTS " + json.dumps({o["question_id"]: [bool(g) for g in v] for o, v in zip(outputs, graded)}))
"""


class GradedSolutions(Backend):
    """Chain c of a problem: its c-th real graded solution in a fenced block; past the last, prose."""

    name = "graded"

    def __init__(self, codes: dict[str, list[str]]):
        self.codes = codes

    def generate(self, requests: Sequence[GenRequest], sampling: SamplingConfig) -> Iterator[Generation]:
        for req in requests:
            for c in req.chain_indices:
                codes = self.codes[req.problem_id]
                text = f"```python\n{codes[c]}\n```" if c < len(codes) else "I could not solve it."
                yield Generation(req.problem_id, c, text)


@pytest.fixture(scope="module")
def lcb_run(tmp_path_factory) -> Path:
    task = get_task("livecodebench")
    problems = [p for p in task.load("test") if p.id in PROBLEMS]
    codes: dict[str, list[str]] = {p: [] for p in PROBLEMS}
    for line in (DATA / "graded_solutions.jsonl").open(encoding="utf-8"):
        row = json.loads(line)
        if row["question_id"] in codes:
            codes[row["question_id"]].append(row["code"])
    n = max(len(c) for c in codes.values()) + 1  # one chain of prose (no code) for each problem
    out = tmp_path_factory.mktemp("lcb") / "run"
    cfg = RunConfig.of(task="livecodebench", model="graded:x", n=n, m=1, ks=(1,), out=str(out), progress=False)
    return run(cfg, backend=GradedSolutions(codes), problems=problems)


def test_the_official_grader_agrees_on_every_answer(lcb_run: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "lcb.json"
    assert main(["export", str(lcb_run), "--format", "lcb", "--out", str(out)]) == 0
    assert "2 problems" in capsys.readouterr().out
    entries = json.loads(out.read_text())
    assert [e["question_id"] for e in entries] == sorted(PROBLEMS)
    ours: dict[str, list[bool]] = {}
    for line in (lcb_run / "samples.jsonl").read_text().splitlines():
        row = json.loads(line)
        ours.setdefault(row["problem_id"], []).append((row["chain_index"], row["passed"][0]))
    ours = {q: [p for _, p in sorted(v)] for q, v in ours.items()}
    assert all(e["code_list"][-1] == "" for e in entries)  # the unparsed answer, as LCB's extractor gives it
    proc = subprocess.run([sys.executable, "-c", OFFICIAL, str(GRADER), str(out),
                           str(DATA / "code_generation_lite.v5v6.public.jsonl")],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("VERDICTS ")), None)
    assert line is not None, proc.stdout[-2000:] + proc.stderr[-2000:]
    official = json.loads(line.split(" ", 1)[1])
    assert official == ours
    assert all(True in v and False in v for v in official.values())  # both verdicts on each problem


def test_a_run_of_another_task_is_refused_in_one_line(tmp_path: Path, capsys) -> None:
    from tests.reports.conftest import write_run

    maze = write_run(tmp_path / "maze", "hf:x", 2, 1, 2, spread=0.6, seed=0)
    assert main(["export", str(maze), "--format", "lcb", "--out", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "a maze run; --format lcb takes a LiveCodeBench run" in err
    assert not (tmp_path / "x.json").exists()
