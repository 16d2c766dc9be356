"""The bundled Maze mutation operators load through the zoo and answer mutation prompts with routes
the task's parser reads (at temperature 0.7, the evolve default)."""
from __future__ import annotations

import pytest

from vpo_harness.benchmarks.base import Shown
from vpo_harness.benchmarks.maze import Maze


@pytest.mark.parametrize("name,m", [("maze-tiny-evo-vpo", 3), ("maze-tiny-evo-grpo", 1)])
def test_operator_answers_a_mutation_prompt_with_parseable_routes(name, m):
    from vpo_harness.harness.core.models import GenRequest, SamplingConfig, load_backend
    from vpo_harness.harness.core.models.zoo import generation_defaults

    task = Maze()
    problems = task.load("val", limit=3)
    defaults, _ = generation_defaults(f"hf:{name}")
    assert defaults.prompt_style == "compact"
    reqs = []
    for i, p in enumerate(problems):
        walk = " ".join(["RIGHT", "DOWN"] * 3)
        parent = Shown(walk, tuple(float(x) for x in task.reward(p, walk)))
        reqs.append(GenRequest(p.id, task.mutation_prompt(p, parent, [], m, style="compact"), (0, 1), (11 + i, 29 + i)))
    backend = load_backend(f"hf:{name}", model_args={"batch_size": 8})
    try:
        gens = list(backend.generate(reqs, SamplingConfig(temperature=0.7, top_p=1.0,
                                                          max_tokens=defaults.max_tokens(m))))
    finally:
        backend.close()
    assert len(gens) == 2 * len(problems) and not any(g.error for g in gens)
    by_id = {p.id: p for p in problems}
    routes = [a for g in gens for a in task.parse(g.text, m if m > 1 else None)]
    parsed = [a for a in routes if a is not None and task.moves(a)]
    assert len(parsed) >= len(routes) // 2, [g.text for g in gens]
    reached = [task.reward(by_id[g.problem_id], a)[0] for g in gens for a in task.parse(g.text, m if m > 1 else None) if a]
    assert max(reached) == 1.0  # some route reaches the exit
