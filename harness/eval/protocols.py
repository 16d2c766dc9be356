"""Named evaluation protocols: the paper's per-task settings behind one flag (``--protocol paper``).

The values are those of the VPO authors' released evaluation code (``ryanboldi/vpo``, each task's
``evaluate`` in ``vpo_tasks/*.py``), which produced the paper's numbers; where the paper's text says
otherwise it is noted below and in docs/qwen3_protocol.md. Every paper model is Qwen3 (LiveCodeBench:
Qwen2.5-Coder) evaluated with the chat template rendered at ``enable_thinking=False``.

- pool of 30 candidates per prompt: m answers per chain (3 for the multi-answer methods) and
  n = ceil(30 / m) chains, so ``-m 1`` (a single-answer model) gets 30 chains;
- Maze, MuSiQue: temperature 0.7, top-p 1.0, 1024 tokens; MuSiQue on the 100 x {2,3,4}-hop split;
- EUREQA: temperature 0.7, top-p 1.0, 512 tokens (the paper's text says top-p 0.95; its code, 1.0);
- ToolRL: temperature 0.7, top-p 0.95, 1024 tokens, and for single-answer chains Qwen3's empty think
  block put in front of each reply before scoring (``prefill_think``), as the authors' evaluation does;
- EUREQA and ToolRL: 4 evaluation seeds (``eval_seeds``), one run each under one parent folder,
  as the authors' reproduction notes average best@k over them (``vpo run --seeds`` for any task);
- LiveCodeBench: temperature 0.8, top-p 0.95, 3072 tokens for chains of m > 1 answers, 2048 for
  one; no template arguments (the authors render Qwen2.5-Coder's template without any).

An explicit flag always wins over the preset; the resolved values are what the run records (its
identity holds the numbers, not the preset's name, so the same settings typed out are the same run).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

PROTOCOLS = ("paper",)
#: candidates per prompt in the paper's evaluation
PAPER_POOL = 30
#: Qwen3's chat template without thinking (it pre-fills an empty think block in the prompt)
NO_THINKING: dict[str, Any] = {"enable_thinking": False}


@dataclass(frozen=True)
class TaskProtocol:
    """One task's settings under a protocol. ``max_tokens_single`` is the budget for m = 1 where it
    differs (LiveCodeBench); ``single_task_args`` are task options for single-answer runs only."""

    temperature: float
    top_p: float
    max_tokens: int
    m: int = 3
    pool: int = PAPER_POOL
    max_tokens_single: int | None = None
    chat_template_args: dict[str, Any] = field(default_factory=lambda: dict(NO_THINKING))
    task_args: dict[str, Any] = field(default_factory=dict)
    single_task_args: dict[str, Any] = field(default_factory=dict)
    #: evaluation seeds whose best@k the authors average (one run each, a seed group: harness.core.seeds)
    eval_seeds: int = 1

    def budget(self, m: int) -> int:
        return self.max_tokens_single if m == 1 and self.max_tokens_single is not None else self.max_tokens


PAPER: dict[str, TaskProtocol] = {
    "maze": TaskProtocol(temperature=0.7, top_p=1.0, max_tokens=1024),
    "musique": TaskProtocol(temperature=0.7, top_p=1.0, max_tokens=1024, task_args={"hop_stratified": True}),
    "eureqa": TaskProtocol(temperature=0.7, top_p=1.0, max_tokens=512, eval_seeds=4),
    "toolrl": TaskProtocol(temperature=0.7, top_p=0.95, max_tokens=1024, single_task_args={"prefill_think": True},
                           eval_seeds=4),
    "livecodebench": TaskProtocol(temperature=0.8, top_p=0.95, max_tokens=3072, max_tokens_single=2048,
                                  chat_template_args={}),
}


def task_protocol(name: str, task: str) -> TaskProtocol:
    if name not in PROTOCOLS:
        raise ValueError(f"unknown --protocol {name!r}; known: {', '.join(PROTOCOLS)}")
    if task not in PAPER:
        raise ValueError(f"--protocol {name} has no settings for task {task!r}; known tasks: {', '.join(sorted(PAPER))}")
    return PAPER[task]


def eval_seeds(name: str | None, task: str) -> int:
    """How many evaluation seeds protocol ``name`` runs on ``task`` (1 without a protocol): the
    authors' reproduction notes average EUREQA and ToolRL best@k over 4 evaluation seeds."""
    return 1 if name is None else task_protocol(name, task).eval_seeds


def resolve(name: str | None, task: str, *, m: int | None, n: int | None, temperature: float | None,
            top_p: float | None, max_tokens: int | None, chat_template_args: dict[str, Any] | None,
            task_args: dict[str, Any] | None) -> dict[str, Any]:
    """Fill what the flags left open (None) from protocol ``name``; explicit values are kept.

    Returns ``m, n, temperature, top_p, max_tokens, chat_template_args, task_args``. Without a protocol
    only m and n get their plain defaults (1 and 10); the rest stay as given (None: later defaults —
    the model's trained budget, the task's temperature — decide). Explicit template arguments are
    merged over the preset's (``--chat-template-args enable_thinking=true`` turns thinking back on)."""
    tmpl = dict(chat_template_args or {})
    targs = dict(task_args or {})
    if name is None:
        return dict(m=1 if m is None else m, n=10 if n is None else n, temperature=temperature, top_p=top_p,
                    max_tokens=max_tokens, chat_template_args=tmpl, task_args=targs)
    p = task_protocol(name, task)
    m = p.m if m is None else m
    preset_task_args = {**p.task_args, **(p.single_task_args if m == 1 else {})}
    return dict(m=m, n=math.ceil(p.pool / m) if n is None else n,
                temperature=p.temperature if temperature is None else temperature,
                top_p=p.top_p if top_p is None else top_p,
                max_tokens=p.budget(m) if max_tokens is None else max_tokens,
                chat_template_args={**p.chat_template_args, **tmpl},
                task_args={**preset_task_args, **targs})


def describe(name: str, task: str) -> str:
    """One line for stderr: what the preset set for this task."""
    p = task_protocol(name, task)
    tmpl = ",".join(f"{k}={v}" for k, v in p.chat_template_args.items()) or "none"
    extra = {**p.task_args, **p.single_task_args}
    more = f"; task args {','.join(f'{k}={v}' for k, v in extra.items())}" if extra else ""
    single = f" ({p.max_tokens_single} for m=1)" if p.max_tokens_single else ""
    return (f"--protocol {name} for {task}: temperature {p.temperature}, top-p {p.top_p}, max tokens "
            f"{p.max_tokens}{single}, m {p.m}, pool {p.pool} (n = ceil(pool/m)), chat template args {tmpl}{more}"
            f"{' (prefill_think for m=1 only)' if p.single_task_args else ''}; explicit flags override")
