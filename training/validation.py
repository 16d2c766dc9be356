"""The RL trainer's validation evaluation and each method's own objective on it.

Each method is followed on what it optimises (docs/training_protocol.md): GRPO and the weighted GRPO
variants the mean task scalar of one answer; Max-at-K best@k of single answers at its training k
(max(2, G // 2) = 4 at G = 8); Multi-RLVR its set reward, the sum of a chain's deduplicated answers'
scalars; VPO its set reward, E_w[max over the chain's answers of w . r] with 100 fixed Dirichlet(1)
weights. Every evaluation also logs best@1/8/30 of the pool, its diversity and the parse rate, so the
curves of all methods compare on the test metric too.

The evaluation samples at the demo's temperature with the same seed each time (common random numbers:
two evaluations differ by the policy, not by the draw), on the ``val`` split, which no test figure uses.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from vpo_harness.benchmarks.base import Benchmark, Problem
from vpo_harness.benchmarks.scoring import score_chain
from vpo_harness.harness.core.metrics import best_at_k, dirichlet_weights, mean_pairwise_l1
from vpo_harness.harness.core.models.prompting import render_messages
from vpo_harness.training import advantages as A
from vpo_harness.training.generate import sample

#: the pool every evaluation draws per maze (the demo's, and the paper's k)
POOL = 30

SELECTION = {"vpo": "vpo_objective", "max_at_k": "max_at_k_objective", "grpo": "mean_scalar",
             "multi_rlvr": "multi_rlvr_objective", "random_weight": "mean_scalar", "goal_cond": "mean_scalar"}
#: Max-at-K's k at G = 8 (training/advantages.py: max(2, G // 2))
MAX_AT_K_K = 4
#: weights of the VPO objective: fixed across evaluations (common random numbers)
VPO_WEIGHTS = 100


def selection_objective(method: str) -> str:
    """The key of :func:`evaluate`'s result a method's early stopping follows."""
    if method not in SELECTION:
        raise ValueError(f"unknown method {method!r}; known: {', '.join(SELECTION)}")
    return SELECTION[method]


@dataclass(frozen=True)
class ValSettings:
    limit: int = 50
    temperature: float = 0.7
    seed: int = 12345
    prompt_style: str = "compact"
    max_new_tokens_single: int = 40
    max_new_tokens_multi: int = 110


def evaluate(policy: Any, tok: Any, task: Benchmark, problems: Sequence[Problem], method: str, m: int,
             vs: ValSettings, chat_template_args: dict[str, Any] | None = None) -> dict[str, float]:
    """best@30, mean scalar, the Multi-RLVR objective and the parse rate of the policy on ``problems``
    (answers per rollout: ``m`` for multi-answer methods, else 1), plus ``objective``, the method's."""
    mm = m if method in A.MULTI_ANSWER else 1
    n = POOL // mm
    msgs = [task.multi_prompt(p, mm, style=vs.prompt_style) if mm > 1 else task.prompt(p, style=vs.prompt_style)
            for p in problems]
    prompts = [render_messages(x, tok, chat_template_args) for x in msgs for _ in range(n)]
    was_training = policy.training
    policy.eval()
    _, _, _, texts = sample(policy, tok, prompts, max_new_tokens=vs.max_new_tokens_multi if mm > 1 else vs.max_new_tokens_single,
                            temperature=vs.temperature, seed=vs.seed)
    policy.train(was_training)
    pools, per_chain, parsed, vpo_obj, divs = [], [], [], [], []
    w = dirichlet_weights(task.d, VPO_WEIGHTS, 1.0, np.random.default_rng(vs.seed))      # (K, d)
    for i, p in enumerate(problems):
        chains = [score_chain(task, p, t, mm) for t in texts[i * n:(i + 1) * n]]
        r = np.concatenate([np.asarray(c.rewards, dtype=float) for c in chains])       # (n * mm, d)
        pools.append(task.scalar(r))
        ded = np.stack([np.asarray(c.rewards, dtype=float) for c in chains])[None]       # (1, n, mm, d)
        if mm > 1:
            ded = A.dedupe_chains(ded, [[list(c.keys) for c in chains]])
        per_chain.append(A.multi_rlvr_rewards(ded)[0].mean())
        vpo_obj.append(A.vpo_rewards(ded, w[None])[0].mean())
        divs.append(mean_pairwise_l1(r))
        parsed += [task.parse(t, mm if mm > 1 else None)[0] is not None for t in texts[i * n:(i + 1) * n]]
    P = np.stack(pools)
    res = {"best_at_30": float(np.nanmean(best_at_k(P, POOL))),
           "best_at_1": float(np.nanmean(best_at_k(P, 1))), "best_at_8": float(np.nanmean(best_at_k(P, 8))),
           "max_at_k_objective": float(np.nanmean(best_at_k(P, MAX_AT_K_K))),
           "vpo_objective": float(np.mean(vpo_obj)), "diversity": float(np.mean(divs)),
           "mean_scalar": float(np.mean([x.mean() for x in pools])),
           "multi_rlvr_objective": float(np.mean(per_chain)),
           "first_answer_parse_rate": float(np.mean(parsed)), "problems": len(problems)}
    res["objective"] = res[selection_objective(method)]
    return res
