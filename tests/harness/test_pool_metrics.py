"""The authors' pool metrics (harness/core/pool_metrics.py) against the authors' own function.

``fixtures/authors_pool_metrics.json`` holds what ``compute_pool_metrics`` of ryanboldi/vpo@767db79
returns on 833 reference pools built from ``shared/data/*/authors_scores.jsonl`` (written by
``python scripts/authors_pool_reference.py --authors CHECKOUT``, which also builds the pools this
test reads back, so both sides see the same matrices and chains).
"""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from vpo_harness.harness.core.paths import shared_data_dir
from vpo_harness.harness.core.pool_metrics import (authors_pass_at_k, metric_names, per_problem_pool_metrics,
                                                   pool_metrics, witness_count)

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).parent / "fixtures" / "authors_pool_metrics.json"
#: our name -> the authors' name
AUTHORS_NAME = {"union_coverage": "max_sum", "best_individual": "best_individual",
                "witness_count": "witness_count", "witness_fraction": "witness_frac",
                **{f"pass@{k}[{v}]": f"pass@{k}_{a}" for k in (1, 2, 3) for v, a in (("solution", "sol"),
                                                                                   ("chain", "chain"))}}


def _script():
    spec = importlib.util.spec_from_file_location("authors_pool_reference", ROOT / "scripts" / "authors_pool_reference.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def reference():
    ref = json.loads(FIXTURE.read_text(encoding="utf-8"))
    script = _script()
    data = shared_data_dir()
    assert ref["sha256"] == {rel: script.sha256(data / rel) for rel in script.SOURCES}, "shared data changed"
    pools = list(script.reference_pools(data))
    assert [(p["source"], p["key"]) for p in ref["pools"]] == [(s, k) for s, k, _, _ in pools]
    return pools, [p["authors"] for p in ref["pools"]]


def test_every_reference_pool_equals_the_authors(reference):
    pools, want = reference
    assert len(pools) == 833
    got = per_problem_pool_metrics([np.array(m) for _, _, m, _ in pools], [np.array(z) for _, _, _, z in pools])
    assert sorted(got) == sorted(AUTHORS_NAME)
    for ours, theirs in AUTHORS_NAME.items():
        expected = np.array([w[theirs] for w in want])
        bad = np.flatnonzero(~np.isclose(got[ours], expected, rtol=0, atol=1e-12))
        assert not bad.size, f"{ours}: {len(bad)} pools differ, first {pools[bad[0]][:2]}: " \
                             f"{got[ours][bad[0]]} != {expected[bad[0]]}"


def test_the_reference_is_not_degenerate(reference):
    """Chains differ from solutions somewhere, and witnesses are not all or nothing."""
    _, want = reference
    assert any(w["pass@2_chain"] != w["pass@2_sol"] for w in want)
    assert len({w["witness_count"] for w in want}) > 3
    assert any(0 < w["pass@1_sol"] < 1 for w in want)


def test_witnesses_need_a_unique_best():
    # two equal answers form one class: both count; a tie between classes on every subset counts none
    r = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.4, 0.4]])
    assert witness_count(r) == 3.0  # [0.4,0.4] wins no subset: {0,1} sums 1 for the others too
    assert witness_count(np.array([[0.5, 0.5], [1.0, 0.0], [0.0, 1.0]])) == 2.0  # {0,1}: three-way tie
    assert witness_count(np.array([[-0.0, 1.0], [0.0, 1.0]])) == 2.0  # -0.0 and 0.0 are one class
    assert np.isnan(witness_count(np.ones((2, 13))))


def test_pass_at_k_as_the_authors_apply_it():
    assert authors_pass_at_k(5, 0, 1) == 0.0
    assert authors_pass_at_k(2, 1, 3) == 1.0  # k above n is not clamped
    assert authors_pass_at_k(4, 1, 2) == pytest.approx(0.5)
    assert authors_pass_at_k(10, 3, 3) == pytest.approx(1 - (7 * 6 * 5) / (10 * 9 * 8))


def test_chains_without_answers_are_not_in_the_pool():
    r = np.array([[1.0, 1.0], [0.0, 0.0], [0.0, 1.0]])
    m = pool_metrics(r, np.array([1, 0, 2]))
    assert m["pass@1[chain]"] == pytest.approx(0.5)  # 2 chains, one solved (the empty one left out)
    assert m["pass@1[solution]"] == pytest.approx(1 / 3)
    assert m["union_coverage"] == 2.0 and m["best_individual"] == 2.0
    with pytest.raises(ValueError, match="chain sizes sum to 2"):
        pool_metrics(r, np.array([2]))
    assert all(np.isnan(v) for v in pool_metrics(np.zeros((0, 2)), np.array([], dtype=int)).values())
    assert list(pool_metrics(r, np.array([3]))) == metric_names()


def test_without_chain_sizes_every_answer_is_a_chain():
    r = [np.array([[1.0, 1.0], [0.0, 0.0], [0.0, 1.0]])]
    got = per_problem_pool_metrics(r)
    assert got["pass@1[chain]"][0] == pytest.approx(1 / 3) == got["pass@1[solution]"][0]
