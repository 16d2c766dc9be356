"""A run folder as per-problem candidate pools, and every per-problem metric the reports compare.

Comparisons are paired over problems, so everything here is per problem (one value per problem and
metric); means and intervals are taken by the callers.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from vpo_harness.harness.core import metrics
from vpo_harness.harness.core.pool_metrics import per_problem_pool_metrics
from vpo_harness.harness.core.config import recorded_ks
from vpo_harness.harness.eval.selection import Pool, answer_key, applicable, selected_at_k, split_visible, visible_mask

#: strategies shown next to best@k when a run carries what they need
DEFAULT_STRATEGIES = ("majority", "random", "public-tests")


def run_facts(config: dict[str, Any]) -> dict[str, Any]:
    """The facts reports need from a config.json, flat, from either layout: the nested one
    (``identity: {task, model, sampling, ...}``) or the older flat one."""
    ident = config.get("identity")
    if isinstance(ident, dict):
        task, model, samp = ident.get("task") or {}, ident.get("model") or {}, ident.get("sampling") or {}
        res = ident.get("resolved_sampling") or {}
        return {
            "task": task.get("name"), "split": task.get("split"), "task_options": task.get("options") or {},
            "prompt_style": task.get("prompt_style"), "data_path": task.get("data_path"), "limit": task.get("limit"),
            "model": model.get("spec"), "model_args": model.get("args") or {},
            # base_url is execution since the served model's port stopped being identity (older: model)
            "base_url": (config.get("execution") or {}).get("base_url") or model.get("base_url"),
            "chat_template_args": samp.get("chat_template_args") or {},
            "protocol": (config.get("execution") or {}).get("protocol"),
            "m": samp.get("m"), "n": samp.get("n"), "ks": recorded_ks(config), "seed": samp.get("seed"),
            "temperature": res.get("temperature", samp.get("temperature")),
            "top_p": res.get("top_p", samp.get("top_p")), "max_tokens": samp.get("max_tokens"),
            "components": ident.get("components") or [], "task_info": ident.get("task_info") or {},
            "model_fingerprint": ident.get("model_fingerprint"), "metric_seed": ident.get("metric_seed"),
            "problem_ids": (ident.get("problems") or {}).get("ids"),
            "problems_sha256": (ident.get("problems") or {}).get("sha256"),
            "created": config.get("created"), "git": config.get("git"), "versions": config.get("versions"),
            "command": config.get("command"), "rescored_from": ident.get("rescored_from"),
            "kind": config.get("kind", "run"),
        }
    flat = dict(config)
    flat.setdefault("task_options", {})
    flat.setdefault("kind", "run")
    return flat


@dataclass
class RunPools:
    """One run: config, stored results and, per problem (in file order), its pool of candidates."""

    path: Path
    config: dict[str, Any]
    results: dict[str, Any] | None
    problem_ids: list[str]
    rewards: list[np.ndarray]  # (n_p, d_p) reward vectors
    scalars: list[np.ndarray]  # (n_p,) task scalars
    passed: list[np.ndarray]  # (n_p,) pass flags
    answers: list[list[Any]]  # (n_p,) parsed answers as stored
    n_errors: int = 0
    chain_sizes: list[np.ndarray] = field(default_factory=list)  # (chains_p,) answers per chain
    chain_tokens: list[np.ndarray] = field(default_factory=list)  # (chains_p,) completion tokens (NaN: unknown)
    #: (problem id, sampling seed) of each entry. A seed group (harness.core.seed_groups) holds one entry
    #: per problem and seed, its ``problem_ids`` then being unit labels (``p3#seed-1``); comparisons
    #: involving a group pair entries by (problem, seed)
    units: list[tuple[str, int]] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)  # the seeds of a group; [] for a single run
    #: a group's seeds as read (``3 seeds``, ``2 of 3 seeds, partial: seed 2 missing``); "" for a single run
    seeds_label: str = ""
    #: whether a group lacks a seed it lists, or one is empty or unfinished
    partial: bool = False
    #: what a group's seeds vary: "sampling" (`vpo run --seeds`) or "training" (one policy per
    #: training seed, `vpo demo`); "" for a single run
    seed_axis: str = ""
    _pools: list[Pool] | None = field(default=None, repr=False)
    _metrics: dict[tuple, dict[str, np.ndarray]] = field(default_factory=dict, repr=False)

    @property
    def facts(self) -> dict[str, Any]:
        return run_facts(self.config)

    @property
    def task(self) -> str:
        return str(self.facts.get("task") or "?")

    @property
    def metric_seed(self) -> int:
        f = self.facts
        return int(f.get("metric_seed") if f.get("metric_seed") is not None else f.get("seed") or 0)

    @property
    def label(self) -> str:
        return self.path.name

    @property
    def ks(self) -> list[int]:
        return [int(k) for k in self.facts.get("ks") or []]

    @property
    def tokens_per_chain(self) -> float:
        """Mean completion tokens of a chain (NaN when the backend did not report them)."""
        return metrics.tokens_per_chain(self.chain_tokens)

    @property
    def min_chains(self) -> int:
        return min((t.size for t in self.chain_tokens), default=0)

    def component_names(self) -> list[str] | None:
        """Reward component names when every pool has the same reward length (None for code tasks,
        whose length is the problem's number of tests)."""
        dims = {r.shape[1] for r in self.rewards if r.ndim == 2 and len(r)}
        if len(dims) != 1:
            return None
        d = dims.pop()
        names = self.facts.get("components") or []
        return list(names) if len(names) == d else [f"c{i + 1}" for i in range(d)]

    @property
    def min_pool(self) -> int:
        return min((s.size for s in self.scalars), default=0)

    def pools(self) -> list[Pool]:
        """Selection pools: answer keys for voting, the visible/hidden test split when configured."""
        if self._pools is None:
            mode = (self.facts.get("task_options") or {}).get("visible_tests")
            public = self._public_flags() if mode == "public" else {}
            out = []
            pids = [u[0] for u in self.units] if self.units else self.problem_ids
            for pid, r, s, ans in zip(pids, self.rewards, self.scalars, self.answers):
                mask = visible_mask(r.shape[1] if r.ndim == 2 else 0, mode, public.get(pid))
                vis, hid = split_visible(r, mask)
                out.append(Pool(scores=s, keys=[answer_key(self.task, a) for a in ans], visible=vis, hidden=hid))
            self._pools = out
        return self._pools


    def _public_flags(self) -> dict[str, list[bool]]:
        """Per problem, which tests are public: read from the task's problems (the rows hold only
        verdicts). Loads the problems the way the run did."""
        from vpo_harness.benchmarks import get_task

        f = self.facts
        with get_task(f["task"], **(f.get("task_options") or {})) as task:
            problems = task.load(f["split"], path=f.get("data_path"), limit=f.get("limit"))
        return {p.id: p.data["public"] for p in problems if "public" in p.data}


def load_pools(folder: str | Path) -> RunPools:
    """A run folder through the one reader: config (RunStore.read_config), typed results
    (vpo_harness.harness.core.results.read_results) and the latest rows in the ChainRow schema; errored chains are
    counted and left out of the pools."""
    from vpo_harness.harness.core.results import read_results
    from vpo_harness.harness.core.rows import ChainRow
    from vpo_harness.harness.core.seed_groups import is_seed_group
    from vpo_harness.harness.core.store import CONFIG, RunStore, RunStoreError, latest_rows

    folder = Path(folder)
    if is_seed_group(folder):
        return _load_group(folder)
    if not (folder / CONFIG).exists():
        raise RunStoreError(f"{folder}: not a run folder (no {CONFIG})")
    config = RunStore(folder).read_config()
    summary = read_results(folder)
    results = summary.raw if summary is not None else None
    by_pid: dict[str, list[ChainRow]] = {}
    n_errors = 0
    for raw in latest_rows(folder):
        row = ChainRow.from_json(raw)
        by_pid.setdefault(row.problem_id, [])
        if not row.ok:
            n_errors += 1
            continue
        by_pid[row.problem_id].append(row)
    facts = run_facts(config)
    order = facts.get("problem_ids") or []
    rank = {p: i for i, p in enumerate(order)}
    ids, rewards, scalars, passed, answers, sizes, tokens = [], [], [], [], [], [], []
    for pid, rows in sorted(by_pid.items(), key=lambda kv: rank.get(kv[0], len(order))):
        rows.sort(key=lambda r: r.chain_index)
        rew = [np.asarray(r.rewards, dtype=float) for r in rows if r.rewards]
        ids.append(pid)
        rewards.append(np.concatenate(rew) if rew else np.zeros((0, len(facts.get("components") or []))))
        scalars.append(np.asarray([s for r in rows for s in r.scalars], dtype=float))
        passed.append(np.asarray([p for r in rows for p in r.passed], dtype=bool))
        answers.append([a for r in rows for a in r.answers])
        sizes.append(np.asarray([len(r.scalars) for r in rows], dtype=int))
        tokens.append(np.asarray([np.nan if r.completion_tokens is None else r.completion_tokens for r in rows],
                                 dtype=float))
    seed = int(facts.get("seed") or 0)
    return RunPools(folder, config, results, ids, rewards, scalars, passed, answers, n_errors,
                    chain_sizes=sizes, chain_tokens=tokens, units=[(p, seed) for p in ids])


def _load_group(parent: Path) -> RunPools:
    """A seed group as one run of (problem, seed) entries: every seed's pools one after the other."""
    from vpo_harness.harness.core.seed_groups import group_state, unit_label

    state = group_state(parent)
    parts = [(seed, load_pools(f)) for seed, f in state.runs]
    first = parts[0][1]
    units = [(p, seed) for seed, r in parts for p in r.problem_ids]

    def cat(name: str) -> list[Any]:
        return [x for _, r in parts for x in getattr(r, name)]

    return RunPools(parent, first.config, None, [unit_label(p, s) for p, s in units], cat("rewards"), cat("scalars"),
                    cat("passed"), cat("answers"), sum(r.n_errors for _, r in parts), chain_sizes=cat("chain_sizes"),
                    chain_tokens=cat("chain_tokens"), units=units, seeds=[s for s, _ in parts],
                    seeds_label=state.label(), partial=state.partial, seed_axis=state.axis)


def strategies_for(runs: Sequence[RunPools], wanted: Sequence[str] = DEFAULT_STRATEGIES) -> list[str]:
    """The requested strategies that every run can evaluate."""
    return [s for s in wanted if all(applicable(s, r.pools()) for r in runs)]


def per_problem_metrics(run: RunPools, ks: Sequence[int], strategies: Sequence[str], seed: int = 0,
                        objective_seed: int = 0, taus: Sequence[float] = metrics.DEFAULT_TAUS,
                        budgets: Sequence[int] = ()) -> dict[str, np.ndarray]:
    """metric name -> (P,) values in ``run.problem_ids`` order (NaN where undefined).

    Names: ``best@k``, ``pass@k``, ``pass^k``, ``cover@tau``, ``selected@k[strategy]``, ``diversity``,
    ``pareto_fraction``, ``vpo_objective``, ``mean_scalar``, ``component:NAME`` (the problem's mean
    reward on that component), ``best_tokens@T`` for each token budget T, and the VPO authors' pool
    metrics (``union_coverage``, ``best_individual``, ``pass@k[solution]``, ``pass@k[chain]``,
    ``witness_count``, ``witness_fraction``: vpo_harness.harness.core.pool_metrics). The VPO objective uses
    one seeded Dirichlet weight set per reward dimension, so two runs compared with the same
    ``objective_seed`` share their weights.
    """
    key = (tuple(ks), tuple(strategies), seed, objective_seed, tuple(taus), tuple(budgets))
    if key in run._metrics:  # the report and its comparison table ask for the same numbers
        return run._metrics[key]
    out: dict[str, np.ndarray] = {}
    best = metrics.best_at_k_curve(run.scalars, ks)
    for k in ks:
        out[f"best@{k}"] = best[k]
        out[f"pass@{k}"] = metrics.pass_at_k(run.passed, k)
        out[f"pass^{k}"] = metrics.pass_hat_k(run.passed, k)
    for tau in taus:
        out[f"cover@{tau:g}"] = metrics.cover_at_tau(run.passed, tau)
    if budgets:
        maxima = [metrics.chain_maxima(s, z) for s, z in zip(run.scalars, run.chain_sizes)]
        for T, v in metrics.best_at_tokens(maxima, run.chain_tokens, list(budgets)).items():
            out[f"best_tokens@{int(round(T))}"] = v
    for j, name in enumerate(run.component_names() or []):
        out[f"component:{name}"] = np.array([r[:, j].mean() if len(r) else np.nan for r in run.rewards])
    for strat in strategies:
        for k in ks:
            out[f"selected@{k}[{strat}]"] = selected_at_k(run.pools(), k, strat, seed)[0]
    out["diversity"] = np.array([metrics.mean_pairwise_l1(r) if len(r) > 1 else np.nan for r in run.rewards])
    out["pareto_fraction"] = np.array([metrics.pareto_fraction(r) for r in run.rewards])
    weights: dict[int, np.ndarray] = {}
    obj = []
    for r in run.rewards:
        if not len(r):
            obj.append(np.nan)
            continue
        w = weights.setdefault(r.shape[1], metrics.dirichlet_weights(r.shape[1], 100, 1.0, objective_seed))
        obj.append(metrics.vpo_objective(r, w))
    out["vpo_objective"] = np.asarray(obj)
    out["mean_scalar"] = np.array([s.mean() if s.size else np.nan for s in run.scalars])
    out.update(per_problem_pool_metrics(run.rewards, run.chain_sizes))
    run._metrics[key] = out
    return out


def common_budgets(runs: Sequence[RunPools], points: int = 4) -> list[int]:
    """Token budgets every run can spend: from the longest mean chain (one chain of the most verbose
    run) to the smallest whole-pool spend, geometric, in whole tokens; [] when a run lacks token counts
    or the ranges do not overlap."""
    tb = [r.tokens_per_chain for r in runs]
    if not tb or any(not t > 0 for t in tb):
        return []
    lo = int(np.ceil(max(tb)))
    hi = int(np.floor(min(r.min_chains * t for r, t in zip(runs, tb))))
    if hi < lo:
        return []
    if hi == lo or points < 2:
        return [lo]
    return sorted({int(round(x)) for x in np.geomspace(lo, hi, points)} | {lo, hi})
