"""selected@k against brute-force enumeration of every k-subset of small pools."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from vpo_harness.harness.eval import selection
from vpo_harness.harness.eval.selection import Pool, answer_key, selected_at_k, visible_mask


def brute(pool: Pool, k: int, strategy: str) -> float:
    """Average over all k-subsets of the expected score of the pick, ties split uniformly."""
    s = np.asarray(pool.scores, float)
    total, count = 0.0, 0
    for sub in itertools.combinations(range(pool.n), k):
        sub = list(sub)
        if strategy == "oracle":
            v = s[sub].max()
        elif strategy == "random":
            v = s[sub].mean()
        elif strategy == "public-tests":
            vis = np.asarray(pool.visible)[sub]
            top = [i for i in sub if pool.visible[i] == vis.max()]
            v = np.mean([pool.hidden[i] for i in top])
        elif strategy == "majority":
            keys = [pool.keys[i] for i in sub]
            parsed = [x for x in keys if x is not None]
            if not parsed:
                v = s[sub].mean()
            else:
                cnt = {x: parsed.count(x) for x in parsed}
                best = max(cnt.values())
                winners = [x for x, c in cnt.items() if c == best]
                v = np.mean([np.mean([s[i] for i in sub if pool.keys[i] == w]) for w in winners])
        total += v
        count += 1
    return total / count


def random_pool(rng: np.random.Generator, n: int, n_groups: int, none_frac: float = 0.2) -> Pool:
    groups = rng.integers(0, n_groups, n)
    keys = [None if rng.random() < none_frac else f"ans{g}" for g in groups]
    # scores vary inside a group too (MuSiQue: same answer text, different cited paragraphs)
    scores = np.round(rng.random(n), 2)
    vis = rng.integers(0, 4, n) / 3.0  # few levels: lots of ties
    hid = rng.integers(0, 5, n) / 4.0
    return Pool(scores=scores, keys=keys, visible=vis, hidden=hid)


@pytest.mark.parametrize("strategy", ["oracle", "random", "public-tests"])
def test_exact_strategies_match_enumeration(strategy):
    rng = np.random.default_rng(1)
    for trial in range(12):
        n = int(rng.integers(1, 9))
        pool = random_pool(rng, n, int(rng.integers(1, 4)))
        for k in range(1, n + 1):
            (got,), (err,) = selected_at_k([pool], k, strategy)
            assert err == 0.0
            assert got == pytest.approx(brute(pool, k, strategy), abs=1e-12), (trial, n, k)


def test_majority_monte_carlo_agrees_with_enumeration_within_its_stderr():
    rng = np.random.default_rng(2)
    zs = []
    for trial in range(15):
        n = int(rng.integers(3, 10))
        pool = random_pool(rng, n, int(rng.integers(2, 4)))
        for k in range(1, n + 1):
            (got,), (err,) = selected_at_k([pool], k, "majority", seed=trial)
            ref = brute(pool, k, "majority")
            if err == 0.0:  # k = 1, k = n or a single group: computed exactly
                assert got == pytest.approx(ref, abs=1e-12)
            else:
                zs.append((got - ref) / err)
    zs = np.asarray(zs)
    assert len(zs) > 30
    assert np.abs(zs).max() < 4.5
    assert 0.5 < zs.std() < 1.6  # the reported stderr is the real spread, not a loose bound


def test_majority_prefers_the_frequent_answer_and_differs_from_random():
    # 6 copies of a mediocre answer, 4 distinct good ones: majority returns the mediocre one
    pool = Pool(scores=np.array([0.3] * 6 + [0.9, 0.8, 1.0, 0.7]), keys=["a"] * 6 + ["b", "c", "d", "e"])
    maj, _ = selected_at_k([pool], 5, "majority")
    rnd, _ = selected_at_k([pool], 5, "random")
    orc, _ = selected_at_k([pool], 5, "oracle")
    assert maj[0] < rnd[0] < orc[0]
    assert maj[0] == pytest.approx(brute(pool, 5, "majority"), abs=0.01)


def test_undefined_values_are_nan():
    pool = Pool(scores=np.array([0.1, 0.2]))
    v, _ = selected_at_k([pool], 3, "oracle")
    assert np.isnan(v[0])
    v, _ = selected_at_k([pool], 2, "majority")  # no keys stored
    assert np.isnan(v[0])
    v, _ = selected_at_k([pool], 2, "public-tests")
    assert np.isnan(v[0])
    with pytest.raises(ValueError, match="unknown selection strategy"):
        selected_at_k([pool], 1, "psychic")


def test_monte_carlo_is_seeded():
    rng = np.random.default_rng(3)
    pools = [random_pool(rng, 12, 3) for _ in range(4)]
    a = selected_at_k(pools, 4, "majority", seed=7)[0]
    b = selected_at_k(pools, 4, "majority", seed=7)[0]
    c = selected_at_k(pools, 4, "majority", seed=8)[0]
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    # a problem's value does not depend on its neighbours
    assert selected_at_k(pools[:2], 4, "majority", seed=7)[0][1] == a[1]


def test_answer_keys_normalise_per_task():
    assert answer_key("maze", "RIGHT, right  DOWN") == answer_key("maze", "R R D") == ("RIGHT", "RIGHT", "DOWN")
    assert answer_key("maze", "no moves here") is None
    assert (answer_key("musique", "<support>1</support><answer>The Beatles!</answer>")
            == answer_key("musique", "<think>x</think><support>4, 5</support><answer>beatles</answer>")
            == "beatles")
    a = '<think>t</think><tool_call>\n{"name": "Search", "parameters": {"q": "x", "n": 2}}\n</tool_call>'
    b = '<think>u</think><tool_call>{"parameters": {"n": 2, "q": "x"}, "name": "search"}</tool_call>'
    assert answer_key("toolrl", a) == answer_key("toolrl", b)
    assert answer_key("toolrl", a) != answer_key("toolrl", a.replace('"x"', '"y"'))
    p1 = "def f(x):\n    '''doc'''\n    return x+1  # c\n"
    p2 = "def f(x):\n    return (x + 1)\n"
    assert answer_key("livecodebench", p1) == answer_key("livecodebench", p2)
    assert answer_key("livecodebench", p1) != answer_key("livecodebench", "def f(x):\n    return x+2\n")
    assert answer_key("maze", None) is None


def test_visible_mask_half_split():
    m = visible_mask(5, "half")
    assert m.tolist() == [True, False, True, False, True]
    assert visible_mask(1, "half") is None and visible_mask(4, None) is None
    vis, hid = selection.split_visible(np.array([[1, 0, 1, 1.0]]), visible_mask(4, "half"))
    assert vis.tolist() == [1.0] and hid.tolist() == [0.5]
