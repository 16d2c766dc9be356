"""EUREQA reward edge cases that the surviving mutants of ``scripts/mutation.sh`` exposed untested."""
from __future__ import annotations

from vpo_harness.benchmarks.base import Problem
from vpo_harness.benchmarks.eureqa import Eureqa, format_answer


def _problem(entities: list[str]) -> Problem:
    return Problem(id="hand-0", data={"narrative": "Person A directed Film B.", "entities": entities,
                                      "masks": ["Person A", "Film B", "Company C", "City D", "State E"]})


def test_a_missing_tag_scores_zero_whatever_the_gold_name():
    # no prediction must never count as a match, even for a gold entity whose name is a plausible
    # placeholder string
    gold = ["XXXX", "Xxxx", "None", "null", "E_Entity"]
    p = _problem(gold)
    task = Eureqa()
    assert task.reward(p, None).tolist() == [0.0] * 5
    assert task.reward(p, "no tags at all").tolist() == [0.0] * 5
    assert task.reward(p, "<entity_B>xxxx</entity_B>").tolist() == [0.0, 1.0, 0.0, 0.0, 0.0]
    assert task.reward(p, format_answer(gold)).tolist() == [1.0] * 5
    # an empty tag is an answer that names nothing: 0, not a match of two empty strings
    assert task.reward(_problem(gold), "<entity_A></entity_A>").tolist() == [0.0] * 5
