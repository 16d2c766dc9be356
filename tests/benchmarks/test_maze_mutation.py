"""The Maze mutation prompt (evolve mode): the parent and inspirations go in with their reward vectors,
children come back in the task's own answer format and are scored by the task's own reward."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vpo_harness.benchmarks.base import Shown
from vpo_harness.benchmarks.maze import Maze, MazeInstance, best_route

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def task() -> Maze:
    return Maze()


@pytest.fixture(scope="module")
def mazes(task):
    return task.load("test", limit=6)


def _shown(task, problem, moves):
    text = " ".join(moves)
    return Shown(text, tuple(float(x) for x in task.reward(problem, text)))


def test_parent_and_inspirations_are_in_the_prompt_with_their_rewards(task, mazes):
    p = mazes[0]
    inst = MazeInstance.from_problem(p)
    good = best_route(inst, [1, 1, 0, 1])
    parent, other = _shown(task, p, good), _shown(task, p, ["UP", "LEFT"])
    for style in ("compact", "full"):
        text = task.mutation_prompt(p, parent, [other], 3, style=style)[-1]["content"]
        assert inst.render() in text
        assert " ".join(good) in text and "UP LEFT" in text
        assert "<route_3>" in text and "<route_4>" not in text
        # the parent's reward vector, component by component, two decimals at most
        shown = " ".join(f"{x:.2f}".rstrip("0").rstrip(".") if x else "0" for x in parent.reward)
        assert shown in text
        assert text.index(" ".join(good)) < text.index("UP LEFT")  # parent first
    single = task.mutation_prompt(p, parent, [], 1, style="compact")[-1]["content"]
    assert "<answer>" in single and "<route_1>" not in single and "Other:" not in single


def test_at_most_two_inspirations_are_shown(task, mazes):
    p = mazes[1]
    ins = [_shown(task, p, [mv] * (i + 1)) for i, mv in enumerate(["UP", "DOWN", "LEFT"])]
    text = task.mutation_prompt(p, ins[0], ins, 2, style="compact")[-1]["content"]
    assert text.count("Other:") == 2 and "LEFT LEFT LEFT" not in text


def test_children_round_trip_through_the_tasks_parser_and_reward(task, mazes):
    """A completion answering the mutation prompt in its format is read by the task's own parser; the
    children's rewards are the task's rewards of those routes (a better child scores higher)."""
    p = mazes[2]
    inst = MazeInstance.from_problem(p)
    best = best_route(inst, [1, 1, 1, 1])
    worse = best[: len(best) // 2]
    parent = _shown(task, p, worse)
    task.mutation_prompt(p, parent, [], 3, style="compact")
    completion = (f"<route_1>{' '.join(best)}</route_1> <route_2>{' '.join(worse)}</route_2> "
                  "<route_3>nothing here</route_3>")
    children = task.parse(completion, 3)
    assert children[2] is None
    rewards = task.rewards(p, children)
    assert np.allclose(rewards[1], parent.reward)
    assert task.scalar(rewards[0]) > task.scalar(rewards[1])
    assert np.allclose(rewards[0], task.reward(p, " ".join(best)))


def test_compact_prompt_fits_the_bundled_models_context(task):
    """Longest case: a parent and two inspirations each using the whole step budget, plus the tokens
    the bundled multi-answer policy generates, fit in the 512 positions of the tiny models."""
    import json

    from tokenizers import Tokenizer

    ckpt = ROOT / "checkpoints" / "maze-tiny-vpo"
    tok = Tokenizer.from_file(str(ckpt / "tokenizer.json"))
    ctx = json.loads((ckpt / "config.json").read_text())["max_position_embeddings"]
    gen = json.loads((ckpt / "vpo_training.json").read_text())["config"]["max_new_tokens_multi"]
    worst = 0
    for p in task.load("test", limit=20):
        inst = MazeInstance.from_problem(p)
        full = ["RIGHT"] * inst.budget
        s = Shown(" ".join(full), (1.0, 0.33, 0.67, 1.0))
        text = task.mutation_prompt(p, s, [s, s], 3, style="compact")[-1]["content"]
        worst = max(worst, len(tok.encode(text).ids) + 16)  # + the chat template's role markers
    assert worst + gen <= ctx, (worst, gen, ctx)


def test_tasks_without_a_mutation_prompt_say_so():
    from vpo_harness.benchmarks import get_task
    from vpo_harness.benchmarks.steps import adapter_for

    assert adapter_for(get_task("toolrl")).mutation_prompt(None, Shown("x", (0.0,)), [], 1) is None
    maze = get_task("maze")
    p = maze.load("test", limit=1)[0]
    assert adapter_for(maze).mutation_prompt(p, Shown("UP", (0.0,) * 4), [], 1) == \
        maze.mutation_prompt(p, Shown("UP", (0.0,) * 4), [], 1)
