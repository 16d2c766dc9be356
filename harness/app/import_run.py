"""Another tool's repeated samples, read by a source reader (`import_inspect`, `import_lmeval`), as a
run folder of ours: the one place the rows, config.json and results.json of an import are written.

Two ways to score: with the tool's own scores (one reward component per named score; the scalar is
their mean and an answer passes when every component is 1, as for our own tasks), or, given one of
our tasks, by that task: every imported text goes through the runner's chain scorer
(`benchmarks.scoring.score_generation`: parse, reward, dedup; code runs in the sandbox exactly as in
`vpo run`), matched to the task's problems by id.

The folder is built next to its destination and renamed into place when complete, so a failed or
interrupted import leaves nothing half-written; a source with failed chains, uneven repeats or an
unfinished status is marked partial with the reasons.
"""
from __future__ import annotations

import json
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from vpo_harness.benchmarks.base import Problem
from vpo_harness.harness.core.metrics import default_ks
from vpo_harness.harness.core.models.base import Generation
from vpo_harness.harness.core.store import CONFIG, SAMPLES, RunStore, write_json_atomic


@dataclass(frozen=True)
class ImportedSampling:
    """What the other tool says it sampled with; None where its file does not say (recorded as unknown,
    never filled in with our defaults)."""
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None


@dataclass
class ImportedChain:
    """One repeat of one sample: its text, and either the tool's scores or why it has none."""

    problem_id: str
    chain_index: int
    text: str
    answer: str | None = None
    reward: list[float] | None = None  # one value per component, in [0, 1]; None: not scored
    error: str | None = None  # the tool's own error (generation failed): failed under any scorer too


@dataclass
class ImportedSamples:
    """What a source reader hands over: the chains plus what the config record says about them."""

    path: Path
    tool: str
    task: str  # the tool's task name
    model: str
    components: list[str]
    chains: list[ImportedChain]
    source: dict[str, Any]
    sampling: ImportedSampling = field(default_factory=ImportedSampling)
    seed: int = 0
    partial_reasons: list[str] = field(default_factory=list)


@dataclass
class ImportedScores:
    """What the config record needs of a task, for samples another tool scored: the names of its
    components and a description (there is no task of ours to rebuild the problems with)."""

    name: str
    component_names: tuple[str, ...]
    source: dict[str, Any]

    @property
    def d(self) -> int:
        return len(self.component_names)

    def describe(self) -> dict[str, Any]:
        return {"task": self.name, "d": self.d, "components": list(self.component_names), "options": {},
                "imported_from": self.source}


def own_score_row(chain: ImportedChain) -> dict[str, Any]:
    """The stored row of a chain scored by the tool (a chain without scores is a failed chain)."""
    base = {"problem_id": chain.problem_id, "chain_index": chain.chain_index, "seed": None, "text": chain.text}
    if chain.error or chain.reward is None:
        return {**base, "error": f"imported: {chain.error or 'not scored'}", "answers": [], "rewards": [],
                "scalars": [], "passed": []}
    r = np.asarray(chain.reward, dtype=float)
    return {**base, "error": None, "answers": [chain.answer if chain.answer is not None else chain.text],
            "rewards": [chain.reward], "scalars": [float(r.mean())], "passed": [bool((r >= 1.0).all())],
            "n_unique": 1}


def task_rows(task: Any, problems: dict[str, Problem], samples: ImportedSamples, split: str) -> list[dict[str, Any]]:
    """Every chain rescored by ``task`` through the runner's chain scorer; an id that is not one of
    the task's problems is one line naming the file and the id."""
    from vpo_harness.benchmarks.scoring import score_generation

    for c in samples.chains:
        if c.problem_id not in problems:
            raise ValueError(f"{samples.path}: sample id {c.problem_id!r} is not a problem of task {task.name!r} "
                             f"split {split!r} (ids there look like {next(iter(problems), 'none')!r})")
    return [score_generation(task, problems[c.problem_id],
                             Generation(problem_id=c.problem_id, chain_index=c.chain_index, text=c.text,
                                        error=f"imported: {c.error}" if c.error else None), 1, None).to_json()
            for c in samples.chains]


def write_imported(samples: ImportedSamples, out: str | Path, task_name: str | None = None,
                   split: str = "test") -> Path:
    """Write the run folder ``out`` from ``samples``: the tool's scores, or ``task_name``'s."""
    from vpo_harness.benchmarks import get_task

    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out}: exists and is not empty; choose another --out")
    if not samples.chains:
        raise ValueError(f"{samples.path}: no samples: nothing to import")
    if task_name is None:
        task = ImportedScores(f"{samples.tool}/{samples.task}", tuple(samples.components), samples.source)
        rows = [own_score_row(c) for c in samples.chains]
        return _write(samples, out, task, [Problem(p, {}) for p in _ids(samples)], rows, "imported")
    with get_task(task_name) as task:
        task.check_split(split)
        by_id = {p.id: p for p in task.load(split)}
        rows = task_rows(task, by_id, samples, split)
        return _write(samples, out, task, [by_id[p] for p in _ids(samples)], rows, split)


def _ids(samples: ImportedSamples) -> list[str]:
    return list(dict.fromkeys(c.problem_id for c in samples.chains))


def _write(samples: ImportedSamples, out: Path, task: Any, problems: Sequence[Problem],
           rows: list[dict[str, Any]], split: str) -> Path:
    from vpo_harness.harness.core.config import RunConfig
    from vpo_harness.harness.eval.runner import build_config_record, compute_results

    counts = Counter(c.problem_id for c in samples.chains)
    repeats = {p.id: counts[p.id] for p in problems}
    n = max(repeats.values())
    s = samples.sampling
    cfg = RunConfig.of(task=task.name, model=samples.model, split=split, n=n, m=1,
                       ks=tuple(sorted({*default_ks(n), n})), seed=samples.seed, temperature=s.temperature,
                       top_p=s.top_p, max_tokens=s.max_tokens, out=str(out), progress=False)
    record = build_config_record(cfg, task, s, problems, "imported")
    record["imported_from"] = samples.source
    failed = sum(1 for r in rows if r.get("error"))
    reasons = ([f"{failed} sample(s) errored or lack a score"] if failed else []) + \
        (["samples have different numbers of repeats"] if len(set(repeats.values())) > 1 else []) + \
        list(samples.partial_reasons)
    tmp = out.with_name(f".{out.name}.importing")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        write_json_atomic(tmp / CONFIG, record)
        (tmp / SAMPLES).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        results = compute_results(tmp, task, problems, cfg, record)
        if reasons:
            results["partial"] = True
            results["partial_reason"] = "; ".join(reasons)
        results["config"] = {**results["config"], "execution": {**results["config"]["execution"], "out": str(out)}}
        RunStore(tmp).write_results(results)
        record["execution"]["out"] = str(out)
        write_json_atomic(tmp / CONFIG, record)
        if out.exists():
            out.rmdir()  # empty: checked above
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out
