"""Mutation-operator pairs: every target improves on or trades differently from its parent, the
parent is never taught, the prompt carries the parent's true reward, and the pairs are seeded."""
from __future__ import annotations

import numpy as np
import pytest

from vpo_harness.benchmarks.maze import Maze, MazeInstance
from vpo_harness.training.data import search_targets
from vpo_harness.training.mutation_data import improving_targets, mutation_examples, perturb, random_walk


@pytest.fixture(scope="module")
def setup():
    task = Maze()
    problems = task.load("train", limit=4)
    return task, problems, search_targets(task, problems, n_random=2, seed=1)


@pytest.mark.parametrize("m", [1, 3])
def test_targets_improve_or_trade_and_never_copy_the_parent(setup, m):
    task, problems, targets = setup
    pairs = mutation_examples(task, problems, targets, m=m, per_maze=6, seed=3)
    assert len(pairs) >= len(problems)
    by_id = {p.id: p for p in problems}
    for msgs, completion in pairs:
        text = msgs[-1]["content"]
        parent_line = next(line for line in text.splitlines() if line.startswith("Parent: "))
        parent_moves, shown = parent_line[len("Parent: "):].split(" | ")
        p = next(q for q in by_id.values() if text.startswith(MazeInstance.from_problem(q).render() + "\n"))
        pr = task.reward(p, parent_moves)
        assert shown == " ".join(f"{x:.2f}".rstrip("0").rstrip(".") if x else "0" for x in pr)
        children = task.parse(completion, m if m > 1 else None)
        assert len(children) == m and all(c is not None for c in children)
        for c in children:
            assert task.moves(c) != task.moves(parent_moves)
            r = task.reward(p, c)
            assert task.scalar(r) > task.scalar(pr) + 1e-9 or np.any(r > pr + 1e-9)


def test_pairs_are_seeded(setup):
    task, problems, targets = setup
    a = mutation_examples(task, problems, targets, m=3, per_maze=3, seed=5)
    b = mutation_examples(task, problems, targets, m=3, per_maze=3, seed=5)
    c = mutation_examples(task, problems, targets, m=3, per_maze=3, seed=6)
    assert a == b and a != c


def test_improving_targets_order_and_filter(setup):
    task, problems, targets = setup
    ts = targets[problems[0].id]
    best = max(ts, key=lambda t: task.scalar(np.asarray(t["r"])))
    # against the best route as parent, nothing with a lower scalar and no higher component survives
    got = improving_targets(task, np.asarray(best["r"], dtype=float), ts, best["route"])
    assert all(t["route"] != best["route"] for t in got)
    for t in got:
        r = np.asarray(t["r"])
        assert np.any(r > np.asarray(best["r"]) + 1e-9)
    zero = improving_targets(task, np.zeros(4), ts, "")
    scal = [task.scalar(np.asarray(t["r"])) for t in zero]
    assert scal == sorted(scal, reverse=True) and len(zero) == len(ts)


def test_parent_generators_stay_within_budget():
    rng = np.random.default_rng(0)
    for _ in range(200):
        w = random_walk(rng, 20)
        assert 1 <= len(w) <= 20 and set(w) <= set("UDLR")
        q = perturb(rng, "RRDDLLUU", 12)
        assert len(q) <= 12 and set(q) <= set("UDLR")


def test_rl_mutation_prompt_shows_a_seeded_parent_with_its_true_reward(setup):
    from vpo_harness.training.mutation_data import mutation_prompt

    task, problems, targets = setup
    p = problems[1]
    a = mutation_prompt(task, p, targets[p.id], 3, np.random.default_rng(9))[-1]["content"]
    b = mutation_prompt(task, p, targets[p.id], 3, np.random.default_rng(9))[-1]["content"]
    assert a == b and a.count("Other:") == 1 and "<route_3>" in a
    moves, shown = next(x for x in a.splitlines() if x.startswith("Parent: "))[8:].split(" | ")
    r = task.reward(p, moves)
    assert shown == " ".join(f"{x:.2f}".rstrip("0").rstrip(".") if x else "0" for x in r)


def test_sft_mutation_dataset_mixes_chains_and_single_answers(tmp_path):
    from vpo_harness.training.sft import SFTConfig, build_dataset

    cfg = SFTConfig(out=str(tmp_path), limit=3, augment=False, prompt_mode="mutation", parents_per_maze=4)
    ex = build_dataset(cfg, tmp_path)
    mut = [(msgs, c) for msgs, c in ex if "Parent: " in msgs[-1]["content"]]
    chains = [c for _, c in mut if "<route_1>" in c]
    singles = [c for _, c in mut if c.startswith("<answer>")]
    assert chains and singles and len(chains) + len(singles) == len(mut)
    # the task prompt's own examples too (a search's first iteration and the baseline use it)
    plain = [msgs for msgs, _ in ex if "Parent: " not in msgs[-1]["content"]]
    assert len(plain) == 3 and all("Answer:" in m[-1]["content"] for m in plain)
    with pytest.raises(ValueError, match="prompt_mode"):
        build_dataset(SFTConfig(out=str(tmp_path), limit=1, augment=False, prompt_mode="mutate"), tmp_path)
