"""The runner's metrics on pools whose scores vary, checked against brute force over k-subsets.

The scripted Maze backend's random routes all score 0, so a summarize() that returned the pool
maximum for every best@k survived every test. Here a backend answers EUREQA chains with a known
number of correct entities per answer (5 components, scores 0, 0.2, ..., 1), so pools hold varied,
non-zero scores and some full passes; every number in results.json is recomputed by enumeration
from the truth the backend recorded, independently of the task's scorer.
"""
from __future__ import annotations

import itertools
import random
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
import pytest

from vpo_harness.benchmarks.eureqa import format_answer
from vpo_harness.harness.core.metrics import VPO_K, dirichlet_weights
from vpo_harness.harness.core.models.base import Backend, GenRequest, Generation, SamplingConfig
from vpo_harness.harness.core.results import load_run
from vpo_harness.harness.eval.runner import RunConfig, run

FIXTURE = Path(__file__).resolve().parents[1] / "benchmarks" / "fixtures" / "eureqa_synthetic.jsonl"


class EntityBackend(Backend):
    """Answers with each gold entity right with a per-chain probability; records the truth vectors."""

    name = "entities"

    def __init__(self, problems: dict[str, list[str]], m: int, fail: Sequence[int] = ()):
        self.problems, self.m, self.fail = problems, m, set(fail)
        self.truth: dict[tuple[str, int], np.ndarray] = {}

    def generate(self, requests: Sequence[GenRequest], sampling: SamplingConfig) -> Iterator[Generation]:
        for req in requests:
            gold = self.problems[req.problem_id]
            for c, seed in zip(req.chain_indices, req.seeds):
                if c in self.fail:
                    yield Generation(req.problem_id, c, "", error="scripted failure")
                    continue
                rng = random.Random(seed)
                p_right = rng.random()
                answers, truth = [], []
                for _ in range(self.m):
                    right = [rng.random() < p_right for _ in gold[:5]]
                    answers.append(format_answer([g if ok else f"not {g}" for g, ok in zip(gold, right)]))
                    truth.append(np.array(right, dtype=float))
                self.truth[(req.problem_id, c)] = np.stack(truth)
                text = answers[0] if self.m == 1 else "\n".join(
                    f"<response_{i}>\n{a}\n</response_{i}>" for i, a in enumerate(answers, 1))
                yield Generation(req.problem_id, c, text, completion_tokens=len(text.split()))


def _pools(backend: EntityBackend, ids: list[str]) -> list[np.ndarray]:
    return [np.concatenate([backend.truth[k] for k in sorted(backend.truth) if k[0] == pid]) for pid in ids]


def _brute_best(x: np.ndarray, k: int) -> float:
    return float(np.mean([max(c) for c in itertools.combinations(x, k)]))


def _brute_pass(ok: np.ndarray, k: int) -> float:
    return float(np.mean([any(c) for c in itertools.combinations(ok, k)]))


def _brute_l1(r: np.ndarray) -> float:
    return float(np.mean([np.abs(a - b).sum() for a, b in itertools.combinations(r, 2)]))


def _brute_pareto(r: np.ndarray) -> float:
    dominated = [any((o >= x).all() and (o > x).any() for o in r) for x in r]
    return 1.0 - float(np.mean(dominated))


@pytest.mark.parametrize("n,m,fail", [(4, 2, ()), (7, 1, ()), (3, 3, (1,))])
def test_results_match_brute_force_on_varied_pools(tmp_path: Path, n: int, m: int, fail: tuple) -> None:
    from vpo_harness.benchmarks import get_task

    problems = get_task("eureqa").load("test", path=str(FIXTURE))
    gold = {p.id: list(p.data["entities"]) for p in problems}
    pool = (n - len(fail)) * m
    ks = tuple(k for k in (1, 2, 3, 5, 8) if k <= pool)
    cfg = RunConfig.of(task="eureqa", model="scripted:entities", data_path=str(FIXTURE), n=n, m=m, ks=ks,
                       out=str(tmp_path / "run"), progress=False)
    backend = EntityBackend(gold, m, fail)
    folder = run(cfg, backend=backend)
    res = load_run(folder).summary
    ids = [p.id for p in problems]
    pools = _pools(backend, ids)
    scal = [r.mean(axis=1) for r in pools]
    # the pools are not degenerate: several distinct scores, some non-zero, in every problem
    assert all(len(set(s.round(6))) >= 2 and s.max() > 0 for s in scal)
    assert len({float(x) for s in scal for x in s}) >= 4
    for k in ks:
        want = np.mean([_brute_best(s, k) for s in scal])
        assert res.best[k].mean == pytest.approx(want, abs=1e-9), k
        assert res.best[k].stderr == pytest.approx(np.std([_brute_best(s, k) for s in scal], ddof=1)
                                                   / np.sqrt(len(scal)), abs=1e-9)
        want_pass = np.mean([_brute_pass((r >= 1).all(axis=1), k) for r in pools])
        assert res.pass_at[k].mean == pytest.approx(want_pass, abs=1e-9), k
    # best@k strictly above best@1 somewhere: the curve is not flat (the pool-max mutant's twin)
    assert res.best[ks[-1]].mean > res.best[1].mean
    assert res.best[1].mean == pytest.approx(np.mean([s.mean() for s in scal]), abs=1e-9)
    assert res.mean_scalar.mean == pytest.approx(np.mean([s.mean() for s in scal]), abs=1e-9)
    assert res.diversity.mean == pytest.approx(np.mean([_brute_l1(r) for r in pools]), abs=1e-9)
    assert res.get("pareto_fraction").mean == pytest.approx(np.mean([_brute_pareto(r) for r in pools]), abs=1e-9)
    w = dirichlet_weights(5, VPO_K, 1.0, res.raw["config"]["identity"]["metric_seed"])
    want_vpo = np.mean([np.mean([max(r @ wi) for wi in w]) for r in pools])
    assert res.get("vpo_objective").mean == pytest.approx(want_vpo, abs=1e-9)
    allr = np.concatenate(pools)
    for j, name in enumerate(get_task("eureqa").component_names):
        assert res.components[name] == pytest.approx(allr[:, j].mean(), abs=1e-9)
        assert res.spread[name] == pytest.approx(np.mean([r[:, j].std() for r in pools]), abs=1e-9)
    assert res.n_candidates == sum(len(s) for s in scal) and res.n_problems == len(ids)
    assert res.n_errors == len(fail) * len(ids) and res.n_chains == n * len(ids)
