"""ToolRL ``prefill_think``: the authors' single-answer evaluation scores Qwen3's empty think block +
the reply (the template wrote the block into the prompt), and a blank reply as the zero vector; chains
of m answers are scored as written. Checked on the authors' parity rows (shared/data/toolrl)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from vpo_harness.benchmarks import get_task
from vpo_harness.benchmarks.scoring import score_chain
from vpo_harness.harness.core.paths import shared_data_dir

ROWS = shared_data_dir() / "toolrl" / "authors_scores.jsonl"


@pytest.fixture(scope="module")
def rows_by_id() -> dict[str, dict[str, dict]]:
    out: dict[str, dict[str, dict]] = {}
    for line in ROWS.read_text().splitlines():
        r = json.loads(line)
        if r["split"] == "test":
            out.setdefault(r["id"], {})[r["kind"]] = r
    return out


@pytest.fixture(scope="module")
def problems():
    return {p.id: p for p in get_task("toolrl").load("test")}


def test_a_reply_without_think_block_scores_like_the_gold_with_the_prefill(rows_by_id, problems):
    plain, prefill = get_task("toolrl"), get_task("toolrl", prefill_think=True)
    checked = 0
    for pid, kinds in rows_by_id.items():
        if "missing_think" not in kinds:
            continue
        text, gold = kinds["missing_think"]["text"], kinds["gold_verbatim"]["reward"]
        p = problems[pid]
        without = score_chain(plain, p, text, 1).rewards[0]
        np.testing.assert_allclose(without, kinds["missing_think"]["reward"])  # the training scorer: format 0
        assert without[0] == 0.0
        np.testing.assert_allclose(score_chain(prefill, p, text, 1).rewards[0], gold)
        # a reply that has its own think block keeps its score
        np.testing.assert_allclose(score_chain(prefill, p, kinds["gold_verbatim"]["text"], 1).rewards[0], gold)
        checked += 1
    assert checked >= 50


def test_blank_replies_are_zero_with_the_prefill(problems):
    plain, prefill = get_task("toolrl"), get_task("toolrl", prefill_think=True)
    no_calls = next(p for p in problems.values() if not p.meta["num_calls"])
    # the training scorer gives a blank reply to a response-only turn 1 on the call components
    assert score_chain(plain, no_calls, "  ", 1).rewards[0].tolist() == [0.0, 1.0, 1.0, 1.0]
    assert score_chain(prefill, no_calls, "  ", 1).rewards[0].tolist() == [0.0, 0.0, 0.0, 0.0]


def test_chains_of_m_answers_are_scored_as_written(rows_by_id, problems):
    plain, prefill = get_task("toolrl"), get_task("toolrl", prefill_think=True)
    pid, kinds = next((k, v) for k, v in rows_by_id.items() if "missing_think" in v)
    chain = (f"<response_1>{kinds['missing_think']['text']}</response_1>"
             f"<response_2>{kinds['gold_verbatim']['text']}</response_2>")
    a = score_chain(plain, problems[pid], chain, 2).rewards
    b = score_chain(prefill, problems[pid], chain, 2).rewards
    np.testing.assert_allclose(a, b)
    assert a[0][0] == 0.0 and a[1][0] == 1.0
