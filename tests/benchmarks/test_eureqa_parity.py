"""EUREQA scoring parity with the VPO authors' released scorer.

``shared/data/eureqa/authors_scores.jsonl`` holds 135 SYNTHETIC completions (5 made-up entity chains x 27
shapes: reasoning blocks, restated answers, repeated tags, case, articles, hyphens, ...) with the reward
vector that ``ryanboldi/vpo@767db79`` ``vpo_tasks/eureqa.py`` (``EureqaTask.score_one``) gives each. The
default reading must agree on every row; the project's earlier reading stays behind ``parse=lenient``.
"""
from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from vpo_harness.benchmarks import get_task
from vpo_harness.benchmarks.base import Problem
from vpo_harness.benchmarks.eureqa import format_answer, parse_entities
from vpo_harness.benchmarks.textnorm import authors_entity_normalize, entity_normalize
from vpo_harness.harness.core.paths import shared_data_dir


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    with open(shared_data_dir() / "eureqa" / "authors_scores.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _problem(entities: list[str]) -> Problem:
    return Problem(id="synthetic", data={"narrative": "", "masks": [], "entities": entities})


def _score(task, row) -> list[float]:
    return task.reward(_problem(row["entities"]), task.parse(row["completion"])[0]).tolist()


def _disagreements(task, rows) -> Counter:
    return Counter(r["shape"] for r in rows if not np.array_equal(_score(task, r), r["authors_reward"]))


def test_every_row_matches_the_authors(rows):
    assert len(rows) == 135 and len({r["shape"] for r in rows}) == 27
    assert _disagreements(get_task("eureqa"), rows) == Counter()


def test_lenient_reading_is_the_old_one(rows):
    t = get_task("eureqa", parse="lenient")
    bad = _disagreements(t, rows)
    # the six shapes where last-tag-after-<think> and SQuAD's normalisation order differ, 5 chains each
    assert bad == Counter({s: 5 for s in ("article_hyphen", "think_wrong_then_right", "think_right_then_wrong",
                                         "wrong_then_restated_right", "right_then_restated_wrong",
                                         "duplicate_tags_first_wrong")})
    assert sum(bad.values()) == 30  # 105 of 135 agree
    by_id = {r["id"]: r for r in rows}
    # restated answers: the last statement wins, where the authors keep the first
    assert _score(t, by_id["synthetic-0-wrong_then_restated_right"]) == [1.0] * 5
    assert _score(t, by_id["synthetic-0-right_then_restated_wrong"]) == [0.0] * 5
    assert _score(t, by_id["synthetic-0-duplicate_tags_first_wrong"]) == [1.0] * 5
    # drafts inside <think> are dropped
    assert _score(t, by_id["synthetic-0-think_wrong_then_right"]) == [1.0] * 5
    assert _score(t, by_id["synthetic-0-think_right_then_wrong"]) == [0.0] * 5
    # "The-London": punctuation first joins the article to the name
    assert _score(t, by_id["synthetic-0-article_hyphen"]) == [0.0] * 5


def test_the_two_normalisations():
    assert authors_entity_normalize("The-Analytical_Engine") == "analytical engine"
    assert entity_normalize("The-Analytical_Engine") == "theanalytical engine"
    for f in (authors_entity_normalize, entity_normalize):
        assert f("the_Ada_Lovelace!") == "ada lovelace" and f(None) == ""


def test_paper_reading_first_tag_in_the_raw_text():
    text = "<think><entity_A>draft</entity_A></think> <ENTITY_A>final</ENTITY_A> <entity_B></entity_B>"
    assert parse_entities(text) == ["draft", "", None, None, None]
    assert parse_entities(text, "lenient") == ["final", "", None, None, None]
    with pytest.raises(ValueError, match="unknown EUREQA parse mode"):
        parse_entities(text, "last")
    t = get_task("eureqa")
    # a reply whose entity tags are all empty resolves nothing: no answer (the authors' zero vector)
    assert t.parse("<entity_A> </entity_A>") == [None]
    assert get_task("eureqa", parse="lenient").parse("<entity_A> </entity_A>") == ["<entity_A> </entity_A>"]


def test_paper_chains_take_the_first_block_of_each_number_with_reasoning_kept():
    gold = ["Ada_Lovelace", "Analytical_Engine", "Charles_Babbage", "London", "England"]
    wrong = format_answer(["Nope"] * 5)
    right = format_answer(gold)
    chain = (f"<think><response_1>{right}</response_1></think><response_1>{wrong}</response_1>"
             f"<response_2>{wrong}</response_2><response_2>{right}</response_2><RESPONSE_3>{right}</RESPONSE_3>")
    p = _problem(gold)
    paper, lenient = get_task("eureqa"), get_task("eureqa", parse="lenient")
    got = [paper.reward(p, a).tolist() if a is not None else None for a in paper.parse(chain, 3)]
    assert got == [[1.0] * 5, [0.0] * 5, None]  # authors: first <response_i>, case-sensitive tags
    old = [lenient.reward(p, a).tolist() if a is not None else None for a in lenient.parse(chain, 3)]
    assert old == [[0.0] * 5, [1.0] * 5, [1.0] * 5]


def test_a_gold_entity_empty_under_the_mode_is_refused(tmp_path):
    from pathlib import Path

    from vpo_harness.benchmarks import DataError

    fixture = Path(__file__).parent / "fixtures" / "eureqa_synthetic.jsonl"
    rows = [json.loads(line) for line in fixture.read_text().splitlines()]
    rows[0]["entities"][1] = "The-A"  # empty for the authors (articles go first); "thea" in SQuAD's order
    f = tmp_path / "rows.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(DataError, match=r"line 1.*entities\[1\]"):
        get_task("eureqa").load("test", path=str(f))
    assert len(get_task("eureqa", parse="lenient").load("test", path=str(f))) == len(rows)
