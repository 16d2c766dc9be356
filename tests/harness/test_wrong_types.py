"""A config.json or a row of the wrong type is one line naming the file and the field (non-zero exit,
no traceback), and a mistyped task, split, metric or selection strategy gets a "did you mean"."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Callable

import pytest

from vpo_harness.harness.app.cli import main
from vpo_harness.harness.core.suggest import close_matches, did_you_mean

RUN = ["run", "--task", "maze", "--model", "mock:moves", "--limit", "2", "-n", "4", "-m", "3", "--no-progress"]


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("types") / "run"
    assert main([*RUN, "--out", str(out)]) == 0
    return out


def _set(path: str, value: Any) -> Callable[[dict], None]:
    def edit(cfg: dict) -> None:
        *parents, last = path.split(".")
        node = cfg
        for p in parents:
            node = node[p]
        node[last] = value
    return edit


CASES = [  # (field as the error names it, edit)
    ("ks", _set("ks", "x")),
    ("ks", _set("ks", ["x"])),
    ("identity.task", _set("identity.task", 5)),
    ("identity.task.name", _set("identity.task.name", 5)),
    ("identity.task.split", _set("identity.task.split", ["test"])),
    ("identity.sampling.n", _set("identity.sampling.n", "x")),
    ("identity.sampling.m", _set("identity.sampling.m", True)),
    ("identity.sampling.temperature", _set("identity.sampling.temperature", "hot")),
    ("identity.model.spec", _set("identity.model.spec", None)),
    ("identity.components", _set("identity.components", 5)),
    ("identity.problems.ids", _set("identity.problems.ids", 5)),
    ("identity.metric_seed", _set("identity.metric_seed", "x")),
]


@pytest.mark.parametrize("field,edit", CASES, ids=[f"{f}-{i}" for i, (f, _) in enumerate(CASES)])
@pytest.mark.parametrize("command", ["show", "run", "compare", "report"])
def test_wrong_typed_config_is_one_line(finished: Path, tmp_path: Path, capsys: pytest.CaptureFixture,
                                        field: str, edit: Callable[[dict], None], command: str) -> None:
    bad = tmp_path / "bad"
    shutil.copytree(finished, bad)
    cfg = json.loads((bad / "config.json").read_text())
    edit(cfg)
    (bad / "config.json").write_text(json.dumps(cfg))
    argv = {"show": ["show", str(bad)], "run": [*RUN, "--out", str(bad)],
            "compare": ["compare", str(finished), str(bad)],
            "report": ["report", str(bad), "--out", str(tmp_path / "r.html")]}[command]
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0], err
    assert f"{bad / 'config.json'}: field '{field}': expected " in err[0]


def test_wrong_typed_row_is_one_line(finished: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    bad = tmp_path / "bad"
    shutil.copytree(finished, bad)
    lines = (bad / "samples.jsonl").read_text().splitlines()
    row = json.loads(lines[1])
    row["completion_tokens"] = "many"
    lines[1] = json.dumps(row)
    (bad / "samples.jsonl").write_text("\n".join(lines) + "\n")
    (bad / "results.json").unlink()
    capsys.readouterr()
    assert main(["show", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{bad / 'samples.jsonl'}: line 2: field 'completion_tokens'" in err[0], err


def test_helper() -> None:
    assert close_matches("maz", ["maze", "musique"]) == ["maze"]
    assert close_matches("MAZE-tiny-VOP", ["maze-tiny-vpo"]) == ["maze-tiny-vpo"]  # case does not hide it
    assert did_you_mean("tset", ["train", "test"]) == "did you mean test?"
    assert did_you_mean("zzzz", ["train", "test"]) == ""


@pytest.mark.parametrize("argv,expect", [
    (["--task", "maz", "--split", "test"], "unknown task 'maz' (did you mean maze?); known: "),
    (["--task", "maze", "--split", "tset"], "unknown maze split 'tset' (did you mean test?); known: train, test"),
    (["--task", "toolrl", "--split", "tets"], "unknown toolrl split 'tets' (did you mean test?); known: "),
])
def test_mistyped_task_and_split(tmp_path: Path, capsys: pytest.CaptureFixture, argv: list[str], expect: str) -> None:
    assert main(["run", *argv, "--model", "mock:moves", "--limit", "1", "-n", "1", "--out", str(tmp_path / "r"),
                 "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expect in err[0], err


def test_mistyped_metric_and_strategy(finished: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["plot", str(finished), "--metric", "bset", "--out", str(tmp_path / "p.png")]) == 2
    assert "unknown metric 'bset' (did you mean best?)" in capsys.readouterr().err
    assert main(["plot", str(finished), "--metric", "component:gold_", "--out", str(tmp_path / "p.png")]) == 2
    assert "no such reward component (did you mean gold?)" in capsys.readouterr().err
    from vpo_harness.harness.eval.selection import get_strategy

    with pytest.raises(ValueError, match=r"unknown selection strategy 'majorty' \(did you mean majority\?\)"):
        get_strategy("majorty")
