"""`vpo evolve --select pareto` (search/pareto.py): the archive keeps the candidates no other beats on
every reward component, each parent is the best member under a fresh Dirichlet(1) weighting, and
the rows are the same whatever the number of iterations in flight, the answer order and kill -9 +
resume, as scalar selection's are (tests/search/test_determinism.py)."""
from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from vpo_harness.harness.core.metrics import nondominated
from vpo_harness.search.evolve import run_evolve
from vpo_harness.search.pareto import Member, ParetoArchive
from tests.fakes.scripted_openai import ScriptedOpenAIServer
from tests.search.test_determinism import MAZES, MOVES, assert_same, cfg, cli, jitter, kill_9_then_resume, mutate, \
    prompts_of, rows_of


def _m(i: str, *reward: float) -> Member:
    return Member(id=i, code=f"code-{i}", reward=tuple(reward), generation=0)


# ---- the archive -------------------------------------------------------------------------------------

def test_archive_keeps_exactly_the_nondominated_answers() -> None:
    a = ParetoArchive()
    assert a.add(_m("a", 0.5, 0.5))
    assert not a.add(_m("b", 0.4, 0.5))          # dominated
    assert a.add(_m("c", 1.0, 0.0))              # a new trade-off
    assert a.add(_m("d", 0.5, 0.5))              # a tie is not dominated: kept
    assert not a.add(Member("e", "code-a", (0.9, 0.9), 1))  # an answer already on the front
    assert a.add(_m("f", 0.6, 0.6))              # dominates a and d
    assert [m.id for m in a.members] == ["c", "f"]
    rng = np.random.default_rng(0)
    pool = ParetoArchive()
    vecs = rng.integers(0, 3, size=(60, 3)) / 2.0
    for i, v in enumerate(vecs):
        pool.add(Member(str(i), str(i), tuple(v), 0))
    firsts = {tuple(v): str(i) for i, v in reversed(list(enumerate(vecs)))}  # first answer of each vector
    want = {firsts[tuple(v)] for v in vecs[nondominated(vecs)]}
    assert {m.id for m in pool.members} <= {str(i) for i in np.flatnonzero(nondominated(vecs))}
    assert {tuple(m.reward) for m in pool.members} == {tuple(vecs[int(i)]) for i in want}


def test_draws_cover_the_front_and_follow_the_stream() -> None:
    a = ParetoArchive([_m("x", 1.0, 0.0), _m("y", 0.0, 1.0), _m("z", 0.6, 0.6), _m("w", 0.55, 0.55)])
    rng = random.Random(4)
    picks = [a.draw(rng, 2) for _ in range(400)]
    counts = {i: sum(p.id == i for p, _ in picks) for i in "xyzw"}
    # z is best for weights near the middle, x and y at the ends; w (dominated by z) never
    assert counts["w"] == 0 and min(counts["x"], counts["y"], counts["z"]) > 40, counts
    assert all(p.id not in {q.id for q in ins} and len(ins) == 2 for p, ins in picks)
    again = [a.draw(random.Random(4), 2) for _ in range(1)]
    assert again[0][0].id == picks[0][0].id
    assert ParetoArchive.from_state(json.loads(json.dumps(a.state()))).members == a.members


# ---- a whole run -------------------------------------------------------------------------------------

def test_pareto_rows_do_not_depend_on_parallel_or_answer_order_and_parents_lie_on_the_front(tmp_path: Path) -> None:
    runs = {}
    with ScriptedOpenAIServer(mutate, delay_s=jitter) as srv:
        for name, kw in {"c1w1": dict(concurrency=1, parallel=1), "c8w4": dict(concurrency=8, parallel=4),
                         "c3w2": dict(concurrency=3, parallel=2)}.items():
            n0 = len(srv.requests)
            run_evolve(cfg(srv.base_url, tmp_path / name, select="pareto", iterations=20, **kw))
            runs[name] = (rows_of(tmp_path / name), prompts_of(srv.requests[n0:]))
        run_evolve(cfg(srv.base_url, tmp_path / "scalar", iterations=20, concurrency=1, parallel=1))
    ref, ref_prompts = runs["c1w1"]
    for rows, prompts in runs.values():
        assert_same(ref, rows)
        assert prompts == ref_prompts
    assert json.loads((tmp_path / "c1w1" / "config.json").read_text())["identity"]["evolve"]["select"] == "pareto"
    # every parent is non-dominated among the candidates its draw could see (iterations <= i - lag)
    lag = 4
    by_id = {r["program_id"]: r for r in ref.values()}
    later = [r for r in ref.values() if r["iteration"] > 0]
    assert len({r["parent_id"] for r in later}) >= 3
    for r in later:
        seen = [x for x in ref.values() if x["iteration"] <= max(0, r["iteration"] - lag) and x["answers"][0]
                and x["problem_id"] == r["problem_id"]]
        vecs = np.array([x["rewards"][0] for x in seen])
        parent = np.array(by_id[r["parent_id"]]["rewards"][0])
        assert by_id[r["parent_id"]] in seen
        assert not ((vecs >= parent).all(1) & (vecs > parent).any(1)).any(), r["iteration"]
    # another selection is another search
    scalar = rows_of(tmp_path / "scalar")
    assert scalar.keys() == ref.keys() and any(scalar[k]["parent_id"] != ref[k]["parent_id"] for k in ref)


@pytest.mark.integration
def test_pareto_kill_9_then_resume_gives_the_same_rows(tmp_path: Path) -> None:
    """The front travels in the checkpoint: killed three times and resumed, the rows equal an
    uninterrupted run's."""
    yaml = tmp_path / "oe.yaml"
    yaml.write_text("checkpoint_interval: 3\n")
    with ScriptedOpenAIServer(mutate, delay_s=jitter) as srv:
        run_evolve(cfg(srv.base_url, tmp_path / "ref", concurrency=2, parallel=2, config_path=str(yaml),
                       select="pareto"))
        ref = rows_of(tmp_path / "ref")
        kill_9_then_resume(lambda url, out, *extra: cli(url, out, "--select", "pareto", *extra), srv.base_url,
                           tmp_path / "killed", yaml, ref)


# ---- feedback mode -----------------------------------------------------------------------------------

EARLIER = re.compile(r"An earlier answer to this task: (.*)\nHow it did: (.*)\n")


def test_feedback_prompt_shows_the_parents_route_and_what_it_does(tmp_path: Path) -> None:
    """The prompt holds the parent's route and its components in words; the child is parsed in the
    task's own format (a reply to the feedback that improves the route is a candidate)."""
    def reply(body: dict[str, Any], idx: int) -> str:
        user = body["messages"][-1]["content"]
        found = EARLIER.search(user)
        rng = random.Random(body.get("seed"))
        if found is None:
            goods = next(routes for grid, routes in MAZES if grid in user)
            return "<answer>" + " ".join(rng.choice(goods) if rng.random() < 0.5 else
                                         [rng.choice(MOVES) for _ in range(8)]) + "</answer>"
        return "<answer>" + found.group(1) + "</answer>"  # the parent again: a well-formed answer

    with ScriptedOpenAIServer(reply) as srv:
        folder = run_evolve(cfg(srv.base_url, tmp_path / "fb", prompt_mode="feedback", iterations=6, lag=1,
                                select="pareto"))
        asked = [b for b in srv.requests if EARLIER.search(b["messages"][-1]["content"])]
    rows = rows_of(folder)
    by_id = {r["program_id"]: r for r in rows.values()}
    fb = [r for r in rows.values() if r["evolution_mode"] == "feedback"]
    assert len(fb) == 2 * 6 and len(asked) == len(fb)
    from vpo_harness.benchmarks import get_task
    from vpo_harness.benchmarks.steps import adapter_for

    task = get_task("maze")
    problems = {p.id: p for p in task.load("test", limit=2)}
    ad = adapter_for(task)
    for r, body in zip(sorted(fb, key=lambda r: r["seed"]), sorted(asked, key=lambda b: b["seed"])):
        parent = by_id[r["parent_id"]]
        route, words = EARLIER.search(body["messages"][-1]["content"]).groups()
        assert route == ad.shown_answer(problems[r["problem_id"]], parent["answers"][0])
        assert words == ad.feedback(problems[r["problem_id"]], parent["answers"][0], parent["rewards"][0],
                                    task.component_names)
        assert r["answers"][0] is not None  # the reply was read in the task's own format
    assert any("collects" in b["messages"][-1]["content"] for b in asked)


# ---- the front's size in results.json ------------------------------------------------------------------

def test_results_hold_hypervolume_against_candidates_for_search_and_sampling(tmp_path: Path) -> None:
    from vpo_harness.harness.core.metrics import hypervolume
    from vpo_harness.harness.core.store import latest_rows
    from vpo_harness.search.metrics import HV_REF, candidate_budgets

    with ScriptedOpenAIServer(mutate) as srv:
        folder = run_evolve(cfg(srv.base_url, tmp_path / "hv", select="pareto", iterations=6, baseline=True, lag=2))
    res = json.loads((folder / "results.json").read_text())
    ev, base = res["evolve"]["hypervolume_vs_candidates"], res["baseline"]["hypervolume_vs_candidates"]
    assert ev["x"] == base["x"] == candidate_budgets(7)
    assert all(a <= b + 1e-12 for a, b in zip(ev["mean"], ev["mean"][1:]))  # a front only grows
    for got, rows in ((ev, latest_rows(folder)), (base, latest_rows(folder / "baseline"))):
        by: dict[str, list] = {}
        for r in sorted(rows, key=lambda r: (r.get("iteration", 0), r.get("answer_index", 0), r["chain_index"])):
            by.setdefault(r["problem_id"], []).extend(r["rewards"])
        for x, mean in zip(got["x"], got["mean"]):
            want = np.mean([hypervolume(np.array(v[:x]), ref=HV_REF) for v in by.values()])
            assert mean == pytest.approx(want, abs=1e-6), x
        assert 0 < got["mean"][-1] <= 1.1 ** 4


# ---- another task: the selection and the feedback read any reward vector ------------------------------

def test_pareto_and_feedback_on_a_text_task(tmp_path: Path) -> None:
    """Eureqa (five entity components, no task hooks of its own): pareto parents lie on the front of
    what their draw could see, the feedback names every component of the parent, and the rows do not
    depend on the number of iterations in flight."""
    from vpo_harness.benchmarks import get_task
    from vpo_harness.benchmarks.eureqa import format_answer
    from tests.harness.test_pools import FIXTURE

    task = get_task("eureqa")
    problems = task.load("test", path=str(FIXTURE))[:2]
    gold = {p.id: list(p.data["entities"])[:5] for p in problems}

    def reply(body: dict[str, Any], idx: int) -> str:
        text = "\n".join(m["content"] for m in body["messages"])
        pid = next(p.id for p in problems if task.prompt(p)[-1]["content"] in text)
        rng = random.Random(body.get("seed"))
        return format_answer([g if rng.random() < 0.5 else "nobody" for g in gold[pid]])

    rows = {}
    with ScriptedOpenAIServer(reply, delay_s=jitter) as srv:
        for w in (1, 3):
            kw = dict(task="eureqa", data_path=str(FIXTURE), limit=2, prompt_mode="feedback", select="pareto",
                      iterations=12, lag=3, parallel=w, concurrency=w, prompt_style="full")
            rows[w] = rows_of(run_evolve(cfg(srv.base_url, tmp_path / f"w{w}", **kw)))
        asked = [b["messages"][-1]["content"] for b in srv.requests if "How it did:" in b["messages"][-1]["content"]]
    assert_same(rows[1], rows[3])
    ref = rows[1]
    later = [r for r in ref.values() if r["iteration"] > 0]
    assert later and all(r["evolution_mode"] == "feedback" for r in later)
    assert len({r["parent_id"] for r in later}) >= 3
    by_id = {r["program_id"]: r for r in ref.values()}
    for r in later:
        seen = np.array([x["rewards"][0] for x in ref.values() if x["problem_id"] == r["problem_id"]
                         and x["iteration"] <= max(0, r["iteration"] - 3) and x["answers"][0]])
        parent = np.array(by_id[r["parent_id"]]["rewards"][0])
        assert not ((seen >= parent).all(1) & (seen > parent).any(1)).any()
    assert asked and all(all(f"{n} " in a for n in task.component_names) for a in asked)
