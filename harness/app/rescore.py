"""`vpo rescore`: grade a run's stored completions again, with the current task code or other task
options, into a new run folder. Nothing is generated: every chain's stored text goes through the
same chain scoring function the runner uses (parse -> reward vectors -> scalars -> row), so code is
executed in the sandbox exactly as during a run.

The new folder is an ordinary run folder (show, plot, compare, report read it) whose config records
the source run (``rescored_from``: path, digest of the source config.json, its git hash) and the task
options in force. Like runs, rescoring is append-only and resumable: re-running the same command
continues after the chains already graded.
"""
from __future__ import annotations

import concurrent.futures as cf
import copy
import datetime as _dt
import hashlib
import sys
from pathlib import Path
from typing import Any, Sequence

from vpo_harness.harness.core.models.base import Generation
from vpo_harness.harness.core.store import CONFIG, RunStore, RunStoreError, latest_rows

#: row fields that describe the generation, copied from the source row as they were
_GENERATION_FIELDS = ("prompt_tokens", "completion_tokens", "finish_reason", "latency_s", "attempts", "extra")


def _facts(config: dict[str, Any]) -> dict[str, Any]:
    from vpo_harness.reports.pools import run_facts

    return run_facts(config)


def _with_options(config: dict[str, Any], options: dict[str, Any], task: Any, problems: Sequence[Any],
                  source: dict[str, Any]) -> dict[str, Any]:
    """The source config with new task options, task description, components and problem digest;
    the source run is part of the identity, so a folder never mixes rows regraded from two runs."""
    from vpo_harness.harness.core.provenance import problems_fingerprint

    new = copy.deepcopy(config)
    ident = new["identity"]
    ident["task"]["options"] = options
    ident["task_info"] = task.describe()
    ident["components"] = list(task.component_names)
    ident.setdefault("problems", {})["sha256"] = problems_fingerprint(problems)
    ident["rescored_from"] = source
    return new


def _run_config(config: dict[str, Any]) -> Any:
    """The RunConfig of a config.json record (ks, seeds and pool shape for the metrics)."""
    from vpo_harness.harness.core.config import RunConfig, recorded_ks

    ident = config["identity"]
    sampling = {**ident["sampling"], **({"ks": recorded_ks(config)} if recorded_ks(config) else {})}
    return RunConfig.from_json({"task": ident["task"], "model": ident["model"], "sampling": sampling,
                                "execution": config.get("execution") or {}})


def rescore(source: str | Path, out: str | Path, task_args: dict[str, Any] | None = None, workers: int = 1,
            progress: bool = True) -> Path:
    """Re-grade ``source``'s chains into ``out`` with the task options updated by ``task_args``."""
    from vpo_harness.harness.core.progress import progress as tqdm

    from vpo_harness.benchmarks import get_task
    from vpo_harness.harness.core import provenance
    from vpo_harness.harness.eval import runner

    src, dst = Path(source), Path(out)
    cfg_path = src / CONFIG
    if not cfg_path.exists():
        raise RunStoreError(f"{src}: not a run folder (no {CONFIG})")
    if src.resolve() == dst.resolve():
        raise ValueError(f"--out {dst} is the source run: rescoring writes a new folder")
    raw = cfg_path.read_bytes()
    config = RunStore(src).read_config()  # wrong-typed fields: one line naming the file and field
    if not isinstance(config.get("identity"), dict):
        raise ValueError(f"{cfg_path}: written by an older vpo-harness (flat config without an 'identity' "
                         "section); rescore needs a run written by this version")
    facts = _facts(config)
    if facts.get("kind") == "evolve":
        raise ValueError(f"{src}: an evolve run; rescore evaluation runs (vpo run) only")
    options = {**(facts.get("task_options") or {}), **(task_args or {})}
    task = get_task(facts["task"], **options)
    try:
        problems = task.load(facts["split"], path=facts.get("data_path"), limit=facts.get("limit"))
        by_id = {p.id: p for p in problems}
        rows = latest_rows(src)
        missing = sorted({r["problem_id"] for r in rows} - set(by_id))
        if missing:
            raise ValueError(f"{src}: {len(missing)} stored problems are not in task {facts['task']!r} split "
                             f"{facts['split']!r} any more (e.g. {', '.join(missing[:3])})")
        stored_ids = list(dict.fromkeys(r["problem_id"] for r in rows))
        problems = [by_id[p] for p in facts.get("problem_ids") or stored_ids if p in by_id]
        m = int(facts.get("m") or 1)
        source = {"path": str(src.resolve()), "config_sha256": hashlib.sha256(raw).hexdigest(),
                  "git": config.get("git"), "task_args": dict(task_args or {})}
        record = _with_options(config, options, task, problems, source)
        record.update(created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                      git=provenance.git_hash(), versions=provenance.versions(), command=sys.argv)
        store = RunStore(dst)
        store.init(record)
        store.repair()
        done = store.done_keys()
        todo = [r for r in rows if (r["problem_id"], int(r["chain_index"])) not in done]
        bar = tqdm(total=len(todo), desc="rescore", unit="chain", disable=not progress)
        try:
            with cf.ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
                futs = [pool.submit(_regrade, task, by_id[r["problem_id"]], r, m) for r in todo]
                for f in cf.as_completed(futs):
                    store.append(f.result())
                    bar.update(1)
        finally:
            store.close()
            bar.close()
        store.write_results(runner.compute_results(dst, task, problems, _run_config(record), record))
    finally:
        close = getattr(task, "close", None)
        if close is not None:
            close()
    return dst


def _regrade(task: Any, problem: Any, row: dict[str, Any], m: int) -> dict[str, Any]:
    """One stored chain through the runner's chain scoring (a failed generation stays failed)."""
    from vpo_harness.benchmarks.scoring import score_generation

    gen = Generation(problem_id=row["problem_id"], chain_index=int(row["chain_index"]), text=row.get("text") or "",
                     error=row.get("error"),
                     **{k: row[k] for k in _GENERATION_FIELDS if row.get(k) is not None})
    return score_generation(task, problem, gen, m, row.get("seed")).to_json()


__all__: Sequence[str] = ["rescore"]
