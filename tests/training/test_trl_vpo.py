"""The TRL path: on the same rollouts its advantages equal training/advantages.py's, for every method.

The trainer is a real ``GRPOTrainer`` subclass around a tiny Llama; only the sampler is scripted
(``_generate_single_turn`` returns fixed token ids), so TRL's own decoding, reward-function calls,
gathering and slicing all run. The expected advantages are computed here from the texts with the task
and ``training/advantages.py`` alone.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from vpo_harness.benchmarks import get_task
from vpo_harness.training import advantages as A
from vpo_harness.training.model import build_model, build_tokenizer, save_checkpoint

pytest.importorskip("trl")

G = 4
SEED = 7


@pytest.fixture(scope="module")
def tiny_policy(tmp_path_factory):
    tok = build_tokenizer()
    model = build_model(tok, hidden=32, layers=1, heads=2, intermediate=64, seed=0)
    return save_checkpoint(model, tok, tmp_path_factory.mktemp("policy"))


@pytest.fixture(scope="module")
def maze():
    return get_task("maze")


@pytest.fixture(scope="module")
def routes(maze):
    """Per problem, a few distinct real routes (optimal for different weightings) plus junk."""
    from vpo_harness.training.data import search_targets

    ps = maze.load("train", limit=2)
    t = search_targets(maze, ps, n_random=3, seed=1)
    return {p.id: [x["route"] for x in t[p.id]] + ["R", "DDDD"] for p in ps}     # letters; texts via training.data


def _script(method: str, problem_ids: list[str], routes: dict, rng: np.random.Generator) -> list[tuple[str, bool]]:
    """(text, truncated) per rollout: chains with duplicates and missing answers, some cut (the answer
    format is the warm start's, vpo_harness.training.data, so it follows the task's parser)."""
    from vpo_harness.training.data import chain_completion, single_completion

    out = []
    for pid in problem_ids:
        pool = routes[pid]
        for g in range(G):
            if method in A.MULTI_ANSWER:
                pick = [pool[int(rng.integers(len(pool)))] for _ in range(3)]
                if g == 0:
                    pick[2] = pick[0]                      # a duplicate answer
                if g == 1:
                    pick = pick[:2]                        # a missing answer
                text = chain_completion(pick)
            else:
                text = single_completion(pool[int(rng.integers(len(pool)))])
            out.append((text, g == 3 and pid == problem_ids[-1]))   # one truncated rollout
    return out


def _trainer(method: str, policy, tmp_path):
    from datasets import Dataset
    from transformers import AutoTokenizer

    from vpo_harness.training import trl_vpo as T

    cfg = T.TRLVPOConfig(init=str(policy), out=str(tmp_path / method), task="maze", method=method, limit=2,
                         prompt_style="compact", m=3, group_size=G, prompts_per_step=2, steps=1,
                         max_completion_length=64, seed=SEED, K=16)
    task = get_task("maze")
    tok = AutoTokenizer.from_pretrained(str(policy))
    rows = T.build_rows(task, T.load_problems(task, cfg), cfg, tok)
    scorer = T.TaskScorer(task, method, cfg.m)
    trainer = T.VPOGRPOTrainer(model=str(policy), reward_funcs=scorer.reward_funcs(), args=T.grpo_config(cfg),
                               train_dataset=Dataset.from_list(rows), processing_class=tok, scorer=scorer, vpo=cfg)
    return trainer, rows, tok


@pytest.mark.parametrize("method", A.METHODS)
def test_trl_advantages_equal_training_advantages(method, tiny_policy, maze, routes, tmp_path):
    trainer, rows, tok = _trainer(method, tiny_policy, tmp_path)
    inputs = [dict(r) for r in rows for _ in range(G)]
    pids = [json.loads(r["problem"])["id"] for r in rows]
    script = _script(method, pids, routes, np.random.default_rng(3))
    eos = tok.eos_token_id

    def scripted(prompt_ids, images, mm, num_generations):
        ids = [tok(t, add_special_tokens=False)["input_ids"] + ([] if cut else [eos]) for t, cut in script]
        return ids, None

    trainer._generate_single_turn = scripted
    trainer.model.train()
    trainer.state.global_step = 5
    out = trainer._generate_and_score_completions(inputs)

    # expected, from the texts with the task and advantages.py only
    multi = method in A.MULTI_ANSWER
    m = 3 if multi else 1
    problems = {p.id: p for p in maze.load("train", limit=2)}
    rewards = np.zeros((2, G, m, maze.d))
    keys = [[None] * G for _ in range(2)]
    for i, (text, cut) in enumerate(script):
        b, g = divmod(i, G)
        p = problems[pids[b]]
        answers = maze.parse(text, m if multi else None)
        r = maze.rewards(p, answers)
        keys[b][g] = [maze.dedup_key(p, a, ri) if a is not None else None for a, ri in zip(answers, r)]
        rewards[b, g] = 0.0 if cut else r
    if multi:
        rewards = A.dedupe_chains(rewards, keys)
    row_w = None
    if method == "goal_cond":
        row_w = np.repeat(np.array([r["goal_weights"] for r in rows])[:, None, :], G, axis=1)
    if method == "random_weight":
        rng = np.random.default_rng([SEED, 5, 2])
        row_w = np.stack([rng.dirichlet(np.ones(maze.d), size=G) for _ in range(2)])
    expected = A.compute_advantages(method, rewards, rng=np.random.default_rng([SEED, 5, 1]), row_weights=row_w,
                                    K=16, alpha=1.0)
    got = out["advantages"].detach().cpu().numpy().reshape(2, G)
    assert np.abs(expected).max() > 0.1, "script gives no signal: the test would pass vacuously"
    np.testing.assert_allclose(got, expected.astype(np.float32), rtol=1e-5, atol=1e-5)
    # TRL's own logs carry the per-component rewards and our curves
    logged = trainer._metrics["train"]
    for name in maze.component_names:
        assert f"rewards/{name}/mean" in logged
    assert logged["vpo/truncated"][-1] == pytest.approx(1 / 8)
    assert np.isfinite(logged["vpo/objective"][-1]) and np.isfinite(logged["vpo/diversity"][-1])


def test_component_rewards_are_answer_means(maze, routes):
    from vpo_harness.training.trl_vpo import TaskScorer
    from vpo_harness.training.rollouts import problem_to_json

    p = maze.load("train", limit=1)[0]
    r1, r2 = routes[p.id][0], routes[p.id][1]
    scorer = TaskScorer(maze, "vpo", 3, eos_token_ids=[99])
    from vpo_harness.training.data import chain_completion, route_words

    texts = [chain_completion([r1, r2]), chain_completion([r1])]
    funcs = scorer.reward_funcs()
    vals = np.array([f(completions=texts, problem=[problem_to_json(p)] * 2, completion_ids=[[1, 99], [1, 2]])
                     for f in funcs]).T
    want0 = (maze.reward(p, route_words(r1)) + maze.reward(p, route_words(r2))) / 3
    assert want0.max() > 0
    np.testing.assert_allclose(vals[0], want0)
    np.testing.assert_allclose(vals[1], 0.0)              # truncated: zero vector
    assert [f.__name__ for f in funcs] == list(maze.component_names)


def test_bad_config_is_one_clear_error():
    from vpo_harness.training.trl_vpo import TRLVPOConfig

    with pytest.raises(ValueError, match="unknown method"):
        TRLVPOConfig(method="ppo").validate()
    with pytest.raises(ValueError, match="at least 2"):
        TRLVPOConfig(group_size=1).validate()
    with pytest.raises(ValueError, match="divisible"):
        TRLVPOConfig(prompts_per_step=3, group_size=3, minibatches=2).validate()
    assert torch is not None
