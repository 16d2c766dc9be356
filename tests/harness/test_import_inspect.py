"""`vpo import` of an Inspect log written by the real inspect_ai (a mock model, epochs = 3): a run
folder whose best@k, pass@k and diversity come from Inspect's own scores; a damaged or unknown-version
log is one line; a partial one is marked partial; nothing is half-written."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from vpo_harness.harness.app.cli import main

pytest.importorskip("inspect_ai", reason="inspect_ai is an optional extra (pip install '.[inspect]')")

EPOCHS = 3


@pytest.fixture(scope="module")
def log_path(tmp_path_factory) -> Path:
    """An eval of three questions, three epochs, two scorers (Inspect's exact match, C/I, and a
    fractional one), by inspect_ai itself against its mock model."""
    from inspect_ai import Task, eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import Score, Target, match, mean, scorer
    from inspect_ai.solver import TaskState, generate

    @scorer(metrics=[mean()])
    def length_ratio():
        async def score(state: TaskState, target: Target) -> Score:
            got = state.output.completion
            return Score(value=min(1.0, len(got) / max(1, len(target.text)) / 2), answer=got)
        return score

    replies = ["4", "5", "4", "9", "nine", "9", "7", "7", "seven"]  # sample by sample, epoch by epoch
    outputs = [ModelOutput.from_content("mockllm/model", r) for r in replies]
    for o in outputs:  # token counts given, so the mock does not fetch a tokenizer over the network
        o.usage = ModelUsage(input_tokens=4, output_tokens=1, total_tokens=5)
    model = get_model("mockllm/model", custom_outputs=outputs)
    task = Task(dataset=[Sample(input="2+2?", target="4", id="q1"), Sample(input="4+5?", target="9", id="q2"),
                         Sample(input="3+4?", target="7", id="q3")],
                solver=generate(), scorer=[match(), length_ratio()], name="arith")
    root = tmp_path_factory.mktemp("inspectlog")
    [log] = inspect_eval(task, model=model, epochs=EPOCHS, log_dir=str(root), display="none", max_samples=1,
                         max_tasks=1)
    assert log.status == "success"
    return Path(log.location)


def _expected(log_path: Path) -> dict[str, np.ndarray]:
    """Per sample, the mean of its named scores in each epoch, straight from inspect_ai's reader."""
    from inspect_ai.log import read_eval_log
    from inspect_ai.scorer import value_to_float

    to_float = value_to_float()
    out: dict[str, list[float]] = {}
    for s in read_eval_log(str(log_path)).samples:
        out.setdefault(str(s.id), []).append(np.mean([to_float(v.value) for v in s.scores.values()]))
    return {k: np.array(v) for k, v in out.items()}


def test_an_inspect_log_imports_with_its_own_scores(log_path, tmp_path, capsys) -> None:
    out = tmp_path / "imported"
    assert main(["import", str(log_path), "--out", str(out)]) == 0
    assert "3 problems, 9 scored samples, components match, length_ratio" in capsys.readouterr().out
    assert main(["show", str(out), "--json"]) == 0
    metrics = json.loads(capsys.readouterr().out)[0]["metrics"]
    want = _expected(log_path)
    assert metrics["best@1"]["mean"] == pytest.approx(np.mean([v.mean() for v in want.values()]))
    assert metrics["best@3"]["mean"] == pytest.approx(np.mean([v.max() for v in want.values()]))
    # pass = every score 1: an exact "4" scores match C and length 0.5, so nothing passes here
    assert metrics["pass@1"]["mean"] == 0.0
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["identity"]["components"] == ["match", "length_ratio"]
    assert cfg["imported_from"]["tool"] == "inspect" and cfg["identity"]["model"]["spec"] == "mockllm/model"
    assert main(["show", str(out), "--metrics", "--select", ""]) == 0
    assert "union_coverage" in capsys.readouterr().out


def test_a_partial_log_is_marked_partial(log_path, tmp_path, capsys) -> None:
    from inspect_ai.log import EvalError, read_eval_log, write_eval_log

    log = read_eval_log(str(log_path))
    log.samples[0].error = EvalError(message="boom", traceback="", traceback_ansi="")
    log.samples[1].scores.pop("length_ratio")
    damaged = tmp_path / "partial.eval"
    write_eval_log(log, str(damaged))
    assert main(["import", str(damaged), "--out", str(tmp_path / "p")]) == 0
    assert "partial: 2 sample(s) errored or lack a score" in capsys.readouterr().out
    assert main(["show", str(tmp_path / "p"), "--select", ""]) == 0
    shown = capsys.readouterr().out
    assert "p (partial)" in shown and " 2 " in shown.splitlines()[1] + " "  # two failed chains counted


@pytest.mark.parametrize("damage, message", [
    ("truncate", "not an Inspect eval log inspect_ai can read"),
    ("version", "not an Inspect eval log inspect_ai can read (Unable to read version 99 of log format.)"),
    ("score", "score 'length_ratio' is 7.5, not a number in [0, 1]"),
])
def test_a_bad_log_is_one_line_and_writes_nothing(log_path, tmp_path, capsys, damage, message) -> None:
    from inspect_ai.log import read_eval_log, write_eval_log

    bad = tmp_path / "bad.json"
    if damage == "truncate":
        bad = tmp_path / "bad.eval"
        bad.write_bytes(log_path.read_bytes()[:200])
    else:
        log = read_eval_log(str(log_path))
        if damage == "score":
            log.samples[2].scores["length_ratio"].value = 7.5
        write_eval_log(log, str(bad))
        if damage == "version":
            d = json.loads(bad.read_text())
            d["version"] = 99
            bad.write_text(json.dumps(d))
    assert main(["import", str(bad), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and str(bad) in err and "\n" not in err, err
    assert not (tmp_path / "r").exists() and not list(tmp_path.glob(".r.*"))


def test_a_log_version_this_reader_does_not_know_is_refused(log_path, tmp_path, capsys, monkeypatch) -> None:
    """A format inspect_ai reads but our mapping was not written for (here: pretend we know only 1)."""
    from vpo_harness.harness.app import import_inspect

    monkeypatch.setattr(import_inspect, "KNOWN_VERSIONS", (1,))
    assert main(["import", str(log_path), "--out", str(tmp_path / "r")]) == 2
    assert "Inspect log format version 2; this reader knows versions 1" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_task_rescoring_needs_ids_of_the_tasks_problems(log_path, tmp_path, capsys) -> None:
    assert main(["import", str(log_path), "--task", "maze", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{log_path}: sample id 'q1' is not a problem of task 'maze' split 'test'" in err and "\n" not in err
    assert not (tmp_path / "r").exists() and not list(tmp_path.glob(".r.*"))


def test_task_rescores_inspect_completions_with_our_reward(tmp_path, capsys) -> None:
    """Two Maze test problems by id, two epochs each (routes for different components): the run's
    best@k is our task's reward on each completion, not Inspect's score."""
    from inspect_ai import Task, eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import includes
    from inspect_ai.solver import generate

    from vpo_harness.benchmarks import get_task
    from vpo_harness.benchmarks.maze_env import MazeInstance
    from vpo_harness.benchmarks.maze_search import best_route
    from vpo_harness.benchmarks.scoring import score_chain

    task = get_task("maze")
    problems = task.load("test", limit=2)
    routes = {p.id: ["<route>" + " ".join(best_route(MazeInstance.from_data(p.data), w)) + "</route>"
                     for w in ([1, 0, 0, 0], [0, 0, 1, 0])] for p in problems}
    outputs = []
    for p in problems:
        for text in routes[p.id]:
            o = ModelOutput.from_content("mockllm/model", text)
            o.usage = ModelUsage(input_tokens=4, output_tokens=4, total_tokens=8)
            outputs.append(o)
    [log] = inspect_eval(Task(dataset=[Sample(input=p.id, target="E", id=p.id) for p in problems], solver=generate(),
                              scorer=includes(), name="mazeroutes"),
                         model=get_model("mockllm/model", custom_outputs=outputs), epochs=2,
                         log_dir=str(tmp_path / "logs"), display="none", max_samples=1, max_tasks=1)
    out = tmp_path / "ours"
    assert main(["import", str(log.location), "--task", "maze", "--out", str(out)]) == 0
    from inspect_ai.log import read_eval_log

    by_id = {p.id: p for p in problems}
    got: dict[str, list[float]] = {}  # our reward on each completion the log holds, whatever order they ran in
    for s in read_eval_log(str(log.location)).samples:
        got.setdefault(str(s.id), []).append(score_chain(task, by_id[str(s.id)], s.output.completion, 1).scalars[0])
    want = {k: np.array(v) for k, v in got.items()}
    assert len({round(float(x), 6) for v in want.values() for x in v}) > 1  # the pools vary
    capsys.readouterr()
    assert main(["show", str(out), "--json"]) == 0
    metrics = json.loads(capsys.readouterr().out)[0]["metrics"]
    assert metrics["best@1"]["mean"] == pytest.approx(np.mean([v.mean() for v in want.values()]), abs=1e-6)
    assert metrics["best@2"]["mean"] == pytest.approx(np.mean([v.max() for v in want.values()]), abs=1e-6)
    assert json.loads((out / "config.json").read_text())["identity"]["components"] == list(task.component_names)
