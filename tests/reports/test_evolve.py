"""Evolve runs read as a search (reports/evolve.py and the show / compare / plot commands): the
budget table against its baseline/, paired comparisons at candidate budgets, refusals of mixed runs,
figures with integer candidate axes. Every expected number is recomputed here from the rows."""
from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from vpo_harness.harness.app.cli import main

TOL = 1e-6


def _rows(folder: Path) -> list[dict]:
    return [json.loads(x) for x in (folder / "samples.jsonl").read_text().splitlines() if x.strip()]


def _search_truth(folder: Path, c: int) -> tuple[float, float]:
    """Fraction of problems solved among the first c candidates, and the mean best scalar of them."""
    by_p: dict[str, list[dict]] = {}
    for r in _rows(folder):
        by_p.setdefault(r["problem_id"], []).append(r)
    solved, best = [], []
    for rs in by_p.values():
        rs.sort(key=lambda r: (r["iteration"], r["answer_index"]))
        solved.append(float(any(r["solved"] for r in rs[:c])))
        best.append(max(r["scalars"][0] for r in rs[:c]))
    return float(np.mean(solved)), float(np.mean(best))


def _sampling_truth(folder: Path, c: int) -> float:
    """Unbiased chance that c of the baseline's samples hold a solution (maze: the optimal scalar)."""
    thr = json.loads((folder / "results.json").read_text())["thresholds"]
    flags: dict[str, list[bool]] = {}
    for r in _rows(folder / "baseline"):
        flags.setdefault(r["problem_id"], []).extend(s >= thr[r["problem_id"]] - TOL for s in r["scalars"])
    vals = []
    for f in flags.values():
        n, k = len(f), sum(f)
        vals.append(1.0 - math.comb(n - k, c) / math.comb(n, c))
    return float(np.mean(vals))


def _table(out: str) -> dict[int, list[str]]:
    rows = {}
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[0].isdigit() and len(parts) == 5:
            rows[int(parts[0])] = parts[1:]
    return rows


def test_show_prints_the_search_table_next_to_its_baseline(evolve_runs, capsys) -> None:
    weak, strong = evolve_runs
    assert main(["show", str(strong)]) == 0
    out = capsys.readouterr().out
    assert "best@" not in out and "pass@" not in out  # no best@k over a trajectory
    assert "8 candidates per problem" in out and str(strong / "baseline") in out
    table = _table(out)
    assert sorted(table) == [1, 2, 4, 8]
    for c, (s_evo, s_samp, b_evo, _b_samp) in table.items():
        solved, best = _search_truth(strong, c)
        assert float(s_evo.split("±")[0]) == pytest.approx(solved, abs=5e-4)
        assert float(b_evo.split("±")[0]) == pytest.approx(best, abs=5e-4)
        assert float(s_samp.split("±")[0]) == pytest.approx(_sampling_truth(strong, c), abs=5e-4)
    # the two runs differ, so the table reads each run's own rows
    assert main(["show", str(weak)]) == 0
    assert _table(capsys.readouterr().out) != table


def test_show_reads_rows_not_a_stale_results_json(evolve_runs, tmp_path, capsys) -> None:
    _, strong = evolve_runs
    copy = tmp_path / "copy"
    shutil.copytree(strong, copy)
    res = json.loads((copy / "results.json").read_text())
    res["evolve"]["solved"] = {"mean": 0.123, "stderr": 0.0, "n": 4}
    for cur in res["evolve"].values():
        if isinstance(cur, dict) and "mean" in cur and isinstance(cur["mean"], list):
            cur["mean"] = [0.123] * len(cur["mean"])
    (copy / "results.json").write_text(json.dumps(res))
    assert main(["show", str(strong)]) == 0
    want = _table(capsys.readouterr().out)
    assert main(["show", str(copy)]) == 0
    out = capsys.readouterr().out
    assert _table(out) == want and "0.123" not in out


def test_show_marks_an_unfinished_search_partial(evolve_runs, tmp_path, capsys) -> None:
    _, strong = evolve_runs
    cut = tmp_path / "cut"
    shutil.copytree(strong, cut)
    rows = _rows(cut)
    last = max(r["iteration"] for r in rows)
    pid = rows[0]["problem_id"]
    keep = [r for r in rows if not (r["problem_id"] == pid and r["iteration"] == last)]
    (cut / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in keep))
    # another problem lost one of the two children of iteration 1 (killed between them): what it
    # evaluated in order ends after iteration 0, whatever later iterations hold
    other = next(r["problem_id"] for r in rows if r["problem_id"] != pid)
    keep = [r for r in keep if not (r["problem_id"] == other and r["iteration"] == 1 and r["answer_index"] == 1)]
    (cut / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in keep))
    from vpo_harness.reports.evolve import load_evolve

    got = load_evolve(cut)
    assert got.candidates[other][0].size == 2 and got.candidates[pid][0].size == 6
    assert main(["show", str(cut)]) == 0
    out = capsys.readouterr().out
    assert "(partial)" in out and "2 finished" in out
    full = _table(out)[8]
    # at the full budget only the 3 finished problems count: the cut one is unknown, not unsolved
    by_p = {}
    for r in keep:
        by_p.setdefault(r["problem_id"], []).append(r)
    want = np.mean([any(r["solved"] for r in rs) for p, rs in by_p.items() if p not in (pid, other)])
    assert float(full[0].split("±")[0]) == pytest.approx(want, abs=5e-4)


def test_show_json_has_the_budget_table(evolve_runs, capsys) -> None:
    _, strong = evolve_runs
    assert main(["show", str(strong), "--json", "--k", "1,3"]) == 0
    (got,) = json.loads(capsys.readouterr().out)
    assert got["kind"] == "evolve" and [r["candidates"] for r in got["budgets"]] == [1, 3]
    assert got["budgets"][1]["solved"]["mean"] == pytest.approx(_search_truth(strong, 3)[0])
    assert got["budgets"][1]["baseline_solved"]["mean"] == pytest.approx(_sampling_truth(strong, 3))


def test_compare_two_searches_pairs_solved_and_best_at_each_budget(evolve_runs, capsys) -> None:
    weak, strong = evolve_runs
    assert main(["compare", str(weak), str(strong), "--resamples", "500", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    rows = {(r["metric"], r["k"]): r for r in got["rows"]}
    assert set(rows) == {(m, c) for m in ("solved", "best") for c in (1, 2, 4, 8)}
    for (metric, c), r in rows.items():
        a, b = _search_truth(weak, c), _search_truth(strong, c)
        i = 0 if metric == "solved" else 1
        assert r["diff"] == pytest.approx(b[i] - a[i], abs=1e-9)
        assert r["wins"] + r["ties"] + r["losses"] == 4 == r["n"]
        assert r["ci_low"] - 1e-9 <= r["diff"] <= r["ci_high"] + 1e-9
    assert any(r["diff"] != 0 for r in rows.values())
    # seeded: the same command gives the same intervals
    assert main(["compare", str(weak), str(strong), "--resamples", "500", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == got


def test_compare_refuses_searches_under_other_reward_modes(evolve_runs, tmp_path, capsys) -> None:
    weak, strong = evolve_runs
    other = tmp_path / "linear"
    shutil.copytree(strong, other)
    cfg = json.loads((other / "config.json").read_text())
    mine = cfg["identity"]["task_info"]["options"]["reward_mode"]
    cfg["identity"]["task"]["options"]["reward_mode"] = theirs = "linear" if mine != "linear" else "convex_bonus"
    (other / "config.json").write_text(json.dumps(cfg))
    rc = main(["compare", str(weak), str(other), "--resamples", "200"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and f"reward_mode: {mine!r} vs {theirs!r}" in err[0]


def test_compare_a_search_with_its_own_baseline(evolve_runs, capsys) -> None:
    _, strong = evolve_runs
    assert main(["compare", str(strong / "baseline"), str(strong), "--resamples", "300", "--json"]) == 0
    rows = {(r["metric"], r["k"]): r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert set(rows) == {(m, c) for m in ("solved", "best") for c in (1, 2, 4, 8)}
    r = rows[("solved", 2)]
    assert r["baseline_mean"] == pytest.approx(_sampling_truth(strong, 2))
    assert r["run_mean"] == pytest.approx(_search_truth(strong, 2)[0])
    assert rows[("best", 4)]["run_mean"] == pytest.approx(_search_truth(strong, 4)[1])


def test_compare_sampling_run_with_search_is_refused_naming_the_baseline(evolve_runs, demo_like_runs,
                                                                          capsys) -> None:
    _, strong = evolve_runs
    vpo, _ = demo_like_runs
    for args in ([str(vpo), str(strong)], [str(strong), str(vpo)]):
        rc = main(["compare", *args, "--resamples", "200"])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1
        assert f"{strong / 'baseline'}" in err[0] and "evolve run" in err[0]


def test_plot_and_report_refuse_other_tasks_or_splits(evolve_runs, demo_like_runs, tmp_path, capsys) -> None:
    weak, strong = evolve_runs
    vpo, grpo = demo_like_runs
    other = tmp_path / "other-split"
    shutil.copytree(strong, other)
    cfg = json.loads((other / "config.json").read_text())
    cfg["identity"]["task"]["split"] = "train"
    (other / "config.json").write_text(json.dumps(cfg))
    lcb = tmp_path / "lcb"
    shutil.copytree(grpo, lcb)
    cfg = json.loads((lcb / "config.json").read_text())
    cfg["identity"]["task"]["name"] = "livecodebench"
    (lcb / "config.json").write_text(json.dumps(cfg))
    cases = [(["plot", str(weak), str(other), "--out", str(tmp_path / "p.png")], "split"),
             (["plot", str(vpo), str(lcb), "--out", str(tmp_path / "p.png")], "task"),
             (["report", str(vpo), str(lcb), "--out", str(tmp_path / "r.html")], "task"),
             (["report", str(weak), str(other), "--out", str(tmp_path / "r.html")], "split")]
    for args, field in cases:
        rc = main(args)
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1, (args, err)
        assert f"different {field}" in err[0] and str(args[1]) in err[0]
    assert not (tmp_path / "p.png").exists() and not (tmp_path / "r.html").exists()
    rc = main(["plot", str(vpo), str(strong), "--out", str(tmp_path / "p.png")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and str(strong / "baseline") in err[0]


def test_figure_draws_solved_and_best_with_integer_candidate_ticks(evolve_runs) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from vpo_harness.reports.evolve import curves, draw, load_evolve

    runs = [load_evolve(p) for p in evolve_runs]
    fig, axes = plt.subplots(1, 2)
    draw(axes, runs)
    fig.canvas.draw()
    for ax in axes:
        ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
        assert ticks and all(float(t).is_integer() for t in ticks)
        assert len(ax.get_lines()) == 4  # evolve + plain sampling for each run
    # the best panel draws the best-scalar curve, point for point
    cur = curves(runs[1])
    line = axes[1].get_lines()[2]
    assert list(line.get_xdata()) == cur["evolve_best"]["x"]
    assert list(line.get_ydata()) == pytest.approx([_search_truth(runs[1].path, c)[1] for c in range(1, 9)])
    plt.close(fig)
    # two candidates: matplotlib alone would tick 0.5, 1.0, 1.5, ...
    from vpo_harness.reports.evolve import EvolveRun

    small = EvolveRun(Path("small"), {}, ["a", "b"], {"a": (np.array([0.1, 0.7]), np.array([0, 1], bool)),
                                                      "b": (np.array([0.2, 0.3]), np.zeros(2, bool))},
                      2, "passed", None)
    fig, axes = plt.subplots(1, 2)
    draw(axes, [small])
    fig.canvas.draw()
    for ax in axes:
        assert [float(t) for t in ax.get_xticks() if 0.5 <= t <= 2.5] == [1.0, 2.0]
    assert list(axes[0].get_lines()[0].get_ydata()) == [0.0, 0.5]
    plt.close(fig)


def test_plot_cli_writes_the_evolve_figure(evolve_runs, tmp_path, capsys) -> None:
    out = tmp_path / "evo.png"
    assert main(["plot", *map(str, evolve_runs), "--out", str(out), "--labels", "weak,strong"]) == 0
    assert out.stat().st_size > 10_000
    rc = main(["plot", *map(str, evolve_runs), "--out", str(out), "--metric", "pass"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "--metric" in err[-1]


def test_report_shows_search_tables_and_curves_from_rows(evolve_runs, demo_like_runs, tmp_path) -> None:
    from tests.reports.test_report import _data

    weak, strong = evolve_runs
    out = tmp_path / "r.html"
    assert main(["report", str(weak), str(strong), "--out", str(out), "--resamples", "300"]) == 0
    html = out.read_text()
    assert html.count("data:image/png;base64,") == 1 and 'id="evolve-comparison"' in html
    assert 'id="evolve-vs-sampling-0"' in html and 'id="evolve-vs-sampling-1"' in html
    data = _data(html)
    got = data["runs"][1]
    assert got["kind"] == "evolve"
    assert got["evolve"]["best_vs_candidates"]["mean"] == pytest.approx(
        [_search_truth(strong, c)[1] for c in range(1, 9)], abs=1e-6)
    assert got["baseline"]["solved_vs_candidates"]["mean"][1] == pytest.approx(_sampling_truth(strong, 2), abs=1e-6)
    # the curves agree with those `vpo evolve` wrote into results.json (one definition, two writers)
    res = json.loads((strong / "results.json").read_text())
    assert got["evolve"]["solved_vs_candidates"]["mean"] == pytest.approx(res["evolve"]["solved_vs_candidates"]["mean"])
    assert got["baseline"]["best_vs_candidates"]["mean"] == pytest.approx(res["baseline"]["best_vs_candidates"]["mean"])
    assert {(r["metric"], r["k"]) for r in data["evolve_comparison"]["rows"]} >= {("best", 8), ("solved", 1)}


def test_empty_or_damaged_search_is_one_line(evolve_runs, tmp_path, capsys) -> None:
    weak, strong = evolve_runs
    empty = tmp_path / "empty"
    shutil.copytree(strong, empty)
    (empty / "samples.jsonl").write_text("")
    for args in (["show", str(empty)], ["compare", str(weak), str(empty), "--resamples", "200"],
                 ["plot", str(empty), "--out", str(tmp_path / "p.png")],
                 ["report", str(empty), "--out", str(tmp_path / "r.html")]):
        rc = main(args)
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1 and "no evaluated candidate" in err[0] and str(empty) in err[0], args
    nan = tmp_path / "nan"
    shutil.copytree(strong, nan)
    rows = _rows(nan)
    rows[4]["scalars"] = [float("nan")]
    (nan / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    rc = main(["show", str(nan)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and f"{nan / 'samples.jsonl'}: line 5: field 'scalars'" in err[0]


def test_hypervolume_panel_draws_the_front_of_search_and_sampling_from_rows(evolve_runs) -> None:
    """`vpo plot`'s third panel: the hypervolume of the first c reward vectors, the search's in
    evaluation order and the baseline's in chain order, at the table's budgets, recomputed here."""
    import matplotlib.pyplot as plt

    from vpo_harness.harness.core.metrics import hypervolume
    from vpo_harness.reports.evolve import draw_hypervolume, load_evolve
    from vpo_harness.search.metrics import HV_REF

    _, strong = evolve_runs
    fig, ax = plt.subplots()
    draw_hypervolume(ax, [load_evolve(strong, "strong")])
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    assert set(lines) == {"strong: evolve", "strong: plain sampling"}
    for label, rows, order in (("strong: evolve", _rows(strong), lambda r: (r["iteration"], r["answer_index"])),
                               ("strong: plain sampling", _rows(strong / "baseline"), lambda r: r["chain_index"])):
        by: dict[str, list] = {}
        for r in sorted(rows, key=order):
            by.setdefault(r["problem_id"], []).extend(r["rewards"])
        xs = [int(x) for x in lines[label].get_xdata()]
        assert xs == [1, 2, 4, 8]
        want = [np.mean([hypervolume(np.array(v[:c]), ref=HV_REF) for v in by.values()]) for c in xs]
        assert list(lines[label].get_ydata()) == pytest.approx(want)
    assert "hypervolume" in ax.get_ylabel()
    plt.close(fig)
