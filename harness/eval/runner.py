"""The runner: problems -> prompts -> chains -> answers -> reward vectors -> metrics, resumably.

A pool of n chains x m answers is n*m candidates (one chain counts as m samples, as in the paper).
Generation streams from the backend; scoring runs beside it in worker threads so a slow grader
(the code sandbox) never stalls the model; every finished chain is appended to samples.jsonl.
"""
from __future__ import annotations

from collections import Counter
import datetime as _dt
import functools
import logging
import sys
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, Protocol, Sequence

import numpy as np

from vpo_harness.benchmarks import Benchmark, Problem, get_task
from vpo_harness.benchmarks.base import TaskRecord
from vpo_harness.benchmarks.scoring import score_generation
from vpo_harness.harness.core import metrics
from vpo_harness.harness.core.executors import BackendSpec, ChainScorer, Executor, ScoringPool, make_executor
from vpo_harness.harness.core.executors.base import seeds_of
from vpo_harness.harness.core.gencache import CacheError, CachedChains, GenerationCache, cache_decision
from vpo_harness.harness.core.config import CONFIG_FORMAT, ExecutionSpec, ModelSpec, RunConfig, SamplingSpec, TaskSpec
from vpo_harness.harness.core.models.base import Backend, GenRequest, Generation, SamplingConfig, chat_template_args
from vpo_harness.harness.core.provenance import git_hash, model_fingerprint, problems_fingerprint, versions
from vpo_harness.harness.core.results import summarize_rows
from vpo_harness.harness.core.rows import ChainRow
from vpo_harness.harness.core.seeding import derive_seed
from vpo_harness.harness.core.seed_groups import MARKER as SEEDS_MARKER, is_seed_group, register_seeds, seed_folder
from vpo_harness.harness.core.store import CONFIG, RunStore, discard_unstarted, latest_rows, missing_dirs

_log = logging.getLogger(__name__)  # notes and warnings: the caller decides where they go (harness/core/log.py)

DEFAULT_KS = metrics.DEFAULT_KS
__all__ = ["RunConfig", "TaskSpec", "ModelSpec", "SamplingSpec", "ExecutionSpec", "DEFAULT_KS", "run",
           "problems_fingerprint", "build_config_record", "compute_results", "run_seeds", "canonical_config",
           "default_folder", "older_name_or"]


class SamplingRecord(Protocol):
    """What config.json records of a run's sampling: a run's own :class:`SamplingConfig`, or what an
    imported file says (``vpo import``: None where the other tool does not say)."""

    @property
    def temperature(self) -> float | None: ...

    @property
    def top_p(self) -> float | None: ...

    @property
    def max_tokens(self) -> int | None: ...


def build_config_record(cfg: RunConfig, task: Benchmark | TaskRecord, sampling: SamplingRecord, problems: Sequence[Problem],
                        problems_source: str) -> dict[str, Any]:
    """config.json: ``identity`` (what the run is; checked on resume) and the record of how it ran."""
    identity = cfg.identity()
    identity.update(
        resolved_sampling={"temperature": sampling.temperature, "top_p": sampling.top_p,
                           "max_tokens": sampling.max_tokens},
        task_info=task.describe(), components=list(task.component_names),
        problems={"n": len(problems), "sha256": problems_fingerprint(problems), "source": problems_source,
                  "ids": [p.id for p in problems]},
        model_fingerprint=model_fingerprint(cfg.model.spec, cfg.model.args), metric_seed=metrics.METRIC_SEED,
    )
    return {
        "format": CONFIG_FORMAT, "identity": identity, "execution": asdict(cfg.execution),
        "ks": list(cfg.sampling.ks),
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "versions": versions(), "git": git_hash(), "command": sys.argv,
    }


def make_prompt(task: Benchmark, problem: Problem, cfg: RunConfig) -> list[dict[str, str]]:
    style = cfg.task.prompt_style
    if cfg.sampling.m == 1:
        return task.prompt(problem, style=style)
    return task.multi_prompt(problem, cfg.sampling.m, style=style)


def compute_results(folder: Path, task: Benchmark | TaskRecord, problems: Sequence[Problem], cfg: RunConfig,
                    config_record: dict[str, Any]) -> dict[str, Any]:
    """results.json from the rows on disk (the latest row of every (problem, chain))."""
    s = cfg.sampling
    raw_rows = latest_rows(folder)
    summary, n_errors = summarize_rows(raw_rows, [p.id for p in problems], task.d, list(s.ks),
                                       list(task.component_names), config_record["identity"]["metric_seed"])
    rows = [ChainRow.from_json(r) for r in raw_rows]
    tokens = [r.completion_tokens or 0 for r in rows if r.ok]
    return {
        "task": cfg.task.name, "split": cfg.task.split, "model": cfg.model.spec, "m": s.m, "n": s.n,
        "pool_size": cfg.pool_size, "metrics": summary,
        "n_chains": len(rows), "n_errors": n_errors,
        "n_cached": sum(1 for r in rows if r.extra.get("cached")),  # chains the generation cache supplied
        "mean_completion_tokens": float(np.mean(tokens)) if tokens else None,
        "config": config_record,
    }


def run(cfg: RunConfig, backend: Backend | None = None, problems: Sequence[Problem] | None = None,
        executor: Executor | None = None) -> Path:
    """Run (or resume) an evaluation; returns the run folder. A finished run is a no-op.

    ``problems`` replaces the task's own split (validation sets, search candidates); the config then
    records them as given, with their fingerprint and ids, so the folder says what it ran.
    ``backend`` or ``executor`` (borrowed: not closed here) replace the ones ``cfg`` would build.
    """
    cfg.validate()
    if cfg.execution.out and is_seed_group(cfg.execution.out):  # one more seed of a group: PARENT/seed-S
        return run_seeds(cfg, [cfg.sampling.seed], backend, problems, executor)
    with get_task(cfg.task.name, **cfg.task.options) as task:
        source = "given" if problems is not None else "loaded"
        if problems is None:
            problems = task.load(cfg.task.split, path=cfg.task.data_path, limit=cfg.task.limit)
        if not problems:
            raise ValueError(f"task {cfg.task.name!r} split {cfg.task.split!r} has no problems")
        dup, count = Counter(p.id for p in problems).most_common(1)[0]
        if count > 1:  # chains are keyed by problem id: two problems would merge
            raise ValueError(f"problem id {dup!r} appears {count} times in the problems to run; ids must be unique")
        return _run(cfg, task, list(problems), source, backend, executor)


def run_seeds(cfg: RunConfig, seeds: Sequence[int], backend: Backend | None = None,
              problems: Sequence[Problem] | None = None, executor: Executor | None = None) -> Path:
    """One run per sampling seed under one parent folder (``vpo_harness.harness.core.seed_groups``); returns the parent.

    ``cfg.execution.out`` is the parent (default: named from the identity less the seed). The group
    is registered before anything is sampled, so an interrupted group is found again by the same
    command, and each seed resumes on its own (only its missing chains are sampled)."""
    cfg.validate()
    if not seeds:
        raise ValueError("run_seeds needs at least one seed")
    with get_task(cfg.task.name, **cfg.task.options) as task:  # the group is named and checked canonically
        cfg = canonical_config(cfg, task)
    parent = Path(cfg.execution.out) if cfg.execution.out else cfg.default_out(seed_group=True)
    created = missing_dirs(parent)
    register_seeds(parent, seeds, cfg.identity(seed=False))
    try:
        for i, seed in enumerate(seeds, 1):
            one = replace(cfg, sampling=replace(cfg.sampling, seed=int(seed)),
                          execution=replace(cfg.execution, out=str(seed_folder(parent, seed))))
            _log.info(f"[vpo] {parent}: seed {seed} ({i} of {len(seeds)})")
            run(one, backend=backend, problems=problems, executor=executor)
    except BaseException:
        # the group this command created holds no seed run yet (each failed one removed itself): gone too
        if parent.absolute() in created and not any(seed_folder(parent, s).exists() for s in seeds):
            (parent / SEEDS_MARKER).unlink(missing_ok=True)
            discard_unstarted(parent, created, fresh=True)
        raise
    return parent


def canonical_config(cfg: RunConfig, task: Benchmark) -> RunConfig:
    """``cfg`` as the run is identified: its model spec canonical and the task's default temperature
    and top-p filled in where unset (:meth:`RunConfig.canonical`). Every run goes through here before
    its identity or folder name is computed."""
    return cfg.canonical(task.default_temperature, task.default_top_p)


def default_folder(given: RunConfig, canon: RunConfig) -> Path:
    """The folder a run without ``--out`` writes: named from the canonical identity, except that an
    existing folder under the name the same command got before identities were canonical (hashed
    from the config as typed) is reused, so re-running an old command still resumes it."""
    return older_name_or(canon.default_out(), given.default_out())


def older_name_or(new: Path, old: Path) -> Path:
    """``new``, unless only ``old`` (the name the same command got before run identities were
    canonical) holds a run folder: then ``old``, with a one-line note on stderr. The one fallback
    rule for `vpo run` and `vpo evolve` folders named before the canonical identity."""
    if old != new and not new.exists() and (old / "config.json").is_file():
        _log.info(f"[vpo] resuming {old} (named before run identities were canonical; new runs of these "
                  f"settings are named {new})")
        return old
    return new


def _run(cfg: RunConfig, task: Benchmark, problems: list[Problem], source: str, backend: Backend | None,
         executor: Executor | None) -> Path:
    given, cfg = cfg, canonical_config(cfg, task)
    s, ex = cfg.sampling, cfg.execution
    sampling = SamplingConfig(temperature=s.temperature, top_p=s.top_p, max_tokens=s.max_tokens,
                              chat_template_args=chat_template_args(s.chat_template_args))
    folder = Path(ex.out) if ex.out else default_folder(given, cfg)
    store = RunStore(folder, flush_every=ex.flush_every)
    record = build_config_record(cfg, task, sampling, problems, source)
    created, fresh = missing_dirs(folder), not (folder / CONFIG).exists()
    store.lock()  # one writer per folder: a second `vpo run` here is refused, not run twice
    finished = False
    try:
        out = _run_locked(cfg, task, problems, backend, executor, sampling, folder, store, record)
        finished = True
        return out
    finally:
        store.unlock()
        if not finished:  # failed (or interrupted) before its first row: no run folder is left behind
            discard_unstarted(folder, created, fresh)


def _run_locked(cfg: RunConfig, task: Benchmark, problems: list[Problem], backend: Backend | None,
                executor: Executor | None, sampling: SamplingConfig, folder: Path, store: RunStore,
                record: dict[str, Any]) -> Path:
    from vpo_harness.harness.core.progress import progress as tqdm

    s, ex = cfg.sampling, cfg.execution
    resuming = store.init(record)
    if resuming:
        dropped = store.repair()
        if dropped:
            _log.warning(f"[vpo] {folder}: dropped a partial last line ({dropped} bytes) left by an interrupted run")
    done = store.done_keys(include_errors=not ex.retry_errors)
    by_id = {p.id: p for p in problems}
    requests: list[GenRequest] = []
    for p in problems:
        todo = [c for c in range(s.n) if (p.id, c) not in done]
        if todo:
            requests.append(GenRequest(p.id, make_prompt(task, p, cfg), tuple(todo),
                                       tuple(derive_seed(s.seed, p.id, c) for c in todo), prefix=s.prefix))
    n_todo = sum(len(r.chain_indices) for r in requests)
    store.update_record(ks=list(s.ks))  # the ks are metrics, not identity: a resume may read others
    if n_todo == 0 and store.results_current():
        if store.results_ks() == sorted(s.ks):
            _log.info(f"[vpo] {folder}: run already complete")
            return folder
        _log.info(f"[vpo] {folder}: run already complete; metrics recomputed at k = {','.join(map(str, s.ks))} "
                  "from the stored rows (nothing sampled)")
    if n_todo:
        store.invalidate_results()  # until the rows below are summarised again, there are no metrics
        if resuming:
            _log.info(f"[vpo] {folder}: resuming, {len(done)} chains done, {n_todo} to go")
        seeds = seeds_of(requests)
        cached, hits, requests = _consult_cache(cfg, record, sampling, requests, backend is not None, store)
        # a replica rebuilds the task from its name and options (a Benchmark does not travel)
        scorer = ChainScorer(functools.partial(get_task, cfg.task.name, **cfg.task.options), s.m,
                             score_generation, task=task)
        bar_gen = tqdm(total=n_todo, desc="generate", unit="chain", disable=not ex.progress)
        bar_score = tqdm(total=n_todo, desc="score", unit="chain", disable=not ex.progress)
        # backends that decode in batches (hf) report tokens as they go, so the bar moves (with a rate
        # and an ETA) while a batch runs; the total is the upper bound n_todo * max_tokens
        bar_tok = live = None
        own_executor = executor is None and bool(requests)

        def keep(row: Any) -> None:
            store.append(row.to_json())
            if cached is not None:
                cached.remember(row)
            bar_score.update(1)

        rows = None
        try:
            if hits:  # chains found in the cache are scored like sampled ones, without the model
                _score_cached(hits, by_id, seeds, scorer, ex.score_workers, bar_gen.update, keep)
            if requests:
                if executor is None:
                    args = dict(cfg.model.args)
                    if cfg.model.spec.startswith("openai:"):  # --concurrency is a default; explicit model_args win
                        args.setdefault("concurrency", ex.concurrency)
                    executor = make_executor(ex.executor, BackendSpec(cfg.model.spec, cfg.execution.base_url, args),
                                             backend=backend, score_workers=ex.score_workers)
                executor.start(scorer)
                store.record_backend(executor.describe_backend())
                if hasattr(executor, "on_event"):  # Ray replica losses and restarts go into config.json
                    executor.on_event = store.append_event
                live = getattr(executor, "backend", None)  # the in-process backend (local executor); None on Ray
                if cached is not None:
                    cached.check_loaded(getattr(live, "loaded_revision", None))
                if hasattr(live, "on_tokens") and ex.progress:
                    bar_tok = tqdm(total=sum(len(r.chain_indices) for r in requests) * sampling.max_tokens,
                                   desc="tokens (upper bound)", unit="tok", unit_scale=True)
                    live.on_tokens = bar_tok.update
                # on an interrupt or a failure elsewhere, chains already generated and scored are kept
                rows = executor.rows(requests, by_id, sampling, scorer, on_generated=bar_gen.update,
                                     on_leftover=keep)
                for row in rows:
                    keep(row)
        finally:
            if rows is not None:
                rows.close()
            if own_executor and executor is not None:
                executor.close()
            store.close()
            if cached is not None:
                cached.cache.close()
            bar_gen.close()
            bar_score.close()
            if bar_tok is not None:
                bar_tok.close()
                live.on_tokens = None
    results = compute_results(folder, task, problems, cfg, record)
    store.write_results(results)
    return folder


def _consult_cache(cfg: RunConfig, record: dict[str, Any], sampling: SamplingConfig, requests: list[GenRequest],
                   backend_given: bool, store: RunStore) -> tuple[CachedChains | None, list[Generation], list[GenRequest]]:
    """(the run's cache view or None when off, the chains found, the requests left to sample). The
    decision, why, where and how many were found go into config.json's ``cache``; the rows found are
    marked ``extra.cached``. The model part of the key is the run's own identity (spec, identity args,
    weights digest or hub commit), so the cache and resume agree on what "the same model" is, and the
    machine's part (resolved device class and dtype, library versions) that the identity leaves out
    so that a run may resume elsewhere."""
    ident = record["identity"]
    use, why = cache_decision(cfg.execution.cache, cfg.model.spec, cfg.model.args, backend_given,
                              ident.get("model_fingerprint"))
    if not use:
        store.update_record(cache={"enabled": False, "why": why})
        return None, [], requests
    from vpo_harness.harness.core.models import generation_runtime

    runtime = generation_runtime(cfg.model.spec, cfg.model.args)
    model = {**ident["model"], "weights": ident.get("model_fingerprint"), "runtime": runtime}
    try:
        cache = GenerationCache()
    except CacheError as exc:  # an unreadable file is a miss for the whole run, never a stopped run
        _log.warning(f"[vpo] warning: {exc}; the run goes on without the cache")
        store.update_record(cache={"enabled": False, "why": f"unusable: {exc}"})
        return None, [], requests
    cached = CachedChains(cache, model, sampling)
    hits, left = cached.split(requests)
    n_left = sum(len(r.chain_indices) for r in left)
    store.update_record(cache={"enabled": True, "why": why, "dir": str(cached.cache.folder),
                               "runtime": runtime, "found": len(hits), "sampled": n_left})
    if hits:
        _log.info(f"[vpo] generation cache {cached.cache.folder}: {len(hits)} of {len(hits) + n_left} chains found, "
                  f"{n_left} to sample (--no-cache samples them all)")
    return cached, hits, left


def _score_cached(hits: Sequence[Generation], problems: dict[str, Problem], seeds: dict[tuple[str, int], int],
                  scorer: ChainScorer, workers: int, on_generated: Any, keep: Any) -> None:
    """Score the chains the cache supplied, in the scoring threads sampled chains use; on an interrupt
    the ones already scored are kept, like sampled chains."""
    pool = ScoringPool(scorer, problems, seeds, workers)
    try:
        for gen in hits:
            on_generated(1)
            pool.submit(gen)
            for row in pool.drain(block=pool.backlog >= 4 * pool.workers):
                keep(row)
        for row in pool.drain_all():
            keep(row)
    finally:
        pool.close(keep)
