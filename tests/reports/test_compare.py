"""Paired comparison: interval coverage on simulated pools, identical runs, refusal, intersections."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vpo_harness.harness.core.metrics import best_at_k
from vpo_harness.reports.compare import compare_runs, format_table, paired_bootstrap, to_csv, to_json
from vpo_harness.reports.pools import RunPools


def make_run(name: str, scores: list[np.ndarray], ids: list[str] | None = None, answers=None, **cfg) -> RunPools:
    """An in-memory run: 2-d rewards whose mean is the scalar; answers default to the score (votes)."""
    ids = ids or [f"p{i}" for i in range(len(scores))]
    config = {"task": "maze", "split": "test", "prompt_style": "compact", "task_options": {}, "seed": 0,
              "ks": [1, 2, 4]}
    config.update(cfg)
    rewards = [np.stack([s, s], axis=1) for s in scores]
    ans = answers or [[f"R{int(x * 10)}" for x in s] for s in scores]
    return RunPools(Path(name), config, None, list(ids), rewards, [np.asarray(s, float) for s in scores],
                    [np.asarray(s) >= 1.0 for s in scores], ans)


def test_interval_covers_the_true_difference_at_the_nominal_rate():
    """Problems have success rates q ~ U(0.1, 0.6); run B adds delta. For binary scores
    E[best@k] = 1 - E[(1-q)^k], so the true difference has a closed form."""
    k, n, P, delta, trials = 4, 8, 120, 0.08, 300

    def e_fail(lo: float, hi: float) -> float:  # E[u^k] for u ~ U(lo, hi)
        return (hi ** (k + 1) - lo ** (k + 1)) / ((k + 1) * (hi - lo))

    true = e_fail(0.4, 0.9) - e_fail(0.4 - delta, 0.9 - delta)
    covered, widths = 0, []
    for seed in range(trials):
        rng = np.random.default_rng(seed)
        q = rng.uniform(0.1, 0.6, P)
        a = (rng.random((P, n)) < q[:, None]).astype(float)
        b = (rng.random((P, n)) < (q + delta)[:, None]).astype(float)
        d = best_at_k(b, k) - best_at_k(a, k)
        lo, hi = paired_bootstrap(d[None], resamples=1000, seed=seed)
        covered += lo[0] <= true <= hi[0]
        widths.append(hi[0] - lo[0])
    rate = covered / trials
    assert 0.925 <= rate <= 0.975, rate  # 0.953 here; a 90% interval gives 0.900
    assert 0.0 < np.mean(widths) < 0.2


def test_bootstrap_is_seeded_and_skips_undefined_values():
    d = np.array([[0.1, 0.2, np.nan, 0.4], [np.nan] * 4])
    lo1, hi1 = paired_bootstrap(d, 500, seed=3)
    lo2, hi2 = paired_bootstrap(d, 500, seed=3)
    assert np.array_equal(lo1, lo2, equal_nan=True) and np.array_equal(hi1, hi2, equal_nan=True)
    assert 0.1 <= lo1[0] <= hi1[0] <= 0.4
    assert np.isnan(lo1[1]) and np.isnan(hi1[1])


def test_identical_runs_give_zero_difference_and_all_ties():
    rng = np.random.default_rng(0)
    scores = [np.round(rng.random(6), 1) for _ in range(30)]
    comp = compare_runs([make_run("a", scores), make_run("b", scores)], ks=[1, 2, 4], resamples=1000)
    assert comp.rows and {r.metric for r in comp.rows} >= {"best", "pass", "selected[majority]", "diversity",
                                                           "vpo_objective"}
    for r in comp.rows:
        assert r.diff == 0.0 and r.ci_low == 0.0 and r.ci_high == 0.0, r
        assert r.wins == r.losses == 0 and r.ties == r.n
    assert comp.shared == {"b": 30}
    assert comp.solved_only["b"]["baseline_only"] == [] and comp.solved_only["b"]["run_only"] == []


def test_known_shift_is_detected_with_wins():
    rng = np.random.default_rng(1)
    a = [rng.random(8) * 0.5 for _ in range(60)]
    b = [s + 0.3 for s in a]  # every candidate better by 0.3: every metric of the scalar moves by 0.3
    comp = compare_runs([make_run("a", a), make_run("b", b)], ks=[1, 4], resamples=2000)
    best4 = next(r for r in comp.rows if r.metric == "best" and r.k == 4)
    assert best4.diff == pytest.approx(0.3) and best4.ci_low == pytest.approx(0.3)
    assert best4.wins == 60
    rnd = next(r for r in comp.rows if r.metric == "selected[random]" and r.k == 4)
    assert rnd.diff == pytest.approx(0.3)


def test_refuses_different_tasks_naming_fields():
    s = [np.array([0.1, 0.5])]
    with pytest.raises(ValueError, match=r"reward_mode.*split|split.*reward_mode") as e:
        compare_runs([make_run("a", s), make_run("b", s, split="train", task_options={"reward_mode": "convex_bonus"})])
    assert "prompt_style" not in str(e.value).split("differing")[-1]


def test_problem_sets_are_intersected_and_counted():
    rng = np.random.default_rng(2)
    sa = [rng.random(4) for _ in range(10)]
    sb = [rng.random(4) for _ in range(6)]
    ra = make_run("a", sa)
    rb = make_run("b", sb, ids=[f"p{i}" for i in range(4, 10)])
    comp = compare_runs([ra, rb], ks=[1, 2], resamples=200)
    assert comp.shared == {"b": 6} and comp.totals == {"a": 10, "b": 6}
    assert all(r.n == 6 for r in comp.rows if r.metric == "best")
    text = format_table(comp)
    assert "b: 6 shared problems (baseline has 10, run has 6)" in text


def test_solved_only_lists_by_pass_and_outputs():
    a = [np.array([1.0, 0.2]), np.array([0.3, 0.1]), np.array([1.0, 1.0])]
    b = [np.array([0.5, 0.2]), np.array([1.0, 0.1]), np.array([1.0, 0.0])]
    comp = compare_runs([make_run("a", a), make_run("b", b)], ks=[1, 2], resamples=200)
    so = comp.solved_only["b"]
    assert so == {"criterion": "pass", "baseline_only": ["p0"], "run_only": ["p1"]}
    csv_text = to_csv(comp)
    assert csv_text.splitlines()[0].startswith("metric,k,baseline,run,n,")
    assert len(csv_text.splitlines()) == len(comp.rows) + 1
    import json

    assert json.loads(to_json(comp))["solved_only"]["b"]["run_only"] == ["p1"]
