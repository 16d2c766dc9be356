"""Stage 2: on-policy RL from the warm start, one code path for every advantage estimator.

Each step, top to bottom:
  1. pick B training mazes; build their prompts (m-answer chain prompts for VPO / Multi-RLVR,
     single-answer prompts otherwise; goal-conditioned GRPO appends its weights to the prompt);
  2. sample G rollouts per prompt from the current policy (temperature 1.0);
  3. parse and score every answer with the task -> rewards (B, G, m, d); remove duplicate answers;
  4. advantages (B, G) from the chosen estimator (training/advantages.py) -- the only method-specific line;
  5. PPO-clip policy loss (dual-clip 3.0 for negative advantages) on every completion token with the
     rollout's advantage, plus the low-variance (k3) KL loss to the frozen warm start, both averaged over
     all completion tokens of the minibatch (veRL's token-mean); a couple of minibatch updates.
The defaults are the authors' veRL recipe where a tiny CPU model allows (docs/training_protocol.md
lists each departure beside their value).
Curves (task scalar, diversity, KL, entropy, ...) go to rl_curves.jsonl / rl_curves.png in the run folder.
"""
from __future__ import annotations

import argparse
import copy
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from vpo_harness.harness.core.progress import progress as tqdm

from vpo_harness.benchmarks import get_task
from vpo_harness.benchmarks.scoring import score_chain
from vpo_harness.harness.core.metrics import mean_pairwise_l1
from vpo_harness.harness.core.models.zoo import TINY_MAZE_DEFAULTS
from vpo_harness.harness.core.models.prefill import join
from vpo_harness.training import advantages as A
from vpo_harness.training.common import CurveLog, load_state, plot_curves, save_state, seed_everything, set_threads
from vpo_harness.training.data import augment
from vpo_harness.training.early_stop import EarlyStopping
from vpo_harness.training.generate import rollouts, sample  # noqa: F401  (sample: the trainer's sampler, also for quick_eval)
from vpo_harness.training.prefix import render_prompt
from vpo_harness.training.model import load_checkpoint, save_checkpoint


@dataclass
class RLConfig:
    init: str = "runs/train/maze-sft/checkpoint"   # the warm start (also the KL reference)
    out: str = "runs/train/maze-vpo"
    task: str = "maze"
    method: str = "vpo"
    split: str = "train"
    limit: int | None = None
    #: the 8 dihedral images of every train maze (the authors train on the 1000 mazes as they are)
    augment: bool = False
    prompt_style: str = TINY_MAZE_DEFAULTS.prompt_style
    m: int = 3                        # answers per chain for multi-answer methods
    steps: int = 80
    prompts_per_step: int = 8         # B
    group_size: int = 8               # G
    temperature: float = 1.0
    max_new_tokens_single: int = TINY_MAZE_DEFAULTS.max_tokens_single
    max_new_tokens_multi: int = TINY_MAZE_DEFAULTS.max_tokens_multi
    lr: float = 1e-4
    clip: float = 0.2
    #: dual-clip: for a negative advantage the ratio's loss is capped at clip_ratio_c * |A| (veRL's
    #: ``clip_ratio_c``, 3.0 in the authors' runs); 0 turns it off
    clip_ratio_c: float = 3.0
    #: "token-mean": one mean over every completion token of the minibatch (veRL's ``loss_agg_mode``,
    #: the authors'); "seq-mean": per-sequence token mean, then the batch mean (older runs)
    loss_agg: str = "token-mean"
    kl_coef: float = 1e-3
    #: AdamW as the authors' actor optimiser (betas, weight decay)
    betas: tuple[float, float] = (0.9, 0.999)
    weight_decay: float = 0.01
    minibatches: int = 2
    ppo_epochs: int = 1
    K: int = 100                      # VPO weights per group
    alpha: float = 1.0
    sobol: bool = False
    #: "score": a rollout cut by the token limit is scored as its text parses (a chain keeps the answers
    #: that closed), as the authors' reward function scores veRL's truncated responses; "zero": it scores
    #: the zero vector (older runs)
    truncated_reward: str = "score"
    max_k: int | None = None          # max@k's k (None: max(2, G // 2))
    seed: int = 42
    threads: int = 2
    save_every: int = 10
    #: also keep a copy of every saved checkpoint as ``step_NNNN/`` (for choosing the step on validation)
    snapshots: bool = False
    time_budget_s: float | None = None
    #: the chat template's keyword arguments for rollout prompts (as `vpo run --chat-template-args`)
    chat_template_args: dict[str, Any] = field(default_factory=dict)
    #: "task": the task prompt; "mutation": a mutation prompt showing a seeded parent route (a random
    #: walk or a perturbed search-optimal route) with its reward vector: trains a search operator
    prompt_mode: str = "task"
    targets_cache: str | None = None  # mutation mode: search targets JSON (the warm start's targets.json)
    #: torch device of policy and reference ("cuda" on a GPU machine: bench/gpu_check.sh times it)
    device: str = "cpu"
    #: task mode: fraction of prompt groups whose G rollouts continue one prefilled, uniformly cut
    #: search-optimal route, as `vpo evolve --prompt-mode prefix` prefills (training/prefix.py)
    prefix_fraction: float = 0.0
    #: where prefilled starts come from: "random" (a route blind to the reward, training/data.py
    #: ``random_route``, so prefixes teach the format and not the optimum) or "search" (a search-optimal route)
    prefix_routes: str = "random"
    #: evaluate on the val split every this many steps (0: never) and stop after ``patience``
    #: evaluations without improvement of the method's objective (training/validation.py); the best
    #: step's weights are kept in ``best/`` (the warm start is evaluation 0)
    val_every: int = 0
    #: "last": the run trains all ``steps`` and its result is the last step's weights, as the authors
    #: take theirs (validation only draws curves; the best evaluated step is still kept in ``best/`` as a
    #: labelled variant); "val": early stopping on the method's validation objective, ``best/`` is the result
    select: str = "last"
    patience: int = 3
    val_limit: int = 50
    val_temperature: float = 0.7


# ---- rollouts -----------------------------------------------------------------------------------------
def truncated(seqs: torch.Tensor, P: int, eos_id: int) -> np.ndarray:
    """(N,) True where the completion never produced the end token (cut by the token limit)."""
    return ~(seqs[:, P:] == eos_id).any(dim=1).cpu().numpy()


def token_logprobs(model: Any, seqs: torch.Tensor, mask: torch.Tensor, P: int,
                   with_entropy: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Log-probabilities of the completion tokens (B, T-P), positions counted from the first real token."""
    pos = (mask.cumsum(dim=1) - 1).clamp(min=0)
    logits = model(input_ids=seqs, attention_mask=mask, position_ids=pos).logits[:, P - 1:-1].float()
    logp_all = F.log_softmax(logits, dim=-1)
    lp = logp_all.gather(-1, seqs[:, P:].unsqueeze(-1)).squeeze(-1)
    ent = -(logp_all.exp() * logp_all).sum(-1) if with_entropy else None
    return lp, ent


#: veRL clamps the low-variance KL per token to this range
KL_CLAMP = 10.0


def policy_gradient_terms(ratio: torch.Tensor, adv: torch.Tensor, clip: float, clip_ratio_c: float) -> torch.Tensor:
    """Per-token PPO-clip loss with dual-clip: for A < 0 the clipped loss is also capped at
    ``clip_ratio_c * |A|``, so one stale token with a huge ratio cannot dominate the step (veRL's
    ``compute_policy_loss``). ``clip_ratio_c <= 0``: plain PPO-clip."""
    a = adv.unsqueeze(1) if adv.dim() == 1 else adv
    pg = torch.maximum(-a * ratio, -a * torch.clamp(ratio, 1 - clip, 1 + clip))
    if clip_ratio_c > 0:
        pg = torch.where(a < 0, torch.minimum(pg, -a * clip_ratio_c), pg)
    return pg


def low_var_kl(lp: torch.Tensor, ref_lp: torch.Tensor) -> torch.Tensor:
    """k3 estimator of KL(policy || ref) per token, >= 0, clamped to [-10, 10] as veRL's ``low_var_kl``."""
    d = ref_lp - lp
    return torch.clamp(torch.exp(d) - d - 1.0, min=-KL_CLAMP, max=KL_CLAMP)


def aggregate(x: torch.Tensor, cm: torch.Tensor, mode: str) -> torch.Tensor:
    """Token losses -> one number. "token-mean": every completion token of the minibatch weighs the
    same (long rollouts weigh more); "seq-mean": every rollout weighs the same."""
    if mode == "token-mean":
        return (x * cm).sum() / cm.sum().clamp(min=1)
    if mode == "seq-mean":
        return ((x * cm).sum(1) / cm.sum(1).clamp(min=1)).mean()
    raise ValueError(f"unknown loss_agg {mode!r}; known: token-mean, seq-mean")


def ppo_loss(policy: Any, seqs: torch.Tensor, mask: torch.Tensor, P: int, old_lp: torch.Tensor,
             ref_lp: torch.Tensor, adv: torch.Tensor, *, clip: float = 0.2, kl_coef: float = 1e-3,
             clip_ratio_c: float = 3.0, loss_agg: str = "token-mean") -> tuple[torch.Tensor, float, float]:
    """PPO-clip (dual-clip) surrogate with the rollout's advantage on every completion token, plus the
    low-variance KL loss to the reference, each aggregated by ``loss_agg`` (veRL adds the two the same
    way). Returns (loss, mean token KL, clip fraction)."""
    cm = mask[:, P:].float()
    lp, _ = token_logprobs(policy, seqs, mask, P)
    ratio = torch.exp(lp - old_lp)
    pg = policy_gradient_terms(ratio, adv, clip, clip_ratio_c)
    kl = low_var_kl(lp, ref_lp)
    loss = aggregate(pg, cm, loss_agg) + kl_coef * aggregate(kl, cm, loss_agg)
    n_tok = cm.sum().clamp(min=1)
    kl_mean = float(((kl * cm).sum() / n_tok).detach())
    clipfrac = float(((((ratio - 1).abs() > clip).float() * cm).sum() / n_tok).detach())
    return loss, kl_mean, clipfrac


# ---- prefilled prompts and validation ---------------------------------------------------------------------
def default_targets_cache(cfg: RLConfig) -> str:
    """Search targets of the train mazes: the warm start's (SFT writes them next to its checkpoint), else
    a new cache in the run folder (search takes seconds per maze, so it is computed once)."""
    near_init = Path(cfg.init).parent / "targets.json"
    return str(near_init if near_init.exists() else Path(cfg.out) / "targets.json")


def step_prefix_rng(seed: int, step: int) -> np.random.Generator:
    """Stream 4 of a step: which groups are prefilled and where their routes are cut. A stream of its
    own, so turning prefixes on leaves every other draw of the step (prompts, weights) unchanged."""
    return np.random.default_rng([seed, step, 4])


def group_prefix(task: Any, problem: Any, targets: dict[str, list[dict[str, Any]]] | None, m: int,
                 rng: np.random.Generator, fraction: float) -> str:
    """The prefix one prompt group shares ("" for most): a cut route of the maze, a search-optimal one
    from ``targets``, or (``targets`` None) a :func:`~vpo_harness.training.data.random_route`."""
    from vpo_harness.training.data import random_route, route_words
    from vpo_harness.training.prefix import cut_route, draws_prefix

    if not draws_prefix(rng, fraction):
        return ""
    if targets is None:
        route = random_route(problem, rng)
    else:
        routes = targets.get(problem.id, [])
        if not routes:
            return ""
        route = routes[int(rng.integers(len(routes)))]["route"]
    answer = route_words(route)
    return cut_route(task, problem, answer, m, rng).text


class Validator:
    """Evaluations on the val split (val_curves.jsonl), the early-stopping rule over them, and the best
    step's weights in ``best/``. Resuming replays the logged evaluations up to the resumed step."""

    def __init__(self, cfg: RLConfig, task: Any, tok: Any, out: Path, start: int):
        from vpo_harness.training.validation import ValSettings, selection_objective

        self.cfg, self.task, self.tok, self.out = cfg, task, tok, out
        self.key = selection_objective(cfg.method)
        self.settings = ValSettings(limit=cfg.val_limit, temperature=cfg.val_temperature, seed=cfg.seed + 777,
                                    prompt_style=cfg.prompt_style, max_new_tokens_single=cfg.max_new_tokens_single,
                                    max_new_tokens_multi=cfg.max_new_tokens_multi)
        self.log = CurveLog(out / "val_curves.jsonl")
        self.log.truncate_after(start)
        self.problems = task.load("val", limit=cfg.val_limit)
        # with select="last" validation only draws curves: no evaluation stops the run
        patience = cfg.patience if cfg.select == "val" else 10**9
        self.stopping = EarlyStopping.replay(patience, self.log.rows())

    def evaluate(self, policy: Any, step: int) -> bool:
        """Evaluate the weights after ``step`` updates (once per step); True when the run should stop."""
        from vpo_harness.training.validation import evaluate

        if any(r["step"] == step for r in self.log.rows()):
            return self.stopping.stop
        tv = time.time()
        res = evaluate(policy, self.tok, self.task, self.problems, self.cfg.method, self.cfg.m, self.settings,
                       self.cfg.chat_template_args)
        improved = self.stopping.update(step, res["objective"])
        self.log.write({"step": step, "selection": self.key, "improved": improved, "val_s": time.time() - tv, **res})
        print(f"val step {step}: {self.key} {res['objective']:.4f} (best@30 {res['best_at_30']:.4f}, mean "
              f"{res['mean_scalar']:.4f}){' new best' if improved else f', {self.stopping.bad}/{self.cfg.patience} without improvement'}")
        if improved:
            save_checkpoint(policy, self.tok, self.out / "best", extra={
                "stage": "rl", "method": self.cfg.method, "step": step, "config": asdict(self.cfg)})
        return self.stopping.stop

    def finish(self) -> dict[str, Any]:
        """val_choice.json: the evaluated steps, the result's step (the last one under select="last", the
        best under "val"), whether the method's own objective rose from the warm start there, and the
        validation-selected step beside it."""
        es = self.stopping
        warm = next((v for st, v in es.history if st == 0), None)
        last_step, last_value = es.history[-1] if es.history else (None, None)
        if self.cfg.select == "last":
            chosen, value = last_step, last_value
            rule = ("the last step, as the authors take theirs; validation only draws the curve "
                    "(docs/training_protocol.md)")
        else:
            chosen, value = es.best_step, es.best_value
            rule = ("highest validation objective; ties: the earlier step; stop after patience evaluations "
                    "without improvement (docs/training_protocol.md)")
        choice = {"selection": self.key, "select": self.cfg.select, "chosen_step": chosen, "chosen_value": value,
                  "best_step": es.best_step, "best_value": es.best_value, "last_step": last_step,
                  "last_value": last_value, "warm_start_value": warm,
                  "rose": bool(warm is not None and value is not None and value > warm),
                  "beat_warm_start": bool(es.best_step not in (None, 0)),
                  "stopped_early": es.stop, "patience": self.cfg.patience, "val_every": self.cfg.val_every,
                  "val_mazes": len(self.problems), "table": [[st, v] for st, v in es.history], "rule": rule}
        (self.out / "val_choice.json").write_text(json.dumps(choice, indent=2))
        return choice


# ---- the trainer ----------------------------------------------------------------------------------------
def train_rl(cfg: RLConfig) -> Path:
    if cfg.method not in A.METHODS:
        raise ValueError(f"unknown method {cfg.method!r}; known: {', '.join(A.METHODS)}")
    if cfg.select not in ("last", "val"):
        raise ValueError(f"unknown select {cfg.select!r}; known: last, val")
    if cfg.truncated_reward not in ("score", "zero"):
        raise ValueError(f"unknown truncated_reward {cfg.truncated_reward!r}; known: score, zero")
    set_threads(cfg.threads)
    seed_everything(cfg.seed)
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "rl_config.json").write_text(json.dumps(asdict(cfg), indent=2))
    ckpt, state_path = out / "checkpoint", out / "checkpoint" / "state.pt"
    log = CurveLog(out / "rl_curves.jsonl")

    task = get_task(cfg.task)
    problems = task.load(cfg.split, limit=cfg.limit)
    targets: dict[str, list[dict[str, Any]]] = {}
    if cfg.prefix_routes not in ("random", "search"):
        raise ValueError(f"unknown prefix_routes {cfg.prefix_routes!r}; known: random, search")
    if cfg.prompt_mode == "mutation" or (cfg.prefix_fraction > 0 and cfg.prefix_routes == "search"):
        from vpo_harness.training.data import search_targets
        targets = search_targets(task, problems, seed=cfg.seed, cache=cfg.targets_cache or default_targets_cache(cfg))
    if cfg.prompt_mode not in ("task", "mutation"):
        raise ValueError(f"unknown prompt_mode {cfg.prompt_mode!r}; known: task, mutation")
    if cfg.augment:
        problems, targets = augment(problems, targets)
    multi = cfg.method in A.MULTI_ANSWER
    m = cfg.m if multi else 1
    max_new = cfg.max_new_tokens_multi if multi else cfg.max_new_tokens_single

    ref, tok = load_checkpoint(cfg.init)
    ref.to(cfg.device).eval().requires_grad_(False)
    policy = load_checkpoint(ckpt)[0].to(cfg.device) if state_path.exists() else copy.deepcopy(ref).requires_grad_(True)
    opt = torch.optim.AdamW(policy.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(cfg.betas[0], cfg.betas[1]))
    start = 0
    if state_path.exists():
        start = int(load_state(state_path, opt)["step"])
        log.truncate_after(start - 1)
        print(f"resuming RL from step {start}")

    val = Validator(cfg, task, tok, out, start) if cfg.val_every else None
    t0 = time.time()
    bar = tqdm(range(start, cfg.steps), desc=f"rl:{cfg.method}", initial=start, total=cfg.steps)
    stopped = val is not None and val.stopping.stop
    for step in ([] if stopped else bar):
        if val is not None and step % cfg.val_every == 0 and val.evaluate(policy, step):
            stopped = True
            save_checkpoint(policy, tok, ckpt, extra={"stage": "rl", "method": cfg.method, "step": step,
                                                      "config": asdict(cfg)})
            save_state(state_path, step=step, optimizer=opt)
            break
        rng = np.random.default_rng([cfg.seed, step])
        # 1. prompts
        idx = rng.choice(len(problems), size=cfg.prompts_per_step, replace=False)
        batch = [problems[i] for i in idx]
        row_w = None
        if cfg.method in ("random_weight", "goal_cond"):
            if cfg.method == "goal_cond":   # one w per group: it is part of the prompt the group shares
                gw = rng.dirichlet(np.full(task.d, cfg.alpha), size=len(batch))
                row_w = np.repeat(gw[:, None, :], cfg.group_size, axis=1)
            else:                            # hidden, one per rollout
                row_w = rng.dirichlet(np.full(task.d, cfg.alpha), size=(len(batch), cfg.group_size))
        msgs, prefixes = [], []
        prng = step_prefix_rng(cfg.seed, step)
        for b, p in enumerate(batch):
            prefixes.append(group_prefix(task, p, targets if cfg.prefix_routes == "search" else None, m, prng,
                                         cfg.prefix_fraction)
                            if cfg.prompt_mode == "task" else "")
            if cfg.prompt_mode == "mutation":
                from vpo_harness.training.mutation_data import mutation_prompt
                msgs.append(mutation_prompt(task, p, targets.get(p.id, []), m, rng, style=cfg.prompt_style))
                continue
            mm = task.multi_prompt(p, m, style=cfg.prompt_style) if multi else task.prompt(p, style=cfg.prompt_style)
            if cfg.method == "goal_cond":
                mm = A.goal_prompt(mm, row_w[b, 0], task.component_names)
            msgs.append(mm)
        prompts = [render_prompt(mm, tok, pre, cfg.chat_template_args)
                   for mm, pre in zip(msgs, prefixes) for _ in range(cfg.group_size)]

        # 2. rollouts
        tg = time.time()
        policy.eval()
        ro = rollouts(policy, tok, prompts, max_new_tokens=max_new, temperature=cfg.temperature,
                      seed=cfg.seed * 100_003 + step)
        seqs, mask, P, texts = ro.seqs, ro.mask, ro.P, ro.texts
        texts = [join(prefixes[i // cfg.group_size], t) for i, t in enumerate(texts)]   # graded: prefix + continuation
        gen_s = time.time() - tg
        ts = time.time()

        # 3. rewards (B, G, m, d) and dedup keys
        B, G = len(batch), cfg.group_size
        rewards = np.zeros((B, G, m, task.d))
        keys: list[list[list[Any]]] = []
        for b, p in enumerate(batch):
            keys.append([])
            for g in range(G):
                sc = score_chain(task, p, texts[b * G + g], m)
                rewards[b, g] = sc.rewards
                keys[b].append(sc.keys)
        cut = truncated(seqs, P, tok.eos_token_id).reshape(B, G)
        if cfg.truncated_reward == "zero":
            rewards[cut] = 0.0
        raw = rewards.copy()
        if multi:
            rewards = A.dedupe_chains(rewards, keys)

        # 4. advantages: the only method-specific line
        adv = A.compute_advantages(cfg.method, rewards, rng=np.random.default_rng([cfg.seed, step, 1]),
                                   row_weights=row_w, K=cfg.K, alpha=cfg.alpha, sobol=cfg.sobol, k=cfg.max_k)
        adv_t = torch.tensor(adv.reshape(-1), dtype=torch.float32, device=seqs.device)
        score_s = time.time() - ts
        tu = time.time()

        # 5. PPO-clip + KL to the warm start
        cmask = mask[:, P:].float()
        # the sampling policy's log-probabilities come with the rollouts (no second forward pass)
        old_lp, ent = ro.logprobs, ro.entropy
        with torch.no_grad():
            ref_lp, _ = token_logprobs(ref, seqs, mask, P)
        policy.train()
        n = seqs.shape[0]
        stats: dict[str, list[float]] = {"loss": [], "kl": [], "clipfrac": []}
        active = adv_t.abs() > 0            # rows with zero advantage only add KL; keep them for it
        # a step where every advantage is 0 has no policy-gradient signal; skipping it saves CPU time
        for _ in range(cfg.ppo_epochs if bool(active.any()) else 0):
            perm = torch.from_numpy(rng.permutation(n))
            for mb in perm.chunk(cfg.minibatches):
                loss, kl_mean, clipfrac = ppo_loss(policy, seqs[mb], mask[mb], P, old_lp[mb], ref_lp[mb],
                                                   adv_t[mb], clip=cfg.clip, kl_coef=cfg.kl_coef,
                                                   clip_ratio_c=cfg.clip_ratio_c, loss_agg=cfg.loss_agg)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
                opt.step()
                stats["loss"].append(loss.item())
                stats["kl"].append(kl_mean)
                stats["clipfrac"].append(clipfrac)

        update_s = time.time() - tu
        # how often a prefilled rollout's first answer parses (the prefix-mode format the policy must keep)
        pre_rows = [i for i in range(B * G) if prefixes[i // G]]
        pre_parse = (float(np.mean([task.parse(texts[i], m if multi else None)[0] is not None for i in pre_rows]))
                     if pre_rows else None)
        # curves: task scalar over all answers, success rate, reward-space diversity per prompt
        s = task.scalar(raw)                                    # (B, G, m)
        div = np.mean([mean_pairwise_l1(raw[b].reshape(-1, task.d)) for b in range(B)])
        row = {"step": step, "task_scalar": float(s.mean()), "best_in_group": float(s.reshape(B, -1).max(1).mean()),
               "completion": float(raw[..., 0].mean()), "diversity": float(div),
               "kl": float(np.mean(stats["kl"])) if stats["kl"] else 0.0, "entropy": float((ent * cmask).sum() / cmask.sum()),
               "loss": float(np.mean(stats["loss"])) if stats["loss"] else 0.0,
               "clipfrac": float(np.mean(stats["clipfrac"])) if stats["clipfrac"] else 0.0,
               "frac_active_rows": float(active.float().mean()),
               "completion_tokens": int(cmask.sum()), "truncated": float(cut.mean()), "gen_s": gen_s, "score_s": score_s, "update_s": update_s,
               "rollouts": int(seqs.shape[0]), "prefixed_groups": int(sum(1 for x in prefixes if x)),
               "prefix_parse_rate": pre_parse,
               "elapsed_s": time.time() - t0}
        log.write(row)
        bar.set_postfix(s=f"{row['task_scalar']:.3f}", div=f"{div:.2f}", kl=f"{row['kl']:.4f}")

        done = step == cfg.steps - 1 or (cfg.time_budget_s is not None and time.time() - t0 > cfg.time_budget_s)
        if (step + 1) % cfg.save_every == 0 or done:
            save_checkpoint(policy, tok, ckpt, extra={"stage": "rl", "method": cfg.method, "step": step + 1,
                                                      "config": asdict(cfg)})
            save_state(state_path, step=step + 1, optimizer=opt)
            if cfg.snapshots:
                import shutil
                shutil.copytree(ckpt, out / f"step_{step + 1:04d}", dirs_exist_ok=True)
        if done:
            break
    if val is not None and not stopped:      # the last weights are evaluated too
        last = int(json.loads((ckpt / "vpo_training.json").read_text())["step"]) if (ckpt / "vpo_training.json").exists() else start
        val.evaluate(policy, last)
    if val is not None:
        val.finish()
    plot_curves(out / "rl_curves.jsonl", out / "rl_curves.png",
                ["task_scalar", "completion", "diversity", "kl", "entropy"], f"RL ({cfg.method})")
    from vpo_harness.training.model_card import validation_section, write_eval_card

    final = (out / "best" if cfg.select == "val" and val is not None and (out / "best" / "config.json").exists()
             else ckpt)
    write_eval_card(final, engine="native", task=cfg.task, method=cfg.method, m=cfg.m,
                    trained=f"Trained with `vpo train` (training/rl.py) from `{cfg.init}`: {cfg.method} advantages, "
                            f"up to {cfg.steps} steps x {cfg.prompts_per_step} prompts x G = {cfg.group_size}, seed {cfg.seed}; "
                            "curves in the run folder (rl_curves.jsonl)." + validation_section(out))
    return final


def add_arguments(p: argparse.ArgumentParser) -> None:
    """One flag per RLConfig field, its type and default read from the dataclass (training/flags.py)."""
    from vpo_harness.training.flags import add_config_arguments

    add_config_arguments(p, RLConfig)


def main(argv: list[str] | None = None) -> None:
    from vpo_harness.training.flags import config_from_args, main_parser

    p, flags = main_parser(RLConfig, __doc__)
    print(train_rl(config_from_args(RLConfig, p.parse_args(argv), flags)))


if __name__ == "__main__":
    main()
