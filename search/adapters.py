"""What the search needs of a task beyond the task protocol, kept with the search: how an answer is
cut into steps and written back as the open start of a completion (``--prompt-mode prefix``), where
its reward stopped improving (``--cut plateau``), and a task's own mutation prompt
(``--prompt-mode evolve``).

Why here and not on :class:`~benchmarks.base.Benchmark`: these serve one consumer, and a task should
not carry hooks for every consumer above it. A task is seen through a :class:`SearchAdapter`, the
small protocol the engine calls, found by task name in :data:`ADAPTERS` (a task without an entry
gets :class:`WordSteps`, which fits any task whose parsed answer is the reply as written), in the
way inspect_ai puts a solver around a task instead of into it.
"""
from __future__ import annotations

import re
from typing import Any, Protocol, Sequence

from benchmarks.base import Benchmark, Messages, Problem, Shown


class SearchAdapter(Protocol):
    """The engine's view of a task (search/engine.py)."""

    def steps(self, problem: Problem, answer: str) -> list[str]:
        """A parsed answer cut into the steps a prefix may end after."""
        ...

    def prefix(self, problem: Problem, answer: str, cut: int, m: int) -> str:
        """The start of a completion holding the first ``cut`` steps of ``answer``, left open, in the
        format the task's prompt asks for (for ``m > 1``: the first answer of the set)."""
        ...

    def plateau_cut(self, problem: Problem, answer: str) -> int | None:
        """The step after which the answer's reward stopped improving; None: the task cannot say
        (the engine then cuts uniformly)."""
        ...

    def mutation_prompt(self, problem: Problem, parent: Shown, inspirations: Sequence[Shown], m: int, *,
                        style: str = "full") -> Messages | None:
        """The task's own prompt showing a parent (and inspirations) with their reward vectors;
        None: the engine uses OpenEvolve's program-evolution prompt."""
        ...


class WordSteps:
    """Any task whose parsed answer is the reply as written (MuSiQue, Eureqa): steps are words, each
    with the whitespace before it, so the first k joined are the answer's text up to word k."""

    #: what opens a single answer in the task's completion format (Maze: ``<answer>``)
    opening = ""

    def __init__(self, task: Benchmark):
        self.task = task

    def steps(self, problem: Problem, answer: str) -> list[str]:
        return re.findall(r"\s*\S+", answer or "")

    def join(self, steps: Sequence[str]) -> str:
        """The text of a run of steps (the inverse of :meth:`steps` on a prefix of them)."""
        return "".join(steps)

    def prefix(self, problem: Problem, answer: str, cut: int, m: int) -> str:
        """For ``m == 1`` the single answer, for ``m > 1`` the first answer of the set (``<tag_1>``),
        after which the policy writes the rest; prefix + continuation is parsed and scored by the task
        as a sampled completion is."""
        body = self.join(self.steps(problem, answer)[: max(0, int(cut))])
        return (self.opening if m == 1 else f"<{self.task.answer_tag}_1>") + body

    def plateau_cut(self, problem: Problem, answer: str) -> int | None:
        return None

    def mutation_prompt(self, problem: Problem, parent: Shown, inspirations: Sequence[Shown], m: int, *,
                        style: str = "full") -> Messages | None:
        return None


class MazeSteps(WordSteps):
    """Maze routes: steps are moves, written as the prompts ask for them (space-separated words)."""

    opening = "<answer>"

    def steps(self, problem: Problem, answer: str) -> list[str]:
        """The moves the route uses, as the parser reads them: up to reaching E or the step budget.
        Moves after those are ignored by the simulator, so a cut among them would keep the whole
        effective route and the child would walk the parent's path."""
        from benchmarks.maze_env import MazeInstance, simulate

        moves = self.task.moves(answer)
        _, info = simulate(MazeInstance.from_problem(problem), moves, self.task.reward_mode)
        return moves[: info["steps"]]

    def join(self, steps: Sequence[str]) -> str:
        return " ".join(steps)

    def plateau_cut(self, problem: Problem, answer: str) -> int | None:
        """The first step at which the route's reward, scored as if the route reached E right there
        (items collected, lava hit, bonus so far), reaches its best over the route: after it the
        route only walks (the real reward is zero until E, so it cannot say where progress stopped)."""
        from benchmarks.maze_env import MazeInstance, reward_from_counts, simulate

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


class CodeSteps(WordSteps):
    """LiveCodeBench programs: steps are lines (newlines kept, so the joined lines are the code)."""

    def steps(self, problem: Problem, answer: str) -> list[str]:
        return (answer or "").splitlines(keepends=True)

    def prefix(self, problem: Problem, answer: str, cut: int, m: int) -> str:
        """The first ``cut`` lines in an open ```python block: the single answer, or the first block
        of a set (the multi prompt separates fenced blocks by ``---``, no numbered tags)."""
        return "```python\n" + self.join(self.steps(problem, answer)[: max(0, int(cut))])


class ToolRLSteps(WordSteps):
    """ToolRL: as words, less the think block ``prefill_think`` put in front of a single answer (the
    task's parser puts it there again)."""

    def prefix(self, problem: Problem, answer: str, cut: int, m: int) -> str:
        from benchmarks.toolrl import QWEN3_NO_THINK_PREFIX

        if m == 1 and self.task.options["prefill_think"] and answer.startswith(QWEN3_NO_THINK_PREFIX):
            answer = answer[len(QWEN3_NO_THINK_PREFIX):]
        return super().prefix(problem, answer, cut, m)


#: task name -> its adapter class; a task without an entry is read as words (:class:`WordSteps`)
ADAPTERS: dict[str, type[WordSteps]] = {"maze": MazeSteps, "livecodebench": CodeSteps, "toolrl": ToolRLSteps}


def adapter_for(task: Any) -> SearchAdapter:
    """The search's view of ``task`` (a loaded :class:`~benchmarks.base.Benchmark`)."""
    return ADAPTERS.get(task.name, WordSteps)(task)
