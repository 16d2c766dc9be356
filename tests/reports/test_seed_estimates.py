"""One estimate, one standard error: in `vpo show` of a seed group, selected@k[oracle] (= best@k)
prints the cell best@k prints, because both combine the seeds with ``mean_over_seeds``."""
from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from vpo_harness.harness.core.seed_groups import register_seeds


@pytest.fixture(scope="module")
def group(tmp_path_factory) -> Path:
    from tests.reports.conftest import write_run

    parent = tmp_path_factory.mktemp("group") / "g"
    for s in (0, 1, 2):
        write_run(parent / f"seed-{s}", "hf:x", 4, 1, 6, spread=0.6, seed=10 + s, run_seed=s)
    register_seeds(parent, [0, 1, 2], {})
    return parent


def test_oracle_selection_prints_best_at_k_of_a_seed_group(group: Path, capsys: pytest.CaptureFixture) -> None:
    from vpo_harness.harness.app.commands import show

    show.run(argparse.Namespace(runs=[str(group)], json=False, ks=None, taus=None, select="random"))
    out = capsys.readouterr().out
    main, sel = out.split("selected@k", 1)
    head = main.splitlines()[0].split()
    row = next(ln for ln in main.splitlines() if ln.startswith("g (3 seeds)"))
    cells = re.findall(r"\d\.\d{3}±\d\.\d{3} s±\d\.\d{3}", row)
    best = dict(zip([h for h in head if h.startswith(("best@", "pass@", "pass^", "cover@", "diversity"))], cells))
    oracle = next(ln for ln in sel.splitlines() if "oracle" in ln)
    got = re.findall(r"\d\.\d{3}±\d\.\d{3} s±\d\.\d{3}", oracle)
    assert got[:3] == [best["best@1"], best["best@2"], best["best@4"]], (got, best)


def test_a_seed_group_is_a_row_of_its_own_with_its_curves(group: Path) -> None:
    from vpo_harness.harness.core.results import results_at
    from vpo_harness.reports.view.api import ViewData

    view = ViewData([group.parent])
    rows = {r["id"]: r for r in view.runs()["runs"]}
    assert set(rows) == {str(group), *(str(group / f"seed-{s}") for s in (0, 1, 2))}
    g = rows[str(group)]
    assert g["kind"] == "seeds" and g["seeds"] == [0, 1, 2] and g["status"] == "complete"
    want = results_at(group).best[1]
    from vpo_harness.reports.tables import format_estimate

    assert g["metrics"]["best@1"] == {"mean": want.mean, "stderr": want.stderr, "n": want.n,
                                      "seed_stderr": want.seed_stderr, "n_seeds": 3, "text": format_estimate(want)}
    curve = view.curve(str(group))
    assert curve["series"]["best@k"]["x"] == [1, 2, 4] and curve["partial"] is False
    page = view.run(str(group))
    assert [s["seed"] for s in page["run"]["seed_list"]] == [0, 1, 2] and page["problems"] == []
    assert str(group) not in {r["id"] for r in view.runs_with_problem("maze-test-0000")["runs"]}
    # a seed whose results.json is gone (still running, or interrupted): the group is partial
    (group / "seed-2" / "results.json").rename(group / "seed-2" / "results.moved")
    try:
        g = {r["id"]: r for r in view.runs()["runs"]}[str(group)]
        assert g["status"] == "partial" and g["note"] == "1 of 3 seeds still running or interrupted"
    finally:
        (group / "seed-2" / "results.moved").rename(group / "seed-2" / "results.json")
    # a seed the group lists but that has not started: partial too
    marker = (group / "seeds.json").read_text()
    register_seeds(group, [3], {})
    try:
        g = {r["id"]: r for r in view.runs()["runs"]}[str(group)]
        assert g["status"] == "partial" and g["note"] == "1 seed not started"
    finally:
        (group / "seeds.json").write_text(marker)
    assert {r["id"]: r for r in view.runs()["runs"]}[str(group)]["status"] == "complete"
