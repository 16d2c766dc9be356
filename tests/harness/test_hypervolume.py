"""harness/core/metrics.py: the non-dominated mask and the exact hypervolume the Pareto search and its
figures read (search/pareto.py, `vpo plot`)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from vpo_harness.harness.core.metrics import hypervolume, nondominated, pareto_fraction


def _cells(points: np.ndarray, side: int) -> int:
    """Unit cells of [0, side]^d that some integer point dominates: the hypervolume by counting."""
    d = points.shape[1]
    return sum(bool((points >= np.array(c) + 1).all(1).any()) for c in itertools.product(range(side), repeat=d))


@pytest.mark.parametrize("d", [1, 2, 3, 4])
def test_hypervolume_equals_counting_the_dominated_cells(d: int) -> None:
    rng = np.random.default_rng(d)
    for n in (1, 2, 5, 12):
        pts = rng.integers(0, 5, size=(n, d)).astype(float)
        assert hypervolume(pts) == pytest.approx(_cells(pts, 4))


def test_hypervolume_by_hand_and_its_edges() -> None:
    assert hypervolume(np.array([[1.0, 0.5], [0.5, 1.0]])) == pytest.approx(0.75)
    assert hypervolume(np.array([[0.5, 0.5, 0.5], [1.0, 0.2, 0.2]])) == pytest.approx(0.125 + 0.5 * 0.04)
    assert hypervolume(np.zeros((0, 3))) == 0.0
    assert hypervolume(np.array([[1.0, 0.0]])) == 0.0  # nothing above the reference on one axis
    assert hypervolume(np.array([[1.0, 1.0]]), ref=0.5) == pytest.approx(0.25)
    with pytest.raises(ValueError, match="hypervolume"):
        hypervolume(np.array([1.0, 2.0]))


def test_nondominated_keeps_ties_and_drops_the_dominated() -> None:
    r = np.array([[1, 0], [0, 1], [1, 0], [0.5, 0.5], [0.4, 0.5], [0, 0]], dtype=float)
    assert nondominated(r).tolist() == [True, True, True, True, False, False]
    assert pareto_fraction(r) == pytest.approx(4 / 6)
    assert nondominated(np.zeros((0, 2))).shape == (0,)
