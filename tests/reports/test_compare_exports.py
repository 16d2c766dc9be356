"""`vpo compare --latex/--markdown/--csv/--json`: mean ± s.e. and the CI in one cell, the better side
bold only where the CI excludes 0, standard errors that equal the per-problem spread, and the new
metric rows (pass^k, Cover@tau, compute-matched best at token budgets)."""
from __future__ import annotations

import csv
import io
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from vpo_harness.harness.core import metrics
from vpo_harness.harness.app.cli import main
from vpo_harness.reports.compare import compare_runs, display_name, latex_escape, to_csv, to_json, to_latex, to_markdown
from vpo_harness.reports.pools import common_budgets, load_pools
from tests.harness.test_metrics_field import brute_best_of_chains
from tests.harness.test_pools import FIXTURE, EntityBackend
from tests.reports.test_compare import make_run


@pytest.fixture(scope="module")
def comp():
    """B beats A clearly on every score; C is A with a little noise (no CI excludes 0 on best@1)."""
    rng = np.random.default_rng(3)
    P = 40
    a = [np.round(rng.random(4) * 0.5, 1) for _ in range(P)]
    b = [np.clip(s + 0.4, 0, 1) for s in a]
    return compare_runs([make_run("base_run", a), make_run("better%run", b)], ks=[1, 2], strategies=[],
                        resamples=500, seed=0)


def _md_rows(text: str) -> dict[str, list[str]]:
    rows = {}
    for line in text.splitlines()[2:]:
        if line.startswith("| "):
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            rows[cells[0]] = cells
    return rows


def test_markdown_cells_and_bold_side(comp) -> None:
    text = to_markdown(comp)
    head = text.splitlines()[0]
    assert head == "| metric | base_run | better%run | difference [95% CI] | n |"
    rows = _md_rows(text)
    by = {display_name(r.metric, r.k): r for r in comp.rows}
    r = by["best@1"]
    assert r.ci_low > 0  # the fixture's premise
    assert rows["best@1"][2] == f"**{r.run_mean:.3f} ± {r.run_se:.3f}**"
    assert rows["best@1"][1] == f"{r.baseline_mean:.3f} ± {r.baseline_se:.3f}"  # the worse side is not bold
    assert rows["best@1"][3] == f"{r.diff:+.3f} ± {r.diff_se:.3f} [{r.ci_low:+.3f}, {r.ci_high:+.3f}]"
    assert "bold: the CI excludes 0" in text


def test_no_bold_where_the_ci_holds_zero() -> None:
    """A run that is the baseline plus symmetric noise: intervals straddle 0, nothing is bold."""
    rng = np.random.default_rng(5)
    a = [np.round(rng.random(4) * 0.8, 1) for _ in range(30)]
    b = [np.clip(s + rng.choice([-0.1, 0.1], size=4), 0, 1) for s in a]
    noisy = compare_runs([make_run("a", a), make_run("b", b)], ks=[1, 2], strategies=[], resamples=500)
    rows = _md_rows(to_markdown(noisy))
    straddle = [display_name(r.metric, r.k) for r in noisy.rows if r.ci_low < 0 < r.ci_high]
    assert len(straddle) >= 3, "fixture has metrics whose CI strictly holds 0"
    for nm in straddle:
        assert "**" not in "".join(rows[nm]), nm
    tex = {ln.split(" & ")[0]: ln for ln in to_latex(noisy).splitlines() if " & " in ln}
    for nm in straddle:
        assert r"\textbf" not in tex[latex_escape(nm)], nm


def test_bold_goes_to_the_baseline_when_it_is_better(comp) -> None:
    rng = np.random.default_rng(4)
    a = [np.round(rng.random(4) * 0.5, 1) for _ in range(30)]
    b = [np.clip(s + 0.4, 0, 1) for s in a]
    flipped = compare_runs([make_run("strong", b), make_run("weak", a)], ks=[1], strategies=[], resamples=500)
    row = _md_rows(to_markdown(flipped))["best@1"]
    assert row[1].startswith("**") and not row[2].startswith("**")


def test_latex_is_escaped_booktabs_with_pm_and_bold(comp) -> None:
    tex = to_latex(comp)
    lines = tex.splitlines()
    assert lines[1] == r"\begin{tabular}{lrrrr}" and lines[2] == r"\toprule" and lines[-1] == r"\end{tabular}"
    assert r"better\%run" in lines[3] and r"base\_run" in lines[3]
    body = [ln for ln in lines if ln.endswith(r"\\")][1:]
    assert len(body) == len(comp.rows)
    best1 = next(ln for ln in body if ln.startswith("best@1 &"))
    assert re.search(r"\\textbf\{0\.\d{3} \$\\pm\$ 0\.\d{3}\}", best1)
    assert best1.count("&") == 4 and "[" in best1 and "]" in best1
    assert latex_escape("a_b^c&d%e#f$g{h}~i\\") == (r"a\_b\textasciicircum{}c\&d\%e\#f\$g\{h\}"
                                                     r"\textasciitilde{}i\textbackslash{}")
    assert display_name("pass^", 4) == "pass^4" and display_name("selected[majority]", 2) == "selected@2[majority]"


def test_csv_and_json_carry_standard_errors(comp) -> None:
    rows = list(csv.DictReader(io.StringIO(to_csv(comp))))
    assert {"baseline_se", "run_se", "diff_se"} <= set(rows[0])
    data = json.loads(to_json(comp))["rows"]
    # recompute the s.e. of best@1 from the per-problem values both runs hold
    a = np.array([s.mean() for s in comp_pools(comp)[0]])
    b = np.array([s.mean() for s in comp_pools(comp)[1]])
    want = {"baseline_se": a.std(ddof=1) / math.sqrt(a.size), "run_se": b.std(ddof=1) / math.sqrt(b.size),
            "diff_se": (b - a).std(ddof=1) / math.sqrt(a.size)}
    row = next(r for r in rows if r["metric"] == "best" and r["k"] == "1")
    jrow = next(r for r in data if r["metric"] == "best" and r["k"] == 1)
    for key, val in want.items():
        assert float(row[key]) == pytest.approx(val) and jrow[key] == pytest.approx(val)
    assert float(row["diff_se"]) < float(row["baseline_se"])  # paired: the difference varies less


def comp_pools(comp) -> tuple[list[np.ndarray], list[np.ndarray]]:
    rng = np.random.default_rng(3)
    a = [np.round(rng.random(4) * 0.5, 1) for _ in range(40)]
    return a, [np.clip(s + 0.4, 0, 1) for s in a]


def test_new_metric_rows_names(comp) -> None:
    names = [display_name(r.metric, r.k) for r in comp.rows]
    assert {"pass^1", "pass^2", "cover@0.1", "cover@0.5", "cover@0.9", "component:c1", "component:c2"} <= set(names)
    cov = next(r for r in comp.rows if r.metric == "cover@0.5")
    assert cov.k is None


def test_token_budget_rows_match_brute_force(tmp_path: Path) -> None:
    """Runs of 3-answer chains and of single answers compared at equal completion-token budgets."""
    from vpo_harness.benchmarks import get_task
    from vpo_harness.harness.eval.runner import RunConfig, run

    gold = {p.id: list(p.data["entities"]) for p in get_task("eureqa").load("test", path=str(FIXTURE))}
    folders, backends = [], []
    for n, m in ((3, 3), (8, 1)):
        cfg = RunConfig.of(task="eureqa", model=f"scripted:m{m}", data_path=str(FIXTURE), n=n, m=m, ks=(1, 2),
                           out=str(tmp_path / f"m{m}"), progress=False)
        backends.append(EntityBackend(gold, m))
        folders.append(run(cfg, backend=backends[-1]))
    runs = [load_pools(f) for f in folders]
    budgets = common_budgets(runs)
    assert len(budgets) >= 2
    assert budgets[0] >= max(r.tokens_per_chain for r in runs) - 1
    assert budgets[-1] <= min(r.min_chains * r.tokens_per_chain for r in runs)
    comp = compare_runs(runs, ks=[1], strategies=[], resamples=300)
    rows = [r for r in comp.rows if r.metric == "best_tokens"]
    assert [r.k for r in rows] == budgets
    for r in rows:
        for pools, backend, mean in ((runs[0], backends[0], r.baseline_mean), (runs[1], backends[1], r.run_mean)):
            tbar = pools.tokens_per_chain
            J = r.k / tbar
            j = int(math.floor(J + 1e-9))
            f = J - j if J - j > 1e-9 else 0.0
            vals = []
            for pid in pools.problem_ids:
                chains = [backend.truth[(pid, c)].mean(axis=1) for c in range(len(pools.chain_tokens[0]))]
                v = (1 - f) * brute_best_of_chains(chains, j)
                if f:
                    v += f * brute_best_of_chains(chains, j + 1)
                vals.append(v)
            assert mean == pytest.approx(np.mean(vals), abs=1e-12), (r.k, pools.label)
    assert metrics.DEFAULT_TAUS == (0.1, 0.5, 0.9)
    # the CLI: --token-budgets, --markdown to a file, --latex excludes --csv
    out = tmp_path / "t.md"
    assert main(["compare", *map(str, folders), "--resamples", "200", "--token-budgets", "40",
                 "--markdown", "--out", str(out)]) == 0
    assert "| best_tokens@40 |" in out.read_text()
    with pytest.raises(SystemExit) as exc:  # argparse: one usage line, exit status 2
        main(["compare", *map(str, folders), "--latex", "--csv"])
    assert exc.value.code == 2
