"""`vpo show --metrics` and `vpo compare`: the VPO authors' pool metrics of stored runs, mean ± s.e.
over problems, the per-problem values computed here from samples.jsonl on their own."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from vpo_harness.harness.app.cli import main
from vpo_harness.harness.core.seed_groups import register_seeds


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    from tests.reports.conftest import write_run

    root = tmp_path_factory.mktemp("poolruns")
    out = {"vpo": write_run(root / "vpo", "hf:a", 4, 3, 6, spread=0.6, seed=1),
           "grpo": write_run(root / "grpo", "hf:b", 12, 1, 6, spread=0.1, seed=2)}
    for s in (0, 1):
        write_run(root / "g" / f"seed-{s}", "hf:a", 4, 3, 6, spread=0.6, seed=20 + s, run_seed=s)
    register_seeds(root / "g", [0, 1], {})
    out["group"] = root / "g"
    return out


def _per_problem(folder: Path) -> dict[str, np.ndarray]:
    """Union coverage, best individual and per-chain pass@1 of each problem, straight from the rows."""
    pools: dict[str, list[np.ndarray]] = {}
    for line in (folder / "samples.jsonl").read_text().splitlines():
        row = json.loads(line)
        pools.setdefault(row["problem_id"], []).append(np.asarray(row["rewards"], dtype=float))
    cov = [np.concatenate(c).max(axis=0).sum() for c in pools.values()]
    best = [np.concatenate(c).sum(axis=1).max() for c in pools.values()]
    chain = [np.mean([(r >= 1).all(axis=1).any() for r in c]) for c in pools.values()]
    return {"union_coverage": np.array(cov), "best_individual": np.array(best), "pass@1[chain]": np.array(chain)}


def _cell(x: np.ndarray) -> str:
    return f"{x.mean():.3f}±{x.std(ddof=1) / np.sqrt(x.size):.3f}"


def test_show_metrics_prints_the_mean_and_se_over_problems(runs, capsys):
    assert main(["show", str(runs["vpo"]), str(runs["grpo"]), "--metrics", "--select", "", "--all-metrics"]) == 0
    out = capsys.readouterr().out
    table = out.split("the VPO authors' pool metrics", 1)[1].splitlines()
    head = table[1].split()
    assert head[2:] == ["union_coverage", "best_individual", "pass@1[solution]", "pass@2[solution]",
                        "pass@3[solution]", "pass@1[chain]", "pass@2[chain]", "pass@3[chain]", "witness_count",
                        "witness_fraction"]
    for name in ("vpo", "grpo"):
        cells = dict(zip(head, table[2 if name == "vpo" else 3].split()))
        for metric, values in _per_problem(runs[name]).items():
            assert cells[metric] == _cell(values), (name, metric)
    w = re.findall(r"(\d\.\d{3})±", table[2].split()[-1])
    assert 0 < float(w[0]) <= 1  # a fraction of the pool


def test_show_metrics_json_and_a_seed_group(runs, capsys):
    assert main(["show", str(runs["group"]), "--metrics", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)[0]["authors_pool_metrics"]
    means = [_per_problem(runs["group"] / f"seed-{s}")["union_coverage"].mean() for s in (0, 1)]
    assert got["union_coverage"]["mean"] == pytest.approx(np.mean(means))
    assert got["union_coverage"]["n_seeds"] == 2
    assert got["union_coverage"]["seed_stderr"] == pytest.approx(np.std(means, ddof=1) / np.sqrt(2))


def test_compare_pairs_the_pool_metrics(runs, capsys):
    assert main(["compare", str(runs["grpo"]), str(runs["vpo"]), "--json", "--resamples", "200"]) == 0
    rows = {(r["metric"], r["k"]): r for r in json.loads(capsys.readouterr().out)["rows"]}
    a, b = _per_problem(runs["grpo"]), _per_problem(runs["vpo"])
    for metric in ("union_coverage", "best_individual"):
        r = rows[(metric, None)]
        d = b[metric] - a[metric]
        assert r["baseline_mean"] == pytest.approx(a[metric].mean()) and r["run_mean"] == pytest.approx(b[metric].mean())
        assert r["diff_se"] == pytest.approx(d.std(ddof=1) / np.sqrt(d.size))
    assert {("pass[chain]", 1), ("pass[solution]", 3), ("witness_fraction", None)} <= set(rows)
