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

import argparse
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: anything with the `vpo train` flags as attributes (an argparse.Namespace)
Settings = Any

ENGINES = ("native", "trl", "verl")

# ---- the flags: one per config field of each engine (training/flags.py) -------------------------------
#: fields the command sets itself: the run folder and warm start (--out, --init, --stage), the task and
#: method (explicit flags with choices), the chat template (the flag `vpo run` shares)
COMMAND_SET = frozenset({"init", "out", "task", "method", "chat_template_args"})
#: the native warm start's settings are --sft-<field>, except these, which one flag sets for both stages
BOTH_STAGES = frozenset({"split", "limit", "augment", "m", "seed", "threads", "prompt_mode"})
#: RL settings named for the stage, beside --sft-steps, --sft-lr, ...
RL_NAMES = {"steps": "rl_steps", "lr": "rl_lr", "time_budget_s": "rl_time_budget_s", "temperature": "rl_temperature"}
#: flags an engine reads besides its config fields (verl plans its lengths and validation set itself)
ALSO_READS = {"native": frozenset(), "trl": frozenset(),
              "verl": frozenset({"max_completion_length", "val_limit"})}


@dataclass(frozen=True)
class Section:
    """One config an engine builds from the flags (SFTConfig, RLConfig, ...) and the flags that fill it."""

    label: str              # how `vpo train --help` names it beside a default: "native sft", "trl", ...
    cls: type
    flags: tuple[Any, ...]  # training.flags.FieldFlag

    def config(self, args: Settings, **set_by_command: Any) -> Any:
        """The config from the flags given (the rest keep the dataclass's defaults) and the command's own."""
        from vpo_harness.training.flags import config_from_args

        return config_from_args(self.cls, args, self.flags, **set_by_command)


def sections() -> dict[str, tuple[Section, ...]]:
    """engine -> the configs it builds, each with its flags. Imports the trainers (torch): called when
    `vpo train` is parsed, never when another command is."""
    from vpo_harness.training.flags import field_flags
    from vpo_harness.training.rl import RLConfig
    from vpo_harness.training.sft import SFTConfig
    from vpo_harness.training.trl_vpo import TRLVPOConfig
    from vpo_harness.training.verl_export import VerlExport, VerlLaunch

    def sec(label: str, cls: type, **how: Any) -> Section:
        return Section(label, cls, tuple(field_flags(cls, **how)))

    return {
        "native": (sec("native sft", SFTConfig, prefix="sft_", unprefixed=BOTH_STAGES, skip=COMMAND_SET),
                   sec("native rl", RLConfig, rename=RL_NAMES, skip=COMMAND_SET)),
        "trl": (sec("trl", TRLVPOConfig, rename={**RL_NAMES, "beta": "kl_coef", "grpo_overrides": "trl_args"},
                    skip=COMMAND_SET),),
        "verl": (sec("verl", VerlExport, rename={"path": "data_path"}, skip=COMMAND_SET | {"holdout", "part", "name"}),
                 sec("verl", VerlLaunch, rename=RL_NAMES,
                     skip=COMMAND_SET | {"model", "train_files", "val_files", "experiment", "extra", "max_prompt_length",
                                         "max_response_length"})),
    }


def add_config_flags(p: argparse.ArgumentParser | Any) -> None:
    """Every engine's config fields as `vpo train` flags. A flag left out is None: each engine then keeps
    its own dataclass's default, which the help lists per engine."""
    from vpo_harness.training.flags import add_flag

    seen: dict[str, list[tuple[str, Any]]] = {}
    first: dict[str, Any] = {}
    for secs in sections().values():
        for s in secs:
            for f in s.flags:
                seen.setdefault(f.dest, []).append((s.label, f.default))
                if f.dest in first and first[f.dest].convert.__name__ != f.convert.__name__:
                    raise TypeError(f"{f.flag}: {first[f.dest].owner}.{first[f.dest].field} and {f.owner}.{f.field} "
                                    f"have different types")
                first.setdefault(f.dest, f)
    for dest, f in first.items():
        defaults = seen[dest]
        if len({repr(d) for _, d in defaults}) == 1:
            engines = ", ".join(dict.fromkeys(w.split()[0] for w, _ in defaults))
            said = f"{engines}; default {_shown(defaults[0][1])}"
        else:
            said = "default " + ", ".join(f"{w} {_shown(d)}" for w, d in defaults)
        add_flag(p, dest, f.convert, None, f"{f.doc + '; ' if f.doc else ''}{said}")


def _shown(value: Any) -> str:
    return "none" if value is None or value == {} else str(value).lower() if isinstance(value, bool) else str(value)


def check_flags_apply(args: Settings) -> None:
    """A config flag given to an engine that has no such setting is refused, naming the engines that do."""
    secs = sections()
    reads = {e: {f.dest for s in ss for f in s.flags} | ALSO_READS[e] for e, ss in secs.items()}
    for dest in dict.fromkeys(d for e in ENGINES for d in sorted(reads[e])):
        if getattr(args, dest, None) is not None and dest not in reads[args.engine]:
            flag = "--" + dest.replace("_", "-")
            readers = " or ".join(e for e in ENGINES if dest in reads[e])
            raise ValueError(f"{flag} applies to --engine {readers} only (this run: --engine {args.engine})")


def check_engine(args: Settings) -> None:
    """Refuse flag combinations an engine cannot honour (one line each, before any work starts)."""
    import importlib.util

    e = args.engine
    if e != "native" and args.stage == "sft":
        raise ValueError(f"--stage sft is the native warm start; --engine {e} trains RL only (pass its result as --init)")
    check_flags_apply(args)
    if e == "trl":
        if importlib.util.find_spec("trl") is None:
            raise ValueError("--engine trl needs TRL: pip install 'trl>=1.16'")
        if not args.init:
            raise ValueError("--engine trl needs --init (a warm start folder or hf:MODEL)")
    if e == "verl" and importlib.util.find_spec("verl") is None:
        raise ValueError("--engine verl needs verl: pip install 'verl>=0.9' (or write the data only: vpo export-verl)")
    for flag, val in (("--prefix-fraction", args.prefix_fraction), ("--sft-prefix-fraction", args.sft_prefix_fraction)):
        if val is not None and not 0.0 <= val <= 1.0:
            raise ValueError(f"{flag} must be between 0 and 1, got {val}")
    if (args.val_every is not None and args.val_every < 0) or (args.patience is not None and args.patience < 1):
        raise ValueError(f"--val-every must be >= 0 and --patience >= 1 (got {args.val_every} and {args.patience})")
    if e != "verl" and (args.no_launch or args.verl_args or args.val_split or args.val_holdout):
        raise ValueError("--no-launch/--verl-args/--val-split/--val-holdout apply to --engine verl only")


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
    from vpo_harness.training.rl import train_rl
    from vpo_harness.training.sft import train_sft

    if args.task != "maze":
        raise ValueError(f"only --task maze has a bundled trainer (got {args.task!r})")
    out = Path(args.out or f"runs/train/{args.task}-{args.method}")
    init = Path(args.init) if args.init else out / "sft" / "checkpoint"
    sft, rl = sections()["native"]
    if args.stage in ("sft", "all") and not (args.stage == "all" and args.init and init.exists()):
        scfg = sft.config(args, out=str(out / "sft" if not args.init else Path(args.init).parent), task=args.task)
        init = train_sft(scfg)
        print(f"warm start: {init}")
    if args.stage in ("rl", "all"):
        rcfg = rl.config(args, init=str(init), out=str(out), task=args.task, method=args.method,
                         chat_template_args=dict(args.chat_template_args or {}))
        print(f"policy: {train_rl(rcfg)}")
    return 0


def run_trl(args: Settings) -> int:
    from vpo_harness.training.trl_vpo import train_trl

    (trl,) = sections()["trl"]
    style = {} if args.prompt_style else {"prompt_style": _default_style(args.task)}
    cfg = trl.config(args, init=args.init, out=args.out or f"runs/trl/{args.task}-{args.method}", task=args.task,
                     method=args.method, chat_template_args=dict(args.chat_template_args or {}), **style)
    print(f"policy: {train_trl(cfg)}")
    return 0


def _default_style(task: str) -> str:
    """trl/verl: Maze's compact prompt for the tiny policies, else the task's full prompt."""
    return "compact" if task == "maze" else "full"


def run_verl(args: Settings) -> int:
    import shutil
    import subprocess

    from vpo_harness.training import verl_plan as V
    from vpo_harness.training.model_card import write_verl_card
    from vpo_harness.training.verl_export import VerlLaunch, launch_command, write_launch

    out = Path(args.out or f"runs/verl/{args.task}-{args.method}")
    data_sec, launch_sec = sections()["verl"]
    extra = V.split_overrides(args.verl_args) if args.verl_args else []
    model = V.resolve_model(args.init or _default(VerlLaunch, "model"))
    tok, context = V.load_tokenizer(model)
    style = {} if args.prompt_style else {"prompt_style": _default_style(args.task)}
    base = data_sec.config(args, task=args.task, out=str(out / "data"), method=args.method, **style)
    train, val, how = _verl_data(args, base)
    train_rows, val_rows = _rows(train), _rows(val)
    shared = V.overlap(train_rows, val_rows)
    if shared:
        raise ValueError(f"validation ({how}) shares {shared} of its {len(val_rows)} problems with the training data "
                         f"(split {base.split}); pass --val-split with another split or --val-holdout N")
    lengths = V.prompt_tokens(train_rows + val_rows, tok, dict(args.chat_template_args or {}))
    user_p, user_r = V.user_value(extra, "data.max_prompt_length"), V.user_value(extra, "data.max_response_length")
    limits = V.plan_limits(lengths, context, int(user_r) if user_r else args.max_completion_length,
                           prompt=int(user_p) if user_p else None,
                           filter_overlong=str(V.user_value(extra, "data.filter_overlong_prompts")).lower() == "true")
    launch = launch_sec.config(args, model=model, train_files=str(train.resolve()), val_files=str(val.resolve()),
                               method=args.method, experiment=f"{args.task}-{args.method}",
                               out=str((out / "checkpoints").resolve()), max_prompt_length=limits.max_prompt_length,
                               max_response_length=limits.max_response_length, extra=extra,
                               chat_template_args=dict(args.chat_template_args or {}))
    import importlib.util

    if importlib.util.find_spec("hydra") is not None:
        V.check_composes(launch_command(launch)[3:])
    script = write_launch(launch, out)
    write_verl_card(out, task=args.task, method=args.method, m=base.m, prompt_style=base.prompt_style,
                    max_response_length=limits.max_response_length, init=args.init or model, launch=script,
                    task_args=dict(base.task_args))
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


def _default(cls: type, name: str) -> Any:
    """A config field's default, read from its dataclass (not restated here)."""
    return next(f.default for f in dataclasses.fields(cls) if f.name == name)


def _verl_data(args: Settings, base: Any) -> tuple[Path, Path, str]:
    """(train file, validation file, how the validation set was chosen): --val-holdout N, else
    --val-split, else the task's validation split, or a hold-out of the train split when that split is
    the validation split itself (MuSiQue offline: ``test`` is ``validation``). ``base`` is the export's
    settings from the flags (a VerlExport)."""
    from vpo_harness.training import verl_plan as V
    from vpo_harness.training.verl_export import export

    def holdout(n: int) -> tuple[Path, Path, str]:
        t = export(dataclasses.replace(base, holdout=n, part="train", name="train"))
        v = export(dataclasses.replace(base, holdout=n, part="val", name="val"))
        return t, v, f"{n} problems held out of split {base.split}, seed {base.seed}"

    if args.val_holdout:
        return holdout(args.val_holdout)
    train = export(dataclasses.replace(base, name="train"))
    vsplit = args.val_split or V.DEFAULT_VAL.get(args.task, "test")
    val = export(dataclasses.replace(base, split=vsplit, limit=args.val_limit or 200, name="val"))
    if args.val_split is None:
        train_rows = _rows(train)  # read once: the overlap check and the hold-out size both need it
        if V.overlap(train_rows, _rows(val)):
            return holdout(V.holdout_size(len(train_rows)))
    return train, val, f"split {vsplit}"
