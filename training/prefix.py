"""Prefilled route starts for training prompts, in exactly the form `vpo evolve --prompt-mode prefix` sends.

Why: in prefix mode the search hands the policy the start of an earlier answer as an open assistant turn
(the task's own prompt, then ``<answer>RIGHT DOWN`` or ``<route_1>RIGHT DOWN``) and grades prefix +
continuation. A policy that only ever began its answers itself has never seen that state and may close
the open answer with another answer's tag. Training a documented fraction of prompts from such a start
(SFT and RL alike) teaches it to continue any prefix in its own format.

The prefix text comes from the task's continuation (:mod:`vpo_harness.harness.eval.continuation`: ``steps`` /
``prefix``), the same rule the search engine's adapter uses, and the cut is uniform over 0 .. steps - 1 as the engine's ``uniform`` cut is, so
a training prefix and an evolve prefix of the same route and cut are the same string. This module is
the only place training calls that rule.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from vpo_harness.benchmarks.base import Benchmark, Problem
from vpo_harness.harness.eval.continuation import continuation_for


@dataclass(frozen=True)
class Prefill:
    """An open assistant turn: the text the policy continues and the number of steps it holds."""

    text: str
    cut: int


def cut_route(task: Benchmark, problem: Problem, answer: str, m: int, rng: np.random.Generator) -> Prefill:
    """``answer`` (a parsed answer, e.g. ``RIGHT RIGHT DOWN``) cut after a uniform number of its steps,
    in the completion format of an ``m``-answer prompt (``m == 1``: the single answer)."""
    steps = continuation_for(task).steps(problem, answer)
    cut = int(rng.integers(len(steps))) if steps else 0
    return prefill_at(task, problem, answer, cut, m)


def prefill_at(task: Benchmark, problem: Problem, answer: str, cut: int, m: int) -> Prefill:
    """The prefix of ``answer`` after exactly ``cut`` steps (the engine's adapter's ``prefix`` call)."""
    return Prefill(continuation_for(task).prefix(problem, answer, cut, m), int(cut))


def render_prompt(messages: list[dict[str, str]], tokenizer: Any, prefix: str = "",
                  template_args: dict[str, Any] | None = None) -> str:
    """The text the policy continues: the chat template with ``prefix`` as an open assistant turn, the
    call the hf backend makes for a prefilled request (so training and evolve render alike)."""
    from vpo_harness.harness.core.models.prompting import render_messages

    return render_messages(messages, tokenizer, template_args, prefix=prefix)


def draws_prefix(rng: np.random.Generator, fraction: float) -> bool:
    """Whether one prompt carries a prefix: a Bernoulli(``fraction``) draw from the caller's stream."""
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"prefix_fraction must be in [0, 1], got {fraction}")
    return fraction > 0 and bool(rng.random() < fraction)


def split_completion(completion: str, prefix: str) -> str | None:
    """The rest of a supervised completion after its prefill, or None when the completion does not start
    with it (then the example is used without a prefix)."""
    return completion[len(prefix):] if completion.startswith(prefix) else None

