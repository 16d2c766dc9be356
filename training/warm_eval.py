"""What a warm start can do before RL: the numbers every model card of its training seed carries.

On the first ``limit`` val mazes, with the demo's pools (30 samples; 10 chains of 3) at temperature 0.7:
best@1, best@30, diversity and the first-answer parse rate of each answer format, and the parse rate of
prefilled continuations (training/prefix_parse.py), for m = 1 and m = 3. Written once per warm start as
``warm_eval.json`` next to its checkpoint (scripts/train_zoo.py runs it); the test-split numbers come
from `vpo demo`, which evaluates the warm starts beside the row.

    python -m vpo_harness.training.warm_eval runs/zoo/s0/sft
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

FILE = "warm_eval.json"


def evaluate_warm_start(sft: Path, limit: int = 50, cuts: int = 4, seed: int = 0) -> dict[str, Any]:
    from vpo_harness.benchmarks import get_task
    from vpo_harness.harness.core.models.zoo import TINY_MAZE_DEFAULTS
    from vpo_harness.training.model import load_checkpoint
    from vpo_harness.training.prefix_parse import measure
    from vpo_harness.training.validation import ValSettings, evaluate

    ckpt = Path(sft) / "checkpoint"
    policy, tok = load_checkpoint(ckpt)
    task = get_task("maze")
    problems = task.load("val", limit=limit)
    vs = ValSettings(limit=limit, seed=seed, prompt_style=TINY_MAZE_DEFAULTS.prompt_style,
                     max_new_tokens_single=TINY_MAZE_DEFAULTS.max_tokens_single,
                     max_new_tokens_multi=TINY_MAZE_DEFAULTS.max_tokens_multi)
    out: dict[str, Any] = {"checkpoint": str(ckpt), "split": "val", "mazes": len(problems), "temperature": vs.temperature}
    for m, method in ((1, "grpo"), (3, "vpo")):
        res = evaluate(policy, tok, task, problems, method, 3, vs)
        pre = measure(str(ckpt), m, split="val", n_mazes=limit, cuts=cuts, seed=seed)
        out[f"m{m}"] = {"best_at_1": res["best_at_1"], "best_at_30": res["best_at_30"], "diversity": res["diversity"],
                        "parse_rate": res["first_answer_parse_rate"],
                        "prefilled_parse_rate": pre["first_answer_parse_rate"], "prefilled_calls": pre["calls"]}
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sft", help="the warm start's run folder (holding checkpoint/)")
    ap.add_argument("--limit", type=int, default=50, help="val mazes")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args(argv)
    import torch

    torch.set_num_threads(a.threads)
    res = evaluate_warm_start(Path(a.sft), a.limit)
    (Path(a.sft) / FILE).write_text(json.dumps(res, indent=2))
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
