"""The one chain-scoring function field by field: every Generation field reaches the row, answers,
rewards, scalars, passes, dedup and details are those of the task (kills the mutants
scripts/mutation.sh found surviving in benchmarks/scoring.py)."""
from __future__ import annotations

import numpy as np
import pytest

from vpo_harness.benchmarks import get_task
from vpo_harness.benchmarks.eureqa import format_answer
from vpo_harness.benchmarks.scoring import score_chain, score_generation
from vpo_harness.harness.core.models.base import Generation
from tests.harness.test_pools import FIXTURE


@pytest.fixture(scope="module")
def eureqa():
    task = get_task("eureqa")
    return task, task.load("test", path=str(FIXTURE))[0]


def test_generation_fields_reach_the_row(eureqa):
    task, prob = eureqa
    gold = list(prob.data["entities"])
    good = format_answer(gold[:5])
    half = format_answer(gold[:2] + ["x", "y", "z"])
    text = "\n".join(f"<response_{i}>\n{a}\n</response_{i}>" for i, a in enumerate([good, good, half], 1))
    gen = Generation(prob.id, 3, text, prompt_tokens=11, completion_tokens=22, finish_reason="stop",
                     latency_s=1.5, attempts=2, extra={"seed": 9, "reasoning": "r"})
    row = score_generation(task, prob, gen, 3, seed=1234)
    assert (row.problem_id, row.chain_index, row.seed, row.text) == (prob.id, 3, 1234, text)
    assert (row.prompt_tokens, row.completion_tokens, row.finish_reason, row.latency_s, row.attempts) == \
        (11, 22, "stop", 1.5, 2)
    assert row.extra == {"seed": 9, "reasoning": "r"} and row.extra is not gen.extra
    assert row.error is None and row.ok
    assert len(row.answers) == 3 and row.answers[0] is not None
    assert row.rewards == [[1.0] * 5, [1.0] * 5, [1.0, 1.0, 0.0, 0.0, 0.0]]
    assert row.scalars == [1.0, 1.0, 0.4] and row.passed == [True, True, False]
    assert row.n_unique == 2  # the repeated answer is one distinct answer under the task's key
    assert row.score_s is not None and 0 <= row.score_s < 5
    # m == 1: the whole text is one answer (no numbered tags needed)
    single = score_generation(task, prob, Generation(prob.id, 0, good), 1, seed=None)
    assert single.rewards == [[1.0] * 5] and single.n_unique == 1 and single.seed is None


def test_failed_generation_keeps_error_and_no_answers(eureqa):
    task, prob = eureqa
    gen = Generation(prob.id, 1, "", error="boom", attempts=3, extra=None)  # type: ignore[arg-type]
    row = score_generation(task, prob, gen, 2, seed=5)
    assert row.error == "boom" and not row.ok and row.attempts == 3
    assert (row.answers, row.rewards, row.scalars, row.passed, row.n_unique) == ([], [], [], [], 0)
    assert row.extra == {}


def test_score_chain_rewards_keys_and_details():
    task = get_task("maze")
    prob = task.load("test", limit=1)[0]

    class Detailed(type(task)):
        def score(self, problem, answers):
            r, _ = super().score(problem, answers)
            return r, [{"answer": a} for a in answers]

        def dedup_key(self, problem, answer, r):
            assert problem is prob and r.shape == (4,)  # the task sees the problem and the reward row
            return answer.split()[0]

    t = Detailed()
    text = "<route_1>UP UP</route_1><route_2>UP LEFT</route_2><route_3>DOWN</route_3>"
    sc = score_chain(t, prob, text, 3)
    assert sc.answers == t.parse(text, 3) and len(sc.answers) == 3
    assert sc.rewards.dtype == float and sc.rewards.shape == (3, 4)
    np.testing.assert_allclose(sc.scalars, t.scalar(sc.rewards))
    assert sc.passed.dtype == bool and sc.keys == ["UP", "UP", "DOWN"] and sc.n_unique == 2
    assert sc.details == [{"answer": a} for a in sc.answers]
    one = score_chain(t, prob, "UP UP", 1)
    assert one.answers == t.parse("UP UP", None) and one.keys[0] == "UP"
    missing = score_chain(t, prob, "<route_1>UP</route_1>", 2)
    assert missing.answers[1] is None and missing.keys[1] is None and missing.n_unique == 1
