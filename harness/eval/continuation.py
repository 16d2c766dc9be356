"""How a task's answer is written back as the open start of a completion: the trainer's view of
:mod:`vpo_harness.benchmarks.steps`.

Why a module here: the native trainer (training/prefix.py) trains a fraction of its prompts from such
starts so that a policy continues any prefix in its own format, and `vpo evolve --prompt-mode prefix`
hands the policy the same starts. The rule itself, one table of every task's steps and search hooks,
lives on the task layer (:data:`vpo_harness.benchmarks.steps.ADAPTERS`); this module names the part
of it a prefix needs, so the trainer depends on no search hook.
"""
from __future__ import annotations

from typing import Any, Protocol

from vpo_harness.benchmarks.base import Problem
from vpo_harness.benchmarks.steps import adapter_for


class Continuation(Protocol):
    """What a prefix needs of a task."""

    def steps(self, problem: Problem, answer: str) -> list[str]:
        """A parsed answer cut into the steps a prefix may end after."""
        ...

    def prefix(self, problem: Problem, answer: str, cut: int, m: int) -> str:
        """The start of a completion holding the first ``cut`` steps of ``answer``, left open, in the
        format the task's prompt asks for (for ``m > 1``: the first answer of the set)."""
        ...


def continuation_for(task: Any) -> Continuation:
    """How ``task`` (a loaded :class:`~vpo_harness.benchmarks.base.Benchmark`) writes a prefix of an answer."""
    return adapter_for(task)
