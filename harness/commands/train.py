"""`vpo train`: train a tiny policy (SFT warm start, then RL with one advantage estimator).

    vpo train --task maze --method vpo --stage all --out runs/train/maze-vpo

``--stage sft`` builds the shared warm start, ``--stage rl`` runs RL from ``--init``, ``--stage all``
does both (the warm start goes to ``<out>/sft`` unless ``--init`` already exists). Re-running the
same command resumes from the last checkpoint of each stage.
"""
from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    from training.advantages import METHODS  # numpy only: cheap, and the choices stay one fact

    p = sub.add_parser("train", help="train a tiny policy (SFT warm start, then RL with one estimator)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", default="maze")
    p.add_argument("--method", choices=METHODS, default="vpo")
    p.add_argument("--stage", choices=("sft", "rl", "all"), default="all")
    p.add_argument("--out", default=None, help="run folder (default runs/train/<task>-<method>)")
    p.add_argument("--init", default=None, help="warm-start checkpoint for RL (default <out>/sft/checkpoint)")
    p.add_argument("--limit", type=int, default=None, help="number of train mazes (default all 1000)")
    p.add_argument("--m", type=int, default=3, help="answers per chain for multi-answer methods")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--sft-steps", type=int, default=600)
    p.add_argument("--sft-batch-size", type=int, default=32)
    p.add_argument("--sft-lr", type=float, default=2e-3)
    p.add_argument("--sft-time-budget-s", type=float, default=None)
    p.add_argument("--rl-steps", type=int, default=100)
    p.add_argument("--prompts-per-step", type=int, default=6)
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--rl-lr", type=float, default=1e-4)
    p.add_argument("--kl-coef", type=float, default=1e-3)
    p.add_argument("--K", type=int, default=100, help="VPO weight vectors per prompt group")
    p.add_argument("--alpha", type=float, default=1.0, help="Dirichlet concentration")
    p.add_argument("--sobol", action="store_true", help="scrambled-Sobol VPO weights")
    p.add_argument("--rl-time-budget-s", type=float, default=None)
    return p


def run(args: argparse.Namespace) -> int:
    from training.rl import RLConfig, train_rl
    from training.sft import SFTConfig, train_sft

    if args.task != "maze":
        raise SystemExit(f"vpo train: only --task maze has a bundled trainer (got {args.task!r})")
    out = Path(args.out or f"runs/train/{args.task}-{args.method}")
    init = Path(args.init) if args.init else out / "sft" / "checkpoint"
    if args.stage in ("sft", "all") and not (args.stage == "all" and args.init and init.exists()):
        scfg = SFTConfig(out=str(out / "sft" if not args.init else Path(args.init).parent), task=args.task,
                         limit=args.limit, steps=args.sft_steps, batch_size=args.sft_batch_size, lr=args.sft_lr,
                         seed=args.seed, threads=args.threads, m=args.m, time_budget_s=args.sft_time_budget_s)
        init = train_sft(scfg)
        print(f"warm start: {init}")
    if args.stage in ("rl", "all"):
        rcfg = RLConfig(init=str(init), out=str(out), task=args.task, method=args.method, limit=args.limit,
                        m=args.m, steps=args.rl_steps, prompts_per_step=args.prompts_per_step,
                        group_size=args.group_size, lr=args.rl_lr, kl_coef=args.kl_coef, K=args.K,
                        alpha=args.alpha, sobol=args.sobol, seed=args.seed, threads=args.threads,
                        time_budget_s=args.rl_time_budget_s)
        print(f"policy: {train_rl(rcfg)}")
    return 0
