"""ToolRL reward rules that the mutation run (scripts/mutation.sh) showed no test pinned.

Two readings are checked. ``paper_*`` is the VPO authors' scorer (``vpo_tasks/tool.py`` at
``ryanboldi/vpo@767db79``: ``parse_tool_calls``, ``_value_match``, ``_align_calls``, ``_score_calls``,
``score_response``); every expected number below follows from that code's rules, and the whole-reply
cases are the authors' own scores from ``shared/data/toolrl/authors_scores.jsonl``. The lenient
``value_match`` / ``align_calls`` / ``score_calls`` follow the module docstring of benchmarks/toolrl.py
(numbers exact, numeric strings as numbers, null as null/"none"/"null", objects the mean over gold keys,
every unaligned call a zero pair). Each test names the rule it guards; the rule, not the current output,
is what the expected value comes from.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from vpo_harness.benchmarks import get_task
from vpo_harness.benchmarks.base import Problem
from vpo_harness.benchmarks.toolrl import (align_calls, paper_calls, paper_reward, paper_score_calls, paper_structure,
                               paper_value_match, score_calls, value_match)
from vpo_harness.harness.core.paths import shared_data_dir


def call(name: str, **params) -> dict:
    return {"name": name, "parameters": params}


# ---- lenient value_match ----------------------------------------------------------------------------

def test_null_gold_accepts_the_written_forms_of_null_in_any_case():
    for written in ("none", "None", " NULL ", "null", ""):
        assert value_match(written, None) == 1, written
    assert value_match("nil value", None) == 0 and value_match(0, None) == 0


def test_bool_gold_accepts_its_own_word_only():
    assert value_match("false", False) == 1 and value_match(" FALSE ", False) == 1
    assert value_match("true", False) == 0 and value_match("false", True) == 0
    assert value_match(True, 1) == 0  # a boolean is not the number 1


def test_numbers_are_exact_up_to_float_rounding():
    residue = 0.1 + 0.2 - 0.3  # 5.55e-17: float noise, not a different number
    assert value_match(residue, 0) == 1 and value_match(repr(residue), "0") == 1
    assert value_match(1e-6, 0) == 0 and value_match("1e-6", "0") == 0
    assert value_match("2", "2.0") == 1 and value_match("2.5", "2") == 0  # numeric strings compare as numbers
    # one side numeric, the other not: plain text comparison, no crash
    assert value_match("two", "2") == 0 and value_match("2", "two") == 0


def test_nan_text_is_text():
    # "NaN" is not a finite number, so it is compared as text: it matches itself (NaN != NaN as floats)
    assert value_match("NaN", "nan") == 1 and value_match("nan", 1.0) == 0


def test_list_gold_wraps_a_scalar_prediction_as_one_element():
    assert value_match("ab", ["ab", "cd"]) == pytest.approx(2 / 3)  # one of two elements, not its letters
    assert value_match(["cd", "ab"], ["ab", "cd"]) == 1


def test_object_gold_is_the_mean_over_gold_keys():
    assert value_match({}, {}) == 1 and value_match({"a": 1}, {}) == 0
    assert value_match({"a": 1}, {"a": 1, "b": 2}) == pytest.approx(0.5)  # a missing key scores 0
    assert value_match({"a": 1, "b": 3}, {"a": 1, "b": 2}) == pytest.approx(0.5)


# ---- lenient alignment and scoring ---------------------------------------------------------------------

def test_align_calls_is_loose_by_default():
    gold, pred = [call("search", q="x")], [call("lookup", q="x")]
    assert align_calls(pred, gold) == [(gold[0], pred[0])]
    assert align_calls(pred, gold, strict=True) == [(gold[0], None), (None, pred[0])]
    assert score_calls(pred, gold) == (0, 1, 1)  # loose: a wrong name costs only tool_name


def test_every_unaligned_call_adds_a_zero_pair():
    gold = [call("a", x=1)]
    extra = [call("a", x=1), call("b", y=1), call("c", z=1)]
    assert score_calls(extra, gold) == pytest.approx((0.5, 1 / 3, 1 / 3))
    # strict: the wrong-name gold call is unaligned and so is the prediction, and the good pair still counts
    g2 = [call("a", x=1), call("b", y=2)]
    assert score_calls([call("b", y=2)], g2, strict=True) == pytest.approx((2 / 3, 0.5, 0.5))


# ---- the authors' value match (paper) -------------------------------------------------------------------

def test_paper_numeric_gold_parses_numeric_text():
    assert paper_value_match("2.0", 2) == 1 and paper_value_match(" 3 ", 3) == 1
    assert paper_value_match("$5", 5) == 1  # not a float: normalised text "5" == "5"
    assert paper_value_match("abc", 2) == 0 and paper_value_match(None, 2) == 0
    # the tolerance is strict (abs difference < 1e-9)
    assert paper_value_match("1e-9", 0) == 0 and paper_value_match("1e-10", 0) == 1


def test_paper_numeric_gold_too_large_for_a_float():
    big = 10 ** 400  # JSON allows it; float(gold) overflows: the text comparison decides
    assert paper_value_match(str(big), big) == 1 and paper_value_match("1", big) == 0


def test_paper_list_gold():
    assert paper_value_match("ab", ["ab", "cd"]) == pytest.approx(2 / 3)
    assert paper_value_match(["the box"], ["box"]) == 0  # no article removal in ToolRL values


def test_paper_null_gold_compares_normalised_text():
    assert paper_value_match("x", None) == 0 and paper_value_match("", None) == 1


# ---- the authors' call parsing and alignment -----------------------------------------------------------

def test_paper_calls_reads_arrays_arguments_and_missing_fields():
    assert paper_calls('[{"name": "a", "parameters": {"x": 1}}, 7]') == [call("a", x=1)]
    assert paper_calls('[{"name": "a",]') == [] and paper_calls(None) == [] and paper_calls("  ") == []
    assert paper_calls('{"name": "a", "arguments": {"x": 1}}') == [call("a", x=1)]
    assert paper_calls('{"name": "a", "parameters": {"x": 1}, "arguments": {"y": 2}}') == [call("a", x=1)]
    assert paper_calls('{"parameters": {"x": 1}}') == [{"name": "", "parameters": {"x": 1}}]
    assert paper_calls('{"name": "a"}') == [call("a")]
    for bad in ('"x=1"', "[1, 2]", "null"):
        assert paper_calls('{"name": "a", "parameters": %s}' % bad) == [call("a")], bad


def test_paper_structure_tags_are_case_sensitive():
    has_think, nonempty, calls = paper_structure('<THINK>x</THINK><Tool_Call>{"name": "a"}</Tool_Call>')
    assert (has_think, nonempty, calls) == (False, False, [])
    assert paper_structure("<think>x</think><response>hi</response>") == (True, False, [])
    assert paper_structure("<think>x</think><tool_call> junk </tool_call>") == (True, True, [])


def test_paper_same_name_dominates_key_overlap():
    gold = [call("a", k=1)]
    pred = [call("b", k=1), call("a")]  # the other tool shares the key; the same tool does not
    # gold a pairs with pred a (keys 0, values 0); b is left over: two pairs
    assert paper_score_calls(pred, gold) == pytest.approx((2 / 3, 0, 0))


def test_paper_name_match_is_worth_exactly_100_shared_keys():
    # the authors score a candidate 100 for the same name plus one per shared key, so another tool
    # sharing 100 keys ties with a same-name call sharing none (the first one wins the tie), and one
    # sharing 99 keys loses to it
    keys = {f"k{i}": i for i in range(100)}
    gold = [{"name": "a", "parameters": keys}]
    other, same = {"name": "b", "parameters": dict(keys)}, call("a")
    assert paper_score_calls([other, same], gold)[1:] == pytest.approx((0.5, 0.5))  # b aligned, a left over
    assert paper_score_calls([same, other], gold)[1:] == (0, 0)  # a aligned (first of the tie)
    gold99 = [{"name": "a", "parameters": dict(list(keys.items())[:99])}]
    other99 = {"name": "b", "parameters": dict(gold99[0]["parameters"])}
    assert paper_score_calls([other99, same], gold99)[1:] == (0, 0)  # 99 shared keys < a name match


def test_paper_among_same_name_calls_key_overlap_then_order_decides():
    gold = [call("a", x=1), call("a", y=2)]
    assert paper_score_calls([call("a", y=2), call("a", x=1)], gold) == (1, 1, 1)
    same_keys = [call("a", x=1), call("a", x=2)]
    assert paper_score_calls(same_keys, same_keys) == (1, 1, 1)  # a tie goes to the first unused call


def test_paper_a_call_of_another_name_is_still_aligned():
    # best score starts below 0, so a wrong name with no shared key still pairs (authors: wrong_tool_name)
    assert paper_score_calls([call("b")], [call("a")]) == (0, 1, 1)
    assert paper_score_calls([call("b", k=1)], [call("a", k=1)]) == (0, 1, 1)


def test_paper_scores_sum_over_pairs_and_divide_by_their_number():
    gold = [call("a", x=1), call("b", y=2)]
    assert paper_score_calls([call("a", x=1), call("b", z=2)], gold) == pytest.approx((1, 0.5, 0.5))
    assert paper_score_calls([call("a", x=1), call("b", y=3)], gold) == pytest.approx((1, 1, 0.5))
    assert paper_score_calls([call("a", x=1), call("b")], [call("a", x=1)]) == pytest.approx((2 / 3, 0.5, 0.5))
    assert paper_score_calls([call("a")], [call("a")]) == (1, 1, 1)  # no gold parameters: values 1
    assert paper_score_calls([call("a", x=1, y=0)], [call("a", x=1, y=2)]) == pytest.approx((1, 1, 0.5))


def test_paper_empty_name_is_never_a_name_match():
    # a nameless gold call is aligned by key overlap only: a nameless prediction gets no bonus (the empty
    # names still count as equal in the tool_name multiset F1: ["", b] against [""] is 2/3)
    gold = [{"name": "", "parameters": {"k": 1, "j": 2}}]
    pred = [{"name": "", "parameters": {}}, call("b", k=1, j=2)]
    assert paper_score_calls(pred, gold) == pytest.approx((2 / 3, 0.5, 0.5))


# ---- the authors' whole-reply reward -------------------------------------------------------------------

def test_paper_reward_format_without_gold_calls():
    assert paper_reward("<think>x</think><response>hi</response>", []).tolist() == [1, 1, 1, 1]
    assert paper_reward("<think>x</think><tool_call> junk </tool_call>", []).tolist() == [0, 1, 1, 1]
    assert paper_reward('<think>x</think><tool_call>{"name": "a"}</tool_call>', []).tolist() == [0, 0, 0, 0]


def _authors_rows(problem_id: str) -> list[dict]:
    with open(shared_data_dir() / "toolrl" / "authors_scores.jsonl", encoding="utf-8") as f:
        return [r for r in map(json.loads, f) if r["id"] == problem_id]


def test_reward_reads_the_gold_text_when_no_parsed_calls_are_stored():
    task = get_task("toolrl")
    problems = {p.id: p for p in task.load("test")}
    no_calls = next(p for p in problems.values() if not p.data["gold_calls"])
    for pid in ("toolrl-test-0", no_calls.id):
        p = problems[pid]
        bare = Problem(id=p.id, data={k: v for k, v in p.data.items() if k != "paper_gold_calls"}, meta=p.meta)
        rows = _authors_rows(pid)
        assert len(rows) >= 5
        for row in rows:
            assert task.reward(bare, row["text"]) == pytest.approx(row["reward"], abs=1e-9), (pid, row["kind"])
    assert task.reward(problems["toolrl-test-0"], None).tolist() == [0.0] * 4
    assert isinstance(task.reward(problems["toolrl-test-0"], None), np.ndarray)
