"""Metrics a task makes 0 by construction are left out of `vpo show`, `vpo compare` and `vpo view`, with
one note saying which and why; `--all-metrics` keeps them; the rule reads the task's declaration
(``Benchmark.pass_reachable``), not a list of task names."""
from __future__ import annotations

from pathlib import Path

import pytest

from vpo_harness.harness.app.cli import main
from vpo_harness.reports.constant_metrics import constant_metrics

NOTE = "pass@k, pass^k and cover@tau left out: 0 by construction on maze"


@pytest.fixture(scope="module")
def maze_runs(tmp_path_factory) -> tuple[Path, Path]:
    from tests.reports.conftest import write_run

    root = tmp_path_factory.mktemp("constant")
    return (write_run(root / "spread", "hf:a", 4, 2, 5, spread=0.6, seed=1),
            write_run(root / "collapsed", "hf:b", 8, 1, 5, spread=0.1, seed=2))


def test_the_rule_reads_the_tasks_declaration(monkeypatch) -> None:
    from vpo_harness.benchmarks.maze import Maze
    from vpo_harness.benchmarks.musique import MuSiQue

    c = constant_metrics(["maze"])
    assert c is not None and c.tasks == ("maze",) and c.why == Maze.pass_unreachable_why
    assert all(c.drops(m) for m in ("pass@1", "pass^8", "cover@0.5", "pass@2[chain]", "pass@3[solution]"))
    assert not any(c.drops(m) for m in ("best@1", "diversity", "selected@4[majority]", "vpo_objective"))
    assert constant_metrics(["musique"]) is None           # a task where answers pass keeps its pass metrics
    assert constant_metrics(["maze", "musique"]) is None   # and so does a table holding one
    assert constant_metrics(["no-such-task"]) is None and constant_metrics([]) is None
    monkeypatch.setattr(Maze, "pass_reachable", True)      # the declaration, not the name, decides
    assert constant_metrics(["maze"]) is None
    monkeypatch.setattr(MuSiQue, "pass_reachable", False)
    assert constant_metrics(["musique"]) is not None


def test_show_drops_the_pass_columns_with_one_note(maze_runs, capsys) -> None:
    spread, collapsed = map(str, maze_runs)
    assert main(["show", spread, collapsed, "--select", "", "--metrics"]) == 0
    out = capsys.readouterr().out
    head = out.splitlines()[0].split()
    assert "best@1" in head and not [h for h in head if h.startswith(("pass@", "pass^", "cover@"))], head
    assert out.count(NOTE) == 1 and "--all-metrics shows them" in out
    pool_head = out.split("the VPO authors' pool metrics", 1)[1].splitlines()[1].split()
    assert "union_coverage" in pool_head and not [h for h in pool_head if h.startswith("pass@")]
    assert main(["show", spread, collapsed, "--select", "", "--all-metrics"]) == 0
    out = capsys.readouterr().out
    assert "pass@1" in out.splitlines()[0] and "cover@0.5" in out.splitlines()[0] and NOTE not in out


def test_compare_drops_the_pass_rows_in_tables_not_in_data(maze_runs, capsys) -> None:
    spread, collapsed = map(str, maze_runs)
    base = ["compare", spread, collapsed, "--resamples", "100", "--strategies", ""]
    for fmt in ([], ["--markdown"], ["--latex"]):
        assert main(base + fmt) == 0
        out = capsys.readouterr().out
        metrics = [ln.split()[0].strip("|% ") for ln in out.splitlines() if ln.split() and NOTE not in ln]
        assert not [m for m in metrics if m.startswith(("pass@", "pass^", "cover@"))], (fmt, metrics)
        assert out.count(NOTE) == 1 and "best@1" in out, fmt
    assert main(base + ["--all-metrics"]) == 0
    out = capsys.readouterr().out
    assert "pass@1 " in out and "cover@0.9" in out and NOTE not in out
    assert main(base + ["--csv"]) == 0   # a data file keeps every metric
    assert "\npass,1," in capsys.readouterr().out


def test_the_viewer_drops_them_and_says_why(maze_runs) -> None:
    from vpo_harness.reports.view.api import ViewData

    root = maze_runs[0].parent
    rows = ViewData([root]).runs()["runs"]
    assert len(rows) == 2
    for r in rows:
        assert r["dropped"].startswith(NOTE)
        assert "best@1" in r["metrics"] and not [m for m in r["metrics"] if m.startswith(("pass@", "pass^", "cover@"))]
    data = ViewData([root])
    curve = data.curve(data.runs()["runs"][0]["id"])
    assert "best@k" in curve["series"] and "pass@k" not in curve["series"] and curve["dropped"]
    kept = ViewData([root], all_metrics=True)
    row = kept.runs()["runs"][0]
    assert "pass@1" in row["metrics"] and not row.get("dropped")
    assert "pass@k" in kept.curve(row["id"])["series"]
