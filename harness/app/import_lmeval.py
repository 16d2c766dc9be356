"""lm-evaluation-harness ``--log_samples`` output of a generation task with ``repeats`` K > 1
(a ``samples_<task>_<date>.jsonl`` file) as repeated samples for `vpo import`.

What lm-eval stores: one line per document and filter; ``resps[0]`` holds the K raw generations of
the repeats, ``filtered_resps[0]`` the one response that filter passed to the task's metrics, and
each metric named in ``metrics`` is a key of the line with that response's score. lm-eval keeps no
score per repeat: its default filter (``take_first``) scores repeat 1 only. So each line is a
repeat only when the task's filters pick the repeats one each, named ``repeat_1`` ... ``repeat_K``
(a ``custom`` filter, see docs/usage.md): then repeat i's scores are the ``repeat_i`` line's metrics,
one reward component per metric, in [0, 1]. Files of other filters import with ``--task`` only:
the K raw generations rescored by our task.

A document is a problem (its id the doc's ``id`` field, or ``--id-field``; the doc index when
the doc has none and no task rescores), each repeat a chain of one answer.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from vpo_harness.harness.app.import_run import ImportedChain, ImportedSampling, ImportedSamples

#: the fields of a generation task's samples line this reader needs
FIELDS = ("doc_id", "doc", "resps", "filtered_resps", "filter", "metrics")
_REPEAT = re.compile(r"repeat_(\d+)")
_NAME = re.compile(r"samples_(.+)_(\d{4}-\d\d-\d\dT[\d.-]+)\.jsonl")


def _lines(path: Path) -> list[dict[str, Any]]:
    """The file's lines, each checked for the fields of a generation task's sample."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    out = []
    for i, raw in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{i}: not JSON ({exc.msg}); an lm-eval samples file has one JSON "
                             "object per line") from None
        if not isinstance(line, dict):
            raise ValueError(f"{path}:{i}: not a JSON object; an lm-eval samples file has one per line")
        missing = [f for f in FIELDS if f not in line]
        if missing:
            raise ValueError(f"{path}:{i}: no field {', '.join(map(repr, missing))}: not an lm-eval samples file "
                             "(lm_eval --log_samples writes samples_<task>_<date>.jsonl)")
        if not isinstance(line["doc_id"], int) or not isinstance(line["filter"], str) or not (
                isinstance(line["metrics"], list) and all(isinstance(m, str) for m in line["metrics"])):
            raise ValueError(f"{path}:{i}: 'doc_id' is not an integer, 'filter' not a name or 'metrics' not a list "
                             "of metric names: not an lm-eval samples line")
        resps = line["resps"]
        if not (isinstance(resps, list) and len(resps) == 1 and isinstance(resps[0], list)
                and all(isinstance(t, str) for t in resps[0])):
            raise ValueError(f"{path}:{i}: 'resps' is not one request's list of generated texts: not a "
                             "generation task (multiple-choice and loglikelihood tasks generate nothing to import)")
        out.append(line)
    if not out:
        raise ValueError(f"{path}: empty: no samples to import")
    return out


def _doc_id(path: Path, i: int, line: dict[str, Any], id_field: str, need: bool) -> str:
    doc = line["doc"]
    if isinstance(doc, dict) and id_field in doc:
        return str(doc[id_field])
    if need:
        raise ValueError(f"{path}:{i}: doc {line['doc_id']} has no field {id_field!r} to match a problem "
                         "of the task by (choose it with --id-field)")
    return str(line["doc_id"])


def _score(path: Path, i: int, line: dict[str, Any], name: str) -> float:
    v = line.get(name)
    if isinstance(v, bool):
        return float(v)
    if not isinstance(v, (int, float)) or not 0.0 <= float(v) <= 1.0:
        raise ValueError(f"{path}:{i}: doc {line['doc_id']} filter {line['filter']!r}: metric {name!r} is {v!r}, "
                         "not a number in [0, 1] (a reward component is one)")
    return float(v)


def _dict(value: Any) -> dict[str, Any]:
    """``value`` when the file holds an object there, else {} (a field lm-eval did not write)."""
    return value if isinstance(value, dict) else {}


def _results_file(path: Path) -> dict[str, Any]:
    """The ``results_<date>.json`` lm-eval wrote beside the samples (model, sampling); {} if none."""
    m = _NAME.fullmatch(path.name)
    found = path.with_name(f"results_{m.group(2)}.json") if m else None
    if found is None or not found.is_file():
        return {}
    try:
        data = json.loads(found.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def read_lmeval(path: str | Path, scored: bool = True, id_field: str = "id") -> ImportedSamples:
    """The samples file's repeats as chains; ``scored``: with lm-eval's per-repeat scores (not when
    our task rescores them)."""
    path = Path(path)
    lines = _lines(path)
    docs: dict[int, tuple[int, dict[str, Any]]] = {}
    for i, line in enumerate(lines, 1):
        docs.setdefault(line["doc_id"], (i, line))
    ids = {d: _doc_id(path, i, line, id_field, need=not scored) for d, (i, line) in docs.items()}
    chains: list[ImportedChain] = []
    components: list[str] = []
    reasons: list[str] = []
    if not scored:
        for d, (_, line) in docs.items():
            chains += [ImportedChain(ids[d], j, t) for j, t in enumerate(line["resps"][0])]
    else:
        filters = sorted({line["filter"] for line in lines})
        if not all(_REPEAT.fullmatch(f) for f in filters):
            k = max(len(line["resps"][0]) for line in lines)
            raise ValueError(f"{path}: lm-eval stored one score per document and filter ({', '.join(filters)}), "
                             f"not one per repeat of the {k}: score each repeat with filters named repeat_1 ... "
                             f"repeat_{k} (docs/usage.md), or rescore the repeats with --task")
        components = list(dict.fromkeys(m for line in lines for m in line["metrics"]))
        by_repeat = {(line["doc_id"], int(_REPEAT.fullmatch(line["filter"]).group(1)) - 1): (i, line)  # type: ignore[union-attr]
                     for i, line in enumerate(lines, 1)}
        for (d, j), (i, line) in by_repeat.items():
            if j >= len(line["resps"][0]):
                raise ValueError(f"{path}:{i}: filter {line['filter']!r} names a repeat beyond the "
                                 f"{len(line['resps'][0])} generations of doc {d}")
        for d, (_, first) in docs.items():
            for j, text in enumerate(first["resps"][0]):
                chain = ImportedChain(ids[d], j, text)
                hit = by_repeat.get((d, j))
                if hit is None:
                    chain.error = f"no line of filter repeat_{j + 1}"
                elif any(c not in hit[1] for c in components):
                    chain.error = f"no score {', '.join(c for c in components if c not in hit[1])}"
                else:
                    i, line = hit
                    chain.reward = [_score(path, i, line, c) for c in components]
                    fr = line["filtered_resps"][0] if line["filtered_resps"] else None
                    chain.answer = fr if isinstance(fr, str) else text
                chains.append(chain)
    meta = _results_file(path)
    m = _NAME.fullmatch(path.name)
    task = m.group(1) if m else path.stem
    cfg = _dict(_dict(meta.get("configs")).get(task))
    gen = _dict(cfg.get("generation_kwargs"))
    run_cfg = _dict(meta.get("config"))
    model = str(meta.get("model_name") or run_cfg.get("model") or "lm-eval")
    seed = run_cfg.get("random_seed")
    source = {"tool": "lm-eval", "path": str(path.resolve()), "task": task,
              "lm_eval_version": meta.get("lm_eval_version"), "repeats": cfg.get("repeats")}
    return ImportedSamples(path=path, tool="lm-eval", task=task, model=model, components=components,
                           chains=chains, source=source,
                           sampling=ImportedSampling(gen.get("temperature"), gen.get("top_p"),
                                                     gen.get("max_gen_toks")),
                           seed=int(seed) if isinstance(seed, int) else 0, partial_reasons=reasons)
