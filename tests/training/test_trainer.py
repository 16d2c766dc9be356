"""The tiny trainer: tokenizer/model contracts, augmentation, SFT and RL steps, checkpoints, resume."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from vpo_harness.benchmarks import get_task
from vpo_harness.training import data as D
from vpo_harness.training.model import PHRASES, build_model, build_tokenizer, load_checkpoint, save_checkpoint

TINY = dict(hidden=32, layers=1, heads=2, intermediate=64)


@pytest.fixture(scope="module")
def maze():
    return get_task("maze")


def test_tokenizer_roundtrip_chat_template_and_phrases(tmp_path, maze):
    from transformers import AutoTokenizer

    from vpo_harness.harness.core.models.prompting import render_messages

    tok = build_tokenizer()
    p = maze.load("train", limit=1)[0]
    for msgs in (maze.prompt(p, style="compact"), maze.multi_prompt(p, 3, style="compact")):
        text = render_messages(msgs, tok)
        assert text.startswith("<|user|>") and text.endswith("<|assistant|>")
        ids = tok(text, add_special_tokens=False)["input_ids"]
        assert tok.decode(ids) == text
        assert len(ids) < 0.6 * len(text)            # symbol+space merges and phrase tokens at work
    for ph in PHRASES:
        assert len(tok(ph, add_special_tokens=False)["input_ids"]) == 1, ph
    tok.save_pretrained(tmp_path)
    again = AutoTokenizer.from_pretrained(tmp_path)
    assert again.chat_template == tok.chat_template
    assert again("<route_2>RRD</route_2>", add_special_tokens=False)["input_ids"] == \
        tok("<route_2>RRD</route_2>", add_special_tokens=False)["input_ids"]


def test_default_model_fits_the_size_budget():
    m = build_model(build_tokenizer())
    n_bytes = sum(p.numel() for p in m.parameters()) * 4
    assert n_bytes < 10e6


def test_dihedral_augmentation_preserves_rewards(maze):
    ps = maze.load("train", limit=3)
    targets = D.search_targets(maze, ps, n_random=2)
    assert all(targets[p.id] for p in ps)
    aug_p, aug_t = D.augment(ps, targets)
    assert len(aug_p) == 24 and len({q.id for q in aug_p}) == 24
    grids = {tuple(q.data["grid"]) + (tuple(q.data["start"]),) for q in aug_p}
    assert len(grids) > 3                              # images really differ
    for q in aug_p:
        for t in aug_t[q.id]:
            r, _ = maze.simulate(q, D.route_words(t["route"]))
            np.testing.assert_allclose(r, t["r"])
            assert r[0] == 1.0


def test_examples_formats(maze):
    ps = maze.load("train", limit=4)
    targets = D.search_targets(maze, ps, n_random=2)
    ex = D.make_examples(maze, ps, targets, m=3, copies=4, multi_fraction=0.5, seed=0)
    singles = [c for _, c in ex if c.startswith("<answer>")]
    chains = [c for _, c in ex if c.startswith("<route_1>")]
    assert singles and chains and len(singles) + len(chains) == len(ex)
    for msgs, c in ex:
        m = 3 if c.startswith("<route_1>") else None
        answers = maze.parse(c, m)
        p = next(q for q in ps if q.data["grid"] and msgs == (maze.multi_prompt(q, 3, style="compact") if m
                                                               else maze.prompt(q, style="compact")))
        assert all(maze.reward(p, a)[0] == 1.0 for a in answers)


def _sft(tmp_path, steps, **kw):
    from vpo_harness.training.sft import SFTConfig, train_sft

    cfg = SFTConfig(out=str(tmp_path / "sft"), limit=4, augment=False, copies=8, steps=steps, batch_size=8,
                    lr=3e-3, warmup=2, save_every=5, log_every=1, threads=2, **TINY, **kw)
    return train_sft(cfg), cfg


def test_sft_lowers_loss_and_resumes(tmp_path):
    ckpt, _ = _sft(tmp_path, 12)
    rows = [json.loads(x) for x in (tmp_path / "sft" / "sft_curves.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == list(range(12))
    assert np.mean([r["loss"] for r in rows[-3:]]) < 0.85 * np.mean([r["loss"] for r in rows[:3]])
    assert (ckpt / "model.safetensors").exists() and (tmp_path / "sft" / "sft_curves.png").exists()
    # resume: a longer run continues from the saved step instead of restarting
    _sft(tmp_path, 14)
    rows = [json.loads(x) for x in (tmp_path / "sft" / "sft_curves.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == list(range(14))


def test_ppo_loss_moves_probability_towards_positive_advantages():
    from vpo_harness.training.rl import ppo_loss, sample, token_logprobs

    torch.manual_seed(0)
    tok = build_tokenizer()
    model = build_model(tok, **TINY)
    ref = build_model(tok, **TINY)
    ref.load_state_dict(model.state_dict())
    seqs, mask, P, _ = sample(model, tok, ["<|user|>hi<|end|><|assistant|>"] * 8, max_new_tokens=6,
                              temperature=1.0, seed=0)
    adv = torch.tensor([1.0, -1.0] * 4)
    with torch.no_grad():
        old, _ = token_logprobs(model, seqs, mask, P)
        ref_lp = old.clone()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    cm = mask[:, P:].float()
    for _ in range(5):
        loss, kl, _ = ppo_loss(model, seqs, mask, P, old, ref_lp, adv, clip=0.2, kl_coef=1e-3)
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        new, _ = token_logprobs(model, seqs, mask, P)
    gain = ((new - old) * cm).sum(1) / cm.sum(1)
    assert gain[adv > 0].mean() > gain[adv < 0].mean() + 0.05
    assert kl >= 0.0


@pytest.mark.parametrize("method", ["grpo", pytest.param("vpo", marks=pytest.mark.integration)])
def test_rl_steps_checkpoint_loads_in_hf_backend_and_is_deterministic(tmp_path, method):
    from vpo_harness.harness.core.models.base import GenRequest, SamplingConfig
    from vpo_harness.harness.core.models.hf import HFBackend
    from vpo_harness.training.rl import RLConfig, train_rl

    ckpt, _ = _sft(tmp_path, 3)

    def rl(out, steps):
        cfg = RLConfig(init=str(ckpt), out=str(out), method=method, limit=4, augment=False, steps=steps,
                       prompts_per_step=2, group_size=3, max_new_tokens_single=12, max_new_tokens_multi=16,
                       save_every=1, threads=2)
        return train_rl(cfg)

    a = rl(tmp_path / "a", 2)
    rows = [json.loads(x) for x in (tmp_path / "a" / "rl_curves.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 1]
    for key in ("task_scalar", "diversity", "kl", "entropy"):
        assert all(np.isfinite(r[key]) for r in rows)
    assert (tmp_path / "a" / "rl_curves.png").exists()
    # same seed, same curves (sampling and weights are seeded per step)
    rl(tmp_path / "b", 2)
    rows_b = [json.loads(x) for x in (tmp_path / "b" / "rl_curves.jsonl").read_text().splitlines()]
    drop = ("gen_s", "score_s", "update_s", "elapsed_s")  # timings
    assert [{k: v for k, v in r.items() if k not in drop} for r in rows] == \
           [{k: v for k, v in r.items() if k not in drop} for r in rows_b]
    # resume continues at step 2
    rl(tmp_path / "a", 3)
    rows = [json.loads(x) for x in (tmp_path / "a" / "rl_curves.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 1, 2]
    # the checkpoint is a plain HF folder that the hf backend loads and samples from
    be = HFBackend(str(a), batch_size=4)
    gens = list(be.generate([GenRequest("p", [{"role": "user", "content": "Budget: 3"}], (0, 1), (1, 2))],
                            SamplingConfig(temperature=0.7, max_tokens=8)))
    assert len(gens) == 2 and all(g.error is None for g in gens)
    model, tok = load_checkpoint(a)
    assert tok.chat_template and model.config.model_type == "llama"


def test_save_checkpoint_is_small_safetensors(tmp_path):
    tok = build_tokenizer()
    out = save_checkpoint(build_model(tok), tok, tmp_path / "ck", extra={"stage": "test"})
    assert (out / "model.safetensors").stat().st_size < 10e6
    assert json.loads((out / "vpo_training.json").read_text())["stage"] == "test"


def test_cli_registers_train_and_demo():
    from vpo_harness.harness.app.cli import build_parser

    p = build_parser()
    a = p.parse_args(["train", "--method", "max_at_k", "--rl-steps", "3"])
    assert a.method == "max_at_k" and a.rl_steps == 3 and callable(a.func)
    a = p.parse_args(["demo", "--limit", "2"])
    assert a.limit == 2 and callable(a.func)
    with pytest.raises(SystemExit):
        p.parse_args(["train", "--method", "ppo"])
