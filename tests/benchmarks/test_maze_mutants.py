"""Maze reward and move-reading edges that the surviving mutants of ``scripts/mutation.sh`` showed to be
untested: the default reward mode, the bad-mode message, zones or lava that are empty, two-letter runs."""
from __future__ import annotations

import numpy as np
import pytest

from vpo_harness.benchmarks.maze_env import is_move_token, parse_moves, reward_from_counts, simulate
from tests.benchmarks.test_maze import DIAMOND_ROUTE, GOLD_ROUTE, HAND, LAVA_ROUTE

KW = dict(total_gold=5, total_diamond=4, total_lava=3)


def test_default_mode_is_linear():
    np.testing.assert_allclose(reward_from_counts(2, 1, 1, True, **KW), [1, 2 / 5, 1 / 4, 2 / 3])
    np.testing.assert_allclose(reward_from_counts(2, 1, 1, True, **KW),
                               reward_from_counts(2, 1, 1, True, **KW, reward_mode="linear"))


def test_unknown_mode_names_the_known_ones():
    with pytest.raises(ValueError, match=r"^unknown reward_mode 'convex'; known: linear, convex_bonus$"):
        reward_from_counts(1, 1, 0, False, **KW, reward_mode="convex")


@pytest.mark.parametrize("mode", ["linear", "convex_bonus"])
def test_empty_zone_or_no_lava_is_full_credit(mode):
    # nothing to collect in a zone = that component is met; no lava on the map = none could be hit
    # (the generator keeps >= 3 of each, but hand-made mazes and the route search pass any counts)
    r = reward_from_counts(0, 0, 0, False, total_gold=0, total_diamond=0, total_lava=0, reward_mode=mode)
    np.testing.assert_array_equal(r, [1.0, 1.0, 1.0, 1.0])
    r = reward_from_counts(0, 2, 0, False, total_gold=0, total_diamond=4, total_lava=0, reward_mode=mode)
    want = 0.5 if mode == "linear" else 0.25
    np.testing.assert_allclose(r, [1.0, 1.0, want, 1.0])
    r = reward_from_counts(3, 0, 0, False, total_gold=3, total_diamond=0, total_lava=0, reward_mode=mode)
    np.testing.assert_array_equal(r, [1.0, 1.0, 1.0, 1.0])
    # and through the simulator: the hand maze without its lava tiles
    data = dict(HAND.data, lava=[])
    r, info = simulate(data, LAVA_ROUTE, mode)
    assert info["lava_hit"] == [] and r[3] == 1.0 and r[0] == 1.0


def test_two_letter_runs_are_moves():
    for tok, moves in (("UR", ["UP", "RIGHT"]), ("DL", ["DOWN", "LEFT"]), ("RR", ["RIGHT", "RIGHT"])):
        assert is_move_token(tok), tok
        assert parse_moves(tok) == moves
    assert not is_move_token("ur") and not is_move_token("UX") and not is_move_token("X")
    assert is_move_token("u") and is_move_token("Up")
    letters = [m[0] for m in GOLD_ROUTE]
    pairs = " ".join("".join(letters[i:i + 2]) for i in range(0, len(letters), 2))   # "LL LL LL DL LU DD ..."
    np.testing.assert_allclose(simulate(HAND, pairs)[0], [1, 1, 0, 1])


def test_info_record_of_a_run():
    """The info dict the harness stores and the route search reads: every position in order (a bump
    repeats the cell), the item cells in the order collected, a bool bonus flag."""
    r, info = simulate(HAND, ["UP", "LEFT", "LEFT"])              # UP bumps off the grid at (0,8)
    assert info["path"] == [(0, 8), (0, 8), (0, 7), (0, 6)] and info["final"] == (0, 6)
    assert info["bonus_visited"] is False and info["diamond"] == [] and info["gold"] == []
    r, info = simulate(HAND, DIAMOND_ROUTE)
    down = [(row, 8) for row in range(9)]
    left = [(4, col) for col in range(6, -1, -1)]
    assert info["path"] == down + [(8, 7), (7, 7), (6, 7), (5, 7), (4, 7)] + left + [(5, 0), (6, 0), (7, 0), (8, 0)]
    assert info["diamond"] == [(6, 8), (7, 8), (8, 8), (8, 7), (7, 7)]
    assert info["bonus_visited"] is True and info["final"] == (8, 0) == tuple(HAND.data["exit"]) and info["reached_exit"]
    assert set(info) == {"reached_exit", "steps", "bumps", "ignored", "path", "gold", "diamond", "lava_hit",
                         "bonus_visited", "final"}
    r, info = simulate(HAND, GOLD_ROUTE)
    assert info["bonus_visited"] is False and info["diamond"] == [] and len(info["path"]) == 19
