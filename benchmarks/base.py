"""The small protocol every benchmark implements.

A benchmark turns problems into prompts, completions into answers, and answers into reward vectors
r in [0, 1]^d with named components. Everything downstream (runner, metrics, VPO estimators, plots)
only talks to this protocol, so a new task is one module and one registry line.

Prompts are chat message lists (``[{"role": "system"|"user", "content": str}, ...]``): ToolRL needs a
system prompt, and completion-only backends render the list with the model's chat template.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterable, Protocol, Sequence

import numpy as np

from vpo_harness.benchmarks import tags
from vpo_harness.benchmarks.tags import Which
from vpo_harness.harness.core.suggest import unknown

Messages = list[dict[str, str]]


@dataclass(frozen=True)
class Shown:
    """A candidate a mutation prompt shows the model: its answer and its reward vector. Why a type of
    its own: the engine holds OpenEvolve ``Program`` objects, the task must not depend on them."""

    answer: str
    reward: tuple[float, ...]


class DataError(ValueError):
    """Bad input data; the message names the file, line and field."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 field_name: str | None = None):
        where = []
        if path is not None:
            where.append(str(path))
        if line is not None:
            where.append(f"line {line}")
        if field_name is not None:
            where.append(f"field {field_name!r}")
        super().__init__(f"{': '.join([', '.join(where)] if where else [])}{': ' if where else ''}{message}")
        self.path, self.line, self.field_name = path, line, field_name


@dataclass(frozen=True)
class Option:
    """One ``--task-args`` option a task accepts: its default, what it does, and (optionally) the
    allowed values. Declared per task in ``Benchmark.options_spec`` so unknown names are refused
    with the valid ones listed, for every task, in one place."""

    default: Any
    help: str
    choices: tuple[Any, ...] = ()


def check_options(owner: str, spec: dict[str, Option], options: dict[str, Any]) -> dict[str, Any]:
    """Defaults filled in; an unknown name or a value outside ``choices`` is a one-line ValueError."""
    unknown = sorted(set(options) - set(spec))
    if unknown:
        valid = "; ".join(f"{k} ({o.help}, default {o.default!r})" for k, o in spec.items()) or "none"
        raise ValueError(f"unknown option{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} for {owner}; "
                         f"valid: {valid}")
    out = {k: o.default for k, o in spec.items()}
    out.update(options)
    for k, o in spec.items():
        if o.choices and out[k] not in o.choices:
            raise ValueError(f"{owner} option {k}={out[k]!r}: expected one of {', '.join(map(repr, o.choices))}")
    return out


@dataclass(frozen=True)
class Problem:
    """One evaluation item. ``data`` is task-specific and must be JSON-serialisable."""

    id: str
    data: dict[str, Any]
    meta: dict[str, Any] = field(default_factory=dict)


class TaskRecord(Protocol):
    """What a run's config and results records need of a task: its name, its reward components and
    its description, for scores another tool computed (``vpo import``'s ImportedScores), where there is
    no task of ours to load problems with. A :class:`Benchmark` has the same members as class
    variables, which a protocol cannot state for both, so a function taking either names both."""

    @property
    def name(self) -> str: ...

    @property
    def component_names(self) -> tuple[str, ...]: ...

    @property
    def d(self) -> int: ...

    def describe(self) -> dict[str, Any]: ...


class Benchmark(ABC):
    """Base class of a task. Subclasses set the class attributes and implement the abstract methods."""

    name: ClassVar[str]
    component_names: ClassVar[tuple[str, ...]]
    #: split name -> number of problems (None when it depends on the data files)
    splits: ClassVar[dict[str, int | None]] = {}
    #: tag stem of numbered answers in multi-answer chains ("route" -> <route_1>...</route_1>)
    answer_tag: ClassVar[str] = "response"
    #: sampling defaults from the paper's evaluation protocol
    default_temperature: ClassVar[float] = 0.7
    default_top_p: ClassVar[float] = 1.0
    #: drop closed <think>..</think> blocks before reading numbered answers (tags drafted while
    #: reasoning are not answers); ToolRL keeps them because its format reward looks at <think>
    strip_reasoning: ClassVar[bool] = True
    #: the options ``--task-args`` may set (name -> Option); anything else is refused
    options_spec: ClassVar[dict[str, Option]] = {}
    #: False when no answer can pass (every component 1) by construction: the metrics that count
    #: passes (pass@k, pass^k, Cover@tau) are then 0 on every run, and `vpo show`, `vpo compare` and
    #: `vpo view` leave them out (reports/constant_metrics.py) with the reason below
    pass_reachable: ClassVar[bool] = True
    #: why no answer can pass, for the note of the tables that leave the pass metrics out
    pass_unreachable_why: ClassVar[str] = ""

    def __init__(self, **options: Any):
        self.options = check_options(f"task {self.name!r}", self.options_spec, options)

    # ---- data -------------------------------------------------------------------------------------
    def check_split(self, split: str, known: Iterable[str] | None = None, more: str = "") -> None:
        """Refuse a split this task does not have, naming the close one (``tset`` -> ``test``) and
        the known ones (``known``: default :attr:`splits`); ``more`` adds how to get another."""
        names = list(self.splits if known is None else known)
        if split not in names:
            raise KeyError(f"{unknown(f'{self.name} split', split, names)}{more}")

    @abstractmethod
    def load(self, split: str, *, path: str | None = None, limit: int | None = None) -> list[Problem]:
        """Problems of ``split``; ``path`` points at local files for offline use."""

    def local_size(self, split: str) -> int | None:
        """Problems of ``split`` that load on this machine without a network (an offline copy, or a
        generator); None when the split needs the hub. Why: ``splits`` gives the full release's sizes,
        which are not what an offline run gets (ToolRL test: 80 in the release, 60 in the offline slice)."""
        return None

    # ---- prompts ----------------------------------------------------------------------------------
    @abstractmethod
    def prompt(self, problem: Problem, *, style: str = "full") -> Messages:
        """Single-answer prompt."""

    @abstractmethod
    def multi_prompt(self, problem: Problem, m: int, *, style: str = "full") -> Messages:
        """Prompt asking for m different answers in one generation."""

    # ---- parsing ----------------------------------------------------------------------------------
    def parse(self, completion: str, m: int | None = None) -> list[str | None]:
        """Answers of a completion: one entry for single-answer (m None), m entries for a chain.

        Missing answers are ``None`` (scored as the zero vector). Never raises on arbitrary text.
        """
        if m is None:
            return [self.parse_single(completion)]
        if not isinstance(completion, str):
            return [None] * m
        text = tags.strip_blocks(completion, "think") if self.strip_reasoning else completion
        return [self.parse_single(b) if b is not None else None
                for b in parse_numbered_tags(text, self.answer_tag, m)]

    def authors_parse(self, completion: str, m: int) -> list[str | None]:
        """The VPO authors' chain reading (``extract_numbered_tags``): the first ``<tag_i>`` of each i,
        tags case-sensitive, reasoning kept; each block read by :meth:`parse_single`."""
        if not isinstance(completion, str):
            return [None] * m
        return [self.parse_single(b) if b is not None else None
                for b in tags.numbered_blocks(completion, self.answer_tag, m, which="first", ignore_case=False)]

    def parse_single(self, completion: str) -> str | None:
        return completion if completion.strip() else None

    # ---- scoring ----------------------------------------------------------------------------------
    #: True when the reward length varies per problem (code: one component per selected test)
    variable_d: ClassVar[bool] = False

    @property
    def d(self) -> int:
        return len(self.component_names)

    @property
    def max_d(self) -> int:
        """Upper bound of a problem's reward length (``d`` unless the task says otherwise)."""
        return self.d

    def components_for(self, problem: Problem) -> tuple[str, ...]:
        """Names of one problem's reward components (code tasks: one per selected test)."""
        return tuple(self.component_names)

    def d_label(self) -> str:
        """The reward dimension as `vpo ls` shows it: ``"4"``, or ``"per problem, <= 16"``."""
        return f"per problem, <= {self.max_d}" if self.variable_d else str(self.d)

    @abstractmethod
    def reward(self, problem: Problem, answer: str | None) -> np.ndarray:
        """Reward vector (d,) in [0, 1]; the zero vector for a missing answer."""

    def rewards(self, problem: Problem, answers: Sequence[str | None]) -> np.ndarray:
        """Reward matrix (len(answers), d). Tasks with costly scoring (code) override this to batch."""
        if not answers:
            return np.zeros((0, self.d))
        return np.stack([np.asarray(self.reward(problem, a), dtype=float) for a in answers])

    def score(self, problem: Problem, answers: Sequence[str | None]) -> tuple[np.ndarray, list[dict[str, Any]] | None]:
        """Reward matrix plus optional per-answer details kept in the run's samples (verdict codes,
        sandbox isolation, timings). Tasks without details need not override this."""
        return self.rewards(problem, answers), None

    def scalar(self, r: np.ndarray) -> np.ndarray | float:
        """Task scalar s(r) over the last axis; the mean of the components unless a task says otherwise."""
        return np.asarray(r, dtype=float).mean(axis=-1)

    def passed(self, r: np.ndarray) -> np.ndarray | bool:
        """A candidate passes when every reward component equals 1."""
        return np.all(np.asarray(r, dtype=float) >= 1.0 - 1e-12, axis=-1)

    def dedup_key(self, problem: Problem, answer: str | None, r: np.ndarray) -> Any:
        """Key under which two answers of one chain count as duplicates (VPO dedup).

        Default per vpo.md: identical reward vector. Maze overrides with the move sequence, code with the AST.
        """
        return tuple(np.round(np.asarray(r, dtype=float), 12).tolist())

    def describe(self) -> dict[str, Any]:
        return {"task": self.name, "d": self.d, "components": list(self.component_names),
                "options": self.options}

    # ---- lifecycle --------------------------------------------------------------------------------
    def close(self) -> None:
        """Release what scoring started (LiveCodeBench's sandbox pool); idempotent. Tasks without
        resources need not override this."""

    def __enter__(self) -> "Benchmark":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def parse_numbered_tags(text: str, stem: str, m: int, *, which: Which = "last") -> list[str | None]:
    """Contents of ``<stem_1>..</stem_1>`` .. ``<stem_m>``; unclosed (truncated) tags give None.

    When a tag appears more than once the last closed occurrence wins by default (models often
    restate answers); ``which="first"`` keeps the first. Linear time (see vpo_harness.benchmarks.tags).
    """
    return tags.parse_numbered_tags(text, stem, m, which=which)


def extract_tag(text: str, tag: str, *, which: Which = "last") -> str | None:
    """Content of ``<tag>..</tag>`` (last closed occurrence by default, or ``which="first"``), or None."""
    return tags.extract_tag(text, tag, which=which)


def user(content: str, system: str | None = None) -> Messages:
    msgs: Messages = []
    if system:
        msgs.append({"role": "system", "content": system})
    msgs.append({"role": "user", "content": content})
    return msgs
