"""What a run is: :class:`RunConfig` = task + model + sampling (its identity) + execution (how it ran).

The ks at which best@k / pass@k are read (``sampling.ks``) are not part of the identity: they are
metrics over the stored pool, so other ks on a finished run only recompute results.json.

Two invocations with equal task, model and sampling sections (plus the recorded problem data and
model weights, see ``vpo_harness.harness.eval.runner``) are the same run: the second resumes the first. Everything
in :class:`ExecutionSpec` may change between a run and its resumption. The split follows OpenEvolve's
nested config dataclasses: each section is a plain dataclass that serialises with ``asdict``.
"""
from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from vpo_harness.harness.core.executors.config import ExecutorConfig
from vpo_harness.harness.core.metrics import default_ks

#: config.json layout version; older folders (flat config) are refused for resume with a clear message
CONFIG_FORMAT = 2


@dataclass
class TaskSpec:
    """Which problems and how they are posed."""

    name: str
    split: str = "test"
    options: dict[str, Any] = field(default_factory=dict)
    data_path: str | None = None
    limit: int | None = None
    prompt_style: str = "full"


@dataclass
class ModelSpec:
    """Which model answers: a backend spec (``hf:PATH``, ``vllm:ID``, ``openai:NAME``, ``mock:...``).

    The server URL of an ``openai:`` model is not here: where a model is served (host, port) says
    nothing about what it answers, so it is :attr:`ExecutionSpec.base_url` and a run resumes against
    the same served model on another port. The served model's name (the spec) stays identity."""

    spec: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass
class SamplingSpec:
    """The pool: n chains x m answers per problem, how they are sampled and at which k they are read."""

    m: int = 1  # answers per chain; 1 = the single-answer prompt
    n: int = 10  # chains per problem
    #: where best@k / pass@k are read: not identity (see NOT_IDENTITY). None: those of DEFAULT_KS that
    #: the pool n*m can estimate, so a small pool never fails on ks nobody asked for
    ks: tuple[int, ...] | None = None
    temperature: float | None = None  # None: the task's default from the paper
    top_p: float | None = None
    max_tokens: int = 1024
    seed: int = 0
    #: the chat template's keyword arguments (``{"enable_thinking": False}`` for Qwen3 as the paper ran
    #: it): they change the prompt the model sees, so they are identity (left out of it while empty, so
    #: runs from before the field existed keep their identity and folder name)
    chat_template_args: dict[str, Any] = field(default_factory=dict)
    #: assistant prefill: every chain continues this start of the answer (``GenRequest.prefix``); it
    #: changes what the model sees, so it is identity (left out of it while empty, like the above)
    prefix: str = ""

    def __post_init__(self) -> None:
        self.ks = default_ks(self.n * self.m) if self.ks is None else tuple(self.ks)


@dataclass
class ExecutionSpec:
    """How the run is executed; never part of its identity (may change on resume)."""

    out: str | None = None
    #: OpenAI-compatible server URL(s) of an ``openai:`` model (see :class:`ModelSpec`)
    base_url: str | None = None
    #: the protocol preset the sampling settings came from (``paper``), recorded for provenance; the
    #: settings it chose are in the sampling section, which is what identifies the run
    protocol: str | None = None
    concurrency: int = 32
    flush_every: int = 16
    retry_errors: bool = False
    score_workers: int = 1
    progress: bool = True
    executor: ExecutorConfig = field(default_factory=ExecutorConfig)  # local | ray (replicas, ...)
    #: the generation cache (harness/core/gencache.py): None = on where the backend samples each chain
    #: from its own seed, True / False = ``--cache`` / ``--no-cache``
    cache: bool | None = None

    def __post_init__(self) -> None:
        if isinstance(self.executor, dict):  # read back from config.json
            self.executor = ExecutorConfig(**self.executor)


#: the sections that identify a run, in config.json order
IDENTITY_SECTIONS = ("task", "model", "sampling")
#: fields of those sections that do not: the ks are metrics computed from the stored rows, so a finished
#: run read at other ks is the same run (config.json keeps them at top level, ``"ks"``)
#: ``model.base_url`` was identity in older folders; listed so their resume check ignores it
NOT_IDENTITY = ("sampling.ks", "model.base_url")
#: identity fields left out while empty (added after runs existed: an empty value keeps old identities)
OMIT_WHEN_EMPTY = ("sampling.chat_template_args", "sampling.prefix")
#: dotted identity field -> the `vpo run` flag that sets it, so a folder refused for a changed setting
#: can say what to type to resume it (fields no flag sets, such as the problems' digest, have none)
IDENTITY_FLAGS = {"task.name": "--task", "task.split": "--split", "task.options": "--task-args",
                  "task.data_path": "--data-path", "task.limit": "--limit", "task.prompt_style": "--prompt-style",
                  "model.spec": "--model", "model.args": "--model-args", "sampling.m": "-m", "sampling.n": "-n",
                  "sampling.temperature": "--temperature", "sampling.top_p": "--top-p",
                  "sampling.max_tokens": "--max-tokens", "sampling.seed": "--seed",
                  "sampling.chat_template_args": "--chat-template-args", "sampling.prefix": "--prefix"}
_SECTIONS = {"task": TaskSpec, "model": ModelSpec, "sampling": SamplingSpec, "execution": ExecutionSpec}
#: flat keyword -> (section, field) where the flat name differs from the field name (EvolveConfig too)
ALIASES = {"task": ("task", "name"), "task_options": ("task", "options"), "model": ("model", "spec"),
            "model_args": ("model", "args")}


def flat_fields() -> dict[str, tuple[str, str]]:
    """Flat keyword -> (section, field) of a :class:`RunConfig`: every field name (unique across the
    sections) plus :data:`ALIASES`. :meth:`RunConfig.of` reads keywords through it, and
    ``vpo_harness.search.evolve.EvolveConfig`` sorts its own flat settings into these sections with it."""
    where = {f.name: (sec, f.name) for sec, dc in _SECTIONS.items() for f in fields(dc)}
    where.update(ALIASES)
    return where


def model_slug(spec: str) -> str:
    """The model's part of a folder name: the last path component of the spec's model."""
    return spec.split(":", 1)[-1].rstrip("/").split("/")[-1] or "model"


def task_slug(name: str) -> str:
    """The task's part of a folder name: the name, or for a task reference (``mod:Class``,
    ``/path/file.py[:Class]``) its class, else its file's stem."""
    tail = name.rstrip("/").split("/")[-1]
    return tail.rsplit(":", 1)[-1] if ":" in tail else tail.removesuffix(".py")


def run_folder(stem: str, identity: dict[str, Any], tail: str = "") -> Path:
    """``runs/<stem>-<hash><tail>``, the hash taken over ``identity`` as sorted JSON: the one rule
    every default run folder is named by (`vpo run`, seed groups, `vpo evolve`), so repeating a
    command lands in the folder it wrote before."""
    h = hashlib.sha1(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:8]
    return Path("runs") / f"{stem}-{h}{tail}"


def canonical_identity(identity: dict[str, Any]) -> dict[str, Any]:
    """A stored ``identity`` (config.json) in the form :meth:`RunConfig.canonical` gives today, so a
    folder written before that form still resumes under the same command: the model spec as it was
    typed becomes canonical, a temperature / top-p recorded as None (the task's default) becomes the
    value the run used (``resolved_sampling``), and execution-only model args (timeouts, batch sizes)
    that older versions kept in the identity are left out. Wrong-typed parts are left as they are
    (the comparison then names them)."""
    from vpo_harness.harness.core.models import identity_args
    from vpo_harness.harness.core.models.zoo import canonical_spec

    out = copy.deepcopy(identity)
    model, samp = out.get("model"), out.get("sampling")
    if isinstance(model, dict) and isinstance(model.get("spec"), str):
        model["spec"] = canonical_spec(model["spec"])
        if isinstance(model.get("args"), dict):
            model["args"] = identity_args(model["spec"], model["args"])
    resolved = out.get("resolved_sampling")
    if isinstance(samp, dict) and isinstance(resolved, dict):
        for name in ("temperature", "top_p"):
            value = resolved.get(name) if samp.get(name) is None else samp.get(name)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                samp[name] = float(value)
    return out


def recorded_ks(config: dict[str, Any]) -> list[int]:
    """The ks a config.json record reads its metrics at: top-level ``ks``, or ``identity.sampling.ks``
    in folders written before the ks left the identity; [] when neither is there."""
    ks = config.get("ks")
    if ks is None:
        ks = ((config.get("identity") or {}).get("sampling") or {}).get("ks")
    return [int(k) for k in ks or []]


@dataclass
class RunConfig:
    task: TaskSpec
    model: ModelSpec
    sampling: SamplingSpec = field(default_factory=SamplingSpec)
    execution: ExecutionSpec = field(default_factory=ExecutionSpec)

    @classmethod
    def of(cls, **flat: Any) -> "RunConfig":
        """Build from flat keywords (``task=, model=, n=, m=, out=, ...``): every field name is unique
        across sections, plus ``task``/``task_options``/``model``/``model_args`` for the names."""
        where = flat_fields()
        parts: dict[str, dict[str, Any]] = {sec: {} for sec in _SECTIONS}
        for key, value in flat.items():
            if key not in where:
                raise TypeError(f"RunConfig.of() got an unknown field {key!r}; known: {', '.join(sorted(where))}")
            sec, name = where[key]
            parts[sec][name] = value
        if "name" not in parts["task"] or "spec" not in parts["model"]:
            raise TypeError("RunConfig.of() needs task= and model=")
        if "ks" in parts["sampling"]:
            parts["sampling"]["ks"] = tuple(parts["sampling"]["ks"])
        return cls(**{sec: dc(**parts[sec]) for sec, dc in _SECTIONS.items()})

    def validate(self) -> None:
        s = self.sampling
        if s.m < 1:
            raise ValueError(f"m (answers per chain) must be >= 1, got {s.m}")
        if s.n < 1:
            raise ValueError(f"n (chains per problem) must be >= 1, got {s.n}")
        if not s.ks or any(k < 1 for k in s.ks):
            raise ValueError(f"every k must be >= 1, got {list(s.ks)}")
        too_big = [k for k in s.ks if k > s.n * s.m]
        if too_big:  # best@k / pass@k of k > pool size are undefined (they came out NaN)
            raise ValueError(f"k = {', '.join(map(str, too_big))} exceeds the pool of {s.n * s.m} candidates per "
                             f"problem (n={s.n} chains x m={s.m} answers); use k <= {s.n * s.m} or raise -n / -m")
        if not isinstance(s.chat_template_args, dict) or not all(isinstance(k, str) and k for k in s.chat_template_args):
            raise ValueError(f"chat_template_args must map names to values (k=v,...), got {s.chat_template_args!r}")
        if not isinstance(s.prefix, str):
            raise ValueError(f"prefix must be a string, got {s.prefix!r}")
        if self.task.limit is not None and self.task.limit < 1:
            raise ValueError(f"limit must be >= 1, got {self.task.limit}")
        self.execution.executor.validate()

    def identity(self, seed: bool = True) -> dict[str, Any]:
        """The sections that make a run what it is (JSON-ready), less :data:`NOT_IDENTITY`.
        ``seed=False``: less the sampling seed too, what the runs of one seed group share
        (``vpo_harness.harness.core.seed_groups``)."""
        from vpo_harness.harness.core.models import identity_args

        out = {sec: asdict(getattr(self, sec)) for sec in IDENTITY_SECTIONS}
        out["model"]["args"] = identity_args(self.model.spec, self.model.args)  # not timeouts, keys, batch sizes
        for dotted in NOT_IDENTITY:
            sec, name = dotted.split(".")
            out[sec].pop(name, None)
        for dotted in OMIT_WHEN_EMPTY:
            sec, name = dotted.split(".")
            if not out[sec].get(name):
                out[sec].pop(name, None)
        if not seed:
            out["sampling"].pop("seed", None)
        return out

    def canonical(self, temperature: float, top_p: float) -> "RunConfig":
        """A copy in the one form a run is identified by: the model spec canonical (a zoo model's
        folder, relative or absolute, is its zoo name: :func:`~vpo_harness.harness.core.models.zoo.canonical_spec`)
        and an unset temperature / top-p replaced by the task's defaults, passed in as ``temperature``
        and ``top_p`` (this layer knows no task). Why: the demo wrote the bundled folder's absolute
        path and 0.7 / 1.0, ``vpo run --model hf:maze-tiny-vpo`` the zoo name and None, and the two
        could not share a run folder although they sample the same chains."""
        from vpo_harness.harness.core.models.zoo import canonical_spec

        out = copy.deepcopy(self)
        out.model.spec = canonical_spec(self.model.spec)
        s = out.sampling
        s.temperature = float(temperature if s.temperature is None else s.temperature)
        s.top_p = float(top_p if s.top_p is None else s.top_p)
        return out

    def to_json(self) -> dict[str, Any]:
        out = self.identity()
        out["sampling"]["ks"] = list(self.sampling.ks)
        out["sampling"]["chat_template_args"] = dict(self.sampling.chat_template_args)
        out["model"]["args"] = dict(self.model.args)
        out["execution"] = asdict(self.execution)
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "RunConfig":
        missing = [sec for sec in ("task", "model") if not isinstance(d.get(sec), dict)]
        if missing:
            raise ValueError(f"not a nested run config (no {missing[0]!r} section): written by an older vpo-harness?")
        kw: dict[str, Any] = {}
        for sec, dc in _SECTIONS.items():
            known = {f.name for f in fields(dc)}
            kw[sec] = dc(**{k: v for k, v in (d.get(sec) or {}).items() if k in known})
        kw["sampling"].ks = tuple(kw["sampling"].ks)
        return cls(**kw)

    def default_out(self, seed_group: bool = False) -> Path:
        """A deterministic folder name from the identity, so repeating a command resumes the same run.
        ``seed_group``: the parent folder of a ``--seeds`` group, named from the identity less the
        seed (so every seed count and order of one run lands in one parent)."""
        stem = f"{task_slug(self.task.name)}-{model_slug(self.model.spec)}-m{self.sampling.m}-n{self.sampling.n}"
        return run_folder(stem, self.identity(seed=not seed_group), tail="-seeds" if seed_group else "")

    @property
    def pool_size(self) -> int:
        return self.sampling.n * self.sampling.m
