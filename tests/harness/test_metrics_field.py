"""pass^k, Cover@tau and the compute-matched best-vs-tokens curve against brute force on small pools,
and in results.json of a real run whose chains have varied lengths and scores."""
from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest

from vpo_harness.harness.core import metrics
from vpo_harness.harness.core.results import load_run
from vpo_harness.harness.eval.runner import RunConfig, run
from tests.harness.test_pools import FIXTURE, EntityBackend


def brute_pass_hat(ok: np.ndarray, k: int) -> float:
    return float(np.mean([all(c) for c in itertools.combinations(ok, k)]))


def brute_best_of_chains(chains: list[np.ndarray], j: int) -> float:
    """Mean over every j-subset of chains of the best answer among them."""
    return float(np.mean([max(max(c) for c in sub) for sub in itertools.combinations(chains, j)]))


def brute_tokens(chains: list[list[np.ndarray]], tokens: list[np.ndarray], T: float) -> tuple[list[float], float]:
    """The definition in vpo_harness.harness.core.metrics.best_at_tokens, by enumeration: per problem the mixture of
    j and j+1 uniformly drawn chains, and the expected tokens it spends (mean over problems)."""
    tbar = np.mean([t.mean() for t in tokens])
    J = T / tbar
    j = int(math.floor(J + 1e-9))
    f = J - j if J - j > 1e-9 else 0.0
    vals, spent = [], []
    for ch, t in zip(chains, tokens):
        v = (1 - f) * brute_best_of_chains(ch, j) + (f * brute_best_of_chains(ch, j + 1) if f else 0.0)
        cost = (1 - f) * np.mean([sum(s) for s in itertools.combinations(t, j)])
        if f:
            cost += f * np.mean([sum(s) for s in itertools.combinations(t, j + 1)])
        vals.append(v)
        spent.append(cost)
    return vals, float(np.mean(spent))


@pytest.mark.parametrize("n", [1, 3, 6, 8])
def test_pass_hat_k_matches_subset_enumeration(n: int) -> None:
    rng = np.random.default_rng(n)
    ok = rng.random((12, n)) < rng.random((12, 1))  # rates vary by problem: some all-pass, some none
    for k in range(1, n + 1):
        est = metrics.pass_hat_k(ok, k)
        brute = np.array([brute_pass_hat(row, k) for row in ok])
        assert np.max(np.abs(est - brute)) < 1e-12, k


def test_pass_hat_k_closed_form_and_edges() -> None:
    for n, c, k in [(10, 0, 3), (10, 3, 3), (10, 8, 3), (30, 29, 30), (30, 30, 30), (7, 7, 1), (200, 150, 50)]:
        want = math.comb(c, k) / math.comb(n, k)
        got = metrics.pass_hat_k(np.array([[1.0] * c + [0.0] * (n - c)]), k)[0]
        assert got == pytest.approx(want, rel=1e-10, abs=1e-15), (n, c, k)
    # pass^1 = pass@1 = the pass rate; pass^k <= pass@k, strictly between 0 and all-pass
    ok = np.array([[1, 0, 1, 1, 0, 0]], dtype=bool)
    assert metrics.pass_hat_k(ok, 1)[0] == pytest.approx(0.5)
    assert metrics.pass_hat_k(ok, 2)[0] < metrics.pass_at_k(ok, 2)[0]
    # ragged pools: the short one is undefined at k, not silently 0
    est = metrics.pass_hat_k([np.array([1, 1, 1], bool), np.array([1, 1], bool)], 3)
    assert est[0] == 1.0 and np.isnan(est[1])


def test_cover_at_tau_thresholds_per_problem_rate() -> None:
    rates = [0.0, 0.1, 0.25, 0.5, 0.9, 1.0]
    ok = [np.array([1] * round(r * 20) + [0] * (20 - round(r * 20)), bool) for r in rates]
    ok.append(np.array([1, 0, 0], bool))  # another pool size: rate 1/3
    for tau in (0.05, 0.1, 0.3, 0.5, 0.9, 1.0):
        got = metrics.cover_at_tau(ok, tau)
        want = [float(p.mean() >= tau) for p in ok]
        assert got.tolist() == want, tau
    # exactly at the threshold counts (0.1 * 20 = 2 passes), one pass fewer does not
    assert metrics.cover_at_tau([np.array([1, 1] + [0] * 18, bool)], 0.1)[0] == 1.0
    assert metrics.cover_at_tau([np.array([1] + [0] * 19, bool)], 0.1)[0] == 0.0
    assert np.isnan(metrics.cover_at_tau([np.zeros(0, bool)], 0.5)[0])
    with pytest.raises(ValueError, match="0 < tau <= 1"):
        metrics.cover_at_tau(ok, 0.0)


def test_chain_maxima() -> None:
    s = np.array([0.1, 0.7, 0.3, 0.2, 0.9, 0.0])
    assert metrics.chain_maxima(s, np.array([2, 1, 3])).tolist() == [0.7, 0.3, 0.9]
    with pytest.raises(ValueError, match="sum to 5"):
        metrics.chain_maxima(s, np.array([2, 3]))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_best_at_tokens_matches_enumeration_of_its_definition(seed: int) -> None:
    rng = np.random.default_rng(seed)
    chains, tokens = [], []
    for n_chains in (5, 5, 4, 6):  # ragged: one problem lost chains
        m = rng.integers(1, 4, size=n_chains)  # chains of different answer counts
        chains.append([np.round(rng.random(mi), 2) for mi in m])
        tokens.append(rng.integers(20, 200, size=n_chains).astype(float))
    tbar = np.mean([t.mean() for t in tokens])
    maxima = [np.array([c.max() for c in ch]) for ch in chains]
    budgets = [tbar, 1.5 * tbar, 2.3 * tbar, 4 * tbar, 4.5 * tbar, 0.5 * tbar]
    got = metrics.best_at_tokens(maxima, tokens, budgets)
    defined = 0
    for T in budgets:
        J = T / tbar  # the run's tbar: every problem buys the same number of chains
        j = int(math.floor(J + 1e-9))
        f = J - j if J - j > 1e-9 else 0.0
        for p, ch in enumerate(chains):
            if j < 1 or j + (f > 0) > len(ch):
                assert np.isnan(got[T][p]), (T, p)
                continue
            want = (1 - f) * brute_best_of_chains(ch, j) + (f * brute_best_of_chains(ch, j + 1) if f else 0.0)
            assert got[T][p] == pytest.approx(want, abs=1e-12), (T, p)
            defined += 1
    assert defined >= 15


def test_best_at_tokens_spends_the_budget_in_expectation() -> None:
    """The randomised number of chains spends exactly T tokens per problem on average over problems."""
    rng = np.random.default_rng(7)
    chains = [[rng.random(2) for _ in range(5)] for _ in range(3)]
    tokens = [rng.integers(50, 150, size=5).astype(float) for _ in range(3)]
    tbar = np.mean([t.mean() for t in tokens])
    for T in (tbar, 1.7 * tbar, 3.2 * tbar):
        vals, spent = brute_tokens(chains, tokens, T)
        assert spent == pytest.approx(T, rel=1e-12)
        got = metrics.best_at_tokens([np.array([c.max() for c in ch]) for ch in chains], tokens, [T])[T]
        assert np.allclose(got, vals, atol=1e-12)


def test_chain_of_m_answers_against_single_answers_at_equal_tokens() -> None:
    """A 1-chain-of-4 run and a 4-single-answer run over the same answers cost the same tokens; at
    that budget both see all four answers, while best@k over candidates would charge the chain 1/4."""
    answers = np.array([0.2, 0.9, 0.4, 0.1])
    chain = metrics.best_at_tokens([np.array([answers.max()])], [np.array([400.0])], [400.0])[400.0]
    singles = metrics.best_at_tokens([answers], [np.full(4, 100.0)], [400.0, 100.0])
    assert chain[0] == pytest.approx(0.9) and singles[400.0][0] == pytest.approx(0.9)
    assert singles[100.0][0] == pytest.approx(answers.mean())
    # below one chain's cost, the chain run has nothing to show: undefined, not 0
    assert np.isnan(metrics.best_at_tokens([np.array([0.9])], [np.array([400.0])], [100.0])[100.0][0])


def test_unknown_tokens_leave_the_curve_empty() -> None:
    cur = metrics.tokens_curve([np.array([0.5, 0.2])], [np.array([np.nan, 10.0])])
    assert cur["x"] == [] and cur["tokens_per_chain"] is None


@pytest.mark.parametrize("n,m", [(4, 2), (5, 1)])
def test_results_json_carries_the_new_metrics(tmp_path: Path, n: int, m: int) -> None:
    """A real run (EntityBackend: chain lengths and scores vary): pass^k, Cover@tau and best_vs_tokens
    in results.json equal brute force over the truth the backend recorded and the tokens it reported."""
    from vpo_harness.benchmarks import get_task

    problems = get_task("eureqa").load("test", path=str(FIXTURE))
    gold = {p.id: list(p.data["entities"]) for p in problems}
    ks = tuple(k for k in (1, 2, 3, 5) if k <= n * m)
    cfg = RunConfig.of(task="eureqa", model="scripted:entities", data_path=str(FIXTURE), n=n, m=m, ks=ks,
                       out=str(tmp_path / "run"), progress=False)
    backend = EntityBackend(gold, m)
    folder = run(cfg, backend=backend)
    loaded = load_run(folder)
    res = loaded.summary
    ids = [p.id for p in problems]
    truth = {pid: [backend.truth[(pid, c)] for c in range(n)] for pid in ids}  # (m, 5) per chain
    passes = [np.concatenate([(t >= 1).all(axis=1) for t in truth[pid]]) for pid in ids]
    assert any(p.any() for p in passes) and not all(p.all() for p in passes)
    for k in ks:
        want = np.mean([brute_pass_hat(p, k) for p in passes])
        assert res.pass_all[k].mean == pytest.approx(want, abs=1e-12), k
    assert sorted(res.cover) == list(metrics.DEFAULT_TAUS)
    for tau, est in res.cover.items():
        assert est.mean == pytest.approx(np.mean([p.mean() >= tau for p in passes]), abs=1e-12)
    chains = [[t.mean(axis=1) for t in truth[pid]] for pid in ids]
    ch = loaded.chains
    tokens = [ch[ch.problem_id == pid].sort_values("chain_index").completion_tokens.to_numpy(float) for pid in ids]
    assert len({float(x) for t in tokens for x in t}) > 1  # lengths vary
    cur = res.best_vs_tokens
    tbar = np.mean([t.mean() for t in tokens])
    assert cur["tokens_per_chain"] == pytest.approx(tbar)
    assert cur["chains"] == list(range(1, n + 1))
    for j, x, mean in zip(cur["chains"], cur["x"], cur["mean"]):
        assert x == pytest.approx(j * tbar)
        assert mean == pytest.approx(np.mean([brute_best_of_chains(c, j) for c in chains]), abs=1e-12)
    assert cur["mean"][-1] > cur["mean"][0]


def test_show_prints_pass_hat_and_cover_also_for_older_results(tmp_path: Path, capsys) -> None:
    import json

    from vpo_harness.benchmarks import get_task
    from vpo_harness.harness.app.cli import main

    gold = {p.id: list(p.data["entities"]) for p in get_task("eureqa").load("test", path=str(FIXTURE))}
    cfg = RunConfig.of(task="eureqa", model="scripted:entities", data_path=str(FIXTURE), n=6, m=1, ks=(1, 2, 4),
                       out=str(tmp_path / "run"), progress=False)
    folder = run(cfg, backend=EntityBackend(gold, 1))
    res = load_run(folder).summary

    def table() -> dict[str, str]:
        lines = capsys.readouterr().out.splitlines()
        head, row = lines[0].split(), lines[1].split()
        return dict(zip(head, row))

    assert main(["show", str(folder), "--select", ""]) == 0
    got = table()
    assert got["pass^4"] == f"{res.pass_all[4].mean:.3f}±{res.pass_all[4].stderr:.3f}"
    assert got["cover@0.1"] == f"{res.cover[0.1].mean:.3f}±{res.cover[0.1].stderr:.3f}"
    # a results.json written before these metrics existed: show recomputes them from the rows
    path = Path(folder) / "results.json"
    old = json.loads(path.read_text())
    old["metrics"] = {k: v for k, v in old["metrics"].items() if not k.startswith(("pass^", "cover@", "best_vs"))}
    path.write_text(json.dumps(old))
    assert main(["show", str(folder), "--select", ""]) == 0
    assert table() == got
    assert main(["show", str(folder), "--select", "", "--tau", "0.3"]) == 0
    got3 = table()
    cand = load_run(folder).candidates
    rates = cand.groupby("problem_id").passed.mean().to_numpy()
    assert "cover@0.1" not in got3
    assert got3["cover@0.3"].startswith(f"{np.mean(rates >= 0.3):.3f}±")
