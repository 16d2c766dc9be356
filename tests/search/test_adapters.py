"""benchmarks/steps.py: every consumer's view of each task (prefix steps, plateau cut, mutation prompt),
found by task name; a task without an entry reads its answers as words."""
from __future__ import annotations

from vpo_harness.benchmarks import REGISTRY, get_task
from vpo_harness.benchmarks.toolrl import QWEN3_NO_THINK_PREFIX
from vpo_harness.benchmarks.steps import ADAPTERS, CodeSteps, WordSteps, adapter_for


def test_adapters_are_keyed_by_registered_task_names() -> None:
    assert set(ADAPTERS) <= set(REGISTRY)  # a renamed task would silently fall back to words
    assert type(adapter_for(get_task("musique"))) is WordSteps
    assert type(adapter_for(get_task("livecodebench"))) is CodeSteps


def test_code_prefix_is_an_open_python_block_of_whole_lines() -> None:
    ad = adapter_for(get_task("livecodebench"))
    code = "x = 1\ny = 2\nprint(x + y)\n"
    assert ad.steps(None, code) == ["x = 1\n", "y = 2\n", "print(x + y)\n"]
    assert ad.prefix(None, code, 2, 1) == ad.prefix(None, code, 2, 3) == "```python\nx = 1\ny = 2\n"


def test_toolrl_prefix_drops_the_think_block_prefill_put_there() -> None:
    answer = QWEN3_NO_THINK_PREFIX + "call a b"
    assert adapter_for(get_task("toolrl", prefill_think=True)).prefix(None, answer, 2, 1) == "call a"
    assert adapter_for(get_task("toolrl", prefill_think=True)).prefix(None, answer, 1, 3).startswith("<response_1><think>")
    assert adapter_for(get_task("toolrl")).prefix(None, answer, 1, 1) == "<think>"


def test_rewards_if_stopped_equal_each_prefix_scored_as_if_it_reached_the_exit() -> None:
    """Maze's reward arithmetic for the plateau cut (benchmarks/maze_env.py), against the rule it
    replaces: every prefix of the route simulated again and scored as completed."""
    import random

    from vpo_harness.benchmarks.maze_env import MOVES, MazeInstance, reward_from_counts, rewards_if_stopped, simulate

    task = get_task("maze")
    rng = random.Random(3)
    for p in task.load("test", limit=4):
        inst = MazeInstance.from_problem(p)
        for _ in range(6):
            moves = [rng.choice(MOVES) for _ in range(rng.randint(0, 40))]
            got = rewards_if_stopped(inst, moves, task.reward_mode)
            want = []
            for k in range(len(moves) + 1):
                _, info = simulate(inst, moves[:k], task.reward_mode)
                want.append(reward_from_counts(
                    len(info["gold"]), len(info["diamond"]), len(info["lava_hit"]), info["bonus_visited"],
                    total_gold=len(inst.gold), total_diamond=len(inst.diamond), total_lava=len(inst.lava),
                    completed=True, reward_mode=task.reward_mode))
                if info["reached_exit"] or info["steps"] >= inst.budget:
                    break
            assert got.shape == (len(want), 4)
            assert (got == want).all()


def test_feedback_names_each_component_and_maze_says_what_the_route_does() -> None:
    from vpo_harness.benchmarks.maze import best_route
    from vpo_harness.benchmarks.maze_env import COMPONENTS, MazeInstance

    words = adapter_for(get_task("musique"))
    names = ("hop_1", "hop_2", "hop_3", "hop_4", "answer_f1")
    text = words.feedback(None, "x", (1.0, 0.5, 0.0, 0.0, 0.5), names)
    assert "hop_1 1.00, hop_2 0.50, hop_3 0.00, hop_4 0.00, answer_f1 0.50" in text
    assert "overall 0.43" in text  # the task's own scalar: (1.5 + 3 * 0.5) / 7
    task = get_task("maze")
    ad = adapter_for(task)
    p = task.load("test", limit=1)[0]
    inst = MazeInstance.from_problem(p)
    route = " ".join(best_route(inst, (0.1, 0.1, 0.1, 0.7), "convex_bonus"))
    r, info = task.simulate(p, route)
    text = ad.feedback(p, route, r, COMPONENTS)
    assert "reaches the exit" in text
    assert f"collects {len(info['gold'])} of {len(inst.gold)} gold" in text
    assert f"{len(info['diamond'])} of {len(inst.diamond)} diamonds" in text
    assert ("crosses no lava" in text) == (not info["lava_hit"])
    assert "avoid_lava" in text  # the components by name follow the words
    through = " ".join(_via(inst, inst.lava[0]))  # a route to E over a lava tile
    r, info = task.simulate(p, through)
    assert info["reached_exit"] and info["lava_hit"]
    assert f"but crosses {len(info['lava_hit'])} of {len(inst.lava)} lava tiles" in ad.feedback(p, through, r, COMPONENTS)
    lost = ad.feedback(p, "UP", task.reward(p, "UP"), COMPONENTS)
    assert "before reaching the exit" in lost and "0 on every component" in lost
    assert ad.shown_answer(p, "UP, DOWN") == "UP DOWN" and ad.shown_answer(p, "") == "(no moves)"


def _via(inst, cell):
    """Moves of a shortest route from S to ``cell`` and on to E (a test's way to a chosen tile)."""
    from vpo_harness.benchmarks.maze_env import DELTAS, bfs

    def leg(a, b):
        dist = bfs(inst.grid, a, no_pass=[inst.exit] if b != inst.exit else [])
        out, at = [], b
        while at != a:
            for mv, (dr, dc) in DELTAS.items():
                prev = (at[0] - dr, at[1] - dc)
                if dist.get(prev) == dist[at] - 1:
                    out.append(mv)
                    at = prev
                    break
        return out[::-1]

    return leg(inst.start, cell) + leg(cell, inst.exit)
