"""`vpo evolve --prompt-mode prefix`: the child is the policy's continuation of the start of its
parent's answer, in the task's own prompt format.

The scripted server answers a prefilled request (vLLM's ``continue_final_message``) with a
continuation of the prefix it was given: the rest of one of the maze's best routes when the prefix
starts one, else seeded moves, so a good parent has good children and a different parent anywhere
shows up as different rows. Shown here: the prefix reaches the server as an open assistant turn and
is the parent's answer cut where the row says; rows are identical across W, answer order, hash seeds
and kill -9 + resume; ``-m 3`` opens the first route and every route of the set is a candidate;
zero-score parents are not drawn while better ones exist (unless allowed); the cut rules; and the
mode works for a second task (LiveCodeBench programs cut by line).
"""
from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from vpo_harness.benchmarks import get_task
from vpo_harness.benchmarks.steps import adapter_for
from vpo_harness.search.evolve import EvolveConfig, run_evolve
from vpo_harness.search.engine import complete_iterations
from tests.fakes.scripted_openai import ScriptedOpenAIServer, prefilled
from tests.search.test_determinism import (MAZES, MOVES, REPO, assert_same, env, jitter, kill_9_then_resume,
                                           rows_of)

OPEN = {1: "<answer>", 3: "<route_1>"}


def _goods(body: dict[str, Any]) -> list[list[str]]:
    text = "\n".join(m["content"] for m in body["messages"])
    return next(routes for grid, routes in MAZES if grid in text)


def _walk(rng: random.Random) -> list[str]:
    return [rng.choice(MOVES) for _ in range(rng.randint(3, 16))]


def continue_route(body: dict[str, Any], idx: int) -> str:
    """A policy stand-in. Plain task prompt: m routes, each a best route of the maze (40%) or a seeded
    walk. Prefilled: the continuation only (as vLLM answers): the open route's remaining moves (the
    rest of a best route it starts, now and then with a detour; else a walk) and its closing tag,
    then the other routes of the set. Everything is a function of the prompt, prefix and seed."""
    goods = _goods(body)
    prefix = prefilled(body)
    m = 3 if "<route_1>" in body["messages"][0 if prefix is None else -2]["content"] else 1
    rng = random.Random(f"{body.get('seed')}|{prefix}")

    def route() -> list[str]:
        return list(rng.choice(goods)) if rng.random() < 0.4 else _walk(rng)

    def tag(i: int, moves: list[str]) -> str:
        return f"<answer>{' '.join(moves)}</answer>" if m == 1 else f"<route_{i}>{' '.join(moves)}</route_{i}>"

    if prefix is None:
        return "".join(tag(i, route()) for i in range(1, m + 1))
    assert prefix.startswith(OPEN[m]), prefix
    have = prefix[len(OPEN[m]):].split()
    starts = [g for g in goods if g[:len(have)] == have and len(g) > len(have)]
    rest = list(rng.choice(starts)[len(have):]) if starts and rng.random() < 0.7 else _walk(rng)
    if rng.random() < 0.4:
        at, mv = rng.randint(0, len(rest)), rng.choice(MOVES)
        rest[at:at] = [mv, {"UP": "DOWN", "DOWN": "UP", "LEFT": "RIGHT", "RIGHT": "LEFT"}[mv]]
    close = "</answer>" if m == 1 else "</route_1>"
    return (" " if have else "") + " ".join(rest) + close + "".join(tag(i, route()) for i in range(2, m + 1))


def cfg(url: str, out: Path, **kw: Any) -> EvolveConfig:
    base = dict(task="maze", model="openai:scripted", base_url=url, problems="all", limit=2, iterations=14, m=1,
                prompt_mode="prefix", prompt_style="compact", out=str(out), progress=False, baseline=False, lag=4)
    base.update(kw)
    return EvolveConfig(**base)


def cli(url: str, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "vpo_harness.harness.app.cli", "evolve", "--task", "maze", "--model", "openai:scripted",
            "--base-url", url, "--limit", "2", "--iterations", "14", "-m", "1", "--prompt-mode", "prefix",
            "--prompt-style", "compact", "--out", str(out), "--no-progress", "--no-baseline", "--lag", "4", *extra]


def _check_prefixes(rows: dict, requests: list[dict[str, Any]], m: int) -> None:
    """Every prefix-mode call continued its parent's answer cut after ``cut`` moves, and the server
    was asked to continue exactly that text as an open assistant turn."""
    task = get_task("maze")
    by_id = {r["program_id"]: r for r in rows.values()}
    problems = {p.id: p for p in task.load("test", limit=2)}
    sent = {(b["seed"], b["messages"][-1]["content"]) for b in requests if prefilled(b) is not None}
    firsts = [r for r in rows.values() if r["evolution_mode"] == "prefix" and r["answer_index"] == 0]
    assert len(firsts) == 2 * 14
    for r in firsts:
        parent = by_id[r["parent_id"]]
        steps = adapter_for(task).steps(problems[r["problem_id"]], parent["answers"][0])
        assert 0 <= r["cut"] < max(1, len(steps))
        assert r["prefix"] == OPEN[m] + " ".join(steps[:r["cut"]])
        assert r["text"].startswith(r["prefix"])
        assert (r["seed"], r["prefix"]) in sent
    assert len({r["cut"] for r in firsts}) >= 3  # the cut moves


# ---- in one process --------------------------------------------------------------------------------------

@pytest.mark.parametrize("m", [1, 3])
def test_prefix_rows_do_not_depend_on_parallel_or_answer_order(tmp_path: Path, m: int) -> None:
    runs = {}
    with ScriptedOpenAIServer(continue_route, delay_s=jitter) as srv:
        for name, kw in {"c1w1": dict(concurrency=1, parallel=1), "c8w4": dict(concurrency=8, parallel=4),
                         "c3w2": dict(concurrency=3, parallel=2)}.items():
            n0 = len(srv.requests)
            run_evolve(cfg(srv.base_url, tmp_path / name, m=m, **kw))
            runs[name] = (rows_of(tmp_path / name), srv.requests[n0:])
    ref, requests = runs["c1w1"]
    assert len(ref) == 2 * 15 * m
    for name, (rows, _) in runs.items():
        assert_same(ref, rows)
    _check_prefixes(ref, requests, m)
    # a real search: parents vary, scores vary
    later = [r for r in ref.values() if r["iteration"] > 0]
    assert len({r["parent_id"] for r in later}) >= 4
    scores = {r["scalars"][0] for r in ref.values()}
    assert 0.0 in scores and len(scores) >= 2
    if m == 3:  # the prefix opens route 1; every route of the set is a candidate of its own
        for it_rows in (complete_iterations([r for r in ref.values() if r["problem_id"] == pid])
                        for pid in {r["problem_id"] for r in ref.values()}):
            for it, rs in it_rows.items():
                assert [r["answer_index"] for r in rs] == [0, 1, 2] and all(r["of"] == 3 for r in rs)
        assert sum(r["answers"][0] is not None for r in later if r["answer_index"] > 0) >= len(later) // 3


def _zero_parent_draws(rows: dict, lag: int) -> int:
    """Prefix draws whose parent scored 0 although an earlier admitted candidate scored above 0."""
    by_id = {r["program_id"]: r for r in rows.values()}
    bad = 0
    for r in rows.values():
        if r["answer_index"] != 0 or r["parent_id"] is None:
            continue
        held = [x for x in rows.values() if x["problem_id"] == r["problem_id"]
                and x["iteration"] <= max(0, r["iteration"] - lag) and x["answers"][0] is not None]
        if by_id[r["parent_id"]]["scalars"][0] <= 0 and any(x["scalars"][0] > 0 for x in held):
            bad += 1
    return bad


def test_zero_score_parents_are_avoided_unless_allowed(tmp_path: Path) -> None:
    with ScriptedOpenAIServer(continue_route) as srv:
        avoid = rows_of(run_evolve(cfg(srv.base_url, tmp_path / "avoid", limit=3, iterations=20)))
        allow = rows_of(run_evolve(cfg(srv.base_url, tmp_path / "allow", limit=3, iterations=20,
                                       allow_zero_parents=True)))
    assert _zero_parent_draws(avoid, 4) == 0
    assert _zero_parent_draws(allow, 4) > 0  # OpenEvolve's own draw does pick them: the rule is what stops it


def test_plateau_cut_is_where_the_parents_reward_stopped_improving(tmp_path: Path) -> None:
    task = get_task("maze")
    with ScriptedOpenAIServer(continue_route) as srv:
        rows = rows_of(run_evolve(cfg(srv.base_url, tmp_path / "plateau", cut="plateau", iterations=8)))
    problems = {p.id: p for p in task.load("test", limit=2)}
    by_id = {r["program_id"]: r for r in rows.values()}
    firsts = [r for r in rows.values() if r["evolution_mode"] == "prefix" and r["answer_index"] == 0]
    assert firsts
    for r in firsts:
        parent = by_id[r["parent_id"]]["answers"][0]
        assert r["cut"] == adapter_for(task).plateau_cut(problems[r["problem_id"]], parent)


def test_maze_plateau_cut_rule() -> None:
    """Scored as if the route ended at E there: the cut is the first step at which that score is at
    its best (the last item collected); a route collecting nothing is cut at 0."""
    from vpo_harness.benchmarks.maze import best_route
    from vpo_harness.benchmarks.maze_env import MazeInstance

    task = get_task("maze")
    p = task.load("test", limit=1)[0]
    inst = MazeInstance.from_problem(p)
    route = list(best_route(inst, (0.1, 0.7, 0.1, 0.1), "convex_bonus"))
    ad = adapter_for(task)
    cut = ad.plateau_cut(p, " ".join(route))
    _, info = task.simulate(p, route[:cut])
    _, full = task.simulate(p, route)
    assert (len(info["gold"]), len(info["diamond"]), info["bonus_visited"]) == \
        (len(full["gold"]), len(full["diamond"]), full["bonus_visited"])
    if cut:
        _, before = task.simulate(p, route[:cut - 1])
        assert (len(before["gold"]), len(before["diamond"]), before["bonus_visited"], len(before["lava_hit"])) != \
            (len(info["gold"]), len(info["diamond"]), info["bonus_visited"], len(info["lava_hit"]))
    assert ad.prefix(p, " ".join(route), 2, 3) == "<route_1>" + " ".join(route[:2])
    assert ad.prefix(p, " ".join(route), 0, 1) == "<answer>"
    # the steps a cut may fall between are the moves the route uses: none after E
    assert ad.steps(p, " ".join(route + ["UP", "UP", "LEFT"])) == route


def test_default_answer_prefix_keeps_the_text_up_to_a_word() -> None:
    from vpo_harness.benchmarks.base import Benchmark

    class T(Benchmark):
        name, component_names = "t", ("a",)

        def load(self, *a, **k): return []  # noqa: E704
        def prompt(self, *a, **k): return []  # noqa: E704
        def multi_prompt(self, *a, **k): return []  # noqa: E704
        def reward(self, *a, **k): return None  # noqa: E704

    t, p = adapter_for(T()), None  # a task without an entry in benchmarks.steps.ADAPTERS: words
    ans = "<support>1, 2</support>\n<answer>Paris  France</answer>"
    assert t.steps(p, ans)[:2] == ["<support>1,", " 2</support>"]
    assert t.prefix(p, ans, 3, 1) == "<support>1, 2</support>\n<answer>Paris"
    assert t.prefix(p, ans, 1, 3) == "<response_1><support>1,"
    assert t.plateau_cut(p, ans) is None
    assert t.mutation_prompt(p, None, [], 1) is None


# ---- across processes: string-hash seed, kill -9 + resume ------------------------------------------------

@pytest.mark.integration
def test_prefix_rows_survive_hash_seeds_and_kill_9_resume(tmp_path: Path) -> None:
    yaml = tmp_path / "oe.yaml"
    yaml.write_text("checkpoint_interval: 3\n")
    with ScriptedOpenAIServer(continue_route, delay_s=jitter) as srv:
        got = {}
        for hs in (1, 2):
            res = subprocess.run(cli(srv.base_url, tmp_path / f"h{hs}", "--concurrency", "4", "--config", str(yaml)),
                                 cwd=REPO, env=env(hs), capture_output=True, text=True, timeout=600)
            assert res.returncode == 0, res.stderr[-2000:]
            got[hs] = rows_of(tmp_path / f"h{hs}")
        assert_same(got[1], got[2])
        kill_9_then_resume(cli, srv.base_url, tmp_path / "killed", yaml, got[1])


# ---- a second task: LiveCodeBench programs, cut by line ----------------------------------------------------

def test_lcb_prefix_mode_continues_the_parents_program(tmp_path: Path) -> None:
    from tests.search.test_evolve_lcb import PROBLEMS, SOLUTIONS, _contents, _problem_of, _solutions

    if not SOLUTIONS.exists():
        pytest.skip("shared LiveCodeBench data missing")
    sols, contents = _solutions(), _contents()
    pid = PROBLEMS[0]

    def respond(body: dict, idx: int) -> str:
        assert _problem_of(body, contents) == pid
        prefix = prefilled(body)
        if prefix is None:  # iteration 0: a wrong program in the task's answer format
            return "```python\n" + sols[pid]["wrong"][0] + "\n```"
        assert prefix.startswith("```python\n")
        have = prefix[len("```python\n"):]
        right = sols[pid]["right"][0]
        if right.startswith(have):  # the kept lines start the right program: finish it
            return right[len(have):] + "\n```"
        return f"# kept {len(have.splitlines())} lines\n```"  # else close the block after the kept lines

    with ScriptedOpenAIServer(respond) as srv:
        folder = run_evolve(EvolveConfig(
            task="livecodebench", model="openai:scripted", base_url=srv.base_url, problems=pid, iterations=2,
            prompt_mode="prefix", out=str(tmp_path / "evo"), progress=False, baseline=False,
            task_options={"workers": 2}, parallel=1, lag=1))
        bodies = list(srv.requests)
    rows = [json.loads(x) for x in (folder / "samples.jsonl").read_text().splitlines()]
    assert [r["evolution_mode"] for r in rows] == ["task", "prefix", "prefix"]
    task = get_task("livecodebench")
    for r in rows[1:]:
        parent = next(x for x in rows if x["program_id"] == r["parent_id"])
        lines = parent["answers"][0].splitlines(keepends=True)
        assert r["prefix"] == "```python\n" + "".join(lines[:r["cut"]])
        assert r["answers"][0] == task.parse_single(r["text"]) and r["answers"][0].startswith(
            "".join(lines[:r["cut"]]).strip()[:20])
        assert "verdicts" in r["details"][0]
    assert sum(prefilled(b) is not None for b in bodies) == 2
    # the task prompt, not OpenEvolve's template: a policy trained on the task prompt reads it
    assert all("# The task" not in b["messages"][0]["content"] for b in bodies)


# ---- locality: child-parent vs child-other distance ----------------------------------------------------------

def test_edit_distance_and_locality() -> None:
    from vpo_harness.search.metrics import edit_distance, locality, normalised_distance

    assert edit_distance("kitten", "sitting") == 3 and edit_distance([], ["a"]) == 1
    assert normalised_distance("ab", "ab") == 0.0 and normalised_distance("ab", "cd") == 1.0

    def row(it, pid, parent, ans):
        return {"problem_id": "p", "iteration": it, "answer_index": 0, "program_id": pid, "parent_id": parent,
                "answers": [ans]}

    rows = [row(0, "a", None, "U U U U"), row(1, "b", "a", "U U U D"), row(2, "c", "b", "U U D D"),
            row(3, "d", "c", "L L L L")]
    got = locality(rows, lambda pid, ans: ans.split())
    # b: parent a 1/4, others none (left out); c: parent b 1/4, other a 2/4; d: parent c 1, others a, b: 1
    assert got["n"] == 2
    assert got["child_parent"] == pytest.approx((0.25 + 1.0) / 2)
    assert got["child_other"] == pytest.approx((0.5 + 1.0) / 2)


def test_edit_distance_counts_whole_steps_as_the_table_does() -> None:
    """Steps are tokens, not characters: "UP" vs "UR" is one substitution, and routes of different
    lengths agree with the table on random draws."""
    from bench.edit_distance import table_distance  # the textbook Levenshtein table
    from vpo_harness.search.metrics import edit_distance

    assert edit_distance(["UP", "LEFT"], ["UR", "LEFT"]) == 1 and edit_distance(["ab"], ["a", "b"]) == 2
    rng = np.random.default_rng(0)
    for _ in range(300):
        a = [str(x) for x in rng.choice(["U", "D", "L", "R", "UP"], size=rng.integers(0, 25))]
        b = [str(x) for x in rng.choice(["U", "D", "L", "R", "UP"], size=rng.integers(0, 25))]
        assert edit_distance(a, b) == table_distance(a, b), (a, b)


def test_prefix_children_are_closer_to_their_parents(tmp_path: Path) -> None:
    """On the scripted policy the prefix mode's children share their parent's first moves: their
    distance to the parent is below their distance to other earlier candidates."""
    from vpo_harness.search.metrics import locality

    task = get_task("maze")
    with ScriptedOpenAIServer(continue_route) as srv:
        rows = list(rows_of(run_evolve(cfg(srv.base_url, tmp_path / "p", iterations=20))).values())
    got = locality(rows, lambda pid, ans: task.moves(ans))
    assert got["n"] > 20 and got["child_parent"] < got["child_other"]
