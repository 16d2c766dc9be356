"""`vpo train`: RL with one advantage estimator, on one of three engines.

    vpo train --task maze --method vpo --stage all --out runs/train/maze-vpo          # native (tiny CPU policy)
    vpo train --engine trl --task toolrl --method vpo --init hf:smollm2-135m --out runs/trl/toolrl-vpo
    vpo train --engine verl --task musique --method vpo --init Qwen/Qwen3-1.7B --out runs/verl/musique

``--engine native`` (default) is the bundled CPU trainer. ``trl`` runs TRL's GRPOTrainer with the
method's advantages (training/trl_vpo.py; ``--use-vllm`` on GPUs). ``verl`` writes the parquet data and
a launch script for stock verl with this project's plugin, and runs it when verl and a GPU are present.

``--stage sft`` builds the shared warm start, ``--stage rl`` runs RL from ``--init``, ``--stage all``
does both (the warm start goes to ``<out>/sft`` unless ``--init`` already exists). Re-running the
same command resumes from the last checkpoint of each stage.
"""
from __future__ import annotations

import argparse

from vpo_harness.harness.app.commands._args import TASK_HELP, kv, task_ref


def register(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    from vpo_harness.training.advantages import METHODS  # numpy only: cheap, and the choices stay one fact
    from vpo_harness.training.engines import ENGINES  # no heavy import at module level

    p = sub.add_parser("train", help="train a tiny policy (SFT warm start, then RL with one estimator)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", default="maze", type=task_ref, help=TASK_HELP)
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
    p.add_argument("--sft-warmup", type=int, default=30)
    p.add_argument("--sft-layers", type=int, default=6, help="native: transformer layers of a fresh warm start")
    p.add_argument("--sft-time-budget-s", type=float, default=None)
    p.add_argument("--rl-steps", type=int, default=None, help="native/trl: 100; verl: one epoch")
    p.add_argument("--prompts-per-step", type=int, default=None, help="native 6, trl 8, verl 128 (the paper)")
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--rl-lr", type=float, default=None, help="native 1e-4 (tiny policy); trl/verl 1e-6 (the paper)")
    p.add_argument("--kl-coef", type=float, default=1e-3)
    p.add_argument("--K", type=int, default=100, help="VPO weight vectors per prompt group")
    p.add_argument("--alpha", type=float, default=1.0, help="Dirichlet concentration")
    p.add_argument("--sobol", action="store_true", help="scrambled-Sobol VPO weights")
    p.add_argument("--rl-time-budget-s", type=float, default=None)
    p.add_argument("--rl-temperature", type=float, default=1.0, help="native: rollout temperature")
    p.add_argument("--val-every", type=int, default=0,
                   help="native: evaluate on the val split every N RL steps and keep the best step (0: never)")
    p.add_argument("--patience", type=int, default=3,
                   help="native: stop after this many evaluations without improvement (with --val-every)")
    p.add_argument("--prefix-fraction", type=float, default=0.0,
                   help="native: fraction of RL prompt groups that continue a prefilled, uniformly cut route")
    p.add_argument("--sft-prefix-fraction", type=float, default=0.0,
                   help="native: fraction of SFT examples that continue a prefilled, uniformly cut route")
    from vpo_harness.harness.app.commands._args import add_chat_template_args

    add_chat_template_args(p)  # rollout prompts rendered as `vpo run --chat-template-args` renders them
    # engines: native | trl | verl
    g = p.add_argument_group("engines", "TRL and verl (see docs/verl.md)")
    g.add_argument("--engine", choices=ENGINES, default="native")
    g.add_argument("--split", default="train", help="trl/verl: training split of the task")
    g.add_argument("--task-args", type=kv, default={}, help="trl/verl: task options k=v,...")
    g.add_argument("--prompt-style", default=None, help="trl/verl: prompt style (maze: compact for tiny models)")
    g.add_argument("--max-completion-length", type=int, default=None, help="trl/verl: token limit per rollout")
    g.add_argument("--minibatches", type=int, default=None, help="trl: optimizer steps per generation round")
    g.add_argument("--use-vllm", action="store_true", help="trl: generate with vLLM (GPU)")
    g.add_argument("--trl-args", type=kv, default={},
                   help="trl: any other GRPOConfig field k=v,... (e.g. bf16=true,gradient_accumulation_steps=4,"
                        "report_to=tensorboard)")
    g.add_argument("--lora", type=kv, default={},
                   help="trl: train a LoRA adapter (peft LoraConfig k=v,..., e.g. r=16,lora_alpha=32); "
                        "the saved checkpoint is merged")
    g.add_argument("--save-every", type=int, default=None,
                   help="native/trl: steps (trl: generation rounds) between resumable checkpoints (default 10)")
    g.add_argument("--nnodes", type=int, default=1, help="verl: nodes (Ray cluster)")
    g.add_argument("--gpus-per-node", type=int, default=8, help="verl: GPUs per node")
    g.add_argument("--no-launch", action="store_true", help="verl: only write data and launch script")
    g.add_argument("--verl-args", default=None,
                   help="verl: Hydra overrides k=v,... (replace ours of the same key; +k=v adds a new key)")
    g.add_argument("--val-split", default=None,
                   help="verl: validation split (default: the task's; refused when it shares problems with training)")
    g.add_argument("--val-holdout", type=int, default=None,
                   help="verl: validate on N problems held out of the training split instead")
    g.add_argument("--val-limit", type=int, default=None,
                   help="at most this many validation problems (verl: default 200; native: 50 val mazes)")
    g.add_argument("--data-path", default=None, help="trl/verl: local data files of the task")
    return p


def run(args: argparse.Namespace) -> int:
    """Dispatch to the engine (training/engines.py holds the orchestration)."""
    from vpo_harness.training.engines import train

    return train(args)
