"""Named evaluation protocols: the paper's per-task settings behind one flag (``--protocol paper``).

The values are those of the VPO authors' released evaluation code (``ryanboldi/vpo``, each task's
``evaluate`` in ``vpo_tasks/*.py``), which produced the paper's numbers; where the paper's text says
otherwise it is noted below and in docs/qwen3_protocol.md. Every paper model is Qwen3 (LiveCodeBench:
Qwen2.5-Coder) evaluated with the chat template rendered at ``enable_thinking=False``.

- pool of 30 candidates per prompt: m answers per chain (3 for the multi-answer methods) and
  n = ceil(30 / m) chains, so ``-m 1`` (a single-answer model) gets 30 chains; ToolRL: a pool of 50,
  the authors' ``n_chains=50`` for ``-m 1`` and their usage line's 17 x 3 for m = 3 (best@30 is still
  estimated without bias from such a pool);
- every departure from the authors' code is a :class:`Departure` record, printed one line each
  (:func:`departures`) with the flags that give the authors' choice, and rendered into the checked
  table of docs/qwen3_protocol.md (:func:`doc_table`): Maze ``-m 1`` 30 samples, not the code's 10, so
  best@30 exists for every method; EUREQA chains of m > 1 as 10 x 3, where the code's default is
  30 x 1 for every method; one seed per chain everywhere, where the authors seed a prompt's samples
  together;
- prompts: LiveCodeBench and EUREQA get the authors' text (``--prompt-style paper``);
- ``eval_seeds``: how many evaluation seeds the authors average best@k over (``PAPER_REPRO.md`` section
  6: 4 for EUREQA and ToolRL, whose held-out sets are small; 1 elsewhere): ``vpo run --protocol
  paper`` then runs one run per seed under one parent folder (:func:`eval_seeds`, vpo_harness.harness.core.seed_groups);
- Maze, MuSiQue: temperature 0.7, top-p 1.0, 1024 tokens; MuSiQue on the 100 x {2,3,4}-hop split;
- EUREQA: temperature 0.7, top-p 1.0, 512 tokens (the paper's text says top-p 0.95; its code, 1.0);
- ToolRL: temperature 0.7, top-p 0.95, 1024 tokens, the task scalar on the authors' reporting scale
  (``scale=sum``), and for single-answer chains Qwen3's empty think block put in front of each reply
  before scoring (``prefill_think``), as the authors' evaluation does;
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


#: how this harness seeds chains, which differs from the authors' code for every task (Departure SEEDING)
SEEDING_HERE = "one seed per chain"
#: resolve() keyword -> the `vpo run` flag that sets it (a departure names the flags restoring the authors' value)
FLAGS = {"m": "-m", "n": "-n", "temperature": "--temperature", "top_p": "--top-p", "max_tokens": "--max-tokens",
         "chat_template_args": "--chat-template-args", "task_args": "--task-args", "prompt_style": "--prompt-style"}


@dataclass(frozen=True)
class Departure:
    """One setting where the preset differs from the authors' code, for ``runs`` ("single": m = 1,
    "multi": m > 1, "all"). ``setting`` is a key of :func:`setting_values`, ``authors`` the authors'
    value spelled the same way, ``source`` where their code sets it, ``why`` the reason, and
    ``restore`` the :func:`resolve` keywords that give the authors' value (None: no flag does). The
    printed lines (:func:`departures`), the checked table in docs/qwen3_protocol.md (:func:`doc_table`)
    and tests/harness/test_protocols.py all read these records, so they cannot disagree."""

    runs: str
    setting: str
    authors: str
    source: str
    why: str
    restore: dict[str, Any] | None = None

    def applies(self, m: int) -> bool:
        return self.runs == "all" or (self.runs == "single") == (m == 1)

    def restore_flags(self) -> str | None:
        return None if self.restore is None else " ".join(f"{FLAGS[k]} {_flag_text(v)}" for k, v in self.restore.items())


#: every task: the authors draw a prompt's n samples from one seed (vLLM ``SamplingParams(n=..., seed=...)``)
SEEDING = Departure("all", "seeding", "one seed per prompt", "`SamplingParams(n=..., seed=...)` in each `evaluate`",
                    "each chain is reproducible and resumable on its own; single samples differ from theirs, "
                    "their distribution does not")


@dataclass(frozen=True)
class TaskProtocol:
    """One task's settings under a protocol. ``max_tokens_single`` is the budget for m = 1 where it
    differs (LiveCodeBench); ``pool`` the candidates per prompt, n = ceil(pool / m);
    ``single_task_args`` are task options for single-answer runs only; ``prompt_style`` the task's
    prompt (None: the model's own, else ``full``). ``eval_seeds``: evaluation seeds the authors
    average over. ``departures``: where the preset differs from the authors' code (:class:`Departure`)."""

    temperature: float
    top_p: float
    max_tokens: int
    m: int = 3
    pool: int = PAPER_POOL
    max_tokens_single: int | None = None
    chat_template_args: dict[str, Any] = field(default_factory=lambda: dict(NO_THINKING))
    task_args: dict[str, Any] = field(default_factory=dict)
    single_task_args: dict[str, Any] = field(default_factory=dict)
    prompt_style: str | None = None
    eval_seeds: int = 1
    departures: tuple[Departure, ...] = (SEEDING,)

    def budget(self, m: int) -> int:
        return self.max_tokens_single if m == 1 and self.max_tokens_single is not None else self.max_tokens


PAPER: dict[str, TaskProtocol] = {
    "maze": TaskProtocol(temperature=0.7, top_p=1.0, max_tokens=1024, departures=(
        Departure("single", "pool", "10 x 1", "`add_eval_args`: `add_sampling_eval_args(p, n_chains=10, ...)`",
                  "best@30 needs a pool of 30 for every method, as the paper's text compares them", {"n": 10}),
        SEEDING)),
    "musique": TaskProtocol(temperature=0.7, top_p=1.0, max_tokens=1024, task_args={"hop_stratified": True}),
    "eureqa": TaskProtocol(temperature=0.7, top_p=1.0, max_tokens=512, eval_seeds=4, prompt_style="paper",
                           departures=(
        Departure("multi", "pool", "30 x 1", "`add_eval_args`: `add_sampling_eval_args(p, n_chains=30, "
                  "num_solutions=1, ...)`, the default of every method",
                  "the paper's pool of 30 from m = 3 chains (a VPO run of the authors' code needs "
                  "--num-solutions 3 --n-chains 10)", {"m": 1, "n": 30}),
        SEEDING)),
    # pool 50 for every m: 50 x 1, and 17 x 3 as the usage line of the authors' eval/eval_tool.py
    "toolrl": TaskProtocol(temperature=0.7, top_p=0.95, max_tokens=1024, pool=50, task_args={"scale": "sum"},
                           single_task_args={"prefill_think": True}, eval_seeds=4),
    "livecodebench": TaskProtocol(temperature=0.8, top_p=0.95, max_tokens=3072, max_tokens_single=2048,
                                  chat_template_args={}, prompt_style="paper"),
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
            task_args: dict[str, Any] | None, prompt_style: str | None = None) -> dict[str, Any]:
    """Fill what the flags left open (None) from protocol ``name``; explicit values are kept.

    Returns ``m, n, temperature, top_p, max_tokens, chat_template_args, task_args, prompt_style``.
    Without a protocol only m and n get their plain defaults (1 and 10); the rest stay as given (None:
    later defaults — the model's trained budget and prompt style, the task's temperature — decide).
    Explicit template arguments and task options are merged over the preset's
    (``--chat-template-args enable_thinking=true`` turns thinking back on)."""
    tmpl = dict(chat_template_args or {})
    targs = dict(task_args or {})
    if name is None:
        return dict(m=1 if m is None else m, n=10 if n is None else n, temperature=temperature, top_p=top_p,
                    max_tokens=max_tokens, chat_template_args=tmpl, task_args=targs, prompt_style=prompt_style)
    p = task_protocol(name, task)
    m = p.m if m is None else m
    preset_task_args = {**p.task_args, **(p.single_task_args if m == 1 else {})}
    return dict(m=m, n=math.ceil(p.pool / m) if n is None else n,
                temperature=p.temperature if temperature is None else temperature,
                top_p=p.top_p if top_p is None else top_p,
                max_tokens=p.budget(m) if max_tokens is None else max_tokens,
                chat_template_args={**p.chat_template_args, **tmpl},
                task_args={**preset_task_args, **targs},
                prompt_style=p.prompt_style if prompt_style is None else prompt_style)


def preset(name: str, task: str, m: int | None = None) -> dict[str, Any]:
    """What protocol ``name`` alone sets for ``task`` with m answers per chain (no other flag)."""
    return resolve(name, task, m=m, n=None, temperature=None, top_p=None, max_tokens=None,
                   chat_template_args=None, task_args=None)


def _flag_text(v: Any) -> str:
    if isinstance(v, dict):
        return ",".join(f"{k}={_flag_text(x)}" for k, x in v.items()) or "none"
    return "false" if v is False else "true" if v is True else str(v)


def setting_values(got: dict[str, Any]) -> dict[str, str]:
    """The settings of resolved values (:func:`resolve`) as the lines, the doc table and the
    departures spell them; task options are one setting each (``task_args.scale``)."""
    out = {"pool": f"{got['n']} x {got['m']}", "temperature": _flag_text(got["temperature"]),
           "top-p": _flag_text(got["top_p"]), "max tokens": _flag_text(got["max_tokens"]),
           "template args": _flag_text(got["chat_template_args"]),
           "prompt style": got.get("prompt_style") or "model's own or full", "seeding": SEEDING_HERE}
    out.update({f"task_args.{k}": _flag_text(v) for k, v in sorted((got.get("task_args") or {}).items())})
    return out


def describe(name: str, task: str, got: dict[str, Any]) -> str:
    """One line for stderr: the settings this run takes from the preset and the flags."""
    v = setting_values(got)
    targs = ",".join(f"{k[10:]}={x}" for k, x in v.items() if k.startswith("task_args.")) or "none"
    return (f"--protocol {name} for {task}: m {got['m']}, n {got['n']} (pool {got['n'] * got['m']}), temperature "
            f"{v['temperature']}, top-p {v['top-p']}, max tokens {v['max tokens']}, chat template args "
            f"{v['template args']}, prompt style {v['prompt style']}, task args {targs}; explicit flags override")


def departures(name: str, task: str, got: dict[str, Any]) -> list[str]:
    """Lines for stderr: every setting of this run that differs from the authors' code, with why and
    the flags that give the authors' choice: the preset's departures (:class:`Departure`), and the
    preset's values (the authors' own) that explicit flags changed."""
    p = task_protocol(name, task)
    m = got["m"]
    now, base = setting_values(got), setting_values(preset(name, task, m))
    lines, covered = [], set()
    for d in p.departures:
        if not d.applies(m):
            continue
        covered.add(d.setting)
        if now.get(d.setting) == d.authors:
            continue  # the flags restored the authors' value
        flags = d.restore_flags()
        lines.append(f"--protocol {name} for {task} (m={m}) departs from the authors' code: {d.setting} "
                     f"{now.get(d.setting)}, theirs {d.authors} ({d.source}); why: {d.why}; "
                     + (f"the authors' choice: {flags}" if flags else "no flag gives the authors' choice"))
    for key in sorted(set(now) | set(base)):
        if key not in covered and now.get(key) != base.get(key):
            lines.append(f"--protocol {name} for {task} (m={m}) departs from the authors' code: {key} "
                         f"{now.get(key, 'unset')} set by your flags, theirs {base.get(key, 'unset')} "
                         "(the preset's value)")
    return lines or [f"--protocol {name} for {task} (m={m}): the authors' code settings, no departure"]


DOC_COLUMNS = ("pool", "temperature", "top-p", "max tokens", "template args", "prompt style")


def doc_table(name: str = "paper") -> str:
    """The table of docs/qwen3_protocol.md between its ``protocol-table`` markers: per task and m (3
    and 1), what the preset sets and where it departs from the authors' code. Generated from
    :data:`PAPER`; the test fails when the doc holds anything else."""
    head = ["task", "m", *DOC_COLUMNS, "task args", "departs from the authors' code (their value; flags that give it)"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    everywhere = [d for d in PAPER[next(iter(PAPER))].departures if d.runs == "all"]
    for task, p in PAPER.items():
        for m in (3, 1):
            v = setting_values(preset(name, task, m))
            targs = ", ".join(f"`{k[10:]}={x}`" for k, x in v.items() if k.startswith("task_args.")) or "-"
            own = [d for d in p.departures if d.applies(m) and d not in everywhere]
            dep = "; ".join(f"{d.setting} {v[d.setting]} ({d.authors}; `{d.restore_flags()}`)" for d in own) or "-"
            rows.append("| " + " | ".join([task, str(m), *(f"`{v[c]}`" if c == "template args" else v[c]
                                                              for c in DOC_COLUMNS), targs, dep]) + " |")
    for d in everywhere:
        tasks = [t for t, p in PAPER.items() if d in p.departures]
        rows.append("")
        rows.append(f"Every run of {', '.join(tasks)}: {d.setting} is {setting_values(preset(name, tasks[0]))[d.setting]}, "
                    f"theirs {d.authors} ({d.source}): {d.why}.")
    return "\n".join(rows)
