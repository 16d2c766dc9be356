"""How a task's answer is cut into steps and written back as the open start of a completion.

Why on the evaluation layer: two consumers need exactly the same text. `vpo evolve --prompt-mode
prefix` (search/) hands the policy the start of an earlier answer to continue, and the native trainer
(training/prefix.py) trains a fraction of its prompts from such starts so that a policy continues any
prefix in its own format; search and training are siblings and import neither each other, so the rule
both use sits below them, next to the runner that already takes ``--prefix``. The search-only parts
(where a route's reward plateaued, a task's mutation prompt) extend these classes in
search/adapters.py. A task is seen through :func:`continuation_for`, by task name in
:data:`CONTINUATIONS` (a task without an entry gets :class:`WordSteps`), as inspect_ai puts a solver
around a task instead of into it.
"""
from __future__ import annotations

import re
from typing import Any, Protocol, Sequence

from vpo_harness.benchmarks.base import Benchmark, Problem


class Continuation(Protocol):
    """What a prefix needs of a task."""

    def steps(self, problem: Problem, answer: str) -> list[str]:
        """A parsed answer cut into the steps a prefix may end after."""
        ...

    def prefix(self, problem: Problem, answer: str, cut: int, m: int) -> str:
        """The start of a completion holding the first ``cut`` steps of ``answer``, left open, in the
        format the task's prompt asks for (for ``m > 1``: the first answer of the set)."""
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


class MazeSteps(WordSteps):
    """Maze routes: steps are moves, written as the prompts ask for them (space-separated words)."""

    opening = "<answer>"

    def steps(self, problem: Problem, answer: str) -> list[str]:
        """The moves the route uses, as the parser reads them: up to reaching E or the step budget.
        Moves after those are ignored by the simulator, so a cut among them would keep the whole
        effective route and the child would walk the parent's path."""
        from vpo_harness.benchmarks.maze_env import MazeInstance, simulate

        moves = self.task.moves(answer)
        _, info = simulate(MazeInstance.from_problem(problem), moves, self.task.reward_mode)
        return moves[: info["steps"]]

    def join(self, steps: Sequence[str]) -> str:
        return " ".join(steps)


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
        from vpo_harness.benchmarks.toolrl import QWEN3_NO_THINK_PREFIX

        if m == 1 and self.task.options["prefill_think"] and answer.startswith(QWEN3_NO_THINK_PREFIX):
            answer = answer[len(QWEN3_NO_THINK_PREFIX):]
        return super().prefix(problem, answer, cut, m)


#: task name -> its continuation class; a task without an entry is read as words (:class:`WordSteps`)
CONTINUATIONS: dict[str, type[WordSteps]] = {"maze": MazeSteps, "livecodebench": CodeSteps, "toolrl": ToolRLSteps}


def continuation_for(task: Any) -> Continuation:
    """How ``task`` (a loaded :class:`~vpo_harness.benchmarks.base.Benchmark`) writes a prefix of an answer."""
    return CONTINUATIONS.get(task.name, WordSteps)(task)
