"""The row's training recipe: a warm start blind to the reward, and the authors' loss.

- ``random_route`` draws valid routes (exit reached within the step budget) whose distribution does not
  depend on where the gold, diamonds, lava or bonus are: the warm start learns the format, not the answer.
- ``policy_gradient_terms``: PPO-clip with veRL's dual-clip (a negative advantage's loss is capped at
  clip_ratio_c * |A|); ``aggregate``: token-mean weighs every completion token alike; ``low_var_kl``:
  k3, clamped at 10.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from vpo_harness.benchmarks import get_task
from vpo_harness.benchmarks.maze_env import bfs
from vpo_harness.training.data import WORD, make_format_examples, random_route, task_instance
from vpo_harness.training.rl import aggregate, low_var_kl, policy_gradient_terms


@pytest.fixture(scope="module")
def maze():
    task = get_task("maze")
    return task, task.load("val", limit=12)


def _moves(route: str) -> list[str]:
    return [WORD[c] for c in route]


def test_random_routes_reach_the_exit_within_the_budget_and_vary(maze) -> None:
    task, problems = maze
    rng = np.random.default_rng(0)
    for p in problems:
        inst = task_instance(p)
        shortest = bfs(inst.grid, inst.start)[inst.exit]
        routes = [random_route(p, rng) for _ in range(20)]
        for r in routes:
            reward, _ = task.simulate(p, _moves(r))
            assert reward[0] == 1.0 and shortest <= len(r) <= inst.budget
        assert len(set(routes)) > 1                         # random tie-breaks and detours
    plain = [random_route(p, np.random.default_rng(1), detour=0.0) for p in problems]
    assert all(len(r) == bfs(task_instance(p).grid, task_instance(p).start)[task_instance(p).exit]
               for p, r in zip(problems, plain))            # no detour: a shortest path


def test_random_routes_do_not_see_the_reward(maze) -> None:
    """Moving the items, the lava and the bonus (same walls) leaves every draw unchanged."""
    _, problems = maze
    for p in problems:
        d = dict(p.data)
        free = [[r, c] for r, row in enumerate(d["grid"]) for c, ch in enumerate(row) if ch != "#"]
        d.update(gold=free[:3], diamond=free[3:6], lava=free[6:9], bonus=free[9])
        q = dataclasses.replace(p, data=d)
        a = [random_route(p, np.random.default_rng(s)) for s in range(10)]
        b = [random_route(q, np.random.default_rng(s)) for s in range(10)]
        assert a == b


def _shortest_paths(inst) -> int:
    """How many shortest S->E paths a maze has (paths counted layer by layer of the BFS from S)."""
    dist = bfs(inst.grid, inst.start)
    count = {inst.start: 1}
    for p in sorted(dist, key=dist.get)[1:]:
        count[p] = sum(count.get((p[0] + dr, p[1] + dc), 0) for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1))
                       if dist.get((p[0] + dr, p[1] + dc), -1) == dist[p] - 1)
    return count[inst.exit]


def test_format_examples_draw_each_answer_of_a_chain_independently() -> None:
    """A chain is m independent draws, not m distinct routes: on the maze with the fewest shortest paths
    and no detours, two answers of one chain are equal about as often as two answers of different
    chains (a chain of distinct routes would never repeat one)."""
    task = get_task("maze")
    p = min(task.load("val", limit=100), key=lambda q: _shortest_paths(task_instance(q)))
    ex = make_format_examples(task, [p], m=3, copies=200, multi_fraction=1.0, seed=3, detour=0.0)
    assert len(ex) == 200
    chains = []
    for _, chain in ex:
        assert chain.startswith("<route_1>") and chain.endswith("</route_3>")
        chains.append(task.parse(chain, 3))
    within = np.mean([c[0] == c[1] for c in chains])
    across = np.mean([a[0] == b[1] for a, b in zip(chains, chains[1:])])
    assert within > 0.02 and 0.4 <= within / across <= 2.5


def test_dual_clip_caps_the_loss_of_negative_advantages() -> None:
    ratio = torch.tensor([[0.5, 1.0, 1.1, 5.0]])
    neg, pos = torch.tensor([-2.0]), torch.tensor([2.0])
    got = policy_gradient_terms(ratio, neg, clip=0.2, clip_ratio_c=3.0)[0]
    plain = policy_gradient_terms(ratio, neg, clip=0.2, clip_ratio_c=0.0)[0]
    # A < 0: max(-A r, -A clip(r)) = 2 * max(r, clip(r)); dual-clip caps it at 3 * 2 = 6
    assert torch.allclose(plain, torch.tensor([1.6, 2.0, 2.2, 10.0]))
    assert torch.allclose(got, torch.tensor([1.6, 2.0, 2.2, 6.0]))
    # A > 0: max(-A r, -A clip(r)), no cap
    assert torch.allclose(policy_gradient_terms(ratio, pos, clip=0.2, clip_ratio_c=3.0)[0],
                          torch.tensor([-1.0, -2.0, -2.2, -2.4]))


def test_token_mean_weighs_tokens_and_seq_mean_weighs_rollouts() -> None:
    x = torch.tensor([[1.0, 1.0, 1.0, 1.0], [4.0, 0.0, 0.0, 0.0]])
    cm = torch.tensor([[1.0, 1.0, 1.0, 1.0], [1.0, 0.0, 0.0, 0.0]])
    assert aggregate(x, cm, "token-mean").item() == pytest.approx(8.0 / 5.0)
    assert aggregate(x, cm, "seq-mean").item() == pytest.approx((1.0 + 4.0) / 2.0)
    with pytest.raises(ValueError, match="loss_agg"):
        aggregate(x, cm, "sum")


def test_low_variance_kl_is_k3_clamped() -> None:
    lp = torch.tensor([0.0, -1.0, -30.0])
    ref = torch.tensor([0.0, -2.0, 0.0])
    d = ref - lp
    want = torch.clamp(torch.exp(d) - d - 1.0, max=10.0)
    assert torch.allclose(low_var_kl(lp, ref), want) and low_var_kl(lp, ref)[2].item() == 10.0
