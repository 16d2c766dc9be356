"""How each task's answers are cut into steps and what a consumer above the tasks needs of them: the
open prefix of an answer (``vpo evolve --prompt-mode prefix`` and the trainer's prefilled prompts),
where an answer's reward stopped improving (``--cut plateau``), the task's own mutation prompt
(``--prompt-mode evolve``) and the parent's reward components in words (``--prompt-mode feedback``).

Why one table on the task layer: the trainer (training/) and the search (search/) both need the
prefix rule and are siblings that import neither each other, so the rule sits below both; the search
hooks are kept with it so that a task has one entry, in :data:`ADAPTERS`, instead of one per
consumer with the same keys. What is arithmetic of a task's reward (Maze: the reward a route would
have if it stopped after k moves) lives in the task's own modules (:mod:`vpo_harness.benchmarks.maze_env`);
this module only asks for it. A task is seen through :func:`adapter_for` (a task without an entry
gets :class:`WordSteps`), in the way inspect_ai puts a solver around a task instead of into it.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from vpo_harness.benchmarks.base import Benchmark, Messages, Problem, Shown

if TYPE_CHECKING:
    from vpo_harness.benchmarks.maze import Maze


class WordSteps:
    """Any task whose parsed answer is the reply as written (MuSiQue, Eureqa): steps are words, each
    with the whitespace before it, so the first k joined are the answer's text up to word k. No
    plateau rule and no mutation prompt of its own; its feedback names each reward component."""

    #: what opens a single answer in the task's completion format (Maze: ``<answer>``)
    opening = ""

    def __init__(self, task: Benchmark):
        self.task = task

    # ---- prefixes (search and trainer) ---------------------------------------------------------------
    def steps(self, problem: Problem, answer: str) -> list[str]:
        """A parsed answer cut into the steps a prefix may end after."""
        return re.findall(r"\s*\S+", answer or "")

    def join(self, steps: Sequence[str]) -> str:
        """The text of a run of steps (the inverse of :meth:`steps` on a prefix of them)."""
        return "".join(steps)

    def prefix(self, problem: Problem, answer: str, cut: int, m: int) -> str:
        """The start of a completion holding the first ``cut`` steps of ``answer``, left open, in the
        format the task's prompt asks for: for ``m == 1`` the single answer, for ``m > 1`` the first
        answer of the set (``<tag_1>``), after which the policy writes the rest; prefix + continuation
        is parsed and scored by the task as a sampled completion is."""
        body = self.join(self.steps(problem, answer)[: max(0, int(cut))])
        return (self.opening if m == 1 else f"<{self.task.answer_tag}_1>") + body

    # ---- search hooks --------------------------------------------------------------------------------
    def plateau_cut(self, problem: Problem, answer: str) -> int | None:
        """The step after which the answer's reward stopped improving; None: the task cannot say (the
        engine then cuts uniformly)."""
        return None

    def mutation_prompt(self, problem: Problem, parent: Shown, inspirations: Sequence[Shown], m: int, *,
                        style: str = "full") -> Messages | None:
        """The task's own prompt showing a parent (and inspirations) with their reward vectors; None:
        the engine uses OpenEvolve's program-evolution prompt."""
        return None

    def shown_answer(self, problem: Problem, answer: str) -> str:
        """The answer as a feedback prompt quotes it (the text as parsed)."""
        return answer

    def feedback(self, problem: Problem, answer: str, reward: Sequence[float], names: Sequence[str]) -> str:
        """The answer's reward components in words, for a model that reads text: each component by
        name with its value (a task that can say more, in its own terms, overrides this)."""
        parts = [f"{name} {float(x):.2f}" for name, x in zip(names, reward)]
        scalar = float(self.task.scalar(np.asarray(reward, dtype=float)))
        return f"it scores {', '.join(parts)} (each from 0 to 1; overall {scalar:.2f})."


class MazeSteps(WordSteps):
    """Maze routes: steps are moves, written as the prompts ask for them (space-separated words); the
    plateau of a route's reward, Maze's own mutation prompt, and feedback about items and lava."""

    opening = "<answer>"

    def __init__(self, task: "Maze"):
        super().__init__(task)
        self.maze = task  # the task as a Maze: its moves, reward mode, simulator and mutation prompt

    def steps(self, problem: Problem, answer: str) -> list[str]:
        """The moves the route uses, as the parser reads them: up to reaching E or the step budget.
        Moves after those are ignored by the simulator, so a cut among them would keep the whole
        effective route and the child would walk the parent's path."""
        from vpo_harness.benchmarks.maze_env import MazeInstance, simulate

        moves = self.maze.moves(answer)
        _, info = simulate(MazeInstance.from_problem(problem), moves, self.maze.reward_mode)
        return moves[: info["steps"]]

    def join(self, steps: Sequence[str]) -> str:
        return " ".join(steps)

    def plateau_cut(self, problem: Problem, answer: str) -> int | None:
        """The first step at which the route's reward, scored as if the route reached E right there
        (:func:`~vpo_harness.benchmarks.maze_env.rewards_if_stopped`), reaches its best over the
        route: after it the route only walks (the real reward is zero until E, so it cannot say
        where progress stopped)."""
        from vpo_harness.benchmarks.maze_env import MazeInstance, rewards_if_stopped

        task = self.maze
        rs = rewards_if_stopped(MazeInstance.from_problem(problem), task.moves(answer), task.reward_mode)
        scalars = np.asarray(task.scalar(rs), dtype=float)
        return int(np.flatnonzero(scalars >= scalars.max() - 1e-12)[0])

    def mutation_prompt(self, problem: Problem, parent: Shown, inspirations: Sequence[Shown], m: int, *,
                        style: str = "full") -> Messages | None:
        """Maze's own mutation prompt (a task prompt, which training's mutation data uses too)."""
        return self.maze.mutation_prompt(problem, parent, inspirations, m, style=style)

    def shown_answer(self, problem: Problem, answer: str) -> str:
        moves = self.maze.moves(answer)
        return " ".join(moves) if moves else "(no moves)"

    def feedback(self, problem: Problem, answer: str, reward: Sequence[float], names: Sequence[str]) -> str:
        """What the route does, in the maze's terms: whether it reaches E, how many of the gold and
        diamonds it collects, how many lava tiles it crosses and whether it visits the bonus tile, with
        the reward components after it (e.g. "this route reaches the exit and collects 2 of 4 gold
        and 0 of 3 diamonds but crosses 1 of 4 lava tiles")."""
        from vpo_harness.benchmarks.maze_env import MazeInstance

        inst = MazeInstance.from_problem(problem)
        _, info = self.maze.simulate(problem, answer)
        scores = super().feedback(problem, answer, reward, names)
        if not info["reached_exit"]:
            why = ("runs out of steps" if info["steps"] >= inst.budget else "stops") + " before reaching the exit E"
            return f"this route {why}, so it scores 0 on every component; a route must end on E."
        got = (f"collects {len(info['gold'])} of {len(inst.gold)} gold and {len(info['diamond'])} of "
               f"{len(inst.diamond)} diamonds")
        lava = len(info["lava_hit"])
        hurt = (f"but crosses {lava} of {len(inst.lava)} lava tiles" if lava else "and crosses no lava")
        bonus = ("; it visits the bonus tile B" if info["bonus_visited"] else "") \
            if self.maze.reward_mode == "convex_bonus" else ""
        return f"this route reaches the exit in {info['steps']} moves, {got} {hurt}{bonus}; {scores}"


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


#: task name -> its adapter class, the one table of them; a task without an entry is read as words
ADAPTERS: dict[str, type[WordSteps]] = {"maze": MazeSteps, "livecodebench": CodeSteps, "toolrl": ToolRLSteps}


def adapter_for(task: Any) -> WordSteps:
    """How ``task`` (a loaded :class:`~vpo_harness.benchmarks.base.Benchmark`) cuts, prefixes and
    describes its answers, and its search hooks."""
    return ADAPTERS.get(task.name, WordSteps)(task)
