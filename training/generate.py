"""Batched rollout sampling with a KV cache: one model call per token step, rows leave when they end.

Why not ``model.generate``: for a policy of about a million parameters the forward pass is a few
milliseconds, and transformers' generation loop (logits processors, stopping criteria, cache and mask
bookkeeping for every row, also the finished ones) costs several times that per step on a CPU. Here a
step is one forward on the rows still writing, with the model's own cache; a row that wrote the end
token is dropped from the batch and from the cache, so the long tail of a batch costs what its few
unfinished rows cost.

Why Gumbel noise drawn for every row at every step: the token a row samples then depends only on
(seed, row, step), never on which other rows are still in the batch, so dropping finished rows does
not change any row's rollout, and a plain no-cache loop with the same noise reproduces it (the tests'
reference). ``argmax(logits / T + Gumbel)`` is an exact draw from ``softmax(logits / T)``.

The G rollouts of a prompt group share the prompt, so each distinct prompt is encoded once and its cache
copied to its rows: the prompt forward costs B prompts, not B x G.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import torch


def _cache_kwarg(model: Any) -> str:
    """The forward's name for the KV cache: ``cache`` in recent transformers, ``past_key_values`` before."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def _cache_of(output: Any) -> Any:
    """The cache a forward returned (``cache`` in recent transformers, ``past_key_values`` before)."""
    cache = getattr(output, "cache", None)
    return cache if cache is not None else output.past_key_values


def gumbel_noise(generator: torch.Generator, rows: int, vocab: int, device: Any) -> torch.Tensor:
    """One step's Gumbel(0, 1) noise for every row of the batch (finished rows included)."""
    u = torch.rand((rows, vocab), generator=generator, device=device)
    return -torch.log(-torch.log(u.clamp_min(1e-20)))


def pick(logits: torch.Tensor, noise: torch.Tensor, temperature: float) -> torch.Tensor:
    """Next token of each row: greedy at temperature 0, else a Gumbel-max draw at ``temperature``."""
    if temperature <= 0:
        return logits.argmax(-1)
    return (logits.float() / temperature + noise).argmax(-1)


@torch.no_grad()
def sample_tokens(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, *, max_new_tokens: int,
                  temperature: float, eos_id: int, pad_id: int, seed: int) -> torch.Tensor:
    """Completion tokens (N, T) of left-padded prompts; T is the longest completion (at most
    ``max_new_tokens``). A row ends with its end token and is padded with ``pad_id`` after it."""
    return sample_with_logprobs(model, input_ids, attention_mask, max_new_tokens=max_new_tokens,
                                temperature=temperature, eos_id=eos_id, pad_id=pad_id, seed=seed)[0]


@torch.no_grad()
def sample_with_logprobs(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, *, max_new_tokens: int,
                         temperature: float, eos_id: int, pad_id: int,
                         seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`sample_tokens` plus, per completion token, its log-probability and the entropy of the
    policy's distribution there (temperature 1, the distribution PPO's ratio is taken under; zero after
    a row's end). Why: they are what the RL update's "old" log-probabilities would recompute with one
    more forward pass over every rollout; the logits are already here."""
    n, dev = input_ids.shape[0], input_ids.device
    gen = torch.Generator(device=dev).manual_seed(int(seed))
    out = torch.full((n, max_new_tokens), pad_id, dtype=torch.long, device=dev)
    lp = torch.zeros((n, max_new_tokens), dtype=torch.float32, device=dev)
    ent = torch.zeros_like(lp)
    if n == 0 or max_new_tokens <= 0:
        return out[:, :0], lp[:, :0], ent[:, :0]
    key = _cache_kwarg(model)
    mask = attention_mask.long()
    pos = (mask.cumsum(1) - 1).clamp(min=0)
    # the G rollouts of a group share their prompt: encode each distinct prompt once, then copy its cache
    uniq, inverse = torch.unique(input_ids, dim=0, return_inverse=True)
    first = torch.full((uniq.shape[0],), n, dtype=torch.long, device=dev).scatter_reduce(
        0, inverse, torch.arange(n, device=dev), reduce="amin")
    res = model(input_ids=input_ids[first], attention_mask=mask[first], position_ids=pos[first], use_cache=True,
                logits_to_keep=1)
    cache, logits = _cache_of(res), res.logits[:, -1][inverse]
    cache.batch_select_indices(inverse)
    nxt_pos = pos[:, -1:] + 1
    alive = torch.arange(n, device=dev)              # original row of each batch row
    width = 0
    for t in range(max_new_tokens):
        noise = gumbel_noise(gen, n, logits.shape[-1], dev)[alive]
        tok = pick(logits, noise, temperature)
        out[alive, t] = tok
        logp = torch.log_softmax(logits.float(), dim=-1)
        lp[alive, t] = logp.gather(-1, tok[:, None]).squeeze(-1)
        ent[alive, t] = -(logp.exp() * logp).sum(-1)
        width = t + 1
        going = tok != eos_id
        if t == max_new_tokens - 1 or not bool(going.any()):
            break
        if not bool(going.all()):                    # drop finished rows from the batch and the cache
            keep = going.nonzero().squeeze(1)
            cache.batch_select_indices(keep)
            alive, tok, mask, nxt_pos = alive[keep], tok[keep], mask[keep], nxt_pos[keep]
        mask = torch.cat([mask, mask.new_ones((mask.shape[0], 1))], dim=1)
        res = model(input_ids=tok[:, None], attention_mask=mask, position_ids=nxt_pos, use_cache=True,
                    **{key: cache})
        cache, logits = _cache_of(res), res.logits[:, -1]
        nxt_pos = nxt_pos + 1
    return out[:, :width], lp[:, :width], ent[:, :width]


@dataclass
class Rollouts:
    """Sampled completions: sequences (prompt + completion), their mask, the prompt width, the texts,
    and per completion token the sampling policy's log-probability and entropy (temperature 1)."""

    seqs: torch.Tensor
    mask: torch.Tensor
    P: int
    texts: list[str]
    logprobs: torch.Tensor
    entropy: torch.Tensor


@torch.no_grad()
def sample(model: Any, tok: Any, prompts: list[str], *, max_new_tokens: int, temperature: float,
           seed: int) -> tuple[torch.Tensor, torch.Tensor, int, list[str]]:
    """Left-padded prompts -> (sequences, attention mask, prompt width, completion texts).

    A row that ends with the end token has it inside the mask; ``mask[:, -1]`` is 1 only for rows that
    were still going at the token limit (see :func:`truncated`)."""
    r = rollouts(model, tok, prompts, max_new_tokens=max_new_tokens, temperature=temperature, seed=seed)
    return r.seqs, r.mask, r.P, r.texts


@torch.no_grad()
def rollouts(model: Any, tok: Any, prompts: list[str], *, max_new_tokens: int, temperature: float,
             seed: int) -> Rollouts:
    """:func:`sample` with the per-token log-probabilities and entropies the update needs."""
    enc = {k: v.to(model.device) for k, v in tok(prompts, return_tensors="pt", padding=True,
                                                 add_special_tokens=False).items()}
    gen, lp, ent = sample_with_logprobs(model, enc["input_ids"], enc["attention_mask"], max_new_tokens=max_new_tokens,
                                        temperature=temperature, eos_id=tok.eos_token_id, pad_id=tok.pad_token_id,
                                        seed=seed)
    out = torch.cat([enc["input_ids"], gen], dim=1)
    P = enc["input_ids"].shape[1]
    # completion mask: tokens up to and including the first end token
    is_eos = gen == tok.eos_token_id
    after = (is_eos.cumsum(dim=1) - is_eos.long()) > 0
    comp_mask = (~after).long()
    mask = torch.cat([enc["attention_mask"], comp_mask], dim=1)
    texts = tok.batch_decode(gen.masked_fill(after, tok.pad_token_id), skip_special_tokens=True)
    return Rollouts(out, mask, P, texts, lp, ent)
