"""An Inspect eval log (epochs > 1: repeated samples) as a run folder of ours, so best@k, pass@k,
diversity and the rest of `vpo show / compare / plot / report / view` work on another tool's samples.

The mapping is the reverse of `vpo export --format inspect`: a sample is a problem, each epoch one
chain of one answer; every named score becomes a reward component (a score whose value is a dict:
one component per key, ``scorer/key``), read with Inspect's own ``value_to_float`` (``C`` = 1,
``I`` = 0, ``P`` = 0.5, numbers as they are); the task scalar is their mean and an answer passes when
every component is 1, as for our own tasks. Scores must lie in [0, 1] (a reward is); a log whose
scores do not is refused in one line naming the sample and score.

A sample that errored, or lacks one of the named scores, is stored as a failed chain (left out of
the pools, counted in ``n_errors``), and the run is marked partial, as is one whose samples have
different numbers of epochs. The folder is built next to its destination and renamed into place
when complete, so an interrupted import leaves nothing half-written.
"""
from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vpo_harness.benchmarks.base import Problem
from vpo_harness.harness.core.metrics import default_ks
from vpo_harness.harness.core.models.base import SamplingConfig
from vpo_harness.harness.core.store import CONFIG, SAMPLES, RunStore, write_json_atomic

#: Inspect log format versions this reader knows (inspect_ai writes version 2)
KNOWN_VERSIONS = (1, 2)


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


def read_log(path: Path) -> Any:
    """The log, or one line naming the file and what is wrong with it."""
    try:
        from inspect_ai.log import read_eval_log
    except ImportError as exc:
        raise ImportError("importing an Inspect log needs inspect_ai: pip install 'vpo-harness[inspect]'") from exc
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    try:
        log = read_eval_log(str(path))
    except Exception as exc:  # a damaged zip, JSON that is not a log: inspect_ai's own words, first line
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ValueError(f"{path}: not an Inspect eval log inspect_ai can read ({first})") from None
    if log.version not in KNOWN_VERSIONS:
        raise ValueError(f"{path}: Inspect log format version {log.version}; this reader knows versions "
                         f"{', '.join(map(str, KNOWN_VERSIONS))} (upgrade vpo-harness, or re-write the log "
                         "with an inspect_ai of that format)")
    if not log.samples:
        raise ValueError(f"{path}: the log holds no samples (written with log_samples off?): nothing to import")
    return log


def _components(log: Any) -> list[str]:
    """Every named score, in the order first met; a dict-valued score is one component per key."""
    names: dict[str, None] = {}
    for s in log.samples:
        for name, score in (s.scores or {}).items():
            keys = [f"{name}/{k}" for k in score.value] if isinstance(score.value, dict) else [name]
            names.update(dict.fromkeys(keys))
    return list(names)


def _reward(path: Path, sample: Any, components: list[str]) -> tuple[list[float] | None, str | None]:
    """(reward vector, None), or (None, why the chain cannot be scored)."""
    from inspect_ai.scorer import value_to_float

    to_float = value_to_float()
    flat: dict[str, Any] = {}
    for name, score in (sample.scores or {}).items():
        if isinstance(score.value, dict):
            flat.update({f"{name}/{k}": v for k, v in score.value.items()})
        else:
            flat[name] = score.value
    missing = [c for c in components if c not in flat]
    if missing:
        return None, f"no score {', '.join(missing)}"
    out = []
    for c in components:
        try:
            x = float(to_float(flat[c]))
        except (TypeError, ValueError):
            x = float("nan")
        if not 0.0 <= x <= 1.0:
            raise ValueError(f"{path}: sample {sample.id!r} epoch {sample.epoch}: score {c!r} is {flat[c]!r}, "
                             "not a number in [0, 1] (a reward component is one)")
        out.append(x)
    return out, None


def _row(path: Path, sample: Any, components: list[str]) -> dict[str, Any]:
    text = sample.output.completion if sample.output is not None else ""
    base = {"problem_id": str(sample.id), "chain_index": int(sample.epoch) - 1, "seed": None, "text": text}
    error = sample.error.message if sample.error is not None else None
    reward, why = (None, None) if error else _reward(path, sample, components)
    if error or reward is None:
        return {**base, "error": f"imported: {error or why}", "answers": [], "rewards": [], "scalars": [],
                "passed": []}
    answer = next((s.answer for s in (sample.scores or {}).values() if s.answer is not None), text)
    r = np.asarray(reward)
    return {**base, "error": None, "answers": [answer], "rewards": [reward], "scalars": [float(r.mean())],
            "passed": [bool((r >= 1.0).all())], "n_unique": 1}


def import_inspect(path: str | Path, out: str | Path) -> Path:
    """Write the run folder ``out`` from the Inspect log at ``path``; returns it."""
    from vpo_harness.harness.core.config import RunConfig
    from vpo_harness.harness.eval.runner import build_config_record, compute_results

    path, out = Path(path), Path(out)
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out}: exists and is not empty; choose another --out")
    log = read_log(path)
    components = _components(log)
    if not components:
        raise ValueError(f"{path}: no sample has a score: nothing to compute best@k from")
    rows = [_row(path, s, components) for s in log.samples]
    ids = list(dict.fromkeys(r["problem_id"] for r in rows))
    epochs = {p: sum(1 for r in rows if r["problem_id"] == p) for p in ids}
    n = max(epochs.values())
    gen = log.eval.model_generate_config
    source = {"tool": "inspect", "path": str(path.resolve()), "eval_id": log.eval.eval_id, "task": log.eval.task,
              "log_version": log.version, "status": log.status}
    task = ImportedScores(f"inspect/{log.eval.task}", tuple(components), source)
    cfg = RunConfig.of(task=task.name, model=str(log.eval.model), split="imported", n=n, m=1,
                       ks=tuple(sorted({*default_ks(n), n})), seed=int(gen.seed or 0), temperature=gen.temperature, top_p=gen.top_p,
                       max_tokens=gen.max_tokens, out=str(out), progress=False)
    problems = [Problem(p, {}) for p in ids]
    record = build_config_record(cfg, task, SamplingConfig(gen.temperature, gen.top_p, gen.max_tokens),
                                 problems, "imported")
    record["imported_from"] = source
    failed = sum(1 for r in rows if r["error"])
    uneven = len(set(epochs.values())) > 1
    tmp = out.with_name(f".{out.name}.importing")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        write_json_atomic(tmp / CONFIG, record)
        (tmp / SAMPLES).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        results = compute_results(tmp, task, problems, cfg, record)
        if failed or uneven or log.status != "success":
            results["partial"] = True
            results["partial_reason"] = "; ".join(x for x in (
                f"{failed} sample(s) errored or lack a score" if failed else "",
                "samples have different numbers of epochs" if uneven else "",
                f"the log's status is {log.status}" if log.status != "success" else "") if x)
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
