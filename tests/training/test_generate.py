"""The trainer's batched KV-cache sampler against references: transformers' own greedy generate, and a
plain loop that re-encodes the whole sequence every step with the same noise (sampled)."""
from __future__ import annotations

import pytest
import torch

from vpo_harness.benchmarks import get_task
from vpo_harness.harness.core.models.prompting import render_messages
from vpo_harness.training.generate import gumbel_noise, pick, sample_tokens
from vpo_harness.training.model import build_model, build_tokenizer

TINY = dict(hidden=32, layers=2, heads=2, intermediate=64)


@pytest.fixture(scope="module")
def setup():
    tok = build_tokenizer()
    model = build_model(tok, seed=3, **TINY).eval()
    task = get_task("maze")
    ps = task.load("train", limit=3)
    # prompts of different lengths (left padding at work), each repeated as a group of rollouts
    msgs = [task.prompt(ps[0], style="compact"), task.multi_prompt(ps[1], 3, style="compact"),
            task.prompt(ps[2], style="compact")]
    prompts = [render_messages(m, tok) for m in msgs for _ in range(2)]
    enc = tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    return model, tok, enc


def reference(model, enc, *, max_new_tokens, temperature, eos_id, pad_id, seed):
    """No cache, no row dropping: the full sequence through the model at every step, one noise draw per
    step for every row, tokens after a row's end token replaced by padding."""
    gen = torch.Generator().manual_seed(seed)
    ids, mask = enc["input_ids"], enc["attention_mask"]
    n = ids.shape[0]
    out = torch.full((n, max_new_tokens), pad_id, dtype=torch.long)
    ended = torch.zeros(n, dtype=torch.bool)
    for t in range(max_new_tokens):
        pos = (mask.cumsum(1) - 1).clamp(min=0)
        with torch.no_grad():
            logits = model(input_ids=ids, attention_mask=mask, position_ids=pos).logits[:, -1]
        tok = pick(logits, gumbel_noise(gen, n, logits.shape[-1], "cpu"), temperature)
        out[:, t] = torch.where(ended, torch.full_like(tok, pad_id), tok)
        ended |= tok == eos_id
        if bool(ended.all()):
            return out[:, : t + 1]
        ids = torch.cat([ids, tok[:, None]], 1)
        mask = torch.cat([mask, torch.ones_like(tok[:, None])], 1)
    return out


def test_greedy_equals_transformers_generate(setup):
    model, tok, enc = setup
    with torch.no_grad():
        ref = model.generate(**enc, do_sample=False, max_new_tokens=12, pad_token_id=tok.pad_token_id,
                             eos_token_id=tok.eos_token_id)[:, enc["input_ids"].shape[1]:]
    got = sample_tokens(model, enc["input_ids"], enc["attention_mask"], max_new_tokens=12, temperature=0.0,
                        eos_id=tok.eos_token_id, pad_id=tok.pad_token_id, seed=0)
    assert torch.equal(got, ref[:, : got.shape[1]])


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_equals_the_per_token_reference_with_rows_ending_early(setup, temperature):
    model, tok, enc = setup
    # the end token is one the first row writes at step 3 (draws up to it are the same whatever the end
    # token is), so that row leaves the batch early and the others later or never
    kw = dict(max_new_tokens=10, temperature=temperature, pad_id=tok.pad_token_id, seed=11)
    probe = sample_tokens(model, enc["input_ids"], enc["attention_mask"], eos_id=-1, **kw)
    eos = int(probe[0, 3])
    kw["eos_id"] = eos
    got = sample_tokens(model, enc["input_ids"], enc["attention_mask"], **kw)
    ref = reference(model, enc, **kw)
    assert torch.equal(got, ref)
    assert (got == eos).any()


def test_a_rows_rollout_does_not_depend_on_the_other_rows(setup):
    """Dropping finished rows and encoding a shared prompt once must leave every row's draw alone."""
    model, tok, enc = setup
    kw = dict(max_new_tokens=8, temperature=1.0, eos_id=tok.eos_token_id, pad_id=tok.pad_token_id, seed=5)
    full = sample_tokens(model, enc["input_ids"], enc["attention_mask"], **kw)
    assert not torch.equal(full[0], full[1])           # same prompt, different noise: different rollouts
    assert torch.equal(full, sample_tokens(model, enc["input_ids"], enc["attention_mask"], **kw))
    assert not torch.equal(full, sample_tokens(model, enc["input_ids"], enc["attention_mask"], **{**kw, "seed": 6}))


def test_rollout_logprobs_are_the_update_forwards(setup):
    """The update takes PPO's old log-probabilities and the entropy from the sampler: they must be what a
    full forward over the finished sequences gives (temperature 1), on every completion token."""
    from vpo_harness.training.generate import rollouts
    from vpo_harness.training.rl import token_logprobs

    model, tok, enc = setup
    prompts = tok.batch_decode(enc["input_ids"], skip_special_tokens=False)
    prompts = [p.replace(tok.pad_token, "") for p in prompts]
    r = rollouts(model, tok, prompts, max_new_tokens=9, temperature=0.7, seed=2)
    lp, ent = token_logprobs(model, r.seqs, r.mask, r.P, with_entropy=True)
    cm = r.mask[:, r.P:].bool()
    assert torch.allclose(lp[cm], r.logprobs[cm], atol=1e-4)
    assert torch.allclose(ent[cm], r.entropy[cm], atol=1e-4)
    assert bool((r.logprobs[~cm] == 0).all())
