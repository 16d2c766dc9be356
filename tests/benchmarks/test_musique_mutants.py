"""MuSiQue reward edges that the surviving mutants of ``scripts/mutation.sh`` showed to be untested:
tag case in the authors' reading, citation items that int() or the length guard skip, and the lenient
reading's reply without an answer."""
from __future__ import annotations

import json

import pytest

from vpo_harness.benchmarks import get_task
from vpo_harness.benchmarks.musique import cited_indices, paper_cited, paper_reward
from vpo_harness.harness.core.paths import shared_data_dir


@pytest.fixture(scope="module")
def first():
    """The first dev question (2 hops, support [8, 1], answer "Stanley") and the authors' rows for it."""
    p = get_task("musique").load("validation", limit=1)[0]
    with open(shared_data_dir() / "musique" / "authors_scores.jsonl", encoding="utf-8") as f:
        rows = {r["kind"]: r for r in map(json.loads, f) if r["id"] == p.id}
    return p, rows


def test_paper_tags_are_case_sensitive_as_in_the_authors_scorer(first):
    p, rows = first
    golds = [p.data["answer"], *p.data["aliases"]]
    # the authors' scorer reads neither <SUPPORT> nor <ANSWER> (their row: the zero vector)
    row = rows["uppercase_tags"]
    assert paper_reward(row["text"], p.data["support"], golds).tolist() == row["reward"] == [0.0] * 5
    # the same regexes one at a time: an upper-case <SUPPORT> cites nothing, the answer still counts
    assert paper_reward("<SUPPORT>8, 1</SUPPORT>\n<answer>Stanley</answer>", p.data["support"],
                        golds).tolist() == [0.0, 0.0, 1.0, 1.0, 1.0]
    assert paper_reward("<Support>8, 1</Support>\n<answer>Stanley</answer>", [8, 1], golds).tolist() == \
        [0.0, 0.0, 1.0, 1.0, 1.0]
    # an upper-case answer tag after a lower-case one is not the "first <answer>"
    assert paper_reward("<support>8, 1</support><ANSWER>Quxbaz</ANSWER><answer>Stanley</answer>", [8, 1],
                        golds).tolist() == [1.0] * 5
    task = get_task("musique")
    assert task.reward(p, row["text"]).tolist() == [0.0] * 5


def test_paper_citations_skip_items_int_cannot_read_and_keep_going():
    # "²".isdigit() is True but int("²") fails: that item is skipped, the later ones still count
    assert paper_cited("², 8, 1") == [8, 1]
    assert paper_cited("8, ³, 1") == [8, 1]
    assert paper_reward("<support>², 8, 1</support><answer>Stanley</answer>", [8, 1], ["Stanley"]).tolist() == \
        [1.0] * 5


def test_lenient_citations_length_guard_skips_only_long_runs():
    # up to 9 digits is a (possibly out-of-range) citation that takes one of the 4 slots; longer runs
    # are not paragraph indices and are skipped without ending the reading
    assert cited_indices("123456789, 8") == [123456789, 8]
    assert cited_indices("1234567890, 8, 1") == [8, 1]
    assert cited_indices("99999999999999999999 8 1") == [8, 1]
    assert cited_indices("123456789, 0, 2, 3, 8") == [123456789, 0, 2, 3]


def test_lenient_reply_without_answer_is_the_zero_vector(first):
    p, _ = first
    lenient = get_task("musique", parse="lenient")
    for text in ("<support>8, 1</support>", "<support>8, 1</support><answer>Stanley", "Stanley", ""):
        r = lenient.reward(p, text)
        assert r.shape == (5,) and r.tolist() == [0.0] * 5, text
    assert lenient.reward(p, "<support>8, 1</support><answer>Stanley</answer>").tolist() == [1.0] * 5


def test_scalar_weights_answer_as_three_hops_on_any_numeric_input():
    task = get_task("musique")
    assert task.scalar([1, 1, 0, 0, 1]) == pytest.approx(5 / 7)
    assert task.scalar([[1, 0, 0, 0, 0], [0, 0, 0, 0, 1]]).tolist() == pytest.approx([1 / 7, 3 / 7])
