"""Prefilled training prompts are exactly what `vpo evolve --prompt-mode prefix` sends."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from vpo_harness.benchmarks import get_task
from vpo_harness.harness.core.models.base import GenRequest, SamplingConfig
from vpo_harness.search.engine import ProblemEvolution
from vpo_harness.training import data as D
from vpo_harness.training.prefix import cut_route, draws_prefix, prefill_at, render_prompt
from vpo_harness.training.model import build_tokenizer
from vpo_harness.benchmarks.steps import adapter_for


@pytest.fixture(scope="module")
def maze():
    return get_task("maze")


@pytest.fixture(scope="module")
def problem_and_route(maze):
    p = maze.load("train", limit=1)[0]
    route = D.search_targets(maze, [p], n_random=1)[p.id][0]["route"]
    return p, D.route_words(route)


@pytest.mark.parametrize("m", [1, 3])
def test_prefix_equals_the_engines_for_the_same_cut(maze, problem_and_route, m):
    p, answer = problem_and_route
    for it in range(6):
        engine = SimpleNamespace(s=SimpleNamespace(task=maze, cut="uniform", seed=7, m=m), problem=p,
                                 adapter=adapter_for(maze))
        sent, cut = ProblemEvolution._prefix(engine, it, SimpleNamespace(code=answer))
        assert prefill_at(maze, p, answer, cut, m).text == sent
        assert sent.startswith("<answer>" if m == 1 else "<route_1>")


def test_cut_is_uniform_over_the_routes_steps(maze, problem_and_route):
    p, answer = problem_and_route
    n = len(adapter_for(maze).steps(p, answer))
    rng = np.random.default_rng(0)
    cuts = [cut_route(maze, p, answer, 1, rng).cut for _ in range(40 * n)]
    assert set(cuts) == set(range(n))                 # 0 .. steps - 1, as the engine's uniform cut


def test_rendered_prompt_is_the_hf_backends_for_a_prefilled_request(maze, problem_and_route):
    from vpo_harness.harness.core.models.hf import HFBackend
    from vpo_harness.harness.core.paths import REPO_ROOT

    p, answer = problem_and_route
    msgs = maze.multi_prompt(p, 3, style="compact")
    pre = prefill_at(maze, p, answer, 2, 3).text
    backend = HFBackend(str(REPO_ROOT / "checkpoints" / "maze-tiny-vpo"), device="cpu")
    sent, _ = backend._prompt(GenRequest("p", msgs, (0,), (1,), prefix=pre), SamplingConfig())
    assert render_prompt(msgs, backend.tokenizer, pre) == sent and sent.endswith("<|assistant|>" + pre)


def test_sft_prefix_examples_are_the_full_example_with_the_prefix_as_context(maze):
    ps = maze.load("train", limit=4)
    targets = D.search_targets(maze, ps, n_random=2)
    tok = build_tokenizer()
    plain = D.make_examples(maze, ps, targets, m=3, copies=6, seed=1)
    mixed = D.make_examples(maze, ps, targets, m=3, copies=6, seed=1, prefix_fraction=0.5)
    pre = [e for e in mixed if len(e) == 3]
    assert 0 < len(pre) < len(mixed) and all(len(e) == 2 for e in plain)
    assert all(len(e) == 2 for e in D.make_examples(maze, ps, targets, m=3, copies=6, seed=1, prefix_fraction=0.0))
    def valid(p, m):  # every prefix the engine could send for this maze's target routes
        return {adapter_for(maze).prefix(p, D.route_words(t["route"]), c, m)
                for t in targets[p.id] for c in range(len(t["route"]))}

    for msgs, rest, prefix in pre:
        p = next(q for q in ps if q.data["grid"] and msgs in (maze.prompt(q, style="compact"),
                                                               maze.multi_prompt(q, 3, style="compact")))
        assert prefix in valid(p, 3 if prefix.startswith("<route_1>") else 1)
        full = D.encode_pairs(tok, [(msgs, prefix + rest)])
        cont = D.encode_pairs(tok, [(msgs, rest, prefix)])
        # the same tokens; the prefix is context (no loss), the continuation is trained
        assert full.input_ids.tolist() == cont.input_ids.tolist()
        n_rest = int((cont.labels != -100).sum())
        assert n_rest == len(tok(rest, add_special_tokens=False)["input_ids"]) + 1
        assert n_rest < int((full.labels != -100).sum()) or prefix in ("<answer>", "<route_1>")


def test_prefix_fraction_out_of_range_is_refused():
    with pytest.raises(ValueError, match="prefix_fraction"):
        draws_prefix(np.random.default_rng(0), 1.5)
