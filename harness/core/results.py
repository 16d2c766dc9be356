"""The one reader of run folders: typed results (:class:`RunResults`) and rows as DataFrames.

results.json stores metrics under names like ``"best@4"`` (written by ``vpo_harness.harness.core.metrics.summarize``);
this module is the only place those names are parsed. `vpo show`, `vpo demo`, plots and reports read
a run through :func:`load_run` / :func:`read_results` and get k as an int and every metric as an
:class:`~vpo_harness.harness.core.metrics.Estimate` (mean, standard error, number of problems).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from vpo_harness.harness.core.metrics import (DEFAULT_TAUS, METRIC_SEED, Estimate, group_estimate, mean_over_seeds,
                                              per_problem_values, summarize)
from vpo_harness.harness.core.seed_groups import GroupState, group_label, group_state, is_seed_group, representative
from vpo_harness.harness.core.store import CONFIG, RESULTS, RunStore, RunStoreError, latest_rows

#: scalar summary metrics every run has besides best@k / pass@k
SUMMARY_METRICS = ("mean_scalar", "diversity", "pareto_fraction", "vpo_objective")


@dataclass
class RunResults:
    """A finished run's metrics, parsed once."""

    task: str
    model: str
    split: str = "?"
    m: int = 1
    n: int = 0
    best: dict[int, Estimate] = field(default_factory=dict)  # k -> best@k
    pass_at: dict[int, Estimate] = field(default_factory=dict)  # k -> pass@k
    pass_all: dict[int, Estimate] = field(default_factory=dict)  # k -> pass^k (all k attempts pass)
    cover: dict[float, Estimate] = field(default_factory=dict)  # tau -> Cover@tau
    #: compute-matched best vs completion tokens (harness.core.metrics.tokens_curve); None in older runs
    best_vs_tokens: dict[str, Any] | None = None
    summary: dict[str, Estimate] = field(default_factory=dict)  # SUMMARY_METRICS present in the run
    components: dict[str, float] = field(default_factory=dict)  # mean reward per component
    spread: dict[str, float] = field(default_factory=dict)  # mean within-pool std per component
    n_problems: int = 0
    n_candidates: int = 0
    n_chains: int = 0
    n_errors: int = 0
    mean_completion_tokens: float | None = None
    #: the sampling seeds aggregated (a seed group, harness.core.seed_groups); empty for a single run
    seeds: list[int] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict, repr=False)  # results.json as read

    @property
    def ks(self) -> list[int]:
        return sorted(self.best)

    @property
    def pool_size(self) -> int:
        return self.n * self.m

    @property
    def pool_shape(self) -> str:
        """``"10x3"``: chains x answers per chain (the same pool of 30 as ``"30x1"``, sampled differently)."""
        return f"{self.n}x{self.m}"

    @property
    def seeds_label(self) -> str:
        """A seed group's ``3 seeds`` / ``2 of 3 seeds, partial: ...`` (:func:`vpo_harness.harness.core.seed_groups.group_label`);
        "" for a single run."""
        if not self.seeds:
            return ""
        return group_label(len(self.seeds), self.raw.get("seeds_expected") or self.seeds,
                           self.raw.get("seeds_incomplete") or {}, str(self.raw.get("seed_axis") or "sampling"))

    def get(self, name: str) -> Estimate | None:
        """A summary metric by name (``"diversity"``, ``"mean_scalar"``, ...), None when absent."""
        return self.summary.get(name)

    @property
    def diversity(self) -> Estimate | None:
        return self.summary.get("diversity")

    @property
    def mean_scalar(self) -> Estimate | None:
        return self.summary.get("mean_scalar")

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "RunResults":
        """Raises ValueError naming the field (``"field 'metrics.best@4': ..."``) when one has the wrong type."""
        if not isinstance(d, dict):
            raise ValueError(f"expected a JSON object, got {type(d).__name__}")
        mt = d.get("metrics") or {}
        if not isinstance(mt, dict):
            raise ValueError(f"field 'metrics': expected an object, got {type(mt).__name__}")
        best: dict[int, Estimate] = {}
        pass_at: dict[int, Estimate] = {}
        for key, val in mt.items():
            name, _, k = key.partition("@")
            if k.isdigit() and isinstance(val, dict):
                {"best": best, "pass": pass_at}.get(name, {})[int(k)] = _estimate(val, f"metrics.{key}")
        pass_all, cover = _new_metrics(mt)
        return cls(
            task=str(d.get("task", "?")), model=str(d.get("model", "?")), split=str(d.get("split", "?")),
            m=_count(d, "m", 1), n=_count(d, "n", 0), best=dict(sorted(best.items())),
            pass_at=dict(sorted(pass_at.items())), pass_all=pass_all, cover=cover,
            best_vs_tokens=mt.get("best_vs_tokens") if isinstance(mt.get("best_vs_tokens"), dict) else None,
            summary={k: _estimate(mt[k], f"metrics.{k}") for k in SUMMARY_METRICS if isinstance(mt.get(k), dict)},
            components=dict(mt.get("components") or {}), spread=dict(mt.get("spread") or {}),
            n_problems=_count(mt, "n_problems", 0, "metrics."), n_candidates=_count(mt, "n_candidates", 0, "metrics."),
            n_chains=_count(d, "n_chains", 0), n_errors=_count(d, "n_errors", 0),
            mean_completion_tokens=d.get("mean_completion_tokens"), seeds=_seeds(d), raw=d,
        )


def _new_metrics(mt: dict[str, Any]) -> tuple[dict[int, Estimate], dict[float, Estimate]]:
    """pass^k (``"pass^4"``) and Cover@tau (``"cover@0.5"``) from a metrics dict; empty in older runs."""
    pass_all: dict[int, Estimate] = {}
    cover: dict[float, Estimate] = {}
    for key, val in mt.items():
        if not isinstance(val, dict):
            continue
        if key.startswith("pass^") and key[5:].isdigit():
            pass_all[int(key[5:])] = _estimate(val, f"metrics.{key}")
        elif key.startswith("cover@"):
            try:
                tau = float(key[6:])
            except ValueError:
                continue
            cover[tau] = _estimate(val, f"metrics.{key}")
    return dict(sorted(pass_all.items())), dict(sorted(cover.items()))


def _seeds(d: dict[str, Any]) -> list[int]:
    v = d.get("seeds") or []
    if not isinstance(v, list) or not all(isinstance(s, int) and not isinstance(s, bool) for s in v):
        raise ValueError(f"field 'seeds': expected a list of integers, got {v!r}")
    return list(v)


def _count(d: dict[str, Any], key: str, default: int, prefix: str = "") -> int:
    """An integer field of a record (null or absent: ``default``); another type names the field."""
    v = d.get(key)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v):
        raise ValueError(f"field '{prefix}{key}': expected an integer, got {v!r}")
    return int(v)


def _estimate(val: dict[str, Any], where: str) -> Estimate:
    try:
        return Estimate.from_dict(val)
    except (TypeError, ValueError):
        raise ValueError(f"field {where!r}: expected {{mean, stderr, n}} numbers, got {val!r}") from None


def read_results(folder: str | Path) -> RunResults | None:
    """A run folder's results, or None before its first run finished."""
    path = Path(folder) / RESULTS
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RunStoreError(f"{path}: not valid JSON ({exc}); re-run the run's command to rewrite it") from exc
    try:
        return RunResults.from_json(data)
    except ValueError as exc:
        raise RunStoreError(f"{path}: {exc}; re-run the run's command to rewrite it") from None


def results_stale(folder: str | Path) -> bool:
    """results.json exists but was not computed from the samples.jsonl now on disk: it records the
    size it was computed from (``samples_bytes``) and the file has another, or (written before that
    field) it is older than samples.jsonl. Its metrics are then ignored and recomputed from the rows."""
    from vpo_harness.harness.core.store import SAMPLES, SAMPLES_BYTES

    res, samples = Path(folder) / RESULTS, Path(folder) / SAMPLES
    if not res.is_file() or not samples.is_file():
        return False
    try:
        recorded = json.loads(res.read_text(encoding="utf-8")).get(SAMPLES_BYTES)
    except (OSError, ValueError, AttributeError):
        return False  # unreadable: read_results says so
    if recorded is not None:
        return recorded != samples.stat().st_size
    return res.stat().st_mtime < samples.stat().st_mtime


def summarize_rows(rows: list[dict[str, Any]], problem_ids: list[str], d: int, ks: list[int],
                   component_names: list[str] | None, metric_seed: int,
                   taus: Sequence[float] | None = None) -> tuple[dict[str, Any], int]:
    """The metrics of stored rows (the latest per chain) over ``problem_ids`` in that order, and the
    number of failed chains (left out of the pools). The runner writes results.json with it and
    ``vpo show --k`` reads a finished run at other ks with it: one computation for both."""
    from vpo_harness.harness.core.rows import ChainRow

    pools, scalars, passes, sizes, tokens, n_errors = _pools_of_rows(rows, problem_ids, d)
    return summarize(pools, scalars, passes, ks, component_names, objective_seed=metric_seed,
                     taus=DEFAULT_TAUS if taus is None else taus, chain_sizes=sizes, chain_tokens=tokens), n_errors


def _pools_of_rows(rows: list[dict[str, Any]], problem_ids: list[str], d: int) -> tuple[list, list, list, list, list, int]:
    """Per problem (in ``problem_ids`` order): reward pool, scalars, passes, answers and tokens per chain,
    from the latest stored row of each chain; failed chains are counted and left out."""
    from vpo_harness.harness.core.rows import ChainRow

    by_problem: dict[str, list[ChainRow]] = {}
    for raw in rows:
        row = ChainRow.from_json(raw)
        by_problem.setdefault(row.problem_id, []).append(row)
    pools, scalars, passes, sizes, tokens = [], [], [], [], []
    n_errors = 0
    for pid in problem_ids:
        prow = sorted(by_problem.get(pid, []), key=lambda r: r.chain_index)
        good = [r for r in prow if r.ok]
        n_errors += len(prow) - len(good)
        rew = [np.asarray(r.rewards, dtype=float) for r in good if r.rewards]
        pools.append(np.concatenate(rew) if rew else np.zeros((0, d)))
        scalars.append(np.concatenate([np.asarray(r.scalars, dtype=float) for r in good]) if good else np.zeros(0))
        passes.append(np.concatenate([np.asarray(r.passed, dtype=bool) for r in good]) if good else np.zeros(0, bool))
        sizes.append(np.asarray([len(r.scalars) for r in good], dtype=int))
        tokens.append(np.asarray([np.nan if r.completion_tokens is None else r.completion_tokens for r in good],
                                 dtype=float))
    return pools, scalars, passes, sizes, tokens, n_errors


def problem_values(folder: str | Path, ks: Sequence[int], taus: Sequence[float] | None = None
                   ) -> tuple[list[str], dict[str, np.ndarray]] | None:
    """A run's per-problem metrics (problem ids, metric -> one value per problem) from its stored rows:
    what a training-seed group needs to treat each training run as one draw
    (:func:`~vpo_harness.harness.core.metrics.crossed_estimate`). None when the run has no rows."""
    config = RunStore(folder).read_config()
    ident = config.get("identity")
    rows = latest_rows(folder)
    if not isinstance(ident, dict) or not rows:
        return None
    names = list(ident.get("components") or [])
    ids = (ident.get("problems") or {}).get("ids") or list(dict.fromkeys(r["problem_id"] for r in rows))
    seed = ident.get("metric_seed")
    pools, scalars, passes, *_ = _pools_of_rows(rows, ids, len(names))
    return ids, per_problem_values(pools, scalars, passes, list(ks), METRIC_SEED if seed is None else int(seed),
                                   DEFAULT_TAUS if taus is None else taus)


def training_estimates(members: Sequence[Path], ks: Sequence[int], taus: Sequence[float] | None = None
                       ) -> dict[str, Estimate]:
    """Each metric of a training-seed group as one estimate over (training run, problem), by the rule
    `vpo compare` and the report use too (:func:`group_estimate`, training axis: the crossed estimate over
    the problems every member holds)."""
    per = [problem_values(f, ks, taus) for f in members]
    per = [p for p in per if p is not None]
    if len(per) < 2:
        return {}
    seeds = [i for i, (ids, _) in enumerate(per) for _ in ids]
    probs = [pid for ids, _ in per for pid in ids]
    out: dict[str, Estimate] = {}
    for name in per[0][1]:
        values = np.concatenate([vals[name] for _, vals in per])
        if np.isnan(values).all():
            continue
        out[name] = group_estimate(values, seeds, probs, "training")
    return out


def results_at(folder: str | Path, ks: list[int] | None = None,
               taus: Sequence[float] | None = None) -> RunResults | None:
    """A run's results computed from its stored rows at ``ks`` (default: the ks it records), with no
    sampling and no task code. A run without results.json yet (still running, or interrupted) gets
    the metrics over the rows stored so far, marked ``raw["partial"] = True``. None when there is
    nothing to compute: no rows, an evolve run, or a config from an older version."""
    from vpo_harness.harness.core.config import recorded_ks

    if is_seed_group(folder):
        state = group_state(folder)
        parts = [(seed, results_at(f, ks, taus)) for seed, f in state.runs]
        kept = [(seed, r) for seed, r in parts if r is not None]
        by_run = (training_estimates([f for _, f in state.runs], ks or kept[0][1].ks, taus)
                  if state.axis == "training" and kept else None)
        return aggregate_seeds(kept, state, by_run)
    base = read_results(folder)
    config = RunStore(folder).read_config()
    ident = config.get("identity")
    if config.get("kind") == "evolve" or not isinstance(ident, dict):
        return base
    stale = base is not None and results_stale(folder)
    if stale:  # computed from other rows than those on disk: recomputed below, never shown
        base = None
    rows = latest_rows(folder)
    if base is None and not rows:
        return None
    samp = ident.get("sampling") or {}
    where = f"{Path(folder) / CONFIG}: identity.sampling"
    try:
        n, m = _count(samp, "n", 1) or 1, _count(samp, "m", 1) or 1
    except ValueError as exc:
        raise RunStoreError(f"{where}: {exc}") from None
    ks = list(ks) if ks else [k for k in recorded_ks(config) if 1 <= k <= n * m]
    names = list(ident.get("components") or [])
    ids = (ident.get("problems") or {}).get("ids") or list(dict.fromkeys(r["problem_id"] for r in rows))
    seed = ident.get("metric_seed")
    summary, n_errors = summarize_rows(rows, ids, len(names), ks or [1], names,
                                       METRIC_SEED if seed is None else int(seed), taus=taus)
    if base is not None:
        return RunResults.from_json({**base.raw, "metrics": summary})
    task, model = ident.get("task") or {}, ident.get("model") or {}
    # a stale results.json over every chain the run asks for was recomputed, not cut short
    have = {(r["problem_id"], r["chain_index"]) for r in rows}
    complete = all((p, c) in have for p in ids for c in range(n))
    return RunResults.from_json({"task": task.get("name"), "split": task.get("split"), "model": model.get("spec"),
                                 "m": m, "n": n, "metrics": summary, "n_chains": len(rows), "n_errors": n_errors,
                                 "partial": not (stale and complete), "stale_results": stale})


@dataclass
class LoadedRun:
    """A run: its config, typed results and rows as pandas DataFrames (one row per chain, per answer)."""

    path: Path
    config: dict[str, Any]
    summary: RunResults | None
    chains: Any  # pandas.DataFrame
    candidates: Any  # pandas.DataFrame

    @property
    def results(self) -> dict[str, Any] | None:
        """results.json as a dict (prefer :attr:`summary`)."""
        return self.summary.raw if self.summary is not None else None


def _safe_str(v: Any) -> Any:
    if isinstance(v, str):
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates: Arrow-backed frames refuse them
            return v.encode("utf-8", "backslashreplace").decode("utf-8")
    elif isinstance(v, list):
        return [_safe_str(x) for x in v]
    return v


def _arrow_safe(row: dict[str, Any]) -> dict[str, Any]:
    """A row whose strings a DataFrame can hold: lone surrogates a server sent (kept exactly in
    samples.jsonl) are shown as ``\\ud800`` text here."""
    return {k: _safe_str(v) for k, v in row.items()}


def load_run(path: str | Path) -> LoadedRun:
    """Read a run folder. ``candidates`` has one row per answer with its reward components as columns."""
    import pandas as pd

    folder = Path(path)
    if is_seed_group(folder):
        return _load_group(folder)
    cfg_path = folder / CONFIG
    if not cfg_path.exists():
        raise RunStoreError(f"{folder}: not a run folder (no {CONFIG})")
    config = RunStore(folder).read_config()  # a broken config.json is one line naming it
    summary = read_results(folder)
    if summary is not None and results_stale(folder):  # metrics of other rows: recomputed from these
        summary = results_at(folder)
    rows = [_arrow_safe(r) for r in latest_rows(folder)]
    chains = pd.DataFrame(rows)
    names = config.get("components") or (config.get("identity") or {}).get("components") or []
    cand_rows = []
    for row in rows:
        if row.get("error"):
            continue
        for j, (ans, r, s, ok) in enumerate(zip(row["answers"], row["rewards"], row["scalars"], row["passed"])):
            c = {"problem_id": row["problem_id"], "chain_index": row["chain_index"], "answer_index": j,
                 "answer": ans, "scalar": s, "passed": ok}
            for nm, v in zip(names if len(names) == len(r) else [f"c{i}" for i in range(len(r))], r):
                c[nm] = v
            cand_rows.append(c)
    return LoadedRun(folder, config, summary, chains, pd.DataFrame(cand_rows))


# ---------------------------------------------------------------------------------------------------
# seed groups: one run per sampling seed under a parent folder (harness.core.seed_groups)
def aggregate_seeds(parts: Sequence[tuple[int, RunResults]], state: GroupState | None = None,
                    by_run: dict[str, Estimate] | None = None) -> RunResults | None:
    """The results of runs that differ only in their seed, as one: every metric the seeds share is
    :func:`~vpo_harness.harness.core.metrics.mean_over_seeds` (mean over seeds, within-run and between-seed
    standard errors); counts are summed. ``raw`` is JSON-ready (``vpo show --json``): the aggregate
    metrics and, under ``per_seed``, each seed's own results. ``state`` (the group as read) makes it
    ``partial`` when a seed the group lists is missing, empty or unfinished, and lists those seeds
    under ``seeds_incomplete``. ``by_run`` (a training-seed group: :func:`training_estimates`) replaces
    the estimate of each metric it holds, so its s.e. treats each training run as one draw. None when
    no seed has results."""
    if not parts:
        return None
    seeds = [s for s, _ in parts]
    runs = [r for _, r in parts]

    def pooled(get: Any, fmt: Any) -> dict[str, Any]:
        keys = set.intersection(*(set(get(r)) for r in runs))
        return {fmt(k): (by_run[fmt(k)] if by_run and fmt(k) in by_run else mean_over_seeds([get(r)[k] for r in runs])).as_dict()
                for k in sorted(keys)}

    metrics = {**pooled(lambda r: r.best, lambda k: f"best@{k}"), **pooled(lambda r: r.pass_at, lambda k: f"pass@{k}"),
               **pooled(lambda r: r.pass_all, lambda k: f"pass^{k}"),
               **pooled(lambda r: r.cover, lambda t: f"cover@{t:g}"), **pooled(lambda r: r.summary, str)}
    for part in ("components", "spread"):
        names = set.intersection(*(set(getattr(r, part)) for r in runs))
        metrics[part] = {nm: float(np.mean([getattr(r, part)[nm] for r in runs])) for nm in sorted(names)}
    metrics["n_problems"] = min(r.n_problems for r in runs)
    metrics["n_candidates"] = sum(r.n_candidates for r in runs)
    tokens = [r.mean_completion_tokens for r in runs if r.mean_completion_tokens is not None]
    first = runs[0]
    raw = {"kind": "seeds", "task": first.task, "split": first.split, "model": first.model, "m": first.m,
           "n": first.n, "seeds": seeds, "metrics": metrics, "n_chains": sum(r.n_chains for r in runs),
           "n_errors": sum(r.n_errors for r in runs),
           "mean_completion_tokens": float(np.mean(tokens)) if tokens else None,
           "partial": any(r.raw.get("partial") for r in runs) or bool(state and state.partial),
           "seeds_expected": list(state.seeds) if state else seeds,
           "seed_axis": state.axis if state else "sampling",
           "seeds_incomplete": {str(k): v for k, v in (state.incomplete if state else {}).items()},
           "stale_results": any(r.raw.get("stale_results") for r in runs),
           "per_seed": {str(s): r.raw for s, r in parts}}
    return RunResults.from_json(raw)


def _load_group(parent: Path) -> LoadedRun:
    """A seed group as one run: its seeds' results aggregated (a seed still running or interrupted
    counts with the rows stored so far, as `vpo show` reads a single run), rows with a ``seed`` column."""
    import pandas as pd

    loaded = []
    state = group_state(parent)
    for seed, folder in state.runs:
        one = load_run(folder)
        summary = one.summary if one.summary is not None else results_at(folder)
        loaded.append((seed, one, summary))
    kept = [(seed, s) for seed, _, s in loaded if s is not None]
    by_run = (training_estimates([f for _, f in state.runs], kept[0][1].ks) if state.axis == "training" and kept
              else None)
    summary = aggregate_seeds(kept, state, by_run)

    def stacked(frames: list[tuple[int, Any]]) -> Any:
        parts = [f.assign(seed=seed) for seed, f in frames if len(f)]
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()

    return LoadedRun(parent, loaded[0][1].config, summary, stacked([(s, r.chains) for s, r, _ in loaded]),
                     stacked([(s, r.candidates) for s, r, _ in loaded]))


# ---------------------------------------------------------------------------------------------------
# what kind of run a folder holds, and whether several can share one figure
def run_kind(folder: str | Path) -> str:
    """``"evolve"`` for a `vpo evolve` folder (config.json says so at the top or in its identity, or
    its results.json does), else ``"run"``."""
    for name in (CONFIG, RESULTS):
        try:
            d = json.loads((Path(folder) / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(d, dict) and "evolve" in (d.get("kind"), (d.get("identity") or {}).get("kind")
                                                 if isinstance(d.get("identity"), dict) else None):
            return "evolve"
    return "run"


def is_evolve_run(folder: str | Path) -> bool:
    """Whether ``folder`` is a `vpo evolve` run (:func:`run_kind`): the one test every reader uses."""
    return run_kind(folder) == "evolve"


def task_and_split(config: dict[str, Any]) -> dict[str, Any]:
    """``{"task": ..., "split": ...}`` of a config.json record, nested or flat (None where unrecorded)."""
    ident = config.get("identity")
    if isinstance(ident, dict) and isinstance(ident.get("task"), dict):
        return {"task": ident["task"].get("name"), "split": ident["task"].get("split")}
    return {"task": config.get("task"), "split": config.get("split")}


def check_same_task(folders: Sequence[str | Path]) -> None:
    """Refuse run folders of different tasks or splits with one line naming the fields that differ
    (a figure of a Maze run and a LiveCodeBench run under one title reads as one experiment)."""
    facts = []
    for f in folders:
        rep = representative(f)  # a seed group: its first seed says the task
        if not (rep / CONFIG).is_file():
            raise RunStoreError(f"{f}: not a run folder (no {CONFIG})")
        facts.append((Path(f), task_and_split(RunStore(rep).read_config())))
    first, base = facts[0]
    for path, other in facts[1:]:
        diff = [k for k in ("task", "split") if base[k] is not None and other[k] is not None and base[k] != other[k]]
        if diff:
            detail = ", ".join(f"{k}: {base[k]!r} vs {other[k]!r}" for k in diff)
            raise ValueError(f"{first} and {path} are runs of different {' and '.join(diff)} ({detail}); "
                             "put runs of one task and split in one figure or report")
