"""Training orchestration behind `vpo train`: which engine trains, with which settings.

    native   the bundled CPU trainer (training/sft.py, training/rl.py) on the Maze task
    trl      TRL's GRPOTrainer with the method's advantages (training/trl_vpo.py)
    verl     the parquet data and a launch script for stock verl with this project's plugin
             (training/verl_export.py, training/verl_plan.py), run when verl and a GPU are present

Why here and not in the command: the command module only declares flags and dispatches; what a flag
combination means for an engine (its checks, its defaults, the verl data split and length plan) is
training's knowledge, next to the trainers it drives. ``args`` is the parsed command line (any object
with the `vpo train` flags as attributes); it is read, never written.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

#: anything with the `vpo train` flags as attributes (an argparse.Namespace)
Settings = Any

ENGINES = ("native", "trl", "verl")


def check_engine(args: Settings) -> None:
    """Refuse flag combinations an engine cannot honour (one line each, before any work starts)."""
    import importlib.util

    e = args.engine
    if e != "native" and args.stage == "sft":
        raise ValueError(f"--stage sft is the native warm start; --engine {e} trains RL only (pass its result as --init)")
    if e == "native":
        for flag, val in (("--use-vllm", args.use_vllm), ("--task-args", args.task_args),
                          ("--minibatches", args.minibatches), ("--max-completion-length", args.max_completion_length),
                          ("--data-path", args.data_path)):
            if val:
                raise ValueError(f"{flag} needs --engine trl or verl (the native trainer has fixed maze settings)")
    if e == "trl":
        if importlib.util.find_spec("trl") is None:
            raise ValueError("--engine trl needs TRL: pip install 'trl>=1.16'")
        if not args.init:
            raise ValueError("--engine trl needs --init (a warm start folder or hf:MODEL)")
    if e != "trl" and (args.trl_args or args.lora):
        raise ValueError("--trl-args/--lora apply to --engine trl only")
    if e == "verl" and importlib.util.find_spec("verl") is None:
        raise ValueError("--engine verl needs verl: pip install 'verl>=0.9' (or write the data only: vpo export-verl)")
    for flag, val in (("--prefix-fraction", args.prefix_fraction), ("--sft-prefix-fraction", args.sft_prefix_fraction)):
        if not 0.0 <= val <= 1.0:
            raise ValueError(f"{flag} must be between 0 and 1, got {val}")
    if args.val_every < 0 or args.patience < 1:
        raise ValueError(f"--val-every must be >= 0 and --patience >= 1 (got {args.val_every} and {args.patience})")
    if e != "native" and (args.val_every or args.prefix_fraction or args.sft_prefix_fraction or args.rl_temperature != 1.0):
        raise ValueError("--val-every/--patience/--prefix-fraction/--sft-prefix-fraction/--rl-temperature apply to "
                         "--engine native only")
    if e != "verl" and (args.nnodes != 1 or args.gpus_per_node != 8 or args.no_launch or args.verl_args
                        or args.val_split or args.val_holdout):
        raise ValueError("--nnodes/--gpus-per-node/--no-launch/--verl-args/--val-split/--val-holdout apply to "
                         "--engine verl only")


def train(args: Settings) -> int:
    """Check the engine's flags, then train on it; returns the exit status (verl: its launcher's)."""
    check_engine(args)
    if args.engine == "trl":
        return run_trl(args)
    if args.engine == "verl":
        return run_verl(args)
    return run_native(args)


def run_native(args: Settings) -> int:
    """The bundled CPU trainer: SFT warm start and/or RL from it, on the Maze task."""
    from vpo_harness.training.rl import RLConfig, train_rl
    from vpo_harness.training.sft import SFTConfig, train_sft

    if args.task != "maze":
        raise ValueError(f"only --task maze has a bundled trainer (got {args.task!r})")
    out = Path(args.out or f"runs/train/{args.task}-{args.method}")
    init = Path(args.init) if args.init else out / "sft" / "checkpoint"
    if args.stage in ("sft", "all") and not (args.stage == "all" and args.init and init.exists()):
        scfg = SFTConfig(out=str(out / "sft" if not args.init else Path(args.init).parent), task=args.task,
                         limit=args.limit, steps=args.sft_steps, batch_size=args.sft_batch_size, lr=args.sft_lr,
                         seed=args.seed, threads=args.threads, m=args.m, time_budget_s=args.sft_time_budget_s,
                         prefix_fraction=args.sft_prefix_fraction, warmup=args.sft_warmup, layers=args.sft_layers)
        init = train_sft(scfg)
        print(f"warm start: {init}")
    if args.stage in ("rl", "all"):
        # the native defaults (the tiny policy's), read here, not written back onto the flags
        rcfg = RLConfig(init=str(init), out=str(out), task=args.task, method=args.method, limit=args.limit,
                        m=args.m, steps=100 if args.rl_steps is None else args.rl_steps,
                        prompts_per_step=args.prompts_per_step or 6,
                        group_size=args.group_size, lr=args.rl_lr or 1e-4, kl_coef=args.kl_coef, K=args.K,
                        alpha=args.alpha, sobol=args.sobol, seed=args.seed, threads=args.threads,
                        time_budget_s=args.rl_time_budget_s, chat_template_args=dict(args.chat_template_args or {}),
                        temperature=args.rl_temperature, val_every=args.val_every, patience=args.patience,
                        val_limit=args.val_limit or 50, prefix_fraction=args.prefix_fraction,
                        **({"save_every": args.save_every} if args.save_every else {}))
        print(f"policy: {train_rl(rcfg)}")
    return 0


def run_trl(args: Settings) -> int:
    from vpo_harness.training.trl_vpo import TRLVPOConfig, train_trl

    given = {k: v for k, v in (("prompts_per_step", args.prompts_per_step), ("steps", args.rl_steps),
                               ("lr", args.rl_lr), ("minibatches", args.minibatches),
                               ("max_completion_length", args.max_completion_length),
                               ("save_every", args.save_every)) if v is not None}
    cfg = TRLVPOConfig(
        init=args.init, out=args.out or f"runs/trl/{args.task}-{args.method}", task=args.task,
        task_args=dict(args.task_args), method=args.method, split=args.split, limit=args.limit, m=args.m,
        group_size=args.group_size, beta=args.kl_coef, K=args.K, alpha=args.alpha, sobol=args.sobol, seed=args.seed, threads=args.threads,
        use_vllm=args.use_vllm, prompt_style=args.prompt_style or ("compact" if args.task == "maze" else "full"),
        chat_template_args=dict(args.chat_template_args or {}), grpo_overrides=dict(args.trl_args),
        lora=dict(args.lora), data_path=args.data_path, **given)
    print(f"policy: {train_trl(cfg)}")
    return 0


def run_verl(args: Settings) -> int:
    import shutil
    import subprocess

    from vpo_harness.training import verl_plan as V
    from vpo_harness.training.model_card import write_verl_card
    from vpo_harness.training.verl_export import VerlLaunch, launch_command, write_launch

    out = Path(args.out or f"runs/verl/{args.task}-{args.method}")
    extra = V.split_overrides(args.verl_args) if args.verl_args else []
    model = V.resolve_model(args.init or "Qwen/Qwen3-4B")
    tok, context = V.load_tokenizer(model)
    style = args.prompt_style or ("compact" if args.task == "maze" else "full")
    common = dict(task=args.task, out=str(out / "data"), method=args.method, m=args.m, K=args.K, alpha=args.alpha,
                  sobol=args.sobol, seed=args.seed, prompt_style=style, task_args=dict(args.task_args),
                  path=args.data_path)
    train, val, how = _verl_data(args, common)
    train_rows, val_rows = _rows(train), _rows(val)
    shared = V.overlap(train_rows, val_rows)
    if shared:
        raise ValueError(f"validation ({how}) shares {shared} of its {len(val_rows)} problems with the training data "
                         f"(split {args.split}); pass --val-split with another split or --val-holdout N")
    lengths = V.prompt_tokens(train_rows + val_rows, tok, dict(args.chat_template_args or {}))
    user_p, user_r = V.user_value(extra, "data.max_prompt_length"), V.user_value(extra, "data.max_response_length")
    limits = V.plan_limits(lengths, context, int(user_r) if user_r else args.max_completion_length,
                           prompt=int(user_p) if user_p else None,
                           filter_overlong=str(V.user_value(extra, "data.filter_overlong_prompts")).lower() == "true")
    given = {k: v for k, v in (("prompts_per_step", args.prompts_per_step), ("steps", args.rl_steps),
                               ("lr", args.rl_lr)) if v is not None}
    launch = VerlLaunch(model=model, train_files=str(train.resolve()), val_files=str(val.resolve()),
                        method=args.method, group_size=args.group_size, kl_coef=args.kl_coef, nnodes=args.nnodes,
                        gpus_per_node=args.gpus_per_node, experiment=f"{args.task}-{args.method}",
                        out=str((out / "checkpoints").resolve()), max_prompt_length=limits.max_prompt_length,
                        max_response_length=limits.max_response_length, extra=extra,
                        chat_template_args=dict(args.chat_template_args or {}), **given)
    import importlib.util

    if importlib.util.find_spec("hydra") is not None:
        V.check_composes(launch_command(launch)[3:])
    script = write_launch(launch, out)
    write_verl_card(out, task=args.task, method=args.method, m=args.m, prompt_style=style,
                    max_response_length=limits.max_response_length, init=args.init or model, launch=script,
                    task_args=dict(args.task_args))
    print(f"data: {train} ({len(train_rows)} problems); validation: {val} ({len(val_rows)}, {how})")
    print(limits.line())
    print(f"launch: {script}")
    print(" ".join(launch_command(launch)))
    gpu = shutil.which("nvidia-smi") is not None
    if args.no_launch or not gpu:
        print("not launched: " + ("--no-launch" if args.no_launch else "no GPU here (verl's trainer needs CUDA); "
                                  "run the script above on a GPU node with this package installed"))
        return 0
    return subprocess.call(["bash", str(script)])


def _rows(path: Path) -> list[dict]:
    import pandas as pd

    return pd.read_parquet(path).to_dict("records")


def _verl_data(args: Settings, common: dict) -> tuple[Path, Path, str]:
    """(train file, validation file, how the validation set was chosen): --val-holdout N, else
    --val-split, else the task's validation split, or a hold-out of the train split when that split is
    the validation split itself (MuSiQue offline: ``test`` is ``validation``)."""
    from vpo_harness.training import verl_plan as V
    from vpo_harness.training.verl_export import VerlExport, export

    def holdout(n: int) -> tuple[Path, Path, str]:
        t = export(VerlExport(split=args.split, limit=args.limit, holdout=n, part="train", name="train", **common))
        v = export(VerlExport(split=args.split, limit=args.limit, holdout=n, part="val", name="val", **common))
        return t, v, f"{n} problems held out of split {args.split}, seed {args.seed}"

    if args.val_holdout:
        return holdout(args.val_holdout)
    train = export(VerlExport(split=args.split, limit=args.limit, name="train", **common))
    vsplit = args.val_split or V.DEFAULT_VAL.get(args.task, "test")
    val = export(VerlExport(split=vsplit, limit=args.val_limit or 200, name="val", **common))
    if args.val_split is None:
        train_rows = _rows(train)  # read once: the overlap check and the hold-out size both need it
        if V.overlap(train_rows, _rows(val)):
            return holdout(V.holdout_size(len(train_rows)))
    return train, val, f"split {vsplit}"
