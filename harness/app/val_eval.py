"""Evaluate checkpoints on 50 validation mazes (the first 50 of the ``val`` split: accepted generator
seeds from base seed 777000, used by neither the train split (base 42) nor the test split (base 4242))
with the demo protocol (pool 30, T 0.7, top-p 1.0, compact prompts, the paper's scorer).
Used to pick the RL step of the bundled maze-tiny-vpo/grpo without looking at the test split.
usage: python -m vpo_harness.harness.app.val_eval OUTDIR NAME=CKPT:vpo|grpo ...  (vpo = 10 chains x 3 answers, grpo = 30 samples)"""
import json
import os
import sys
import time

from vpo_harness.benchmarks.maze import Maze
from vpo_harness.harness.core.results import load_run
from vpo_harness.harness.eval.runner import run
from vpo_harness.harness.app.demo import demo_config

VAL_SIZE = 50


def main() -> None:
    import torch

    torch.set_num_threads(int(os.environ.get("VAL_THREADS", "1")))
    probs = Maze().load("val", limit=VAL_SIZE)
    out = sys.argv[1]
    res = {}
    for spec in sys.argv[2:]:
        name, rest = spec.split("=", 1)
        ck, meth = rest.rsplit(":", 1)
        t = time.time()
        # the demo protocol; its split is only a label here: run() scores the validation problems passed in
        cfg = demo_config(ck, meth == "vpo", f"{out}/{name}", None, 200)
        cfg.execution.progress = False
        r = load_run(run(cfg, problems=probs)).summary
        res[name] = {"best@1": r.best[1].mean, "best@30": r.best[30].mean, "diversity": r.diversity.mean}
        print(name, json.dumps(res[name]), f"{time.time()-t:.0f}s", flush=True)
    json.dump(res, open(f"{out}/val_{int(time.time())}.json", "w"), indent=1)


if __name__ == "__main__":
    main()
