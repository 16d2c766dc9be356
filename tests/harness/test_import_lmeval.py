"""`vpo import` of lm-evaluation-harness --log_samples output with repeats, written by the real
lm_eval (a scripted model, a local JSON dataset): lm-eval's own per-repeat scores as reward
components, or `--task maze` rescoring the raw generations with our reward; a malformed file is one
line and writes nothing; a missing repeat marks the run partial; show / compare / report read it."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from vpo_harness.harness.app.cli import main
from tests.fakes.lmeval_model import write_samples

pytest.importorskip("lm_eval", reason="lm_eval is an optional extra (pip install '.[lmeval]')")
pytestmark = pytest.mark.integration  # lm_eval's import and evaluation loop: seconds, not a unit test

REPEATS = 3


def length_ratio(references, predictions):  # a fractional lm-eval metric (a callable in metric_list)
    return min(1.0, len(predictions[0]) / max(1, len(references[0])) / 2)


@pytest.fixture(scope="module")
def arith(tmp_path_factory) -> Path:
    """Two questions, three repeats, exact_match and a fractional metric, one filter per repeat."""
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    docs = [{"id": "q1", "question": "2+2?", "answer": "4"}, {"id": "q2", "question": "4+5?", "answer": "9"}]
    replies = {"2+2?": ["4", "5", "44"], "4+5?": ["9", "nine", "9"]}
    return write_samples(tmp_path_factory.mktemp("lmeval"), "arith", docs, replies, REPEATS,
                         ["exact_match", length_ratio], per_repeat=True)


def _maze_replies() -> tuple[list[dict], dict[str, list[str]]]:
    """Two Maze test problems; repeat j follows the best route for component j (varied rewards)."""
    from vpo_harness.benchmarks import get_task
    from vpo_harness.benchmarks.maze_env import MazeInstance
    from vpo_harness.benchmarks.maze_search import best_route

    problems = get_task("maze").load("test", limit=2)
    docs, replies = [], {}
    for p in problems:
        q = f"maze {p.id}"
        docs.append({"id": p.id, "question": q, "answer": ""})
        replies[q] = ["<route>" + " ".join(best_route(MazeInstance.from_data(p.data), w)) + "</route>"
                      for w in ([1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0])]
    return docs, replies


@pytest.fixture(scope="module")
def maze(tmp_path_factory) -> Path:
    """Maze problems by id, lm-eval's default filter (take_first: one score per doc, not per repeat)."""
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    docs, replies = _maze_replies()
    return write_samples(tmp_path_factory.mktemp("lmeval-maze"), "mazegen", docs, replies, REPEATS,
                         ["exact_match"], per_repeat=False)


def _own_scores(path: Path) -> dict[str, np.ndarray]:
    """Per doc, repeat by repeat, the mean of lm-eval's metrics, read straight from its file."""
    out: dict[str, dict[int, float]] = {}
    for line in map(json.loads, path.read_text().splitlines()):
        j = int(line["filter"].split("_")[1]) - 1
        out.setdefault(line["doc"]["id"], {})[j] = np.mean([line[m] for m in line["metrics"]])
    return {k: np.array([v[j] for j in sorted(v)]) for k, v in out.items()}


def _metrics(capsys, run: Path) -> dict:
    capsys.readouterr()
    assert main(["show", str(run), "--json"]) == 0
    return json.loads(capsys.readouterr().out)[0]["metrics"]


def test_lm_eval_samples_import_with_their_own_per_repeat_scores(arith, tmp_path, capsys) -> None:
    out = tmp_path / "imported"
    assert main(["import", str(arith), "--out", str(out)]) == 0
    assert "2 problems, 6 scored samples, components exact_match, length_ratio" in capsys.readouterr().out
    want = _own_scores(arith)
    assert sorted(want) == ["q1", "q2"] and all(v.size == REPEATS for v in want.values())
    metrics = _metrics(capsys, out)
    assert metrics["best@1"]["mean"] == pytest.approx(np.mean([v.mean() for v in want.values()]))
    assert metrics["best@3"]["mean"] == pytest.approx(np.mean([v.max() for v in want.values()]))
    assert metrics["pass@3"]["mean"] == 0.0  # "4" matches but its length ratio is 0.5: nothing passes
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["identity"]["components"] == ["exact_match", "length_ratio"]
    assert cfg["imported_from"]["tool"] == "lm-eval" and cfg["imported_from"]["repeats"] == REPEATS
    rows = [json.loads(r) for r in (out / "samples.jsonl").read_text().splitlines()]
    assert [r["text"] for r in rows if r["problem_id"] == "q1"] == ["4", "5", "44"]


def test_show_compare_and_report_read_an_imported_run(arith, tmp_path, capsys) -> None:
    lines = arith.read_text().splitlines()
    partial = tmp_path / arith.name  # same name: the results file beside it is not needed
    partial.write_text("\n".join(l for l in lines if not ('"filter": "repeat_2"' in l and '"doc_id": 0' in l)) + "\n")
    assert main(["import", str(arith), "--out", str(tmp_path / "a")]) == 0
    assert main(["import", str(partial), "--out", str(tmp_path / "b")]) == 0
    assert "(partial: 1 sample(s) errored or lack a score)" in capsys.readouterr().out
    assert main(["show", str(tmp_path / "b"), "--select", ""]) == 0
    assert "b (partial)" in capsys.readouterr().out
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--json", "--resamples", "200"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    best1 = next(r for r in rows if r["metric"] == "best" and r["k"] == 1)
    assert best1["n"] == 2 and best1["run"] == "b"
    assert main(["report", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "r.html")]) == 0
    assert "lm-eval/arith" in (tmp_path / "r.html").read_text()


def test_task_rescores_the_raw_repeats_with_our_reward(maze, tmp_path, capsys) -> None:
    from vpo_harness.benchmarks import get_task
    from vpo_harness.benchmarks.scoring import score_chain

    out = tmp_path / "rescored"
    assert main(["import", str(maze), "--task", "maze", "--out", str(out)]) == 0
    task = get_task("maze")
    by_id = {p.id: p for p in task.load("test", limit=2)}
    want = {}
    for line in map(json.loads, maze.read_text().splitlines()):
        pid = line["doc"]["id"]
        want[pid] = np.array([score_chain(task, by_id[pid], t, 1).scalars[0] for t in line["resps"][0]])
    assert len({round(float(x), 6) for v in want.values() for x in v}) > 1  # the pools vary
    metrics = _metrics(capsys, out)
    assert metrics["best@1"]["mean"] == pytest.approx(np.mean([v.mean() for v in want.values()]), abs=1e-6)
    assert metrics["best@3"]["mean"] == pytest.approx(np.mean([v.max() for v in want.values()]), abs=1e-6)
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["identity"]["task"]["name"] == "maze" and cfg["identity"]["components"] == list(task.component_names)


def test_one_score_per_document_is_refused_without_a_task(maze, tmp_path, capsys) -> None:
    assert main(["import", str(maze), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert str(maze) in err and "one score per document and filter (none)" in err and "--task" in err
    assert not (tmp_path / "r").exists()


def test_an_id_that_is_not_a_problem_of_the_task_is_one_line(arith, tmp_path, capsys) -> None:
    assert main(["import", str(arith), "--task", "maze", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{arith}: sample id 'q1' is not a problem of task 'maze' split 'test'" in err and "\n" not in err
    assert not (tmp_path / "r").exists() and not list(tmp_path.glob(".r.*"))


@pytest.mark.parametrize("damage, message", [
    ("json", ":2: not JSON"),
    ("field", ":1: no field 'resps'"),
    ("mc", ":1: 'resps' is not one request's list of generated texts"),
    ("doc_id", ":1: 'doc_id' is not an integer"),
    ("score", ":1: doc 0 filter 'repeat_1': metric 'length_ratio' is 7.5, not a number in [0, 1]"),
    ("empty", "empty: no samples to import"),
])
def test_a_malformed_samples_file_is_one_line_and_writes_nothing(arith, tmp_path, capsys, damage, message) -> None:
    lines = [json.loads(l) for l in arith.read_text().splitlines()]
    first = lines[0]
    if damage == "field":
        first.pop("resps")
    elif damage == "doc_id":
        first["doc_id"] = [0]
    elif damage == "mc":
        first["resps"] = [[["-1.5", "True"]], [["-2.0", "False"]]]
    elif damage == "score":
        first["length_ratio"] = 7.5
    text = "\n".join(json.dumps(l) for l in lines) + "\n"
    if damage == "json":
        text = json.dumps(first) + "\n{not json\n"
    bad = tmp_path / arith.name
    bad.write_text("" if damage == "empty" else text)
    assert main(["import", str(bad), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{bad}" in err and message in err and "\n" not in err, err
    assert not (tmp_path / "r").exists() and not list(tmp_path.glob(".r.*"))
