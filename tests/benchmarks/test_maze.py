"""Maze benchmark: generator invariants, simulator semantics, reward modes, parser, prompts, route search."""
from __future__ import annotations

import json
from collections import deque
from itertools import product

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vpo_harness.benchmarks import get_task
from vpo_harness.benchmarks.base import Problem
from vpo_harness.benchmarks.maze import (Maze, best_route, paper_moves, paper_parse_multi, paper_parse_single, parse_moves,
                             parse_multi, parse_single)
from vpo_harness.benchmarks.maze_env import (CORNERS, MazeInstance, build_maze, generate_maze, maze_split, reward_from_counts,
                                 simulate)
from vpo_harness.benchmarks.maze_search import best_route_detail

# ---- an independent reference implementation of distances and of the optimum ---------------------

def ref_dist(grid, a, b, exit_, blocked=()):
    """BFS step count a -> b through free cells; ``exit_`` (when not None) is never left (E may only be
    the destination). Unreachable: 98, as in the paper's generator."""
    n = len(grid)
    seen = {a: 0}
    q = deque([a])
    while q:
        p = q.popleft()
        if p == b:
            return seen[p]
        if exit_ is not None and p == exit_ and p != a:
            continue
        for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            nb = (p[0] + dr, p[1] + dc)
            if 0 <= nb[0] < n and 0 <= nb[1] < n and grid[nb[0]][nb[1]] == "." and nb not in blocked \
                    and nb not in seen:
                seen[nb] = seen[p] + 1
                q.append(nb)
    return 98


def brute_best_value(maze, w, mode):
    """Best w . r by exhaustive BFS over (cell, gold set, diamond set, lava set, bonus) states."""
    w = np.asarray(w, float)
    gi = {p: i for i, p in enumerate(maze.gold)}
    di = {p: i for i, p in enumerate(maze.diamond)}
    li = {p: i for i, p in enumerate(maze.lava)}
    s0 = (maze.start, 0, 0, 0, False)
    dist = {s0: 0}
    q = deque([s0])
    best = -1.0
    while q:
        st_ = q.popleft()
        p, g, d, lv, b = st_
        if p == maze.exit:
            r = reward_from_counts(bin(g).count("1"), bin(d).count("1"), bin(lv).count("1"), b,
                                   total_gold=len(gi), total_diamond=len(di), total_lava=len(li),
                                   reward_mode=mode)
            best = max(best, float(w @ r))
            continue
        if dist[st_] == maze.budget:
            continue
        for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            nb = (p[0] + dr, p[1] + dc)
            if not maze.is_free(nb):
                continue
            ns = (nb, g | (1 << gi[nb]) if nb in gi else g, d | (1 << di[nb]) if nb in di else d,
                  lv | (1 << li[nb]) if nb in li else lv, b or nb == maze.bonus)
            if ns not in dist:
                dist[ns] = dist[st_] + 1
                q.append(ns)
    return best


TRAIN = Maze().load("train", limit=200)
TEST = Maze().load("test")


# ---- generator (cell-for-cell parity with the authors' mazes: tests/benchmarks/test_maze_parity.py) ---

@pytest.mark.parametrize("problem", TRAIN + TEST, ids=lambda p: p.id)
def test_generated_maze_invariants(problem):
    m = MazeInstance.from_problem(problem)
    grid = m.grid
    assert len(grid) == 9 and all(len(row) == 9 and set(row) <= {"#", "."} for row in grid)
    corners = {m.start, m.exit, m.gold_corner, m.diamond_corner}
    assert corners == set(CORNERS)
    assert m.start[0] + m.exit[0] == 8 and m.start[1] + m.exit[1] == 8     # opposite ends of a diagonal
    assert all(m.is_free(c) for c in corners)
    assert m.bonus == (4, 4) and m.is_free(m.bonus)
    for items, corner in ((m.gold, m.gold_corner), (m.diamond, m.diamond_corner)):
        zone = [(r, c) for r in range(9) for c in range(9)
                if abs(r - corner[0]) + abs(c - corner[1]) <= 2 and grid[r][c] == "."]
        assert len(zone) >= 3
        assert 3 <= len(items) <= 5 and len(set(items)) == len(items)
        assert all(p in zone for p in items)
    assert 3 <= len(m.lava) <= 5 and len(set(m.lava)) == len(m.lava)
    for p in m.lava:
        assert 2 <= p[0] <= 6 and 2 <= p[1] <= 6 and m.is_free(p) and p != m.bonus
    assert not set(m.lava) & (set(m.gold) | set(m.diamond))
    # budget formula and rejection rules, recomputed independently (the generator's BFS passes through E)
    d = lambda a, b, **kw: ref_dist(grid, a, b, None, **kw)  # noqa: E731
    S, E, G, D = m.start, m.exit, m.gold_corner, m.diamond_corner
    assert m.budget == max(d(S, G) + d(G, E), d(S, D) + d(D, E)) + 7
    assert d(S, G) + d(G, D) + d(D, E) > m.budget
    assert max(d(S, G) + d(G, E), d(S, D) + d(D, E), d(S, (4, 4)) + d((4, 4), E)) <= 90
    assert d(S, E, blocked=set(m.lava)) <= m.budget
    # JSON round trip and seed bookkeeping
    assert MazeInstance.from_data(json.loads(json.dumps(problem.data))) == m
    assert m.seed == problem.meta["seed"] and build_maze(m.seed) == m


def test_splits_and_ids():
    t = Maze()
    assert t.splits == {"train": 1000, "test": 100, "val": 100}
    assert len(TEST) == 100 and TEST[7].id == "maze-test-0007"
    seeds = [p.meta["seed"] for p in TEST]
    assert seeds[0] == 4242 and seeds == sorted(set(seeds))
    # index i is the i-th ACCEPTED seed: every seed skipped between two split members is rejected
    skipped = sorted(set(range(4242, seeds[-1])) - set(seeds))
    assert skipped and all(build_maze(s) is None for s in skipped)
    assert [p.id for p in t.load("train", limit=3)] == ["maze-train-0000", "maze-train-0001", "maze-train-0002"]
    assert len(t.load("train")) == 1000
    assert t.load("test", limit=2)[1].id == "maze-test-0001"
    with pytest.raises(KeyError):
        t.load("validation")


def test_any_split_by_base_seed_and_size():
    t = get_task("maze", base_seed="777000", n="7")
    probs = t.load("test")
    assert [p.id for p in probs][:2] == ["maze-s777000-0000", "maze-s777000-0001"] and len(probs) == 7
    assert probs[0].meta["seed"] >= 777000 and t.describe()["options"]["base_seed"] == 777000
    assert [p.data for p in probs] == [i.to_data() for i in maze_split(777000, 7)]
    # the val split is the same base seed; its label is the split name
    assert [p.data for p in Maze().load("val", limit=7)] == [p.data for p in probs]
    assert len(get_task("maze", n=5).load("train")) == 5
    assert get_task("maze", base_seed=4242).load("test", limit=3)[0].id == "maze-test-0000"
    assert len(get_task("maze", base_seed=5).load("anything", limit=2)) == 2
    with pytest.raises(ValueError, match="unknown option seed.*valid: reward_mode"):
        get_task("maze", seed=777)                       # the old, silently ignored spelling
    for bad in ({"base_seed": "x"}, {"n": 0}, {"base_seed": -1}, {"parse": "loose"}, {"reward_mode": "quad"}):
        with pytest.raises(ValueError):
            get_task("maze", **bad)


def test_determinism_pure_function_of_seed():
    import random
    for seed in (42, 4242, 123456):
        a = build_maze(seed)
        random.seed(0)                           # the global RNG state must not matter
        assert build_maze(seed) == a
    rejected = next(s for s in range(42, 200) if build_maze(s) is None)
    with pytest.raises(ValueError, match="rejects seed"):
        generate_maze(rejected)
    assert generate_maze(4242) == MazeInstance.from_problem(TEST[0])


# ---- a maze worked out by hand (a fixed layout, independent of the generator) ----------------------
#
#   col 0 1 2 3 4 5 6 7 8
#   0   G # G . . . . . S        S = (0,8), E = (8,0), budget 27
#   1   G G . . . . . . .        gold:    (0,0) (0,2) (1,0) (1,1) (2,0)
#   2   G . L # . . . . .        diamond: (6,8) (7,7) (7,8) (8,7) (8,8)
#   3   . . . . # . . . .        lava:    (2,2) (5,5) (6,5)
#   4   . . . . B . . . .        B = (4,4)
#   5   . . . . # L . . .
#   6   . . . . . L . . D
#   7   . . . # . # . D D
#   8   E . . . . # . D D

_HAND_ROWS = ["G#G.....S", "GG.......", "G.L#.....", "....#....", "....B....",
              "....#L...", ".....L..D", "...#.#.DD", "E....#.DD"]


def _hand_problem() -> Problem:
    def cells(ch):
        return [[r, c] for r, row in enumerate(_HAND_ROWS) for c, x in enumerate(row) if x == ch]
    grid = ["".join("#" if x == "#" else "." for x in row) for row in _HAND_ROWS]
    data = {"seed": 0, "size": 9, "grid": grid, "start": [0, 8], "exit": [8, 0], "gold_corner": [0, 0],
            "diamond_corner": [8, 8], "gold": cells("G"), "diamond": cells("D"), "lava": cells("L"),
            "bonus": [4, 4], "budget": 27}
    return Problem(id="maze-hand", data=data)


HAND = _hand_problem()
GOLD_ROUTE = ["LEFT"] * 6 + ["DOWN", "LEFT", "LEFT", "UP", "DOWN", "DOWN"] + ["DOWN"] * 6      # 18 steps
DIAMOND_ROUTE = ["DOWN"] * 8 + ["LEFT", "UP", "UP", "UP", "UP"] + ["LEFT"] * 7 + ["DOWN"] * 4  # 24 steps
LAVA_ROUTE = ["DOWN"] * 8 + ["LEFT", "UP", "UP"] + ["LEFT"] * 7 + ["DOWN", "DOWN"]              # 20, via (6,5)
def test_hand_maze_layout():
    m = MazeInstance.from_problem(HAND)
    assert m.symbol_rows() == _HAND_ROWS
    assert m.budget == 27 and m.start == (0, 8) and m.exit == (8, 0)


def test_hand_routes_score_as_computed():
    m = MazeInstance.from_problem(HAND)
    r, info = simulate(m, GOLD_ROUTE)
    np.testing.assert_allclose(r, [1, 1, 0, 1])
    assert info["steps"] == 18 and info["reached_exit"] and len(info["gold"]) == 5
    r, info = simulate(m, DIAMOND_ROUTE)
    np.testing.assert_allclose(r, [1, 0, 1, 1])
    assert info["steps"] == 24 and info["bonus_visited"]           # row 4 passes the centre
    r, info = simulate(m, LAVA_ROUTE)
    np.testing.assert_allclose(r, [1, 0, 1, 1 - 1 / 3])
    assert info["lava_hit"] == [(6, 5)]
    # convex_bonus: all-or-nothing components are unchanged by squaring; B caps at 1
    np.testing.assert_allclose(simulate(m, DIAMOND_ROUTE, "convex_bonus")[0], [1, 0, 1, 1])
    np.testing.assert_allclose(simulate(m, LAVA_ROUTE, "convex_bonus")[0], [1, 0, 1, (2 / 3) ** 2])


def test_hand_maze_best_routes():
    m = MazeInstance.from_problem(HAND)
    # gold only is worth more than diamonds only: the exact search returns a full-gold lava-free route
    d = best_route_detail(m, [0.1, 0.5, 0.2, 0.2])
    np.testing.assert_allclose(d["reward"], [1, 1, 0, 1])
    assert d["value"] == pytest.approx(0.8) and len(d["moves"]) == 18
    d = best_route_detail(m, [0.1, 0.2, 0.5, 0.2])
    np.testing.assert_allclose(d["reward"], [1, 0, 1, 1])
    assert d["value"] == pytest.approx(0.8)
    # only completion matters: the shortest S -> E route (16 steps in this open maze)
    d = best_route_detail(m, [1, 0, 0, 0])
    assert d["reward"][0] == 1 and len(d["moves"]) == 16
    for w, mode in (([0.25] * 4, "linear"), ([0.1, 0.5, 0.2, 0.2], "convex_bonus")):
        assert best_route_detail(m, w, mode)["value"] == pytest.approx(brute_best_value(m, w, mode))


# ---- simulator semantics -------------------------------------------------------------------------

def test_zero_vector_without_reaching_exit():
    m = MazeInstance.from_problem(HAND)
    for moves in ([], GOLD_ROUTE[:-1], ["LEFT"] * 6, DIAMOND_ROUTE[:10]):
        r, info = simulate(m, moves)
        assert not info["reached_exit"]
        np.testing.assert_array_equal(r, np.zeros(4))
        np.testing.assert_array_equal(simulate(m, moves, "convex_bonus")[0], np.zeros(4))
    assert Maze().reward(HAND, None).tolist() == [0, 0, 0, 0]
    assert Maze().reward(HAND, "no moves here").tolist() == [0, 0, 0, 0]


def test_bumps_use_steps_and_budget_cuts_moves():
    m = MazeInstance.from_problem(HAND)
    r, info = simulate(m, ["UP", "RIGHT"])               # both off the grid from (0,8)
    assert info["final"] == (0, 8) and info["steps"] == 2 and info["bumps"] == 2
    r, info = simulate(m, ["LEFT"] * 6 + ["LEFT"])        # (0,1) is a wall
    assert info["final"] == (0, 2) and info["bumps"] == 1 and info["steps"] == 7
    # 9 bumps + 18 = 27 = budget: still reaches E; 10 bumps push the last move past the budget
    r, info = simulate(m, ["UP"] * 9 + GOLD_ROUTE)
    np.testing.assert_allclose(r, [1, 1, 0, 1])
    r, info = simulate(m, ["UP"] * 10 + GOLD_ROUTE)
    np.testing.assert_array_equal(r, np.zeros(4))
    assert info["steps"] == 27 and info["ignored"] == 1 and info["final"] == (7, 0)


def test_items_count_once_and_not_after_exit():
    m = MazeInstance.from_problem(HAND)
    wiggle = ["LEFT"] * 6 + ["RIGHT", "LEFT", "RIGHT", "LEFT"]   # (0,2) visited three times
    r, info = simulate(m, wiggle + GOLD_ROUTE[6:])
    np.testing.assert_allclose(r, [1, 1, 0, 1])
    assert len(info["gold"]) == 5
    # after E nothing counts: walking on from the exit towards gold changes nothing
    after = simulate(m, DIAMOND_ROUTE + ["UP", "UP", "UP", "UP", "UP", "UP"])
    np.testing.assert_allclose(after[0], [1, 0, 1, 1])
    assert after[1]["ignored"] == 6 and after[1]["final"] == m.exit


def test_lava_is_crossable_and_counted_once():
    m = MazeInstance.from_problem(HAND)
    route = LAVA_ROUTE[:14] + ["RIGHT", "LEFT"] + LAVA_ROUTE[14:]   # step back onto (6,5)
    r, info = simulate(m, route)
    assert info["lava_hit"] == [(6, 5)]
    np.testing.assert_allclose(r, [1, 0, 1, 1 - 1 / 3])


def test_convex_bonus_math():
    kw = dict(total_gold=5, total_diamond=5, total_lava=3)
    np.testing.assert_allclose(reward_from_counts(3, 2, 1, False, **kw, reward_mode="linear"), [1, .6, .4, 2 / 3])
    np.testing.assert_allclose(reward_from_counts(3, 2, 1, True, **kw, reward_mode="linear"), [1, .6, .4, 2 / 3])
    np.testing.assert_allclose(reward_from_counts(3, 2, 1, False, **kw, reward_mode="convex_bonus"),
                               [1, .36, .16, 4 / 9])
    np.testing.assert_allclose(reward_from_counts(3, 2, 1, True, **kw, reward_mode="convex_bonus"),
                               [1, .54, .24, 2 / 3])
    np.testing.assert_allclose(reward_from_counts(4, 5, 0, True, **kw, reward_mode="convex_bonus"),
                               [1, .96, 1, 1])                                   # clipped to 1
    np.testing.assert_array_equal(reward_from_counts(5, 5, 0, True, **kw, completed=False,
                                                     reward_mode="convex_bonus"), np.zeros(4))
    # through the simulator: 3 gold, the bonus tile, no lava
    m = MazeInstance.from_problem(HAND)
    route = ["LEFT"] * 6 + ["DOWN", "LEFT"] + ["DOWN"] * 3 + ["RIGHT"] * 3 + ["LEFT"] * 4 + ["DOWN"] * 4
    r, info = simulate(m, route, "convex_bonus")
    assert len(info["gold"]) == 2 and info["bonus_visited"]
    np.testing.assert_allclose(r, [1, (2 / 5) ** 2 * 1.5, 0, 1])
    np.testing.assert_allclose(simulate(m, route)[0], [1, 2 / 5, 0, 1])


def test_benchmark_protocol_and_options():
    t = get_task("maze")
    assert t.component_names == ("completion", "gold", "diamond", "avoid_lava")
    assert t.answer_tag == "route" and t.default_temperature == 0.7 and t.default_top_p == 1.0
    assert t.describe()["options"] == {"reward_mode": "convex_bonus", "parse": "paper"}   # the paper's defaults
    lin = get_task("maze", reward_mode="linear", parse="lenient")
    assert lin.describe()["options"] == {"reward_mode": "linear", "parse": "lenient"}
    R = lin.rewards(HAND, [", ".join(GOLD_ROUTE), None, "U"])
    np.testing.assert_allclose(R, [[1, 1, 0, 1], [0, 0, 0, 0], [0, 0, 0, 0]])
    assert lin.scalar(R).tolist() == pytest.approx([0.75, 0, 0])
    assert lin.passed(R).tolist() == [False, False, False]
    assert lin.dedup_key(HAND, "U, R, d", None) == lin.dedup_key(HAND, "UP RIGHT DOWN", None) == ("UP", "RIGHT", "DOWN")
    assert lin.dedup_key(HAND, "U R", None) != lin.dedup_key(HAND, "R U", None)
    # paper reading: letters are no moves, so they score zero and have no dedup key
    assert t.reward(HAND, "".join(x[0] for x in GOLD_ROUTE)).tolist() == [0, 0, 0, 0]
    np.testing.assert_allclose(t.reward(HAND, " ".join(GOLD_ROUTE).lower()), [1, 1, 0, 1])
    assert t.dedup_key(HAND, "U R", None) is None
    assert t.dedup_key(HAND, "up, right", None) == t.dedup_key(HAND, "UP RIGHT", None) == ("UP", "RIGHT")


# ---- parser --------------------------------------------------------------------------------------

def test_simulate_accepts_letters_and_text():
    m = MazeInstance.from_problem(HAND)
    letters = [x[0] for x in GOLD_ROUTE]
    np.testing.assert_allclose(simulate(m, letters)[0], [1, 1, 0, 1])
    np.testing.assert_allclose(simulate(m, [x.lower() for x in GOLD_ROUTE])[0], [1, 1, 0, 1])
    np.testing.assert_allclose(simulate(m, "".join(letters))[0], [1, 1, 0, 1])
    np.testing.assert_allclose(simulate(m, ", ".join(GOLD_ROUTE))[0], [1, 1, 0, 1])
    r, info = simulate(m, ["JUMP", None, 3] + GOLD_ROUTE)              # junk is skipped, no step used
    assert info["steps"] == 18 and r[0] == 1


def test_move_tokens():
    assert parse_moves("UP, down -> Left → r, U D L R") == ["UP", "DOWN", "LEFT", "RIGHT"] * 2
    assert parse_moves("go UP then left; foo 3 RIGHT, xRIGHT") == ["UP", "LEFT", "RIGHT"]  # xRIGHT: unknown
    assert parse_moves("UURDL") == ["UP", "UP", "RIGHT", "DOWN", "LEFT"]
    assert parse_moves("lull") == []                  # lowercase runs are words, not moves
    assert parse_moves("") == [] and parse_moves(None) == []


def test_parse_single():
    assert parse_single("think... <answer>U, R</answer> more <answer>D</answer>") == "D"
    assert parse_single("UP UP LEFT") == "UP UP LEFT"                                # whole-text fallback
    assert parse_single("<think>LEFT LEFT</think> RIGHT") == "RIGHT"
    assert parse_single("<think>still thinking UP UP") is None                      # truncated reasoning
    assert parse_single("   ") is None
    assert parse_single("I go UP first. <answer>R, R, D") == "R, R, D"             # truncated answer
    assert Maze(parse="lenient").parse("<answer>U</answer>") == ["U"]


def test_paper_parse_single():
    """The authors' extract_moves: first <answer>, else the whole text (reasoning included), words only."""
    assert paper_parse_single("<answer>UP</answer> then <answer>DOWN DOWN</answer>") == "UP"
    assert paper_parse_single("<think>LEFT LEFT</think> RIGHT") == "LEFT LEFT RIGHT"     # drafts count
    assert paper_parse_single("I will go right then Down.") == "RIGHT DOWN"               # prose is a route
    assert paper_parse_single("<answer>RRDD</answer>") is None
    assert paper_parse_single("<answer>DOWN_LEFT, UPRIGHT</answer>") is None
    assert paper_parse_single("<ANSWER>up</Answer> DOWN") == "UP"                          # tags: any case
    assert paper_parse_single("<answer>UP UP</answer> DOWN DOWN") == "UP UP"
    assert paper_parse_single("<answer>UP <answer>LEFT</answer>") == "UP LEFT"
    assert paper_parse_single("") is None and paper_parse_single(None) is None
    assert paper_moves("<answer>x</answer> UP") == []


def test_paper_parse_multi():
    assert paper_parse_multi("<route_2>UP</route_2> DOWN", 3) == [None, "UP", None]
    assert paper_parse_multi("<route_1>UP</route_1><route_1>DOWN</route_1>", 2) == ["UP", None]   # first wins
    assert paper_parse_multi("<think><route_1>LEFT</route_1></think><route_1>UP</route_1>", 1) == ["LEFT"]
    assert paper_parse_multi("UP --- DOWN LEFT---", 3) == ["UP", "DOWN LEFT", None]     # '---' anywhere
    assert paper_parse_multi("only UP here ---", 2) == ["UP", None]                    # one part: whole text
    assert paper_parse_multi("<answer>UP</answer> x <answer>DOWN</answer>", 3) == ["UP", "DOWN", None]
    assert paper_parse_multi("go UP then <answer>LEFT</answer>", 2) == ["LEFT", None]
    assert paper_parse_multi("<route_1>RRD</route_1>", 2) == [None, None]
    assert paper_parse_multi("", 2) == [None, None] and paper_parse_multi("UP", 0) == []


def test_parse_multi_numbered_and_truncated():
    t = Maze(parse="lenient")
    text = "plan...\n<route_1>U, R</route_1>\n<route_2>D,D</route_2>\n<route_3>L, L, "
    assert t.parse(text, 3) == ["U, R", "D,D", None]
    assert t.parse("<route_2>R</route_2>", 3) == [None, "R", None]
    assert t.parse("", 3) == [None, None, None]
    # a chain cut inside its first route does not fall back to the other formats
    assert t.parse("<answer>U</answer>\n---\nD\n---\n<route_1>L, L", 2) == [None, None]


def test_parse_multi_fallbacks():
    dash = "Let me think about the gold.\n---\nUP, LEFT, DOWN\n---\nR R D\n"
    assert parse_multi(dash, 3) == ["UP, LEFT, DOWN", "R R D", None]
    assert parse_multi("---\nU\n---\nD\n---\nL\n---\nR", 3) == ["U", "D", "L"]
    answers = "<answer>U</answer> and <answer>D, D</answer>"
    assert parse_multi(answers, 3) == ["U", "D, D", None]
    # numbered tags win over the fallbacks
    assert parse_multi("<route_1>R</route_1>\n---\nU\n---\nD", 2) == ["R", None]


_PIECES = list("<>/_-\n ,UDLRudlr123") + ["route_", "answer", "<route_1>", "</route_1>", "<route_2>",
                                            "</route_2>", "<answer>", "</answer>", "---", "UP", "<think>",
                                            "</think>", "\n---\n"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PIECES) | st.characters(), max_size=80).map("".join)
       | st.text(max_size=200),
       st.integers(min_value=1, max_value=5))
def test_parser_fuzz_never_raises(text, m):
    for t in (Maze(), Maze(parse="lenient")):
        single = t.parse(text)
        assert len(single) == 1
        multi = t.parse(text, m)
        assert len(multi) == m and all(a is None or isinstance(a, str) for a in multi)
        for a in single + multi:
            r = t.reward(HAND, a)
            assert r.shape == (4,) and np.all((r >= 0) & (r <= 1))
            t.dedup_key(HAND, a, r)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["UP", "DOWN", "LEFT", "RIGHT"]), max_size=40))
def test_random_routes_rewards_in_range_and_round_trip(moves):
    m = MazeInstance.from_problem(HAND)
    for mode in ("linear", "convex_bonus"):
        r, info = simulate(m, moves, mode)
        assert np.all((r >= 0) & (r <= 1))
        assert (r[0] == 1) == info["reached_exit"]
        if not info["reached_exit"]:
            assert not r.any()
        assert info["steps"] <= m.budget
    # the text form of a move list parses back to it
    assert parse_moves(", ".join(moves)) == moves
    assert parse_moves("".join(x[0] for x in moves)) == moves


# ---- prompts -------------------------------------------------------------------------------------

def test_prompts_full_and_compact():
    cvx, lin = Maze(), Maze(reward_mode="linear")
    m = MazeInstance.from_problem(HAND)
    full = cvx.prompt(HAND)[-1]["content"]
    assert m.render() in full and "You have 27 steps." in full and "<answer>UP UP RIGHT</answer>" in full
    assert "multiplies your other scores" in full
    full_lin = lin.prompt(HAND)[-1]["content"]
    assert "multiplies" not in full_lin and "does not change your score" in full_lin
    assert cvx.multi_prompt(HAND, 3)[-1]["content"].count("27 steps per route") == 1
    compact = cvx.prompt(HAND, style="compact")[-1]["content"]
    assert m.render() in compact and "Budget: 27" in compact and "<answer>" in compact
    assert len(compact) < len(full) / 3
    with pytest.raises(ValueError):
        cvx.prompt(HAND, style="verbose")


def test_compact_prompt_format_is_pinned():
    """training/model.py turns these exact strings into single tokens: change both together."""
    t = Maze()
    grid = MazeInstance.from_problem(HAND).render()
    assert t.prompt(HAND, style="compact") == [{"role": "user", "content":
            grid + "\nBudget: 27\nAnswer: <answer>moves</answer>"}]
    assert t.multi_prompt(HAND, 2, style="compact") == [{"role": "user", "content":
            grid + "\nBudget: 27\nAnswer: 2 different routes: <route_1>...</route_1> <route_2>...</route_2>"}]


@pytest.mark.parametrize("m", [1, 3, 5])
@pytest.mark.parametrize("style", ["full", "compact"])
def test_multi_prompt_tags(m, style):
    text = Maze().multi_prompt(HAND, m, style=style)[-1]["content"]
    for i in range(1, m + 1):
        assert f"<route_{i}>" in text and f"</route_{i}>" in text
    if style == "compact" or m >= 3:          # the full prompt's format example always shows 3 routes
        assert f"<route_{m + 1}>" not in text
    assert "27" in text
    assert MazeInstance.from_problem(HAND).render() in text


# ---- route search --------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["linear", "convex_bonus"])
def test_best_route_is_optimal_vs_brute_force(mode):
    rng = np.random.default_rng(7)
    for p in TEST[1:6]:
        m = MazeInstance.from_problem(p)
        w = rng.dirichlet(np.ones(4))
        d = best_route_detail(m, w, mode)
        assert d["value"] == pytest.approx(brute_best_value(m, w, mode), abs=1e-9)
        assert d["value"] == pytest.approx(d["predicted"], abs=1e-9)
        assert d["info"]["reached_exit"] and d["info"]["steps"] == len(d["moves"]) <= m.budget


def test_best_route_deterministic():
    rng = np.random.default_rng(0)
    for p, mode in product(TRAIN[:40], ("linear", "convex_bonus")):
        w = rng.dirichlet(np.ones(4))
        moves = best_route(p, w, mode)
        assert moves == best_route(MazeInstance.from_problem(p), list(w), mode)
        assert Maze(reward_mode=mode).reward(p, " ".join(moves))[0] == 1
    with pytest.raises(ValueError):
        best_route(HAND, [1, 1, 1])
    with pytest.raises(ValueError):
        best_route(HAND, [1, -1, 1, 1])


def test_data_path_is_refused_not_ignored(tmp_path) -> None:
    from vpo_harness.harness.app.cli import main

    rc = main(["run", "--task", "maze", "--model", "mock:moves", "--data-path", str(tmp_path / "mazes.jsonl"),
               "--limit", "1", "-n", "1", "--out", str(tmp_path / "r"), "--no-progress"])
    assert rc != 0 and not (tmp_path / "r" / "samples.jsonl").exists()
    with pytest.raises(ValueError, match="base_seed"):
        Maze().load("test", path="x.jsonl")
