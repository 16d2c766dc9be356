"""A finished run as an Inspect eval log, so Inspect's viewer, dataframes and third-party readers
can read our samples (inspect_ai, an optional extra: ``pip install 'vpo-harness[inspect]'``).

The mapping, one way for every kind of run:

- a **problem** is a sample (its id is the problem id); a **chain** is an epoch of it (epoch =
  chain index + 1; a seed group numbers its seeds' chains one after the other, seed by seed);
- the chain's text is the sample's output (empty where a row holds none); each answer j of the chain is a named score
  ``answer_j`` whose value holds one entry per reward component and the task ``scalar``, its answer
  the parsed answer, its metadata whether it passed;
- a chain that failed to generate is a sample with its error and no scores;
- the model, the sampling settings, the task and its options go into the eval spec; what the run
  is (``run``, ``seed_group`` with its seeds, ``evolve`` with each candidate's iteration, answer
  index, parent and island) into the spec's metadata under ``vpo_harness``, and the run's own metrics (best@k, pass@k,
  ...) into the results as the scorer ``vpo_harness``.

The prompt is not stored in our rows, so a sample's input names the problem. The file is written
by inspect_ai's own writer, whole or not at all.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from vpo_harness.harness.core.results import is_evolve_run, read_results
from vpo_harness.harness.core.rows import ChainRow
from vpo_harness.harness.core.seed_groups import group_state, is_seed_group
from vpo_harness.harness.core.store import CONFIG, RunStore, latest_rows
from vpo_harness.reports.pools import run_facts

#: the scorer name of every answer score and of the run's own metrics
SCORER = "vpo_harness"
#: row fields of an evolve candidate carried into the sample's metadata
EVOLVE_FIELDS = ("iteration", "answer_index", "island", "parent_id", "program_id")


def _inspect() -> Any:
    try:
        import inspect_ai.log as log
    except ImportError as exc:
        raise ImportError("--format inspect needs inspect_ai: pip install 'vpo-harness[inspect]'") from exc
    return log


def _folders(path: Path) -> tuple[str, list[tuple[int | None, Path]], dict[str, Any]]:
    """(kind, [(seed, run folder)], what the kind adds to the metadata)."""
    if is_seed_group(path):
        state = group_state(path)
        return "seed_group", [(s, f) for s, f in state.runs], {
            "seeds": [s for s, _ in state.runs], "seed_axis": state.axis, "partial": state.partial,
            "seeds_label": state.label()}
    if not (path / CONFIG).is_file():
        raise FileNotFoundError(f"{path}: not a run folder (no {CONFIG}) nor a seed group")
    if is_evolve_run(path):
        return "evolve", [(None, path)], {"baseline": str(path / "baseline") if (path / "baseline").is_dir() else None}
    return "run", [(None, path)], {}


def _names(components: list[str], d: int) -> list[str]:
    return list(components) if len(components) == d else [f"c{i + 1}" for i in range(d)]


def _sample(log: Any, row: ChainRow, epoch: int, model: str, components: list[str], seed: int | None,
            kind: str) -> Any:
    from inspect_ai.model import ModelOutput
    from inspect_ai.scorer import Score

    meta: dict[str, Any] = {"chain_index": row.chain_index, "chain_seed": row.seed}
    if seed is not None:
        meta["run_seed"] = seed
    if kind == "evolve":
        meta.update({k: row.other.get(k) for k in EVOLVE_FIELDS if k in row.other})
    scores = None
    if row.ok:
        scores = {}
        for j, (answer, reward, scalar, passed) in enumerate(zip(row.answers, row.rewards, row.scalars, row.passed), 1):
            value = dict(zip(_names(components, len(reward)), map(float, reward)))
            value["scalar"] = float(scalar)
            scores[f"answer_{j}"] = Score(value=value, answer=answer, metadata={"passed": bool(passed)})
    error = None if row.ok else log.EvalError(message=str(row.error), traceback="", traceback_ansi="")
    return log.EvalSample(id=row.problem_id, epoch=epoch, input=f"problem {row.problem_id}", target="",
                          output=ModelOutput.from_content(model=model, content=row.text or ""), scores=scores,
                          metadata=meta, error=error)


def to_eval_log(path: str | Path) -> Any:
    """The Inspect ``EvalLog`` of a run folder, seed group or evolve run."""
    log = _inspect()
    from inspect_ai.model import GenerateConfig

    path = Path(path)
    kind, folders, extra = _folders(path)
    config = RunStore(folders[0][1]).read_config() if folders else RunStore(path).read_config()
    facts = run_facts(config)
    model, components = str(facts.get("model") or "?"), list(facts.get("components") or [])
    samples, epochs_seen = [], {}
    for seed, folder in folders:
        for raw in sorted(latest_rows(folder), key=lambda r: (str(r["problem_id"]), int(r["chain_index"]))):
            row = ChainRow.from_json(raw)
            epoch = (row.chain_index + 1) if kind != "seed_group" else epochs_seen.get(row.problem_id, 0) + 1
            epochs_seen[row.problem_id] = max(epochs_seen.get(row.problem_id, 0), epoch)
            samples.append(_sample(log, row, epoch, model, components, seed, kind))
    ids = list(dict.fromkeys(s.id for s in samples))
    summary = read_results(path) if kind != "seed_group" else None
    metrics = (summary.raw.get("metrics") or {}) if summary is not None else {}
    results = log.EvalResults(
        total_samples=len(ids), completed_samples=len(ids),
        scores=[log.EvalScore(name="run", scorer=SCORER, metrics={
            name: log.EvalMetric(name=name, value=float(v["mean"])) for name, v in metrics.items()
            if isinstance(v, dict) and isinstance(v.get("mean"), (int, float))})])
    partial = bool(extra.get("partial")) or (kind != "seed_group" and summary is None)
    spec = log.EvalSpec(
        created=str(config.get("created") or "1970-01-01T00:00:00+00:00"), task=str(facts.get("task") or "?"),
        task_args=dict(facts.get("task_options") or {}), dataset=log.EvalDataset(
            name=str(facts.get("task")), samples=len(ids), sample_ids=ids),
        model=model, model_base_url=facts.get("base_url"),
        model_generate_config=GenerateConfig(temperature=facts.get("temperature"), top_p=facts.get("top_p"),
                                             max_tokens=facts.get("max_tokens"), seed=facts.get("seed")),
        config=log.EvalConfig(epochs=max(epochs_seen.values(), default=1)),
        metadata={SCORER: {"kind": kind, "path": str(path), "split": facts.get("split"), "m": facts.get("m"),
                           "n": facts.get("n"), "components": components, "partial": partial,
                           "prompt_style": facts.get("prompt_style"), **extra}})
    return log.EvalLog(eval=spec, status="started" if partial else "success", results=results, samples=samples)


def write_inspect_log(path: str | Path, out: str | Path) -> int:
    """Write the run at ``path`` to ``out`` (``.eval``, Inspect's default, or ``.json``) whole or not at
    all; returns the number of samples written."""
    log = _inspect()
    out = Path(out)
    if out.suffix not in (".eval", ".json"):
        raise ValueError(f"--out {out}: an Inspect log ends in .eval or .json")
    ev = to_eval_log(path)
    tmp = out.with_name(f".{out.name}.partial{out.suffix}")
    try:
        log.write_eval_log(ev, str(tmp), format=out.suffix[1:])
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return len(ev.samples or [])
