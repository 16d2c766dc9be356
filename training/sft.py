"""Stage 1: supervised warm start of the tiny policy: the answer format, not the answer.

One warm start serves every RL method: it is trained on both formats (single answer and m-answer
chains), so the four methods begin from the same weights and differ only in their training signal.
Its routes (``targets="random"``, the default) are valid S->E routes blind to the reward
(training/data.py ``random_route``); ``targets="search"`` trains on search-optimal routes instead, which
already teaches the set methods' target behaviour (kept for the search operators and older runs).

Read top to bottom: build data -> build model -> (resume) -> loop over shuffled minibatches -> save.
"""
from __future__ import annotations

import argparse
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from vpo_harness.harness.core.progress import progress as tqdm

from vpo_harness.benchmarks import get_task
from vpo_harness.harness.core.models.zoo import TINY_MAZE_DEFAULTS
from vpo_harness.training.common import CurveLog, load_state, plot_curves, save_state, seed_everything, set_threads
from vpo_harness.training.data import augment, encode_pairs, make_examples, make_format_examples, search_targets
from vpo_harness.training.model import build_model, build_tokenizer, load_checkpoint, save_checkpoint
from vpo_harness.training.model_card import generation_record


@dataclass
class SFTConfig:
    out: str = "runs/train/maze-sft"
    task: str = "maze"
    split: str = "train"
    limit: int | None = None          # number of train mazes (None: all 1000)
    augment: bool = True              # 8 dihedral images per maze
    m: int = 3
    multi_fraction: float = 0.5
    copies: int = 1                   # examples per (augmented) maze per epoch
    steps: int = 600
    batch_size: int = 32
    lr: float = 2e-3
    warmup: int = 30
    weight_decay: float = 0.01
    hidden: int = 128
    layers: int = 6
    heads: int = 4
    intermediate: int = 384
    seed: int = 42
    threads: int = 2
    save_every: int = 100
    log_every: int = 10
    time_budget_s: float | None = None   # stop early (and save) after this many seconds
    #: "task": the task prompt -> optimal routes; "mutation": a mutation prompt with a parent route
    #: -> routes that improve on it (training/mutation_data.py), for a search operator's warm start
    prompt_mode: str = "task"
    parents_per_maze: int = 2         # mutation mode: parents drawn per (augmented) maze
    #: task mode: fraction of examples that start from a prefilled, uniformly cut route (training/prefix.py)
    prefix_fraction: float = 0.0
    #: task mode: "random" (valid routes blind to the reward, drawn independently per answer) or
    #: "search" (search-optimal routes for random weightings; distinct routes per chain)
    targets: str = "random"
    #: "random" targets: probability that a route goes through a random free waypoint
    detour: float = 0.25


def _lr_at(step: int, cfg: SFTConfig) -> float:
    """Linear warm-up then cosine decay to 10%: the usual small-transformer schedule."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    t = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return cfg.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, t))))


def build_dataset(cfg: SFTConfig, out: Path) -> list:
    task = get_task(cfg.task)
    problems = task.load(cfg.split, limit=cfg.limit)
    if cfg.targets not in ("random", "search"):
        raise ValueError(f"unknown targets {cfg.targets!r}; known: random, search")
    if cfg.prompt_mode == "task" and cfg.targets == "random":
        if cfg.augment:
            problems, _ = augment(problems, {})
        return make_format_examples(task, problems, m=cfg.m, copies=cfg.copies, multi_fraction=cfg.multi_fraction,
                                    seed=cfg.seed, prefix_fraction=cfg.prefix_fraction, detour=cfg.detour)
    targets = search_targets(task, problems, seed=cfg.seed, cache=out / "targets.json")
    if cfg.augment:
        problems, targets = augment(problems, targets)
    if cfg.prompt_mode == "mutation":
        from vpo_harness.training.mutation_data import mutation_examples
        # one warm start for both operators: m-answer chains and single answers, split like the task SFT
        # plus the task prompt's own examples: a search's first iteration (and the plain-sampling
        # baseline) asks the operator with the task prompt, before any parent exists
        n_multi = int(round(cfg.parents_per_maze * cfg.multi_fraction))
        return (mutation_examples(task, problems, targets, m=cfg.m, per_maze=n_multi, seed=cfg.seed)
                + mutation_examples(task, problems, targets, m=1, per_maze=cfg.parents_per_maze - n_multi,
                                    seed=cfg.seed + 1)
                + make_examples(task, problems, targets, m=cfg.m, copies=cfg.copies,
                                multi_fraction=cfg.multi_fraction, seed=cfg.seed + 2))
    if cfg.prompt_mode != "task":
        raise ValueError(f"unknown prompt_mode {cfg.prompt_mode!r}; known: task, mutation")
    return make_examples(task, problems, targets, m=cfg.m, copies=cfg.copies,
                         multi_fraction=cfg.multi_fraction, seed=cfg.seed, prefix_fraction=cfg.prefix_fraction)


def train_sft(cfg: SFTConfig) -> Path:
    set_threads(cfg.threads)
    seed_everything(cfg.seed)
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    ckpt, state_path = out / "checkpoint", out / "checkpoint" / "state.pt"
    log = CurveLog(out / "sft_curves.jsonl")

    examples = build_dataset(cfg, out)

    # model (fresh, or the last checkpoint when resuming)
    start = 0
    if state_path.exists():
        model, tok = load_checkpoint(ckpt)
    else:
        tok = build_tokenizer()
        model = build_model(tok, hidden=cfg.hidden, layers=cfg.layers, heads=cfg.heads,
                            intermediate=cfg.intermediate, seed=cfg.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(0.9, 0.98))
    if state_path.exists():
        start = int(load_state(state_path, opt)["step"])
        log.truncate_after(start)
        print(f"resuming SFT from step {start}")

    # a fixed permutation per epoch, derived from the seed: resuming replays the same batch order
    def batch_for(step: int) -> list:
        per_epoch = max(1, len(examples) // cfg.batch_size)
        epoch, i = divmod(step, per_epoch)
        perm = np.random.default_rng([cfg.seed, epoch]).permutation(len(examples))
        return [examples[j] for j in perm[i * cfg.batch_size:(i + 1) * cfg.batch_size]]

    model.train()
    t0, tokens = time.time(), 0
    bar = tqdm(range(start, cfg.steps), desc="sft", initial=start, total=cfg.steps)
    step = start
    for step in bar:
        for g in opt.param_groups:
            g["lr"] = _lr_at(step, cfg)
        enc = encode_pairs(tok, batch_for(step))
        loss = model(input_ids=enc.input_ids, attention_mask=enc.attention_mask, labels=enc.labels).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        tokens += int(enc.attention_mask.sum())
        elapsed = time.time() - t0
        bar.set_postfix(loss=f"{loss.item():.3f}")
        if step % cfg.log_every == 0 or step == cfg.steps - 1:
            log.write({"step": step, "loss": loss.item(), "lr": opt.param_groups[0]["lr"],
                       "tokens_per_s": tokens / max(elapsed, 1e-9), "elapsed_s": elapsed})
        done = step == cfg.steps - 1 or (cfg.time_budget_s is not None and elapsed > cfg.time_budget_s)
        if (step + 1) % cfg.save_every == 0 or done:
            save_checkpoint(model, tok, ckpt, extra={"stage": "sft", "step": step + 1, "config": {
                **asdict(cfg), **generation_record(TINY_MAZE_DEFAULTS.prompt_style, TINY_MAZE_DEFAULTS.max_tokens_single,
                                                   TINY_MAZE_DEFAULTS.max_tokens_multi)}})
            save_state(state_path, step=step + 1, optimizer=opt)
        if done:
            break
    plot_curves(out / "sft_curves.jsonl", out / "sft_curves.png", ["loss", "lr", "tokens_per_s"], "SFT warm start")
    return ckpt


def add_arguments(p: argparse.ArgumentParser) -> None:
    """One flag per SFTConfig field, its type and default read from the dataclass (training/flags.py)."""
    from vpo_harness.training.flags import add_config_arguments

    add_config_arguments(p, SFTConfig)


def main(argv: list[str] | None = None) -> None:
    from vpo_harness.training.flags import config_from_args, main_parser

    p, flags = main_parser(SFTConfig, __doc__)
    print(train_sft(config_from_args(SFTConfig, p.parse_args(argv), flags)))


if __name__ == "__main__":
    main()
