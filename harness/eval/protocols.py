"""Named evaluation protocols: the paper's per-task settings behind one flag (``--protocol paper``).

The values are those of the VPO authors' released evaluation code (``ryanboldi/vpo``, each task's
``evaluate`` in ``vpo_tasks/*.py``), which produced the paper's numbers; where the paper's text says
otherwise it is noted below and in docs/qwen3_protocol.md. Every paper model is Qwen3 (LiveCodeBench:
Qwen2.5-Coder) evaluated with the chat template rendered at ``enable_thinking=False``.

- pool of 30 candidates per prompt: m answers per chain (3 for the multi-answer methods) and
  n = ceil(30 / m) chains, so ``-m 1`` (a single-answer model) gets 30 chains; ToolRL ``-m 1``: 50,
  the authors' ``n_chains=50`` (best@30 is still estimated without bias from a pool of 50);
- where the preset departs from the authors' code defaults it says so in one printed line
  (:func:`departures`): Maze ``-m 1`` 30 samples, not the code's 10, so best@30 exists for every method;
  EUREQA and ToolRL chains of m > 1 as 10 x 3, where the code's default is m = 1 for every method;
- ``eval_seeds``: how many evaluation seeds the authors average best@k over (``PAPER_REPRO.md`` section
  6: 4 for EUREQA and ToolRL, whose held-out sets are small; 1 elsewhere): ``vpo run --protocol
  paper`` then runs one run per seed under one parent folder (:func:`eval_seeds`, harness.core.seeds);
- Maze, MuSiQue: temperature 0.7, top-p 1.0, 1024 tokens; MuSiQue on the 100 x {2,3,4}-hop split;
- EUREQA: temperature 0.7, top-p 1.0, 512 tokens (the paper's text says top-p 0.95; its code, 1.0);
- ToolRL: temperature 0.7, top-p 0.95, 1024 tokens, and for single-answer chains Qwen3's empty think
  block put in front of each reply before scoring (``prefill_think``), as the authors' evaluation does;
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
    differs (LiveCodeBench), ``pool_single`` the pool for m = 1 where it differs (ToolRL);
    ``single_task_args`` are task options for single-answer runs only. ``eval_seeds``: evaluation seeds
    the authors average over. ``departures``: ``"single"`` / ``"multi"`` -> where the preset departs
    from the authors' code defaults for such runs, and why (printed by :func:`departures`)."""

    temperature: float
    top_p: float
    max_tokens: int
    m: int = 3
    pool: int = PAPER_POOL
    max_tokens_single: int | None = None
    chat_template_args: dict[str, Any] = field(default_factory=lambda: dict(NO_THINKING))
    task_args: dict[str, Any] = field(default_factory=dict)
    single_task_args: dict[str, Any] = field(default_factory=dict)
    pool_single: int | None = None
    eval_seeds: int = 1
    departures: dict[str, str] = field(default_factory=dict)

    def budget(self, m: int) -> int:
        return self.max_tokens_single if m == 1 and self.max_tokens_single is not None else self.max_tokens

    def pool_for(self, m: int) -> int:
        return self.pool_single if m == 1 and self.pool_single is not None else self.pool


#: multi-answer chains where the authors' evaluation defaults to one answer for every method
_M1_CODE = ("10 chains x 3 answers, not the code's default of {code} for every method (a VPO run there "
            "needs --num-solutions 3 --n-chains 10): the paper's pool of 30 from m = 3 chains")

PAPER: dict[str, TaskProtocol] = {
    "maze": TaskProtocol(temperature=0.7, top_p=1.0, max_tokens=1024, departures={
        "single": "30 samples, not the code's 10 (eval_maze n_chains=10): best@30 needs a pool of 30 for "
                  "every method, as the paper's text compares them"}),
    "musique": TaskProtocol(temperature=0.7, top_p=1.0, max_tokens=1024, task_args={"hop_stratified": True}),
    "eureqa": TaskProtocol(temperature=0.7, top_p=1.0, max_tokens=512, eval_seeds=4,
                           departures={"multi": _M1_CODE.format(code="30 x 1")}),
    "toolrl": TaskProtocol(temperature=0.7, top_p=0.95, max_tokens=1024, single_task_args={"prefill_think": True},
                           pool_single=50, eval_seeds=4, departures={"multi": _M1_CODE.format(code="50 x 1")}),
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
    return dict(m=m, n=math.ceil(p.pool_for(m) / m) if n is None else n,
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
    pool_single = f" ({p.pool_single} for m=1)" if p.pool_single else ""
    return (f"--protocol {name} for {task}: temperature {p.temperature}, top-p {p.top_p}, max tokens "
            f"{p.max_tokens}{single}, m {p.m}, pool {p.pool}{pool_single} (n = ceil(pool/m)), chat template args "
            f"{tmpl}{more}{' (prefill_think for m=1 only)' if p.single_task_args else ''}; explicit flags override")


def departures(name: str, task: str, m: int) -> str:
    """One line for stderr: where the preset departs from the authors' code defaults for a run with m
    answers per chain, and why (or that it follows them)."""
    p = task_protocol(name, task)
    why = p.departures.get("single" if m == 1 else "multi")
    if why is None:
        return f"--protocol {name} for {task} (m={m}): the authors' code defaults, no departure"
    return f"--protocol {name} for {task} (m={m}) departs from the authors' code defaults: {why}"
