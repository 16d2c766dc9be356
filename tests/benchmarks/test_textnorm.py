"""benchmarks/textnorm.py: the shared normalisers and overlap metrics, at their edges (None, empty sides).

Written against the surviving mutants of ``scripts/mutation.sh``: each test states the behaviour the
QA rewards rely on, not a value read off the implementation.
"""
from __future__ import annotations

import pytest

from vpo_harness.benchmarks.textnorm import (authors_normalize, entity_normalize, multiset_f1, set_f1, squad_normalize,
                                 strip_think, token_f1)


def test_none_normalises_to_nothing_in_every_normaliser():
    # a missing prediction is "no tokens", never a placeholder that could equal some gold text
    assert entity_normalize(None) == ""
    assert squad_normalize(None) == ""
    assert authors_normalize(None, strip_articles=True) == ""
    assert authors_normalize(None, strip_articles=False) == ""


def test_entity_normalize_underscores_before_punctuation():
    assert entity_normalize("Robert_Rodriguez") == entity_normalize("robert rodriguez") == "robert rodriguez"
    assert entity_normalize("Culver_City,_California") == "culver city california"
    assert entity_normalize("The_Beatles") == "beatles"


@pytest.mark.parametrize("pred, gold, f1", [
    ([], [], 1.0),                          # nothing asked, nothing given
    (["a"], [], 0.0), ([], ["a"], 0.0),     # one side empty
    (["a", "b"], ["c"], 0.0),               # no overlap
    (["a", "a", "b"], ["a", "b"], 0.8),     # p = 2/3, r = 1: multiset overlap counts the duplicate once
])
def test_multiset_f1_conventions(pred, gold, f1):
    assert multiset_f1(pred, gold) == pytest.approx(f1)
    assert multiset_f1(gold, pred) == pytest.approx(f1)      # symmetric


def test_set_f1_ignores_duplicates_and_token_f1_scores_articles_only_as_empty():
    assert set_f1(["a", "a", "b"], ["a", "b"]) == 1.0
    assert token_f1("the", "Stanley") == 0.0 and token_f1("the", "an") == 1.0


def test_strip_think_drops_closed_blocks_in_any_case():
    assert strip_think("<think>draft</think>final").strip() == "final"
    assert strip_think("<THINK>draft</THINK>final").strip() == "final"
    assert strip_think("<think>never closed final") == "<think>never closed final"
