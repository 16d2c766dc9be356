"""A fast sanity evaluation of a checkpoint during development (not the paper protocol; see `vpo demo`).

Samples n completions for a few test mazes in both formats and prints the success rate (exit reached),
the mean task scalar and the mean best-of-n, using the trainer's own batched sampler.
"""
from __future__ import annotations

import argparse

import numpy as np
import torch

from vpo_harness.benchmarks import get_task
from vpo_harness.benchmarks.scoring import score_chain
from vpo_harness.harness.core.models.zoo import TINY_MAZE_DEFAULTS
from vpo_harness.harness.core.models.prompting import render_messages
from vpo_harness.training.model import load_checkpoint
from vpo_harness.training.generate import sample


def quick_eval(path: str, limit: int = 10, n: int = 8, m: int = 3, temperature: float = 0.7,
               split: str = "test", seed: int = 0) -> dict[str, float]:
    task = get_task("maze")
    model, tok = load_checkpoint(path)
    model.eval()
    ps = task.load(split, limit=limit)
    out: dict[str, float] = {}
    for fmt, mm in (("single", None), ("multi", m)):
        style = TINY_MAZE_DEFAULTS.prompt_style
        prompts = [render_messages(task.multi_prompt(p, m, style=style) if mm else task.prompt(p, style=style), tok)
                   for p in ps for _ in range(n)]
        _, _, _, texts = sample(model, tok, prompts, max_new_tokens=TINY_MAZE_DEFAULTS.max_tokens(mm or 1),
                                temperature=temperature, seed=seed)
        R = []
        for i, p in enumerate(ps):
            rows = [score_chain(task, p, t, mm or 1).rewards for t in texts[i * n:(i + 1) * n]]
            R.append(np.concatenate(rows))
        s = [task.scalar(r) for r in R]
        out[f"{fmt}_completion"] = float(np.mean([r[:, 0].mean() for r in R]))
        out[f"{fmt}_mean_scalar"] = float(np.mean([x.mean() for x in s]))
        out[f"{fmt}_best_of_pool"] = float(np.mean([x.max() for x in s]))
        out[f"{fmt}_example"] = texts[0][:120]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("path")
    ap.add_argument("--limit", type=int, default=10)
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--split", default="test")
    a = ap.parse_args()
    torch.set_num_threads(2)
    for k, v in quick_eval(a.path, a.limit, a.n, split=a.split).items():
        print(f"{k}: {v}")


if __name__ == "__main__":
    main()
