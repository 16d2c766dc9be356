"""Report content without a browser: chosen problems, projections, evolve curves, bad input."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from vpo_harness.harness.app.cli import main
from vpo_harness.reports.report import _view, choose_problems, project, top_components
from vpo_harness.reports.pools import load_pools


def _data(html: str) -> dict:
    m = re.search(r"<script type='application/json' id='vpo-data'>(.*?)</script>", html, re.S)
    return json.loads(m.group(1).replace("<\\/", "</"))


def test_default_problems_are_the_largest_vpo_minus_grpo_gaps(demo_like_runs):
    vpo, grpo = demo_like_runs
    views = [_view(load_pools(grpo), "GRPO", ["majority"], 0), _view(load_pools(vpo), "VPO", ["majority"], 0)]
    chosen, why = choose_problems(views, 2)
    assert "VPO minus GRPO" in why
    k = max(set(views[0].ks) & set(views[1].ks))
    gap = {p: views[1].per_problem[f"best@{k}"][i] - views[0].per_problem[f"best@{k}"][views[0].pools.problem_ids.index(p)]
           for i, p in enumerate(views[1].pools.problem_ids)}
    assert [gap[p] for p in chosen] == sorted(gap.values(), reverse=True)[:2]


def test_projection_defaults_to_the_two_named_components_that_vary_most():
    rng = np.random.default_rng(0)
    pts = rng.random((30, 4)) * np.array([0.1, 1.0, 0.05, 0.6])  # b varies most, then d
    xy, labels = project(pts, ["a", "b", "c", "d"], None)
    assert labels == ("b", "d") and np.array_equal(xy, pts[:, [1, 3]])
    assert top_components(pts[:, [3, 0, 1, 2]], ["d", "a", "b", "c"]) == "d,b"  # in component order
    # a flat pool: ties go to the earlier components, never an error
    assert project(np.ones((5, 4)), ["a", "b", "c", "d"], None)[1] == ("a", "b")


def test_projection_pca_and_named_components():
    rng = np.random.default_rng(0)
    pts = rng.random((20, 4))
    xy, (xl, yl) = project(pts, ["a", "b", "c", "d"], "pca")
    assert xy.shape == (20, 2) and xl.startswith("PC1") and yl.startswith("PC2")
    # PCA keeps pairwise distances as far as two axes can: the first axis carries the most variance
    assert xy[:, 0].var() >= xy[:, 1].var()
    xy2, labels = project(pts, ["a", "b", "c", "d"], "b,d")
    assert labels == ("b", "d") and np.array_equal(xy2, pts[:, [1, 3]])
    with pytest.raises(ValueError, match="--projection"):
        project(pts, ["a", "b", "c", "d"], "b,zz")
    same = np.ones((5, 4))
    assert np.array_equal(project(same, None, "pca")[0], np.zeros((5, 2)))


def test_report_with_evolve_run_and_chosen_problems(demo_like_runs, evolve_runs, tmp_path, capsys):
    vpo, grpo = demo_like_runs
    _, evo = evolve_runs
    out = tmp_path / "r.html"
    rc = main(["report", str(grpo), str(vpo), str(evo), "--out", str(out), "--resamples", "500",
               "--problems", "maze-test-0002,maze-test-0004", "--projection", "gold,diamond"])
    assert rc == 0
    html = out.read_text()
    assert "<h2>Evolutionary search</h2>" in html and html.count("data:image/png;base64,") == 6
    assert "Problems: chosen with --problems" in html
    data = _data(html)
    assert [r.get("kind", "run") for r in data["runs"]] == ["run", "run", "evolve"]
    assert data["runs"][2]["evolve"]["solved_vs_candidates"]["x"] == list(range(1, 9))
    assert [b["candidates"] for b in data["runs"][2]["budgets"]] == [1, 2, 4, 8]

    rc = main(["report", str(grpo), "--out", str(out), "--problems", "nope"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "--problems: nope not in any run" in err[0]
    rc = main(["report", str(tmp_path / "missing"), "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "not a run folder" in err[0]


def test_compare_cli_refuses_other_reward_mode(demo_like_runs, tmp_path, capsys):
    from tests.reports.conftest import write_run

    vpo, _ = demo_like_runs
    mine = load_pools(vpo).facts["task_options"]["reward_mode"]
    theirs = "linear" if mine == "convex_bonus" else "convex_bonus"
    other = write_run(tmp_path / "other", "hf:x", 4, 2, 3, spread=0.6, seed=3, task_options={"reward_mode": theirs})
    rc = main(["compare", str(vpo), str(other), "--resamples", "200"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1
    assert f"reward_mode: {mine!r} vs {theirs!r}" in err[0] and "differing field: reward_mode" in err[0]


@pytest.mark.integration
def test_report_of_a_real_evolve_run(demo_like_runs, tmp_path):
    """A `vpo evolve` folder (loopback scripted server) next to evaluation runs: its solved curves and
    the plain-sampling baseline appear in the report."""
    from vpo_harness.search.evolve import EvolveConfig, run_evolve
    from tests.fakes.scripted_openai import ScriptedOpenAIServer, maze_routes_responder

    with ScriptedOpenAIServer(maze_routes_responder(3)) as srv:
        evo = run_evolve(EvolveConfig(task="maze", model="openai:scripted", base_url=srv.base_url, problems="all",
                                      limit=2, iterations=3, m=3, prompt_mode="task", prompt_style="compact",
                                      out=str(tmp_path / "evo"), progress=False, baseline=True))
    vpo, grpo = demo_like_runs
    out = tmp_path / "r.html"
    assert main(["report", str(grpo), str(vpo), str(evo), "--out", str(out), "--resamples", "200"]) == 0
    html = out.read_text()
    assert "<h2>Evolutionary search</h2>" in html and html.count("data:image/png;base64,") == 6
    res = json.loads((evo / "results.json").read_text())
    got = _data(html)["runs"][2]
    assert got["kind"] == "evolve" and got["evolve"]["solved_vs_candidates"] == res["evolve"]["solved_vs_candidates"]
    assert got["baseline"]["solved_vs_candidates"]["x"] == list(range(1, 13))
    assert got["evolve"]["best_vs_candidates"]["mean"] == pytest.approx(res["evolve"]["best_vs_candidates"]["mean"])
