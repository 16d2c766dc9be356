"""bench/evolve_prefix.py: the evolve arms' locality table is written by the project's table writer
(Markdown, fractions to 3 decimals, "-" where one is undefined, counts as counts)."""
from __future__ import annotations

import pytest

from bench.evolve_prefix import stats_table


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def test_stats_table_rows_and_undefined_fractions():
    stats = {"evolve-vpo": {"child_parent": 0.12345, "child_other": 0.5, "children": 7, "prefix_calls": 4,
                            "first_answer_parsed": 1},
             "evolve-grpo": {"child_parent": None, "child_other": None, "children": 0, "prefix_calls": 0,
                             "first_answer_parsed": None}}
    lines = stats_table(stats).splitlines()
    assert _cells(lines[0]) == ["evolve arm", "child−parent distance", "child−other distance", "children",
                                "prefix calls", "first answer parsed"]
    assert set(lines[1]) <= set("|:-")  # the Markdown rule under the header
    assert _cells(lines[2]) == ["evolve-vpo", "0.123", "0.500", "7", "4", "1.000"]
    assert _cells(lines[3]) == ["evolve-grpo", "-", "-", "0", "0", "-"]
    assert len(lines) == 4


def _write_run(folder, routes: dict[str, list[str]]) -> None:
    """An evolve folder's rows: per maze a chain of routes, each the child of the one before (the
    candidate ids are a function of maze, iteration and slot, as `vpo evolve` makes them)."""
    import json

    from vpo_harness.search.engine import program_id

    folder.mkdir(parents=True)
    lines = []
    for pid, rs in routes.items():
        for it, route in enumerate(rs):
            lines.append({"problem_id": pid, "chain_index": it, "iteration": it, "answer_index": 0, "of": 1,
                          "program_id": program_id(pid, it, 0), "parent_id": program_id(pid, it - 1, 0) if it else None,
                          "answers": [route], "evolution_mode": "prefix" if it else "task"})
    (folder / "samples.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_pooled_locality_keys_candidates_by_run_as_well_as_maze(tmp_path) -> None:
    """Two runs (training seeds) on the same maze share candidate ids; pooled, each child is still
    measured against its own run's parent: the pooled figures are the children-weighted means of
    the runs' own."""
    from bench.evolve_prefix import evolve_stats

    a, b = tmp_path / "seed0", tmp_path / "seed1"
    _write_run(a, {"m1": ["UP UP", "UP UP LEFT", "UP UP LEFT LEFT", "UP UP LEFT LEFT DOWN"]})
    _write_run(b, {"m1": ["DOWN RIGHT RIGHT", "DOWN", "RIGHT RIGHT RIGHT DOWN", "LEFT"]})
    sa, sb, both = evolve_stats([a]), evolve_stats([b]), evolve_stats([a, b])
    assert both["children"] == sa["children"] + sb["children"] == 4
    for key in ("child_parent", "child_other"):
        want = (sa[key] * sa["children"] + sb[key] * sb["children"]) / both["children"]
        assert abs(both[key] - want) < 1e-12, key
    assert both["prefix_calls"] == 6 and both["first_answer_parsed"] == 1.0


def test_selections_run_side_by_side_with_their_contrasts() -> None:
    from bench.evolve_prefix import arms, contrasts, parse_selects

    assert arms(["scalar", "pareto"]) == ["evolve-vpo", "evolve-vpo-pareto", "sample-vpo", "evolve-grpo",
                                          "evolve-grpo-pareto", "sample-grpo"]
    cons, short = contrasts(["scalar", "pareto"])
    names = [short[label] for label, _ in cons]
    assert names == ["H1 vpo", "H1 grpo", "H2", "sampling gap", "H3", "H1 vpo pareto", "H1 grpo pareto",
                     "H2 pareto", "H3 pareto", "pareto − scalar vpo", "pareto − scalar grpo"]
    weights = dict(cons)
    assert weights["evolve-vpo-pareto − sample-vpo"] == {"evolve-vpo-pareto": 1.0, "sample-vpo": -1.0}
    assert weights["(evolve-vpo-pareto − evolve-grpo-pareto) − (sample-vpo − sample-grpo)"] == \
        {"evolve-vpo-pareto": 1.0, "evolve-grpo-pareto": -1.0, "sample-vpo": -1.0, "sample-grpo": 1.0}
    assert [short[label] for label, _ in contrasts(["scalar"])[0]] == ["H1 vpo", "H1 grpo", "H2", "sampling gap", "H3"]
    import pytest

    with pytest.raises(SystemExit, match="--select"):
        parse_selects("scalar,front")


@pytest.mark.integration
def test_smoke_runs_both_selections_and_reports_every_figure(tmp_path, monkeypatch) -> None:
    """`bench/evolve_prefix.py --smoke`: every arm runs (one mock server for all), the pareto runs
    share the scalar runs' sampling baseline, and the report holds H1 for both selections on the best
    scalar, the fraction solved and the front's hypervolume, with the locality of every evolve arm."""
    import json

    from bench.evolve_prefix import main
    from vpo_harness.harness.core.paths import child_pythonpath

    monkeypatch.setenv("PYTHONPATH", child_pythonpath())  # the `vpo` commands run this checkout
    out = tmp_path / "smoke"
    assert main(["--smoke", "--out", str(out)]) == 0
    seed = out / "s610001" / "seed0"
    for arm in ("evolve-vpo", "evolve-vpo-pareto", "evolve-grpo", "evolve-grpo-pareto"):
        config = json.loads((seed / arm / "config.json").read_text())
        assert config["identity"]["evolve"].get("select", "scalar") == ("pareto" if arm.endswith("pareto") else "scalar")
        assert (seed / arm / "baseline").exists() == (not arm.endswith("pareto"))
    res = json.loads((out / "prefix.json").read_text())["s610001 / training seed 0"]
    assert res["n_mazes"] == 2
    for label in ("evolve-vpo − sample-vpo", "evolve-vpo-pareto − sample-vpo", "evolve-grpo-pareto − evolve-grpo"):
        assert {f"{label}:best", f"{label}:solved"} <= set(res["contrasts"])
        assert label in res["hypervolume"]["contrasts"]
    assert set(res["evolve_stats"]) == {"evolve-vpo", "evolve-vpo-pareto", "evolve-grpo", "evolve-grpo-pareto"}
    report = (out / "prefix.md").read_text()
    for what in ("best task scalar", "fraction solved", "hypervolume of the front found"):
        assert f"## H1-H3 on the {what} at 6 candidates per maze (selections: scalar, pareto)" in report
    assert (out / "prefix.png").stat().st_size > 10_000
