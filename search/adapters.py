"""What the search needs of a task beyond the task protocol, kept with the search: where an answer's
reward stopped improving (``--cut plateau``) and a task's own mutation prompt (``--prompt-mode
evolve``), on top of how an answer is cut into steps and written back as an open prefix
(``--prompt-mode prefix``), which lives in :mod:`vpo_harness.harness.eval.continuation` because the trainer
writes the same prefixes.

Why here and not on :class:`~vpo_harness.benchmarks.base.Benchmark`: these serve one consumer, and a task should
not carry hooks for every consumer above it. A task is seen through a :class:`SearchAdapter`, the
small protocol the engine calls, found by task name in :data:`ADAPTERS` (a task without an entry
gets :class:`WordSteps`), in the way inspect_ai puts a solver around a task instead of into it.
"""
from __future__ import annotations

from typing import Any, Protocol, Sequence

from vpo_harness.benchmarks.base import Messages, Problem, Shown
from vpo_harness.harness.eval import continuation
from vpo_harness.harness.eval.continuation import Continuation


class SearchAdapter(Continuation, Protocol):
    """The engine's view of a task (search/engine.py): a continuation plus the search-only hooks."""

    def plateau_cut(self, problem: Problem, answer: str) -> int | None:
        """The step after which the answer's reward stopped improving; None: the task cannot say
        (the engine then cuts uniformly)."""
        ...

    def mutation_prompt(self, problem: Problem, parent: Shown, inspirations: Sequence[Shown], m: int, *,
                        style: str = "full") -> Messages | None:
        """The task's own prompt showing a parent (and inspirations) with their reward vectors;
        None: the engine uses OpenEvolve's program-evolution prompt."""
        ...


class WordSteps(continuation.WordSteps):
    """Any task read as words, with no plateau rule and no mutation prompt of its own."""

    def plateau_cut(self, problem: Problem, answer: str) -> int | None:
        return None

    def mutation_prompt(self, problem: Problem, parent: Shown, inspirations: Sequence[Shown], m: int, *,
                        style: str = "full") -> Messages | None:
        return None


class MazeSteps(continuation.MazeSteps, WordSteps):
    """Maze: the plateau of a route's reward, and Maze's own mutation prompt."""

    def plateau_cut(self, problem: Problem, answer: str) -> int | None:
        """The first step at which the route's reward, scored as if the route reached E right there
        (items collected, lava hit, bonus so far), reaches its best over the route: after it the
        route only walks (the real reward is zero until E, so it cannot say where progress stopped)."""
        from vpo_harness.benchmarks.maze_env import MazeInstance, reward_from_counts, simulate

        task = self.task
        inst = MazeInstance.from_problem(problem)
        moves = task.moves(answer)
        best, at = float("-inf"), 0
        for k in range(len(moves) + 1):
            _, info = simulate(inst, moves[:k], task.reward_mode)
            r = reward_from_counts(len(info["gold"]), len(info["diamond"]), len(info["lava_hit"]),
                                   info["bonus_visited"], total_gold=len(inst.gold), total_diamond=len(inst.diamond),
                                   total_lava=len(inst.lava), completed=True, reward_mode=task.reward_mode)
            value = float(task.scalar(r))
            if value > best + 1e-12:
                best, at = value, k
            if info["reached_exit"]:
                break
        return at

    def mutation_prompt(self, problem: Problem, parent: Shown, inspirations: Sequence[Shown], m: int, *,
                        style: str = "full") -> Messages | None:
        """Maze's own mutation prompt (a task prompt, which training's mutation data uses too)."""
        return self.task.mutation_prompt(problem, parent, inspirations, m, style=style)


class CodeSteps(continuation.CodeSteps, WordSteps):
    """LiveCodeBench programs (lines), no search hooks of their own."""


class ToolRLSteps(continuation.ToolRLSteps, WordSteps):
    """ToolRL (words less the prefilled think block), no search hooks of their own."""


#: task name -> its adapter class; a task without an entry is read as words (:class:`WordSteps`)
ADAPTERS: dict[str, type[WordSteps]] = {"maze": MazeSteps, "livecodebench": CodeSteps, "toolrl": ToolRLSteps}


def adapter_for(task: Any) -> SearchAdapter:
    """The search's view of ``task`` (a loaded :class:`~vpo_harness.benchmarks.base.Benchmark`)."""
    return ADAPTERS.get(task.name, WordSteps)(task)
