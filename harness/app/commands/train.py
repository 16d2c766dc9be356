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
from typing import Any, Sequence

from vpo_harness.harness.app.commands._args import TASK_HELP, kv, task_ref
from vpo_harness.training.flags import OneLineParser


class TrainParser(OneLineParser):
    """`vpo train`'s parser: its config flags are read from the trainers' dataclasses
    (training/engines.py ``add_config_flags``), whose modules import torch, so they are added when
    `vpo train` itself is parsed or its help shown, not when another command is. A bad value is one
    line (``vpo train: error: argument --augment: expected true or false, got 'ture'``)."""

    _ready = False

    def _populate(self) -> None:
        if not self._ready:
            self._ready = True
            from vpo_harness.training.engines import add_config_flags

            add_config_flags(self.add_argument_group("settings", "each engine's config fields (training/sft.py, "
                                                     "training/rl.py, training/trl_vpo.py, training/verl_export.py); "
                                                     "a flag not given keeps the engine's own default"))

    def parse_known_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:  # type: ignore[override]
        self._populate()
        return super().parse_known_args(args, namespace)

    def format_help(self) -> str:
        self._populate()
        return super().format_help()


def register(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    from vpo_harness.training.advantages import METHODS  # numpy only: cheap, and the choices stay one fact
    from vpo_harness.training.engines import ENGINES  # no heavy import at module level

    p = sub.add_parser("train", help="train a tiny policy (SFT warm start, then RL with one estimator)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.__class__ = TrainParser  # argparse makes every subparser of one class: this one fills itself in late
    p.add_argument("--task", default="maze", type=task_ref, help=TASK_HELP)
    p.add_argument("--method", choices=METHODS, default="vpo")
    p.add_argument("--stage", choices=("sft", "rl", "all"), default="all")
    p.add_argument("--out", default=None, help="run folder (default runs/train/<task>-<method>)")
    p.add_argument("--init", default=None, help="warm-start checkpoint for RL (default <out>/sft/checkpoint)")
    from vpo_harness.harness.app.commands._args import add_chat_template_args

    add_chat_template_args(p)  # rollout prompts rendered as `vpo run --chat-template-args` renders them
    g = p.add_argument_group("engines", "TRL and verl (see docs/verl.md)")
    g.add_argument("--engine", choices=ENGINES, default="native")
    g.add_argument("--no-launch", action="store_true", help="verl: only write data and launch script")
    g.add_argument("--verl-args", default=None,
                   help="verl: Hydra overrides k=v,... (replace ours of the same key; +k=v adds a new key)")
    g.add_argument("--val-split", default=None,
                   help="verl: validation split (default: the task's; refused when it shares problems with training)")
    g.add_argument("--val-holdout", type=int, default=None,
                   help="verl: validate on N problems held out of the training split instead")
    return p


def run(args: argparse.Namespace) -> int:
    """Dispatch to the engine (training/engines.py holds the orchestration)."""
    from vpo_harness.training.engines import train

    return train(args)
