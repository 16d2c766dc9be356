"""First-answer parse rate of Maze policies when they continue a prefilled route, as in
`vpo evolve --prompt-mode prefix`.

    python bench/prefix_parse_rate.py [MODEL ...] [--split val] [--n-mazes 50] [--cuts 4] [--json out.json]

MODEL is a zoo name or a checkpoint folder (default: the bundled maze-tiny-vpo and maze-tiny-grpo);
``NAME=MODEL:M`` sets the answers per call (default: 3 for multi-answer methods, read from the
checkpoint's training record, else 1), as bench/evolve_prefix.py runs them. Per maze the policy first
answers the task prompt once (temperature 0.7); the parent is its first parsed answer that scores
above zero (else its first parsed answer; mazes where none parses are counted apart), as the search
prefers nonzero parents. That answer is cut uniformly ``--cuts`` times (training/prefix.py, the
engine's rule and the task's continuation, ``vpo_harness.harness.eval.continuation``), and each prefix goes to the hf backend as a prefilled
request, which renders it as an open assistant turn and returns prefix + continuation. A call counts
as parsed when the task's parser reads its first answer (``<answer>`` for m = 1, ``<route_1>`` for a
set), which fails when the policy closes the open answer with another answer's tag.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


from vpo_harness.training.prefix_parse import answers_per_call, measure  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*", default=["maze-tiny-vpo", "maze-tiny-grpo"])
    ap.add_argument("--split", default="val")
    ap.add_argument("--n-mazes", type=int, default=50)
    ap.add_argument("--cuts", type=int, default=4, help="prefix calls per maze (different cuts)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    import torch

    torch.set_num_threads(a.threads)
    rows = []
    for spec in a.models:
        name, _, rest = spec.rpartition("=") if "=" in spec else ("", "", spec)
        model, _, m = rest.rpartition(":") if rest.rsplit(":", 1)[-1].isdigit() else (rest, "", "")
        r = measure(model, int(m) if m else answers_per_call(model), split=a.split, n_mazes=a.n_mazes, cuts=a.cuts)
        r["name"] = name or model
        rows.append(r)
        print(f"{r['name']}: first-answer parse rate {r['first_answer_parse_rate']:.3f} ± {r['se']:.3f} "
              f"(m = {r['m']}, {r['calls']} prefix calls on {r['mazes'] - r['mazes_without_parent']} {a.split} mazes; "
              f"{r['mazes_without_parent']} mazes had no parsed parent)", flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
