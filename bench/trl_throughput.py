"""TRL trainer vs the native trainer on the same Maze batch shape: steps/s and where a step goes.

    python bench/trl_throughput.py [--steps 4] [--method vpo] [--threads 1] [--json out.json]

Both engines start from the same policy (``--init``, default the bundled ``maze-tiny-vpo``; it must
write answers the current Maze parser accepts, else the native trainer skips the update of a step
whose advantages are all zero) and run the native trainer's RL shape:
6 prompts x G = 8 rollouts per step (m = 3 chains for VPO, 110 new tokens; single answers 40), two
optimizer steps per generation round, temperature 1.0, PPO-clip 0.2, KL 1e-3, the same torch threads.
A step is split the same way for both:
- generation: sampling the rollouts (TRL: ``_generate``; native: ``sample``);
- scoring: parse + reward vectors + dedup keys (wrapped task methods; TRL's ``_calculate_rewards``);
- update: everything else (old/reference log-probs, loss, backward, optimizer).
The first step of each engine is a warm-up and is not counted. On a shared CPU the absolute numbers
move with the load; the ratio is measured in the same run.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout this file sits in runs (its vpo_harness/)

REPO = Path(__file__).resolve().parent.parent
INIT = REPO / "checkpoints" / "maze-tiny-vpo"


class Clock:
    """Accumulates wall time of wrapped calls (non-reentrant: nested calls count once)."""

    def __init__(self) -> None:
        self.total = 0.0
        self._depth = 0

    def wrap(self, fn: Any) -> Any:
        def inner(*a: Any, **k: Any) -> Any:
            self._depth += 1
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self.total += time.perf_counter() - t0
        return inner


@contextmanager
def timed_task_methods(clock: Clock) -> Iterator[None]:
    """Time the Maze task's parse / rewards / score / dedup_key wherever the trainer calls them."""
    from vpo_harness.benchmarks.maze import Maze

    saved = {n: getattr(Maze, n) for n in ("parse", "rewards", "score", "dedup_key")}
    try:
        for n, f in saved.items():
            setattr(Maze, n, clock.wrap(f))
        yield
    finally:
        for n, f in saved.items():
            setattr(Maze, n, f)


def bench_native(steps: int, method: str, threads: int, init: Path = INIT) -> dict[str, float]:
    import vpo_harness.training.rl as rl

    score = Clock()
    gen = Clock()
    real_sample = rl.sample
    rl.sample = gen.wrap(real_sample)
    try:
        with tempfile.TemporaryDirectory() as tmp, timed_task_methods(score):
            cfg = rl.RLConfig(init=str(init), out=str(Path(tmp) / "rl"), method=method, steps=1, augment=False,
                              limit=64, threads=threads, save_every=10_000, prompts_per_step=6, group_size=8,
                              minibatches=2)
            rl.train_rl(cfg)                                 # warm-up step (not counted)
            gen.total = score.total = 0.0
            cfg.steps = 1 + steps
            t0 = time.perf_counter()
            rl.train_rl(cfg)                                 # resumes from step 1
            wall = time.perf_counter() - t0
            rows = [json.loads(x) for x in (Path(tmp) / "rl" / "rl_curves.jsonl").read_text().splitlines()][1:]
    finally:
        rl.sample = real_sample
    step_s = float(np.mean(np.diff([0.0] + [r["elapsed_s"] for r in rows])))
    total = step_s * steps
    return {"s_per_step": step_s, "steps_per_s": 1.0 / step_s, "generation_s": gen.total / steps,
            "scoring_s": score.total / steps, "update_s": (total - gen.total - score.total) / steps,
            "wall_incl_load_save_s": wall}


def bench_trl(steps: int, method: str, threads: int, init: Path = INIT) -> dict[str, float]:
    from vpo_harness.training import trl_vpo as T

    gen, score, total = Clock(), Clock(), Clock()

    def hook(trainer: Any) -> None:
        trainer._generate = gen.wrap(trainer._generate)
        trainer._calculate_rewards = score.wrap(trainer._calculate_rewards)
        trainer.training_step = total.wrap(trainer.training_step)
        orig = trainer.training_step

        def counted(*a: Any, **k: Any) -> Any:       # reset after the warm-up round
            if trainer.state.global_step == 2:
                gen.total = score.total = total.total = 0.0
            return orig(*a, **k)
        trainer.training_step = counted

    multi = method in ("vpo", "multi_rlvr")
    with tempfile.TemporaryDirectory() as tmp:
        cfg = T.TRLVPOConfig(init=str(init), out=str(Path(tmp) / "trl"), task="maze", method=method, limit=64,
                             prompt_style="compact", m=3, group_size=8, prompts_per_step=6, minibatches=2,
                             steps=1 + steps, lr=1e-4, beta=1e-3, max_completion_length=110 if multi else 40,
                             threads=threads, seed=42)
        T.train_trl(cfg, trainer_hook=hook)
    step_s = total.total / steps
    return {"s_per_step": step_s, "steps_per_s": 1.0 / step_s, "generation_s": gen.total / steps,
            "scoring_s": score.total / steps, "update_s": (total.total - gen.total - score.total) / steps}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--method", default="vpo")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", default=None)
    ap.add_argument("--init", default=str(INIT), help="policy both engines start from")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    native = bench_native(a.steps, a.method, a.threads, Path(a.init))
    trl = bench_trl(a.steps, a.method, a.threads, Path(a.init))
    res = {"init": a.init, "method": a.method, "steps": a.steps, "threads": a.threads, "batch": "6 prompts x G=8",
           "machine": platform.processor() or platform.machine(), "native": native, "trl": trl,
           "trl_over_native_steps_per_s": trl["steps_per_s"] / native["steps_per_s"]}
    for name, r in (("native", native), ("trl", trl)):
        s = r["s_per_step"]
        print(f"{name:6s} {r['steps_per_s']:.3f} steps/s ({s:.2f} s/step): generation {r['generation_s'] / s:.0%}, "
              f"scoring {r['scoring_s'] / s:.1%}, update {r['update_s'] / s:.0%}")
    print(f"TRL / native steps per second: {res['trl_over_native_steps_per_s']:.2f}")
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
