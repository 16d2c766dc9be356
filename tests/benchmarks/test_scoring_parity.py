"""Scoring parity of MuSiQue and ToolRL with the VPO authors' released scorers.

``shared/data/{musique,toolrl}/authors_scores.jsonl`` hold 3,450 + 6,665 completions (gold, corruptions,
citation syntaxes, drafts in ``<think>``, malformed calls, ...) with the reward vectors that
``ryanboldi/vpo@767db79`` (``vpo_tasks/musique.py`` / ``vpo_tasks/tool.py``) gives them. Our defaults
must agree on every row within 1e-9 (Maze: tests/benchmarks/test_maze_parity.py).
"""
from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from vpo_harness.benchmarks import get_task
from vpo_harness.harness.core.paths import shared_data_dir


def _rows(task: str):
    with open(shared_data_dir() / task / "authors_scores.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _mismatches(task, problems, rows, key=lambda r: r["id"]):
    bad = Counter()
    for row in rows:
        p = problems[key(row)]
        got = task.reward(p, task.parse(row["text"])[0])
        if not np.allclose(got, row["reward"], rtol=0, atol=1e-9):
            bad[row["kind"]] += 1
    return bad


def test_musique_every_row_matches_the_authors():
    t = get_task("musique")
    problems = {p.id: p for p in t.load("validation")}
    rows = _rows("musique")
    assert len(rows) == 3450
    assert _mismatches(t, problems, rows) == Counter()


def test_musique_lenient_reading_differs_on_the_documented_kinds():
    t = get_task("musique", parse="lenient")
    problems = {p.id: p for p in t.load("validation")}
    bad = _mismatches(t, problems, _rows("musique"))
    assert {"empty_answer_tag", "cites_brackets", "cites_and", "draft_in_think", "two_answers_wrong_first"} <= set(bad)


def test_toolrl_every_row_matches_the_authors():
    t = get_task("toolrl")
    problems = {p.id: p for split in ("test", "sft") for p in t.load(split)}
    rows = _rows("toolrl")
    assert len(rows) == 6665 and {r["split"] for r in rows} == {"test", "sft"}
    assert _mismatches(t, problems, rows) == Counter()


def test_toolrl_lenient_reading_differs_on_the_documented_kinds():
    t = get_task("toolrl", parse="lenient")
    problems = {p.id: p for split in ("test", "sft") for p in t.load(split)}
    bad = _mismatches(t, problems, _rows("toolrl"))
    assert {"separate_blocks", "think_close_only", "value_with_article", "malformed_first_of_two", "empty"} <= set(bad)
