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
different numbers of epochs. With one of our tasks (``task=``), Inspect's scores are not read: each
completion is rescored by the task, matched to its problems by sample id (`import_run`, which also
writes the folder, never half-written).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from vpo_harness.harness.app.import_run import ImportedChain, ImportedSampling, ImportedSamples, write_imported

#: Inspect log format versions this reader knows (inspect_ai writes version 2)
KNOWN_VERSIONS = (1, 2)


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


def _chain(path: Path, sample: Any, components: list[str]) -> ImportedChain:
    text = sample.output.completion if sample.output is not None else ""
    chain = ImportedChain(str(sample.id), int(sample.epoch) - 1, text)
    if sample.error is not None:
        chain.error = sample.error.message
        return chain
    chain.reward, why = _reward(path, sample, components)
    chain.error = why
    chain.answer = next((s.answer for s in (sample.scores or {}).values() if s.answer is not None), text)
    return chain


def read_inspect(path: str | Path, scored: bool = True) -> ImportedSamples:
    """The log's samples as chains; ``scored``: read Inspect's scores too (not when our task rescores)."""
    path = Path(path)
    log = read_log(path)
    components = _components(log)
    if scored and not components:
        raise ValueError(f"{path}: no sample has a score: nothing to compute best@k from")
    if scored:
        chains = [_chain(path, s, components) for s in log.samples]
    else:
        chains = [ImportedChain(str(s.id), int(s.epoch) - 1, s.output.completion if s.output is not None else "",
                                error=s.error.message if s.error is not None else None) for s in log.samples]
    gen = log.eval.model_generate_config
    source = {"tool": "inspect", "path": str(path.resolve()), "eval_id": log.eval.eval_id, "task": log.eval.task,
              "log_version": log.version, "status": log.status}
    return ImportedSamples(path=path, tool="inspect", task=log.eval.task, model=str(log.eval.model),
                           components=components, chains=chains, source=source,
                           sampling=ImportedSampling(gen.temperature, gen.top_p, gen.max_tokens), seed=int(gen.seed or 0),
                           partial_reasons=[] if log.status == "success" else [f"the log's status is {log.status}"])


def import_inspect(path: str | Path, out: str | Path, task: str | None = None, split: str = "test") -> Path:
    """Write the run folder ``out`` from the Inspect log at ``path`` (scored by Inspect, or by our
    ``task``); returns it."""
    return write_imported(read_inspect(path, scored=task is None), out, task, split)
