"""The LiveCodeBench path of `vpo evolve` with a loopback scripted server that answers with real
graded programs (../shared/data/livecodebench/graded_solutions.jsonl): wrong ones first, a correct one
later. The loop must find the pass and the curve must record when; hostile programs inside the
evolution are contained and recorded."""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from vpo_harness.harness.core.paths import shared_data_dir
from vpo_harness.search.evolve import EvolveConfig, run_evolve
from tests.fakes.scripted_openai import ScriptedOpenAIServer

#: problems of the offline test split whose graded solutions include public-test failures and passes
PROBLEMS = ("3817", "abc393_b")
SOLUTIONS = shared_data_dir() / "livecodebench" / "graded_solutions.jsonl"

pytestmark = pytest.mark.skipif(not SOLUTIONS.exists(), reason="shared LiveCodeBench data missing")


def _solutions() -> dict[str, dict[str, list[str]]]:
    out: dict[str, dict[str, list[str]]] = defaultdict(lambda: {"right": [], "wrong": []})
    for line in SOLUTIONS.read_text().splitlines():
        r = json.loads(line)
        if r["question_id"] in PROBLEMS:
            out[r["question_id"]]["right" if r["source_verdict"] else "wrong"].append(r["code"])
    return out


def _problem_of(body: dict, contents: dict[str, str]) -> str:
    text = "\n".join(m.get("content") or "" for m in body["messages"])
    return next(pid for pid, c in contents.items() if c[:200] in text)


def _contents() -> dict[str, str]:
    from vpo_harness.benchmarks import get_task

    with get_task("livecodebench") as t:
        return {p.id: p.data["content"].strip() for p in t.load("test") if p.id in PROBLEMS}


def _fenced(code: str) -> str:
    return f"Here is the program.\n```python\n{code}\n```"


def _rewrite_config(tmp: Path) -> str:
    cfg = tmp / "oe.yaml"
    cfg.write_text("diff_based_evolution: false\ndatabase:\n  num_islands: 2\n")
    return str(cfg)


def test_lcb_evolve_finds_the_pass_and_records_it(tmp_path: Path) -> None:
    sols, contents = _solutions(), _contents()
    calls: dict[str, int] = defaultdict(int)

    def respond(body: dict, idx: int) -> str:
        pid = _problem_of(body, contents)
        k = calls[pid]
        calls[pid] += 1
        wrong = sols[pid]["wrong"]
        return _fenced(wrong[k % len(wrong)] if k < 2 else sols[pid]["right"][0])

    with ScriptedOpenAIServer(respond) as srv:
        folder = run_evolve(EvolveConfig(
            task="livecodebench", model="openai:scripted", base_url=srv.base_url, problems=",".join(PROBLEMS),
            iterations=3, config_path=_rewrite_config(tmp_path), out=str(tmp_path / "evo"), progress=False,
            baseline=False, task_options={"workers": 2}, parallel=1))  # the responder answers by arrival order
        bodies = list(srv.requests)
    rows = [json.loads(l) for l in (folder / "samples.jsonl").read_text().splitlines()]
    assert len(rows) == 2 * 4
    for r in rows:
        if r["iteration"] < 2:
            assert not r["solved"] and r["scalars"][0] < 1.0
            verdicts = r["details"][0]["verdicts"]
            assert "wrong_answer" in verdicts or "runtime_error" in verdicts
        else:
            assert r["solved"] and r["passed"] == [True] and r["metrics"]["passed"] == 1.0
    res = json.loads((folder / "results.json").read_text())
    assert res["evolve"]["solved_vs_iteration"]["mean"] == [0.0, 0.0, 1.0, 1.0]
    assert res["evolve"]["per_problem"]["3817"]["solved_at_iteration"] == 2
    # evolve prompts carry OpenEvolve's template with the parent and its artifacts (verdicts, the
    # failing public input and what the program printed), the task statement in the system message
    evolve_prompts = [b for b in bodies if b["messages"][0]["role"] == "system" and "# The task" in b["messages"][0]["content"]]
    assert len(evolve_prompts) == 2 * 3
    user = "\n".join(b["messages"][-1]["content"] for b in evolve_prompts)
    assert "verdicts" in user and "wrong_answer" in user and "failing_input" in user


def test_hostile_candidates_are_contained(tmp_path: Path) -> None:
    sols, contents = _solutions(), _contents()
    hostile = [
        "import os\nwhile True:\n    os.fork()\n",                                   # fork bomb
        "while True:\n    pass\n",                                                    # infinite loop
        "x = []\nwhile True:\n    x.append(bytearray(1 << 26))\n",                   # memory bomb
        "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nos.killpg(0, signal.SIGKILL)\n",  # kill parent
    ]
    n = {"k": 0}

    def respond(body: dict, idx: int) -> str:
        k = n["k"]
        n["k"] += 1
        return _fenced(hostile[k] if k < len(hostile) else sols["abc393_b"]["right"][0])

    with ScriptedOpenAIServer(respond) as srv:
        folder = run_evolve(EvolveConfig(
            task="livecodebench", model="openai:scripted", base_url=srv.base_url, problems="abc393_b",
            iterations=4, config_path=_rewrite_config(tmp_path), out=str(tmp_path / "evo"), progress=False,
            baseline=False, task_options={"workers": 2, "timeout_s": 1.0}, parallel=1))  # by arrival order
    rows = sorted((json.loads(l) for l in (folder / "samples.jsonl").read_text().splitlines()),
                  key=lambda r: r["iteration"])
    assert [r["iteration"] for r in rows] == [0, 1, 2, 3, 4]
    for r in rows[:4]:
        v = r["details"][0]["verdicts"]
        assert v and "pass" not in v and not r["solved"]
    assert "time_limit" in rows[1]["details"][0]["verdicts"]
    assert rows[4]["solved"]
    assert json.loads((folder / "results.json").read_text())["evolve"]["solved"]["mean"] == 1.0


def test_lcb_m_answers_per_call_become_children(tmp_path: Path) -> None:
    """-m 2 in evolve mode: OpenEvolve's prompt plus a request for 2 complete versions; both fenced
    programs of one reply become children of the same parent, graded separately."""
    sols, contents = _solutions(), _contents()

    def respond(body: dict, idx: int) -> str:
        pid = _problem_of(body, contents)
        wrong, right = sols[pid]["wrong"][0], sols[pid]["right"][0]
        evolve_prompt = "# The task" in body["messages"][0]["content"]
        second = right if evolve_prompt else wrong
        return f"```python\n{wrong}\n```\n---\n```python\n{second}\n```"

    with ScriptedOpenAIServer(respond) as srv:
        folder = run_evolve(EvolveConfig(
            task="livecodebench", model="openai:scripted", base_url=srv.base_url, problems="3817", m=2,
            iterations=1, config_path=_rewrite_config(tmp_path), out=str(tmp_path / "evo"), progress=False,
            baseline=False, task_options={"workers": 2}))
        asks = [b["messages"][-1]["content"] for b in srv.requests if "# The task" in b["messages"][0]["content"]]
    rows = sorted((json.loads(l) for l in (folder / "samples.jsonl").read_text().splitlines()),
                  key=lambda r: r["chain_index"])
    assert [(r["iteration"], r["answer_index"]) for r in rows] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert len(asks) == 1 and "2 different complete new versions" in asks[0]
    assert rows[2]["parent_id"] == rows[3]["parent_id"] is not None
    assert [r["solved"] for r in rows] == [False, False, False, True]
