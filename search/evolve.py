"""`vpo evolve`: evolutionary test-time search over a task's problems, one run folder.

    RUN/config.json        the evolve settings (checked on resume, like `vpo run`)
    RUN/openevolve.yaml    the effective OpenEvolve config
    RUN/samples.jsonl      one row per evaluated candidate (problem, iteration, island, parent, answer,
                           reward vector, scalar, passed, solved, tokens, timings)
    RUN/openevolve/<problem>/checkpoints/checkpoint_<it>/   OpenEvolve's checkpoints
    RUN/baseline/          plain sampling of the same model at the same candidate budget (a `vpo run`)
    RUN/results.json       curves (solved vs iteration / candidates, best vs iteration) + the baseline's

Re-running the same command after a crash continues every problem from its last checkpoint and the
rows written after it; a finished run is a no-op.
"""
from __future__ import annotations

import asyncio
import copy
import datetime as _dt
import logging
import os
import sys
import time
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from vpo_harness.benchmarks import Problem, get_task
from vpo_harness.harness.core.config import IDENTITY_SECTIONS, RunConfig, flat_fields, model_slug, run_folder, task_slug
from vpo_harness.harness.core.store import (CONFIG, RunStore, discard_unstarted, latest_rows, missing_dirs,
                                           write_json_atomic)

_log = logging.getLogger(__name__)  # notes and warnings: the caller decides where they go (harness/core/log.py)

CODE_TASKS = {"livecodebench"}
#: seconds per LLM request where neither --timeout nor the YAML's llm.timeout says
DEFAULT_TIMEOUT_S = 300.0
#: evolve: OpenEvolve's templates / the task's mutation prompt; task: independent samples of the task
#: prompt; prefix: the task prompt with the start of a parent's answer as the assistant prefix; feedback:
#: the task prompt, the parent's answer and its reward components in words (for models that read text)
PROMPT_MODES = ("evolve", "task", "prefix", "feedback")


@dataclass
class EvolveConfig:
    task: str
    model: str
    problems: str = "all"
    iterations: int = 20
    m: int = 1
    prompt_mode: str = "evolve"
    cut: str = "uniform"              # prefix mode: where the parent's answer is cut (search.engine.CUT_RULES)
    allow_zero_parents: bool | None = None  # None: the mode's default (prefix: False, others: True)
    select: str = "scalar"            # parent selection: OpenEvolve's scalar one, or the Pareto front (search/pareto.py)
    config_path: str | None = None
    out: str | None = None
    split: str = "test"
    limit: int | None = None
    task_options: dict[str, Any] = field(default_factory=dict)
    data_path: str | None = None
    prompt_style: str | None = None   # None: the zoo model's trained style, else "full"
    base_url: str | None = None
    model_args: dict[str, Any] = field(default_factory=dict)
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None     # None: the zoo model's trained budget, else 1024
    seed: int = 0
    chat_template_args: dict[str, Any] = field(default_factory=dict)  # sent as chat_template_kwargs
    concurrency: int = 8
    baseline: bool = True
    lag: int = 8                      # iteration i draws from the database holding iterations <= i - lag
    parallel: int | None = None       # iterations of one problem in flight (None: the YAML's, else lag)
    timeout_s: float | None = None    # None: the --config YAML's llm.timeout, else DEFAULT_TIMEOUT_S
    serve_threads: int = 1
    progress: bool = True

    def validate(self) -> None:
        if self.iterations < 0:
            raise ValueError(f"--iterations must be >= 0, got {self.iterations}")
        if self.m < 1:
            raise ValueError(f"-m must be >= 1, got {self.m}")
        if self.prompt_mode not in PROMPT_MODES:
            raise ValueError(f"--prompt-mode must be one of {', '.join(PROMPT_MODES)}, got {self.prompt_mode!r}")
        from vpo_harness.search.engine import CUT_RULES

        if self.cut not in CUT_RULES:
            raise ValueError(f"--cut must be one of {', '.join(CUT_RULES)}, got {self.cut!r}")
        from vpo_harness.search.pareto import SELECTIONS

        if self.select not in SELECTIONS:
            raise ValueError(f"--select must be one of {', '.join(SELECTIONS)}, got {self.select!r}")
        if self.allow_zero_parents not in (None, True, False):
            raise ValueError(f"allow_zero_parents must be true, false or unset, got {self.allow_zero_parents!r}")
        if self.concurrency < 1:
            raise ValueError(f"--concurrency must be >= 1, got {self.concurrency}")
        if self.lag < 1:
            raise ValueError(f"--lag must be >= 1, got {self.lag}")
        if self.parallel is not None:
            check_parallel(self.parallel, self.lag, "--parallel")
        if self.model.startswith("openai:") and not self.base_url:
            raise ValueError(f"{self.model} needs --base-url (an OpenAI-compatible server)")
        self.run_config().validate()  # the rules every run's sections follow (limit, template args, ...)

    def run_config(self) -> RunConfig:
        """The task, model, sampling and execution sections, as `vpo run` holds them (as typed; the
        identity reads :meth:`canonical_run`): the pool is iterations + 1 chains of m answers per
        problem, read at k = 1, and the zoo model's trained prompt style and budget fill what the
        flags left open (:func:`~vpo_harness.harness.core.models.zoo.prompt_settings`, the rule `vpo run` follows,
        a served model's defaults included)."""
        from vpo_harness.harness.core.models.zoo import prompt_settings

        where = flat_fields()
        flat = {name: copy.deepcopy(getattr(self, name))
                for sec in (*IDENTITY_SECTIONS, "execution") for name in SECTIONS[sec] if name in where}
        style, max_tokens, _ = prompt_settings(self.model, self.m, self.prompt_style, self.max_tokens,
                                               self._model_defaults)
        flat.update(prompt_style=style, max_tokens=max_tokens, n=self.iterations + 1, ks=(1,))
        return RunConfig.of(**flat)

    def _model_defaults(self, spec: str) -> Any:
        """The model's trained defaults (:func:`vpo_harness.harness.core.models.model_defaults`: a served model's
        from its server's /v1/models entry), asked once per config: the identity is read several times."""
        if "_defaults" not in self.__dict__:
            from vpo_harness.harness.core.models import model_defaults

            self.__dict__["_defaults"] = model_defaults(spec, base_url=self.base_url, model_args=self.model_args)
        return self.__dict__["_defaults"]

    def canonical_run(self, task: Any = None) -> RunConfig:
        """:meth:`run_config` in the form a run is identified by (the runner's
        :func:`~vpo_harness.harness.eval.runner.canonical_config`: a zoo model's folder is its name, an unset
        temperature / top-p the task's default). ``task``: the loaded task, else its registered class
        (its defaults are class settings; nothing is built)."""
        from vpo_harness.benchmarks import task_class
        from vpo_harness.harness.eval.runner import canonical_config

        return canonical_config(self.run_config(), task if task is not None else task_class(self.task))

    def evolve_identity(self) -> dict[str, Any]:
        """The search's own identity settings; the prefix mode's (``cut``, ``allow_zero_parents``) and
        ``select`` only where they act or are set, so folders from before they existed keep their identity."""
        out = {name: copy.deepcopy(getattr(self, name)) for name in EVOLVE_IDENTITY}
        if self.prompt_mode != "prefix":
            out.pop("cut")
        if self.allow_zero_parents is None:
            out.pop("allow_zero_parents")
        if self.select == "scalar":
            out.pop("select")
        return out

    def sections(self) -> dict[str, dict[str, Any]]:
        """Every setting by section, as typed: task / model / sampling as in a `vpo run` config, the
        search's own (evolve), and how it runs (execution, never identity)."""
        rc = self.run_config()
        out = {sec: asdict(getattr(rc, sec)) for sec in IDENTITY_SECTIONS}
        out["evolve"] = {name: getattr(self, name) for name in EVOLVE_IDENTITY}
        out["execution"] = {name: getattr(self, name) for name in SECTIONS["execution"]}
        return out

    def identity(self, task: Any = None) -> dict[str, Any]:
        """What the run is: the canonical run sections' identity (:meth:`RunConfig.identity`, the
        same rule as `vpo run`) plus :meth:`evolve_identity`. The folder name and the resume check
        both read it from here, so they cannot disagree."""
        return {**self.canonical_run(task).identity(), "evolve": self.evolve_identity()}

    def zero_parents_allowed(self) -> bool:
        """Whether a zero-score parent may be drawn while better ones exist: the flag, else the mode's
        default (prefix mode continues the parent's own answer, so a zero-reward parent is avoided)."""
        if self.allow_zero_parents is not None:
            return bool(self.allow_zero_parents)
        return self.prompt_mode != "prefix"

    def default_out(self, task: Any = None) -> Path:
        """A deterministic folder from the identity, named by the rule every run folder is
        (:func:`~vpo_harness.harness.core.config.run_folder`), so repeating a command resumes the same run."""
        ident = self.identity(task)
        stem = f"evo-{task_slug(self.task)}-{model_slug(ident['model']['spec'])}-{self.prompt_mode}-m{self.m}"
        return run_folder(stem, ident)

    def legacy_out(self) -> Path:
        """The folder this command was named before evolve identities were canonical: the model as
        typed, an unset temperature as None, the pool's ks inside the identity, hashed as unsorted
        JSON. Frozen (tests/harness/test_evolve_config.py pins it): only read, so such a folder
        still resumes (:func:`~vpo_harness.harness.eval.runner.older_name_or`)."""
        import hashlib

        from vpo_harness.harness.core.models import identity_args
        from vpo_harness.harness.core.store import dumps

        rc = self.run_config()
        sampling = {"m": self.m, "temperature": self.temperature, "top_p": self.top_p,
                    "max_tokens": rc.sampling.max_tokens, "seed": self.seed}
        if self.chat_template_args:
            sampling["chat_template_args"] = dict(self.chat_template_args)
        sampling.update(n=self.iterations + 1, ks=[1])
        ident = {"task": {"name": self.task, "split": self.split, "options": self.task_options,
                          "data_path": self.data_path, "limit": self.limit, "prompt_style": rc.task.prompt_style},
                 "model": {"spec": self.model, "args": identity_args(self.model, self.model_args)},
                 "sampling": sampling, "evolve": self.evolve_identity()}
        h = hashlib.sha1(dumps(ident).encode()).hexdigest()[:8]
        return Path("runs") / f"evo-{task_slug(self.task)}-{model_slug(self.model)}-{self.prompt_mode}-m{self.m}-{h}"


#: the search's own settings that identify it, in config.json order. The lag (search/engine.py's
#: parallel schedule) decides which database state each iteration draws from, so it is identity.
#: legacy_out hashes this section in this order: a new setting is appended and left out of
#: evolve_identity while unset, or older folders are no longer found
EVOLVE_IDENTITY = ("problems", "iterations", "prompt_mode", "config_path", "baseline", "cut",
                   "allow_zero_parents", "lag", "select")
#: the search's own settings of how it runs: how many iterations are in flight changes no row
EVOLVE_EXECUTION = ("serve_threads", "timeout_s", "parallel")


def _declare() -> dict[str, tuple[str, ...]]:
    """Every EvolveConfig field by section: a field named as a `vpo run` setting (a RunConfig field
    or alias, :func:`~vpo_harness.harness.core.config.flat_fields`) is in that setting's section; the rest are
    the search's own, declared above. A field in neither list or in both fails
    tests/harness/test_evolve_config.py, so a new setting must be declared identity or execution."""
    where = flat_fields()
    out: dict[str, tuple[str, ...]] = {sec: () for sec in (*IDENTITY_SECTIONS, "evolve", "execution")}
    for f in fields(EvolveConfig):
        if f.name in where:
            out[where[f.name][0]] += (f.name,)
    out["evolve"] += EVOLVE_IDENTITY
    out["execution"] += EVOLVE_EXECUTION
    return out


SECTIONS: dict[str, tuple[str, ...]] = _declare()


def check_parallel(w: Any, lag: int, where: str) -> int:
    """W iterations of one problem in flight need W <= lag (iteration i waits for i - lag)."""
    if isinstance(w, bool) or not isinstance(w, int) or w < 1:
        raise ValueError(f"{where} must be an integer >= 1, got {w!r}")
    if w > lag:
        raise ValueError(f"{where} {w} exceeds --lag {lag}: iteration i waits for iteration i-{lag}, so at most "
                         f"{lag} iterations of a problem can be in flight; raise --lag (it changes the rows) "
                         f"or lower {where}")
    return w


def with_yaml(cfg: EvolveConfig, user_cfg: dict[str, Any]) -> EvolveConfig:
    """``cfg`` with what the flags left unset taken from the OpenEvolve YAML
    (:data:`vpo_harness.search.config.YAML_SETTINGS`: sampling, timeout, iterations in flight), then the
    defaults of the settings that have one here (timeout, parallel = lag); the task's and the zoo
    model's defaults fill the rest later (:meth:`EvolveConfig.canonical_run`). So the precedence is
    defaults < YAML < flags for every setting, and the values travel in the run's own settings.
    The YAML keys the run does not take are named on stderr, one line each."""
    from vpo_harness.search.config import unused_keys, yaml_settings

    where = cfg.config_path
    given = {k: v for k, v in yaml_settings(user_cfg, where).items() if getattr(cfg, k) is None}
    if "parallel" in given:
        check_parallel(given["parallel"], cfg.lag, f"{where}: evaluator.parallel_evaluations")
    out = replace(cfg, **given)
    if out.parallel is None:
        out = replace(out, parallel=out.lag)
    if out.timeout_s is None:
        out = replace(out, timeout_s=DEFAULT_TIMEOUT_S)
    for line in unused_keys(user_cfg, cfg.iterations):
        _log.info(f"[vpo] {where}: {line}")
    return out


def _record(cfg: EvolveConfig, task: Any, problems: Sequence[Problem], user_cfg: dict[str, Any],
            run: RunConfig) -> dict[str, Any]:
    """config.json in the store's format: ``identity`` (checked on resume; ``run`` is
    ``cfg.canonical_run(task)``) + how it ran."""
    from vpo_harness.harness.core.config import CONFIG_FORMAT
    from vpo_harness.harness.core.metrics import METRIC_SEED
    from vpo_harness.harness.core.provenance import git_hash, model_fingerprint, problems_fingerprint, versions

    execution = {**cfg.sections()["execution"], "base_url": cfg.base_url, "model_args": dict(cfg.model_args)}
    sampling = {"temperature": run.sampling.temperature, "top_p": run.sampling.top_p}
    identity = dict(
        **cfg.identity(task), kind="evolve", resolved_sampling=sampling, task_info=task.describe(),
        components=list(task.component_names), openevolve_user_config=user_cfg,
        problems={"n": len(problems), "sha256": problems_fingerprint(problems), "ids": [p.id for p in problems]},
        model_fingerprint=model_fingerprint(run.model.spec, run.model.args), metric_seed=METRIC_SEED)
    return {"format": CONFIG_FORMAT, "kind": "evolve", "identity": identity, "execution": execution,
            "ks": list(run.sampling.ks),
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "versions": {**versions(), "openevolve": _oe_version()}, "git": git_hash(), "command": sys.argv}


def _oe_version() -> str:
    import importlib.metadata as md

    return md.version("openevolve")


def _rows_by_problem(folder: Path, iterations: int) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for r in latest_rows(folder):
        if "iteration" in r and int(r["iteration"]) <= iterations:
            out.setdefault(r["problem_id"], []).append(r)
    return out


def _finished(rows: dict[str, list[dict[str, Any]]], problems: Sequence[Problem], iterations: int) -> bool:
    from vpo_harness.search.engine import complete_iterations

    return all(iterations in complete_iterations(rows.get(p.id, [])) and
               len(complete_iterations(rows.get(p.id, []))) == iterations + 1 for p in problems)


#: the model server's log in the run folder (a model `vpo evolve` serves itself)
SERVE_LOG = "serve.log"


def run_evolve(cfg: EvolveConfig) -> Path:
    """Run or resume an evolve run; returns its folder."""
    from vpo_harness.harness.eval.runner import older_name_or
    from vpo_harness.search import config as oecfg
    from vpo_harness.search.problems import select

    cfg.validate()
    user_cfg = oecfg.read_yaml(cfg.config_path) if cfg.config_path else {}
    cfg = with_yaml(cfg, user_cfg)  # before anything reads the settings: defaults < YAML < flags
    task = get_task(cfg.task, **cfg.task_options)
    try:
        # the run's sections in canonical form: identity, folder name, the baseline and the loop's
        # sampling settings all read them (the zoo model's trained prompt style and budget included)
        run = cfg.canonical_run(task)
        cfg = replace(cfg, prompt_style=run.task.prompt_style, max_tokens=run.sampling.max_tokens)
        loaded = task.load(cfg.split, path=cfg.data_path,
                           limit=cfg.limit if not cfg.problems.startswith("hardest:") else None)
        problems = select(cfg.problems, loaded, cfg.task)
        if cfg.limit is not None and cfg.problems.startswith("hardest:"):
            problems = problems[: cfg.limit]
        if not problems:
            raise ValueError(f"task {cfg.task!r} split {cfg.split!r}: no problems selected")
        # a folder named before evolve identities were canonical is resumed under its old name
        folder = Path(cfg.out) if cfg.out else older_name_or(cfg.default_out(task), cfg.legacy_out())
        store = RunStore(folder, flush_every=10**9)
        record = _record(cfg, task, problems, user_cfg, run)
        created, fresh = missing_dirs(folder), not (folder / CONFIG).exists()
        try:
            return _run_in(cfg, run, task, problems, user_cfg, folder, store, record)
        except BaseException as exc:  # failed (or interrupted) before its first row: no run folder is left behind
            if fresh and store.samples_bytes() == 0:
                _keep_serve_log(folder, exc)
                discard_unstarted(folder, created, fresh, extra=(oecfg.EFFECTIVE, SERVE_LOG))
            raise
    finally:
        close = getattr(task, "close", None)
        if close is not None:
            close()


def _keep_serve_log(folder: Path, exc: BaseException) -> None:
    """Move the model server's log of a run that is being discarded out of its folder (to the temp
    folder) and name the new place in the error, so the log the error points at still exists."""
    import tempfile

    log = folder / SERVE_LOG
    if not log.is_file():
        return
    fd, kept = tempfile.mkstemp(prefix=f"vpo-serve-{folder.name}-", suffix=".log")
    os.close(fd)
    try:
        os.replace(log, kept)
    except OSError:
        return
    if len(exc.args) == 1 and isinstance(exc.args[0], str):
        exc.args = (exc.args[0].replace(str(log), kept),)


def _run_in(cfg: EvolveConfig, run: RunConfig, task: Any, problems: Sequence[Problem], user_cfg: dict[str, Any],
            folder: Path, store: RunStore, record: dict[str, Any]) -> Path:
    """The run in its folder, once its record is made: start or resume, serve the model, evolve, the
    plain-sampling baseline, the results."""
    from vpo_harness.search import config as oecfg
    from vpo_harness.search.evaluator import default_feature_dimensions

    resuming = store.init(record)
    if resuming and store.repair():
        _log.warning(f"[vpo] {folder}: dropped a partial last line left by an interrupted run")
    rows = _rows_by_problem(folder, cfg.iterations)
    finished = _finished(rows, problems, cfg.iterations)
    base_done = not cfg.baseline or (folder / "baseline" / "results.json").exists()
    if finished and base_done and (folder / "results.json").exists():
        _log.info(f"[vpo] {folder}: evolve run already complete")
        return folder
    server = None
    base_url = cfg.base_url
    model_name = cfg.model.split(":", 1)[1] if cfg.model.startswith("openai:") else cfg.model
    from vpo_harness.search.server_process import ManagedServer, needs_server

    try:
        if needs_server(cfg.model) and not (finished and base_done):
            _log.info(f"[vpo] starting vpo serve for {cfg.model} ...")
            served_args = dict(cfg.model_args)
            if cfg.model.startswith("hf:"):  # one forward pass for all problems in flight
                served_args.setdefault("batch_size", max(16, cfg.concurrency))
            server = ManagedServer(cfg.model, model_args=served_args, threads=cfg.serve_threads,
                                   max_batch=max(64, cfg.concurrency * cfg.m),
                                   log_path=folder / SERVE_LOG).start()
            base_url = server.base_url
        if not finished:
            feature_dims = default_feature_dimensions(task)
            oe = oecfg.build_config(user_cfg, task_name=cfg.task, feature_dims=feature_dims,
                                    code=cfg.task in CODE_TASKS, iterations=cfg.iterations, seed=cfg.seed)
            oecfg.write_effective(oe, folder)
            if resuming:
                n_done = sum(len(v) for v in rows.values())
                _log.info(f"[vpo] {folder}: resuming, {n_done} candidates already evaluated")
            asyncio.run(_evolve_all(cfg, run, task, problems, oe, base_url or "", model_name, store, folder,
                                    rows))
        if cfg.baseline and not base_done:
            _baseline(cfg, run, folder, base_url or "", model_name, problems)
    finally:
        if server is not None:
            server.stop()
    results = compute_results(folder, cfg, task, problems, record)
    store.write_results(results)
    return folder


async def _evolve_all(cfg: EvolveConfig, run: RunConfig, task: Any, problems: Sequence[Problem], oe: Any,
                      base_url: str, model_name: str, store: RunStore, folder: Path,
                      rows: dict[str, list[dict[str, Any]]]) -> None:
    """Every problem's evolution in one event loop: at most ``concurrency`` problems at once, each
    with up to ``parallel`` iterations in flight, and at most ``concurrency`` LLM requests in flight
    over all of them. None of these limits changes a row (search/engine.py's schedule). The
    sampling settings are the run's (``run``, canonical: flags, YAML, then the task's defaults)."""
    from vpo_harness.harness.core.progress import progress as tqdm

    from vpo_harness.search.engine import EvolveSettings, ProblemEvolution
    from vpo_harness.search.llm import ChatLLM
    from vpo_harness.search.solved import solved_fn

    args = client_args(cfg)
    if oe.llm.api_key and "api_key" not in args:  # the OpenEvolve YAML's key, as OpenEvolve would use it
        args["api_key"] = oe.llm.api_key
    samp = run.sampling
    llm = ChatLLM(base_url, model_name, temperature=samp.temperature, top_p=samp.top_p,
                  max_tokens=samp.max_tokens, chat_template_args=samp.chat_template_args, **args)
    await llm.check()
    total = len(problems) * (cfg.iterations + 1)
    overall = tqdm(total=total, desc="evolve", unit="it", disable=not cfg.progress, position=0)
    state: dict[str, tuple[int, float, bool]] = {}
    bars: dict[str, Any] = {}

    seen: dict[str, set[int]] = {}

    def on_iteration(pid: str, it: int, best: float, solved: bool) -> None:
        its = seen.setdefault(pid, set())  # iterations finish out of order when several are in flight
        if it not in its:
            its.add(it)
            overall.update(1)
        state[pid] = (len(its), best, solved)
        bar = bars.get(pid)
        if bar is not None:
            bar.n = len(its)
            bar.set_postfix(best=f"{best:.3f}", solved=solved, refresh=False)
            bar.refresh()
        overall.set_postfix(solved=f"{sum(s for _, _, s in state.values())}/{len(problems)}",
                            best=f"{np.mean([b for _, b, _ in state.values()]):.3f}", refresh=True)

    def write_rows(new: list[dict[str, Any]]) -> None:
        for r in new:
            store.append(r)
        store.flush()

    settings = EvolveSettings(task=task, config=oe, llm=llm, iterations=cfg.iterations, m=cfg.m,
                              prompt_mode=cfg.prompt_mode, prompt_style=cfg.prompt_style, seed=cfg.seed,
                              checkpoint_root=folder / "openevolve", write_rows=write_rows, solved=solved_fn(task),
                              on_iteration=on_iteration, code=cfg.task in CODE_TASKS, lag=cfg.lag,
                              parallel=cfg.parallel, llm_slots=asyncio.Semaphore(cfg.concurrency), cut=cfg.cut,
                              allow_zero_parents=cfg.zero_parents_allowed(), select=cfg.select)
    sem = asyncio.Semaphore(cfg.concurrency)
    slots = list(range(1, cfg.concurrency + 1))
    writing: list[ProblemEvolution] = []  # finished problems whose last checkpoint is being written

    async def one(p: Problem) -> None:
        async with sem:
            slot = slots.pop(0)
            bars[p.id] = tqdm(total=cfg.iterations + 1, desc=p.id[-14:], unit="it", leave=False,
                              position=slot, disable=not cfg.progress)
            try:
                pe = ProblemEvolution(settings, p)
                await pe.run(rows.get(p.id, []))
                writing.append(pe)
            finally:
                bars.pop(p.id).close()
                slots.append(slot)

    t0 = time.perf_counter()
    try:
        await llm.open()
        await asyncio.gather(*(one(p) for p in problems))
    finally:
        for pe in writing:  # on an error too: the finished problems' checkpoints reach the disk
            await pe.finish_writes()
        store.close()
        overall.close()
        await llm.aclose()
    _log.info(f"[vpo] evolve: {len(problems)} problems x {cfg.iterations + 1} iterations in "
              f"{time.perf_counter() - t0:.1f}s")


def client_args(cfg: EvolveConfig) -> dict[str, Any]:
    """The openai backend's settings, the same for the loop's requests and the baseline's: one retry,
    timeout, endpoint and fail-fast policy per run. An ``openai:`` model's ``--model-args`` (checked
    against the backend's arguments), with ``--timeout`` and ``--concurrency`` where they leave them
    open; a model the run serves itself has args for the server, not for the client."""
    from vpo_harness.harness.core.models.openai_settings import OpenAISettings

    args = dict(cfg.model_args) if cfg.model.startswith("openai:") else {}
    args.setdefault("timeout", cfg.timeout_s)
    args.setdefault("concurrency", max(1, cfg.concurrency))
    OpenAISettings.from_args(args)  # refused here, in one line, before any server starts
    return args


def _baseline(cfg: EvolveConfig, run: RunConfig, folder: Path, base_url: str, model_name: str,
              problems: Sequence[Problem]) -> Path:
    """Plain sampling of the same model with the task prompt, the same number of candidates per
    problem as the evolve run evaluates: (iterations + 1) chains of m answers. Its RunConfig is the
    evolve run's own sections (``run``, canonical), with the next seed, read at every candidate
    budget the search's table reads (``candidate_budgets``: best@k and pass@k up to the whole pool,
    so its results.json, `vpo show` and the viewer give a curve, not best@1), no problem limit (the
    problems are given; the folder records their ids and fingerprint, and older baselines had none)
    and RUN/baseline as its folder. The served model is reached through the openai backend, but the
    baseline's identity names the model itself (the server's port is not part of what the run is)."""
    from vpo_harness.harness.core.models import load_backend
    from vpo_harness.harness.eval.runner import run as run_sampling
    from vpo_harness.search.metrics import candidate_budgets

    rc = replace(run, task=replace(run.task, limit=None),
                 sampling=replace(run.sampling, seed=run.sampling.seed + 1,
                                  ks=tuple(candidate_budgets(run.sampling.n * run.sampling.m))),
                 execution=replace(run.execution, out=str(folder / "baseline"), base_url=base_url or None))
    backend = load_backend(f"openai:{model_name}", base_url=base_url, model_args=client_args(cfg))
    try:
        return run_sampling(rc, backend=backend, problems=list(problems))
    finally:
        backend.close()


def compute_results(folder: Path, cfg: EvolveConfig, task: Any, problems: Sequence[Problem],
                    record: dict[str, Any]) -> dict[str, Any]:
    from vpo_harness.harness.core import metrics as hm
    from vpo_harness.search.engine import complete_iterations
    from vpo_harness.search.metrics import (baseline_curves, candidate_budgets, evolve_curves, evolve_rewards,
                                            hypervolume_curve, sampling_rewards)
    from vpo_harness.search.solved import TOL, thresholds

    by_p = _rows_by_problem(folder, cfg.iterations)
    rows = [r for p in problems for rs in complete_iterations(by_p.get(p.id, [])).values() for r in rs]
    ids = [p.id for p in problems]
    curves = evolve_curves(rows, ids, cfg.iterations)
    budget = (cfg.iterations + 1) * cfg.m
    curves["hypervolume_vs_candidates"] = hypervolume_curve(evolve_rewards(rows, ids, cfg.iterations), ids, budget)
    pools, scal, passes = [], [], []
    for pid in ids:
        rs = [r for r in rows if r["problem_id"] == pid]
        pools.append(np.array([r["rewards"][0] for r in rs], dtype=float) if rs else np.zeros((0, 1)))
        scal.append(np.array([r["scalars"][0] for r in rs], dtype=float))
        passes.append(np.array([r["passed"][0] for r in rs], dtype=bool))
    ks = candidate_budgets(budget)
    summary = hm.summarize(pools, scal, passes, ks, task.component_names, objective_seed=hm.METRIC_SEED)
    thr = thresholds(task, list(problems))
    baseline = None
    bfolder = folder / "baseline"
    if (bfolder / "samples.jsonl").exists():
        def solved(pid: str, s: float, ok: bool) -> bool:
            return s >= thr[pid] - TOL if thr is not None else ok

        brows = latest_rows(bfolder)
        baseline = baseline_curves(brows, ids, solved, budget)
        baseline["hypervolume_vs_candidates"] = hypervolume_curve(sampling_rewards(brows, ids), ids, budget)
    tokens = [r.get("completion_tokens") or 0 for r in rows]
    return {
        "kind": "evolve", "task": cfg.task, "split": cfg.split, "model": record["identity"]["model"]["spec"], "m": cfg.m,
        "n": cfg.iterations + 1, "iterations": cfg.iterations, "prompt_mode": cfg.prompt_mode, "select": cfg.select,
        "pool_size": budget, "metrics": summary, "n_chains": len(rows), "n_errors": 0,
        "mean_completion_tokens": float(np.sum(tokens) / max(1, len({(r['problem_id'], r['iteration']) for r in rows}))),
        "solved_definition": "optimal scalar (exact maze search)" if thr is not None else "passed (every component 1)",
        "thresholds": thr, "evolve": curves, "baseline": baseline,
        "timing": {"llm_s": float(sum(r.get("latency_s") or 0 for r in rows)),
                   "grading_s": float(sum(r.get("score_s") or 0 for r in rows))},
        "config": record,
    }


def write_results(folder: Path, results: dict[str, Any]) -> None:
    write_json_atomic(folder / "results.json", results)
