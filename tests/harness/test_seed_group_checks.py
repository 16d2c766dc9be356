"""A seed group is checked when it is read: a seed folder holding another run is refused (one line
naming the folder and the field) by show, compare, plot and report; a missing, empty or unfinished
seed marks the group partial in each of them and in the viewer's index; `vpo report` gives the seed
count and the between-seed s.e. as `vpo show` does."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from vpo_harness.harness.app.cli import main
from vpo_harness.harness.core.results import load_run
from vpo_harness.harness.core.seed_groups import MARKER

from tests.harness.test_seed_groups import seedy  # noqa: F401 (fixture: replies right with probability P)

BASE = ["--task", "musique", "--split", "validation", "--limit", "6", "-n", "2", "--no-progress", "--no-cache"]


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory, seedy: None) -> Path:
    """A three-seed group of seedy:0.5 (its seeds disagree), and a single seedy:0.8 run (seed 1) to
    drop into it."""
    root = tmp_path_factory.mktemp("groups")
    assert main(["run", *BASE, "--model", "seedy:0.5", "--seeds", "0,1,2", "--out", str(root / "group")]) == 0
    assert main(["run", *BASE, "--model", "seedy:0.8", "--seed", "1", "--out", str(root / "other")]) == 0
    return root


@pytest.fixture
def group(made: Path, tmp_path: Path) -> Path:
    shutil.copytree(made, tmp_path / "w")
    return tmp_path / "w" / "group"


def _readers(group: Path, tmp_path: Path) -> dict[str, list[str]]:
    return {"show": ["show", str(group), "--select", ""],
            "compare": ["compare", str(group), str(group), "--resamples", "100", "--strategies", ""],
            "plot": ["plot", str(group), "--metric", "best", "--out", str(tmp_path / "p.png")],
            "report": ["report", str(group), "--out", str(tmp_path / "r.html"), "--resamples", "100"]}


def _refused_everywhere(group: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str) -> None:
    for name, argv in _readers(group, tmp_path).items():
        capsys.readouterr()
        rc = main(argv)
        err = capsys.readouterr().err.strip().splitlines()
        assert rc != 0, name
        assert len(err) == 1 and str(group / "seed-1") in err[0] and field in err[0], (name, err)


def test_another_models_run_as_a_seed_is_refused(group: Path, tmp_path: Path, capsys) -> None:
    shutil.rmtree(group / "seed-1")
    shutil.copytree(group.parent / "other", group / "seed-1")
    _refused_everywhere(group, tmp_path, capsys, "identity.model.spec")


def test_a_seed_run_with_other_weights_is_refused(group: Path, tmp_path: Path, capsys) -> None:
    """Same model name, other weights digest: the marker cannot tell, the first seed can."""
    cfg_path = group / "seed-1" / "config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["identity"]["model_fingerprint"] = "0123456789abcdef"
    cfg_path.write_text(json.dumps(cfg))
    _refused_everywhere(group, tmp_path, capsys, "identity.model_fingerprint")


def test_a_seed_folder_holding_another_seed_is_refused(group: Path, tmp_path: Path, capsys) -> None:
    shutil.rmtree(group / "seed-1")
    shutil.copytree(group / "seed-0", group / "seed-1")  # seed 0 counted twice
    _refused_everywhere(group, tmp_path, capsys, "identity.sampling.seed")


@pytest.mark.parametrize("damage,why", [("missing", "missing"), ("empty", "empty"), ("unfinished", "unfinished")])
def test_a_missing_empty_or_unfinished_seed_marks_the_group_partial(group: Path, tmp_path: Path, capsys,
                                                                   damage: str, why: str) -> None:
    seed2 = group / "seed-2"
    if damage == "missing":
        shutil.rmtree(seed2)
    elif damage == "empty":
        (seed2 / "samples.jsonl").write_text("")
        (seed2 / "results.json").unlink()
    else:  # interrupted: results.json removed before new rows were appended
        (seed2 / "results.json").unlink()
    label = f"partial: seed 2 {why}"
    readers = _readers(group, tmp_path)
    capsys.readouterr()
    assert main(readers["show"]) == 0 and label in capsys.readouterr().out
    assert main(readers["show"] + ["--json"]) == 0
    shown = json.loads(capsys.readouterr().out)[0]
    assert shown["partial"] is True and shown["seeds_incomplete"] == {"2": why}
    assert main(readers["compare"]) == 0 and f"partial seed group" in capsys.readouterr().out
    assert main(readers["compare"] + ["--json"]) == 0
    assert label in json.loads(capsys.readouterr().out)["partial"]["group"]
    assert label in load_run(group).summary.seeds_label
    from vpo_harness.reports.plots import best_at_k_figure

    assert label in best_at_k_figure([load_run(group)]).axes[0].get_legend_handles_labels()[1][0]
    assert main(readers["report"]) == 0
    html = (tmp_path / "r.html").read_text()
    assert label in html and "partial seed group" in html

    from vpo_harness.reports.view.catalog import Catalog

    rows = [e.row for e in Catalog([group.parent]).entries()]
    seeds = [r for r in rows if Path(r["path"]).parent == group]
    assert seeds and all(r["group"]["partial"] is True and label in r["group"]["label"] for r in seeds)
    assert "partial group" in (Path(__file__).resolve().parents[2] / "reports/view/static/app.js").read_text()


def test_a_complete_group_is_not_partial_anywhere(group: Path, tmp_path: Path, capsys) -> None:
    capsys.readouterr()
    assert main(_readers(group, tmp_path)["show"]) == 0
    out = capsys.readouterr().out
    assert "group (3 seeds)" in out and "partial" not in out
    from vpo_harness.reports.view.catalog import Catalog

    rows = [e.row for e in Catalog([group.parent]).entries() if Path(e.row["path"]).parent == group]
    assert len(rows) == 3 and all(r["group"] == {"id": str(group), "name": "group", "label": "3 seeds", "partial": False,
                                                 "refused": False, "listed": True} for r in rows)


def test_report_shows_the_seed_count_and_the_between_seed_se_as_show_does(group: Path, tmp_path: Path,
                                                                           capsys) -> None:
    capsys.readouterr()
    assert main(["show", str(group), "--select", "", "--json"]) == 0
    b1 = json.loads(capsys.readouterr().out)[0]["metrics"]["best@1"]
    assert b1["n_seeds"] == 3 and b1["seed_stderr"] > 0, "fixture premise: the seeds disagree"
    assert main(_readers(group, tmp_path)["report"]) == 0
    html = (tmp_path / "r.html").read_text()
    summary = html[html.index("<h2>Summary</h2>"):html.index("<h2>best@k")]
    assert "group (3 seeds)" in summary and "standard error between seeds" in summary
    cell = re.search(r"<td[^>]*>([0-9.]+)<span class='se'>±([0-9.]+) s±([0-9.]+)</span>", summary)
    assert cell is not None, summary[:2000]
    assert [float(x) for x in cell.groups()] == pytest.approx(
        [round(b1["mean"], 3), round(b1["stderr"], 3), round(b1["seed_stderr"], 3)], abs=1e-9)


def test_a_damaged_marker_or_seed_config_is_one_line(group: Path, capsys) -> None:
    cfg_path = group / "seed-0" / "config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["identity"]["sampling"]["prefix"] = 5
    cfg_path.write_text(json.dumps(cfg))
    capsys.readouterr()
    assert main(["show", str(group), "--select", ""]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "identity.sampling.prefix" in err[0] and str(cfg_path) in err[0]
    (group / MARKER).write_text("{")
    assert main(["show", str(group), "--select", ""]) != 0
    assert MARKER in capsys.readouterr().err


@pytest.fixture(scope="module")
def single(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    root = tmp_path_factory.mktemp("single")
    argv = ["run", "--task", "maze", "--model", "mock:moves", "--limit", "2", "-n", "2", "--no-progress",
            "--prefix", "<answer>UP", "--out", str(root / "run")]
    assert main(argv) == 0
    return root / "run", argv


@pytest.mark.parametrize("dotted,bad", [
    ("identity.sampling.prefix", 5), ("identity.resolved_sampling.temperature", "hot"),
    ("identity.resolved_sampling.top_p", [1]), ("identity.resolved_sampling.max_tokens", 1.5),
    ("identity.model_fingerprint", 7), ("cache", "on"), ("cache.enabled", "yes"), ("cache.found", "3"),
])
def test_readers_and_run_refuse_a_wrong_typed_field_alike(single: tuple[Path, list[str]], tmp_path: Path,
                                                         capsys, dotted: str, bad: object) -> None:
    folder = tmp_path / "run"
    shutil.copytree(single[0], folder)
    argv = [a if a != str(single[0]) else str(folder) for a in single[1]]
    cfg = json.loads((folder / "config.json").read_text())
    node = cfg
    *parents, last = dotted.split(".")
    for part in parents:
        node = node[part]
    assert last in node, f"fixture premise: the run records {dotted}"
    node[last] = bad
    (folder / "config.json").write_text(json.dumps(cfg))
    for cmd in (["show", str(folder), "--select", ""], argv):
        capsys.readouterr()
        assert main(cmd) != 0, cmd[0]
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"'{dotted}'" in err[0] and "config.json" in err[0], (cmd[0], err)
