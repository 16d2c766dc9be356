"""How often a Maze policy's first answer parses when it continues a prefilled route, as
`vpo evolve --prompt-mode prefix` asks it to (bench/prefix_parse_rate.py is its command line; the warm
starts' cards report it, training/warm_eval.py).

Per maze the policy first answers the task prompt once (temperature 0.7); the parent is its first
parsed answer that scores above zero (else its first parsed answer; mazes where none parses are counted
apart), as the search prefers nonzero parents. That answer is cut uniformly ``cuts`` times
(training/prefix.py), and each prefix goes to the hf backend as a prefilled request. A call counts as
parsed when the task's parser reads its first answer (``<answer>`` for m = 1, ``<route_1>`` for a set),
which fails when the policy closes the open answer with another answer's tag.
"""
from __future__ import annotations

import json
import math
from typing import Any

import numpy as np


def answers_per_call(model: str) -> int:
    """3 for a multi-answer method's checkpoint (its training record names the method), else 1."""
    from vpo_harness.harness.core.models import zoo
    from vpo_harness.training.advantages import MULTI_ANSWER

    where = zoo.weights_location(model)
    record = where / zoo.TRAINING_RECORD if where is not None and where.is_dir() else None
    if record is None or not record.is_file():
        return 1
    rec = json.loads(record.read_text())
    method = rec.get("method") or rec.get("config", {}).get("method")
    return 3 if method in MULTI_ANSWER else 1


def measure(model: str, m: int, *, split: str, n_mazes: int, cuts: int, seed: int = 0,
            temperature: float = 0.7) -> dict[str, Any]:
    from vpo_harness.benchmarks import get_task
    from vpo_harness.harness.core.models import load_backend
    from vpo_harness.harness.core.models.base import GenRequest, SamplingConfig
    from vpo_harness.harness.core.models.zoo import TINY_MAZE_DEFAULTS
    from vpo_harness.training.prefix import cut_route

    task = get_task("maze")
    problems = task.load(split, limit=n_mazes)
    backend = load_backend(f"hf:{model}", model_args={"device": "cpu", "batch_size": 128})
    sampling = SamplingConfig(temperature=temperature, top_p=1.0, max_tokens=TINY_MAZE_DEFAULTS.max_tokens(m))
    style = TINY_MAZE_DEFAULTS.prompt_style

    def prompt(p):
        return task.multi_prompt(p, m, style=style) if m > 1 else task.prompt(p, style=style)

    first = {g.problem_id: g.text for g in backend.generate(
        [GenRequest(p.id, prompt(p), (0,), (seed + i,)) for i, p in enumerate(problems)], sampling)}
    reqs, no_parent = [], 0
    for i, p in enumerate(problems):
        answers = [a for a in task.parse(first.get(p.id, ""), m if m > 1 else None) if a is not None]
        if not answers:
            no_parent += 1
            continue
        scored = [a for a in answers if float(task.scalar(np.asarray(task.reward(p, a)))) > 0]
        parent = (scored or answers)[0]
        rng = np.random.default_rng([seed, i])
        for c in range(cuts):
            pre = cut_route(task, p, parent, m, rng).text
            reqs.append(GenRequest(f"{p.id}#{c}", prompt(p), (0,), (seed + 1000 + i * cuts + c,), prefix=pre))
    parsed = [task.parse(g.text, m if m > 1 else None)[0] is not None for g in backend.generate(reqs, sampling)]
    n = len(parsed)
    rate = float(np.mean(parsed)) if n else float("nan")
    return {"model": model, "m": m, "split": split, "mazes": len(problems), "mazes_without_parent": no_parent,
            "calls": n, "first_answer_parse_rate": rate,
            "se": math.sqrt(rate * (1 - rate) / n) if n else float("nan")}
