"""MuSiQue's hop-stratified 300: the authors' procedure, checked on the offline slice.

The authors' reproduction notes (``ryanboldi/vpo`` ``PAPER_REPRO.md`` section 3.2) build the paper's split
with ``datasets``: per hop count h = 2, 3, 4 ``ds.filter(num_hops == h).shuffle(seed=42)`` cut to the first
100, ``concatenate_datasets`` of the three, ``.shuffle(seed=42)`` of the whole. Here that recipe runs
through ``datasets`` itself on the 150 real dev questions of ``shared/data/musique`` (109 2-hop, 24 3-hop,
17 4-hop, so the 3- and 4-hop groups are taken whole) and must give the same questions in the same order
as ``hop_stratified=true``.
"""
from __future__ import annotations

import json
import random
import warnings

import pytest

from vpo_harness.benchmarks.musique import LOCAL_FILE, MuSiQue
from vpo_harness.harness.core.paths import shared_data_dir


def _slice_rows() -> list[dict]:
    with open(shared_data_dir() / LOCAL_FILE, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    return [{"id": r["id"], "num_hops": len(r["question_decomposition"])} for r in rows]


def _recipe_through_datasets(per_hop: int, seed: int) -> list[str]:
    """The authors' steps, written with the library they used (``datasets``)."""
    import datasets

    ds = datasets.Dataset.from_list(_slice_rows())
    parts = []
    for h in (2, 3, 4):
        bucket = ds.filter(lambda r: r["num_hops"] == h)
        parts.append(bucket.shuffle(seed=seed).select(range(min(per_hop, len(bucket)))))
    return datasets.concatenate_datasets(parts).shuffle(seed=seed)["id"]


def _ours(**options) -> list[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the slice is short of 3- and 4-hop questions
        return [p.id for p in MuSiQue(hop_stratified=True, **options).load("validation")]


def test_slice_has_the_documented_hop_counts():
    hops = [r["num_hops"] for r in _slice_rows()]
    assert (len(hops), hops.count(2), hops.count(3), hops.count(4)) == (150, 109, 24, 17)


@pytest.mark.parametrize("per_hop", [100, 10])
def test_default_selection_is_the_authors_recipe(per_hop):
    want = _recipe_through_datasets(per_hop, 42)
    got = _ours(per_hop=per_hop)
    assert got == want
    assert len(got) == (100 + 24 + 17 if per_hop == 100 else 30)
    # the final shuffle mixes the hop groups (a concatenation alone would be sorted by hops)
    hops = [int(i[0]) for i in got]
    assert hops != sorted(hops)


def test_the_seed_is_the_authors_42_and_an_option():
    assert MuSiQue().options["seed"] == 42
    assert _ours(per_hop=10, seed=7) == _recipe_through_datasets(10, 7) != _ours(per_hop=10)


def test_earlier_selection_behind_its_option():
    """``selection=sample`` is the earlier reading: one Random(seed) drawing per_hop indices per hop group
    (a short group taken whole, no draw), source order kept."""
    rows = _slice_rows()
    rng = random.Random(0)
    want = []
    for h in (2, 3, 4):
        group = [r["id"] for r in rows if r["num_hops"] == h]
        keep = set(range(len(group))) if len(group) < 10 else set(rng.sample(range(len(group)), 10))
        want += [x for i, x in enumerate(group) if i in keep]
    got = _ours(per_hop=10, selection="sample", seed=0)
    assert got == want and got != _ours(per_hop=10)
    with pytest.raises(ValueError, match="selection='first'"):
        MuSiQue(hop_stratified=True, selection="first")
