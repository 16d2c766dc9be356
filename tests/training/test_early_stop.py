"""Early stopping on the validation objective and the objective each method is selected on."""
from __future__ import annotations

import math

import pytest

from vpo_harness.training.early_stop import EarlyStopping
from vpo_harness.training.validation import SELECTION, selection_objective


def run(values, patience, every=10):
    es = EarlyStopping(patience)
    stopped_at = None
    for i, v in enumerate(values):
        es.update(i * every, v)
        if es.stop:
            stopped_at = i * every
            break
    return es, stopped_at


def test_stops_after_patience_evaluations_without_improvement_and_keeps_the_best():
    es, stopped = run([0.30, 0.35, 0.34, 0.36, 0.33, 0.35, 0.36, 0.50], patience=3)
    assert stopped == 60 and es.best_step == 30 and es.best_value == pytest.approx(0.36)
    # a tie is not an improvement: the earlier step is kept
    assert len(es.history) == 7


def test_warm_start_that_is_never_beaten_is_the_chosen_step():
    es, stopped = run([0.50, 0.40, 0.45, 0.49], patience=3)
    assert stopped == 30 and es.best_step == 0


def test_improvement_resets_the_count():
    es, stopped = run([0.1, 0.0, 0.0, 0.2, 0.0, 0.0, 0.3, 0.0, 0.0], patience=3)
    assert stopped is None and es.best_step == 60 and es.bad == 2


def test_min_delta_and_nan():
    es = EarlyStopping(2, min_delta=0.05)
    assert es.update(0, 0.5)
    assert not es.update(10, 0.54)          # within min_delta: not better
    assert not es.update(20, math.nan) and es.stop
    assert es.best_step == 0


def test_replay_gives_the_same_state_as_the_live_run():
    vals = [0.2, 0.25, 0.21, 0.26, 0.1]
    live, _ = run(vals, patience=5)
    rows = [{"step": s, "objective": v} for s, v in reversed(live.history)]
    again = EarlyStopping.replay(5, rows)
    assert (again.best_step, again.best_value, again.bad, again.history) == \
        (live.best_step, live.best_value, live.bad, live.history)


def test_patience_must_be_positive():
    with pytest.raises(ValueError, match="patience"):
        EarlyStopping(0)


def test_selection_rule():
    assert selection_objective("vpo") == "vpo_objective" and selection_objective("max_at_k") == "max_at_k_objective"
    assert selection_objective("grpo") == "mean_scalar"
    assert selection_objective("multi_rlvr") == "multi_rlvr_objective"
    from vpo_harness.training.advantages import METHODS

    assert set(SELECTION) == set(METHODS)
    with pytest.raises(ValueError, match="unknown method"):
        selection_objective("ppo")
