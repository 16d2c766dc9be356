"""Data and launch command for verl: ``vpo export-verl`` and ``vpo train --engine verl``.

verl reads parquet rows with ``data_source``, ``prompt`` (chat messages), ``ability``, ``reward_model``
and ``extra_info``. Our rows put everything the ``vpo`` reward manager needs into ``extra_info`` (task,
task options, the problem as JSON, method, m, K, alpha, sobol, seed, goal weights), so the data file
alone defines the reward; see training/verl_plugin.py.
"""
from __future__ import annotations

import json
import shlex
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


import numpy as np

from vpo_harness.benchmarks import get_task
from vpo_harness.benchmarks.base import Benchmark, Problem
from vpo_harness.training import rollouts as R


@dataclass
class VerlExport:
    task: str = "maze"
    split: str = "train"
    out: str = "runs/verl/maze"
    method: str = "vpo"
    m: int = 3
    K: int = 100
    alpha: float = 1.0
    sobol: bool = False
    seed: int = 42
    limit: int | None = None
    prompt_style: str = "full"
    truncated_reward: str = "zero"
    task_args: dict[str, Any] = field(default_factory=dict)
    path: str | None = None          # local data files for the task (offline copies)
    #: hold out this many problems of the split (a seeded choice): ``part`` "train" keeps the rest,
    #: "val" keeps the held-out ones; 0 exports the whole split
    holdout: int = 0
    part: str = "all"
    name: str | None = None          # file stem (default: the split's name)


def problem_row(task: Benchmark, problem: Problem, cfg: VerlExport, index: int,
                goal_weights: list[float] | None = None) -> dict[str, Any]:
    """One verl row: the method's chat prompt, and everything the reward manager needs in extra_info."""
    return {
        "data_source": f"vpo/{cfg.task}",
        "prompt": R.method_prompt(task, problem, cfg.method, cfg.m, cfg.prompt_style, goal_weights),
        "ability": cfg.task,
        "reward_model": {"style": "rule", "ground_truth": ""},
        "extra_info": {
            "split": cfg.split, "index": index, "problem_id": problem.id, "task": cfg.task,
            "task_args": json.dumps(cfg.task_args, sort_keys=True), "problem": R.problem_to_json(problem),
            "method": cfg.method, "m": cfg.m, "K": cfg.K, "alpha": cfg.alpha, "sobol": cfg.sobol,
            "seed": cfg.seed, "truncated_reward": cfg.truncated_reward, "goal_weights": list(goal_weights or []),
        },
    }


def verl_rows(cfg: VerlExport) -> list[dict[str, Any]]:
    """One verl row per problem of the split (goal-conditioned rows draw their weights here, seeded)."""
    R.is_multi(cfg.method)
    task = get_task(cfg.task, **cfg.task_args)
    try:
        problems = task.load(cfg.split, path=cfg.path, limit=cfg.limit)
        if cfg.holdout:
            rest, held = holdout_split(problems, cfg.holdout, cfg.seed)
            problems = {"train": rest, "val": held}.get(cfg.part, problems)
        weights = R.goal_weights(task, problems, cfg.method, seed=cfg.seed, alpha=cfg.alpha)
        rows = [problem_row(task, p, cfg, i, gw) for i, (p, gw) in enumerate(zip(problems, weights))]
        return rows
    finally:
        if hasattr(task, "close"):
            task.close()


def holdout_split(problems: list[Problem], n: int, seed: int) -> tuple[list[Problem], list[Problem]]:
    """(rest, held out): ``n`` problems chosen by a seeded permutation of the ids, so the same split,
    limit and seed hold out the same problems in every process (both files are exported separately)."""
    if not 0 < n < len(problems):
        raise ValueError(f"a hold-out of {n} needs a split of more than {n} problems (it has {len(problems)})")
    order = np.random.default_rng([seed, 7]).permutation(sorted(range(len(problems)), key=lambda i: problems[i].id))
    held = set(int(i) for i in order[:n])
    return ([p for i, p in enumerate(problems) if i not in held], [p for i, p in enumerate(problems) if i in held])


def write_parquet(rows: list[dict[str, Any]], path: Path) -> Path:
    import pandas as pd

    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_parquet(path, index=False)
    return path


def export(cfg: VerlExport) -> Path:
    rows = verl_rows(cfg)
    if not rows:
        raise ValueError(f"task {cfg.task!r} split {cfg.split!r} has no problems")
    stem = cfg.name or cfg.split
    path = write_parquet(rows, Path(cfg.out) / f"{stem}.parquet")
    (Path(cfg.out) / f"{stem}.export.json").write_text(json.dumps({**asdict(cfg), "rows": len(rows)}, indent=2))
    return path


# ---- launch ------------------------------------------------------------------------------------------------------
@dataclass
class VerlLaunch:
    """The paper's settings on verl (docs/vpo.md): 128 prompts x G = 8, lr 1e-6, PPO-clip 0.2, low-variance
    KL loss 1e-3, temperature 1.0; one node of 8 GPUs by default."""

    model: str = "Qwen/Qwen3-4B"
    train_files: str = "train.parquet"
    val_files: str = "test.parquet"
    method: str = "vpo"
    prompts_per_step: int = 128
    group_size: int = 8
    lr: float = 1e-6
    kl_coef: float = 1e-3
    clip: float = 0.2
    temperature: float = 1.0
    max_prompt_length: int = 1024
    max_response_length: int = 2048
    nnodes: int = 1
    gpus_per_node: int = 8
    tensor_parallel: int = 1
    epochs: int = 1
    steps: int | None = None
    experiment: str = "vpo"
    out: str = "checkpoints/verl"
    #: the chat template's keyword arguments (Qwen3's enable_thinking): verl's data.apply_chat_template_kwargs
    chat_template_args: dict[str, Any] = field(default_factory=dict)
    #: the user's Hydra overrides (``--verl-args``): each replaces ours of the same key, or is appended
    extra: list[str] = field(default_factory=list)


def overrides(cfg: VerlLaunch) -> list[str]:
    """Hydra overrides of verl's ppo_trainer config (every key exists in verl 0.9.1; see tests)."""
    from vpo_harness.training.verl_plugin import METHOD_TO_ESTIMATOR

    ov = [
        f"algorithm.adv_estimator={METHOD_TO_ESTIMATOR[cfg.method]}",
        "algorithm.use_kl_in_reward=False",
        "reward.reward_manager.name=vpo",
        f"data.train_files={cfg.train_files}",
        f"data.val_files={cfg.val_files}",
        f"data.train_batch_size={cfg.prompts_per_step}",
        f"data.max_prompt_length={cfg.max_prompt_length}",
        f"data.max_response_length={cfg.max_response_length}",
        "data.truncation=error",
        f"actor_rollout_ref.model.path={cfg.model}",
        "actor_rollout_ref.rollout.name=vllm",
        f"actor_rollout_ref.rollout.n={cfg.group_size}",
        f"actor_rollout_ref.rollout.temperature={cfg.temperature}",
        f"actor_rollout_ref.rollout.tensor_model_parallel_size={cfg.tensor_parallel}",
        "actor_rollout_ref.rollout.gpu_memory_utilization=0.6",
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=16",
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=16",
        f"actor_rollout_ref.actor.optim.lr={cfg.lr}",
        f"actor_rollout_ref.actor.ppo_mini_batch_size={max(1, cfg.prompts_per_step // 2)}",
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
        f"actor_rollout_ref.actor.clip_ratio={cfg.clip}",
        "actor_rollout_ref.actor.use_kl_loss=True",
        f"actor_rollout_ref.actor.kl_loss_coef={cfg.kl_coef}",
        "actor_rollout_ref.actor.kl_loss_type=low_var_kl",
        "actor_rollout_ref.model.enable_gradient_checkpointing=True",
        f"trainer.nnodes={cfg.nnodes}",
        f"trainer.n_gpus_per_node={cfg.gpus_per_node}",
        f"trainer.total_epochs={cfg.epochs}",
        "trainer.logger=[console]",
        "trainer.project_name=vpo-harness",
        f"trainer.experiment_name={cfg.experiment}",
        f"trainer.default_local_dir={cfg.out}",
        "trainer.save_freq=50",
        "trainer.test_freq=50",
    ]
    if cfg.steps is not None:
        ov.append(f"trainer.total_training_steps={cfg.steps}")
    for key, value in sorted(cfg.chat_template_args.items()):  # '+': a new key under verl's empty dict
        ov.append(f"+data.apply_chat_template_kwargs.{key}={json.dumps(value)}")
    from vpo_harness.training.verl_plan import merge_overrides

    return merge_overrides(ov, cfg.extra)


def launch_command(cfg: VerlLaunch) -> list[str]:
    return ["python3", "-m", "verl.trainer.main_ppo", *overrides(cfg)]


def write_launch(cfg: VerlLaunch, folder: Path) -> Path:
    """``launch.sh`` (the command, one override per line) and ``launch.json`` (the settings)."""
    folder.mkdir(parents=True, exist_ok=True)
    cmd = launch_command(cfg)
    body = " \\\n    ".join(shlex.quote(c) for c in cmd)
    script = folder / "launch.sh"
    script.write_text("#!/usr/bin/env bash\n# written by `vpo train --engine verl`; see docs/verl.md\nset -euo pipefail\n"
                      f"{body} \"$@\"\n")
    script.chmod(0o755)
    (folder / "launch.json").write_text(json.dumps(asdict(cfg), indent=2))
    return script
