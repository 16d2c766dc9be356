"""The problem page's problem section (reports/view/problems.py): each task's display blocks from its
real local data, the prompt the runner sends, a Maze candidate's route from the task's simulator,
one line where a problem cannot be rebuilt; and run styles that stay put as folders are added."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from vpo_harness.benchmarks import get_task
from vpo_harness.benchmarks.maze_env import simulate
from vpo_harness.reports.colours import DASHES, PALETTE, StyleBook, run_styles
from vpo_harness.reports.view.api import ViewData
from vpo_harness.reports.view.problems import problem_view
from vpo_harness.harness.core.config import RunConfig
from vpo_harness.harness.eval.runner import make_prompt


def _config(task: str, m: int = 1, style: str = "full", **options) -> dict:
    return {"identity": {"task": {"name": task, "split": "test", "options": options, "prompt_style": style},
                         "model": {"spec": "mock:x"}, "sampling": {"n": 2, "m": m}}}


def _kinds(view: dict) -> list[str]:
    return [b["kind"] for b in view["blocks"]]


def test_maze_problem_is_a_grid_and_its_prompt_is_the_runners(tmp_path: Path) -> None:
    task = get_task("maze")
    p = task.load("test", limit=1)[0]
    view = problem_view(_config("maze", m=2, style="compact"), p.id)
    (maze,) = view["blocks"]
    assert maze["kind"] == "maze" and len(maze["rows"]) == 9 and maze["rows"][0][0] == "S"
    cfg = RunConfig.from_json(_config("maze", m=2, style="compact")["identity"])
    assert view["prompt"] == make_prompt(task, p, cfg)
    assert "2 different routes" in view["prompt"][-1]["content"]


def test_each_task_shows_its_own_fields() -> None:
    lcb = get_task("livecodebench").load("test", limit=1)[0]
    v = problem_view(_config("livecodebench"), lcb.id)
    assert _kinds(v)[0] == "text" and lcb.data["content"][:80] in v["blocks"][0]["text"]
    tests = next(b for b in v["blocks"] if b["kind"] == "table")
    assert tests["rows"][0][1].startswith(lcb.data["tests"][0]["input"][:50])
    mq = get_task("musique").load("test", limit=1)[0]
    v = problem_view(_config("musique"), mq.id)
    paras = next(b for b in v["blocks"] if b["kind"] == "paragraphs")
    hops = [p["idx"] for p in sorted((p for p in paras["items"] if p["hop"]), key=lambda p: p["hop"])]
    assert hops == mq.data["support"] and v["blocks"][0]["text"] == mq.data["question"]
    assert mq.data["answer"] in next(b for b in v["blocks"] if b["kind"] == "list")["title"]
    tr = get_task("toolrl").load("test", limit=1)[0]
    v = problem_view(_config("toolrl"), tr.id)
    gold = next(b for b in v["blocks"] if b["title"].startswith("gold call"))
    assert json.loads(gold["text"]) == tr.data["gold_calls"]
    assert v["blocks"][0]["text"] == tr.data["system"]


def test_a_problem_that_cannot_be_rebuilt_is_one_line() -> None:
    v = problem_view(_config("maze"), "maze-test-9999")
    assert v["blocks"] == [] and "maze-test-9999" in v["error"] and "\n" not in v["error"]
    v = problem_view(_config("eureqa"), "questions_hard_5-1")
    assert "cannot be loaded here" in v["error"] and "\n" not in v["error"]


def test_a_maze_candidates_route_is_the_simulators(data, runs) -> None:
    pid = json.loads((runs["grpo"] / "samples.jsonl").read_text().splitlines()[0])["problem_id"]
    page = data.problem(str(runs["grpo"]), pid)
    task = get_task("maze")
    problem = next(p for p in task.load("test", limit=6) if p.id == pid)
    for chain in page["chains"]:
        for k in chain["candidates"]:
            _, info = simulate(problem.data, task.moves(k["answer"]))
            assert k["route"]["cells"] == [list(c) for c in info["path"]]
            assert k["route"]["reached_exit"] == info["reached_exit"]
    # a code run has no route
    code = data.problem(str(runs["code"]), "lcb-a")
    assert all("route" not in k for c in code["chains"] for k in c["candidates"])


def test_styles_are_distinct_then_dashed_and_keep_to_their_run() -> None:
    keys = [f"runs/r{i}" for i in range(len(PALETTE) + 3)]
    styles = run_styles(keys)
    assert len({s.colour for s in styles[:len(PALETTE)]}) == len(PALETTE)  # distinct colours first
    assert {s.dash for s in styles[:len(PALETTE)]} == {"solid"}
    assert len(set(styles)) == len(styles) and {s.dash for s in styles[len(PALETTE):]} == {DASHES[1]}
    book = StyleBook()
    first = [book.style(k) for k in keys[:5]]
    for k in keys[5:]:  # folders added later take other styles; the first ones keep theirs
        book.style(k)
    assert [book.style(k) for k in keys[:5]] == first
    assert run_styles(["runs/r3"])[0] == run_styles(["runs/r3", "runs/r1"])[0]  # a key prefers one colour


def test_a_runs_colour_stays_as_folders_are_added(tmp_path: Path) -> None:
    from tests.reports.conftest import write_run

    def dated(folder: Path, day: int) -> None:  # runs started on different days (the order a session sees)
        cfg = json.loads((folder / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps({**cfg, "created": f"2026-01-{day:02d}T00:00:00+00:00"}))

    for i in range(3):
        dated(write_run(tmp_path / f"r{i}", "hf:x", 2, 1, 1, spread=0.6, seed=i), 1)
    view = ViewData([tmp_path])
    before = {r["id"]: (r["colour"], r["dash"]) for r in view.runs()["runs"]}
    for i in range(3, 14):
        dated(write_run(tmp_path / f"a{i}", "hf:x", 2, 1, 1, spread=0.6, seed=i), 2)
    after = {r["id"]: (r["colour"], r["dash"]) for r in view.runs()["runs"]}
    assert {k: after[k] for k in before} == before
    # the next session (a new viewer) sees the older runs first: the same styles
    assert {r["id"]: (r["colour"], r["dash"]) for r in ViewData([tmp_path]).runs()["runs"]} == after
    assert len(set(after.values())) == len(after) == 14
    assert len({c for c, _ in after.values()}) == 14  # 14 runs, 14 colours (the palette has 16)


@pytest.mark.parametrize("kind", ["eval", "evolve"])
def test_curves_of_an_evolve_run_are_the_searchs_with_its_baseline(kind, evolve_runs, data, runs) -> None:
    if kind == "eval":
        c = data.curve(str(runs["vpo"]))
        assert "best@k" in c["series"] and not any(k.startswith("baseline_") for k in c["series"])
        return
    folder = evolve_runs[0]
    c = ViewData([folder.parent]).curve(str(folder))
    assert "best@k" not in c["series"] and "pass@k" not in c["series"]
    base = c["series"]["baseline_solved_vs_candidates"]
    assert base["x"] == list(range(1, 9)) and c["series"]["solved_vs_candidates"]["x"][-1] == 8


def test_an_evolve_baseline_records_every_budget(evolve_runs) -> None:
    """The baseline reads best@k and pass@k at the search's candidate budgets (4 iterations x m=2:
    1, 2, 4 and 8), not best@1 alone."""
    base = evolve_runs[0] / "baseline"
    assert json.loads((base / "config.json").read_text())["ks"] == [1, 2, 4, 8]
    metrics = json.loads((base / "results.json").read_text())["metrics"]
    assert {f"best@{k}" for k in (1, 2, 4, 8)} <= set(metrics)


def test_eureqa_shows_its_narrative_and_gold_entities() -> None:
    """No EUREQA data on this machine: the display is checked on a problem record of its shape."""
    from vpo_harness.benchmarks.base import Problem
    from vpo_harness.reports.view.problems import DISPLAYS

    p = Problem(id="questions_hard_5-0", data={"narrative": "A met B in C.", "masks": ["A", "B"],
                                               "entities": ["Ada", "Bob"]})
    question, gold = DISPLAYS["eureqa"](None, p)
    assert question["text"] == "A met B in C." and gold["items"] == ["A = Ada", "B = Bob"]
