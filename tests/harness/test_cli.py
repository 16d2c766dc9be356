"""The `vpo` CLI: ls, show, plot, argument errors."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from vpo_harness.harness.app.cli import main
from vpo_harness.harness.eval.runner import RunConfig, run
from vpo_harness.harness.core.paths import child_pythonpath
from tests.harness.scripted import ScriptedBackend


@pytest.fixture
def two_runs(tmp_path: Path) -> list[Path]:
    out = []
    for m, n in ((3, 2), (1, 6)):
        cfg = RunConfig.of(task="maze", model=f"scripted:m{m}", limit=3, n=n, m=m, ks=(1, 2, 6),
                        out=str(tmp_path / f"run_m{m}"), progress=False)
        out.append(run(cfg, backend=ScriptedBackend(m=m)))
    return out


def test_ls_lists_tasks(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ls", "--json"]) == 0
    rows = {r["task"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["maze"]["d"] == 4 and rows["maze"]["splits"] == {"train": 1000, "test": 100, "val": 100}
    assert rows["maze"]["components"] == ["completion", "gold", "diamond", "avoid_lava"]
    assert {"musique", "toolrl", "eureqa"} <= set(rows)


def test_show_prints_table(two_runs: list[Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", *map(str, two_runs)]) == 0
    out = capsys.readouterr().out
    assert "best@6" in out and "run_m3" in out and "run_m1" in out and "2x3" in out and "6x1" in out


def test_show_reads_other_ks_from_the_stored_rows(two_runs: list[Path], capsys: pytest.CaptureFixture[str]) -> None:
    """`vpo show --k` computes metrics at ks the run was not read at, without touching the run."""
    before = (two_runs[0] / "results.json").read_bytes()
    assert main(["show", str(two_runs[0]), "--k", "1,3,6", "--json", "--select", ""]) == 0
    metrics = json.loads(capsys.readouterr().out)[0]["metrics"]
    assert (two_runs[0] / "results.json").read_bytes() == before
    stored = json.loads(before)["metrics"]
    assert metrics["best@1"] == stored["best@1"] and metrics["best@6"] == stored["best@6"]
    assert stored["best@2"]["mean"] <= metrics["best@3"]["mean"] <= stored["best@6"]["mean"]
    assert "best@2" not in metrics
    assert main(["show", *map(str, two_runs), "--k", "3"]) == 0
    out = capsys.readouterr().out
    assert "best@3" in out and "best@6" not in out and "k=3" in out


def test_every_command_help_has_a_description_and_shows_defaults() -> None:
    """`vpo CMD --help`: what the command does, and every option with a default says what it is."""
    import argparse

    from vpo_harness.harness.app.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for name, parser in sub.choices.items():
        text = " ".join(parser.format_help().split())
        assert parser.description, name
        for action in parser._actions:
            d = action.default
            if not action.option_strings or d is None or d is False or d is argparse.SUPPRESS or d in ({}, [], ""):
                continue
            shown = parser._get_formatter()._expand_help(action)
            assert "default" in shown, (name, action.option_strings, shown)
        if name in ("run", "show", "compare", "rescore"):
            assert "examples:" in text and f"vpo {name} " in text, name
    run_help = " ".join(sub.choices["run"].format_help().split())
    assert "chains per problem (default: 10)" in run_help and "--seed SEED sampling seed" in run_help


def test_show_reads_a_run_in_progress_from_its_rows(two_runs: list[Path], capsys: pytest.CaptureFixture[str]) -> None:
    """No results.json yet (running or interrupted): the table shows the rows stored so far, marked."""
    folder = two_runs[1]  # 3 problems x 6 single answers
    lines = (folder / "samples.jsonl").read_text().splitlines(keepends=True)
    (folder / "samples.jsonl").write_text("".join(lines[:6]))  # the first problem's chains only
    (folder / "results.json").unlink()
    assert main(["show", str(folder), "--json", "--select", ""]) == 0
    out = capsys.readouterr()
    res = json.loads(out.out)[0]
    by_problem: dict[str, list[float]] = {}
    for ln in lines[:6]:
        row = json.loads(ln)
        by_problem.setdefault(row["problem_id"], []).extend(row["scalars"])
    means = [sum(v) / len(v) for v in by_problem.values()]
    assert res["partial"] is True and res["metrics"]["best@1"]["n"] == len(by_problem)
    assert res["metrics"]["best@1"]["mean"] == pytest.approx(sum(means) / len(means))
    assert "6 chains stored so far" in out.err
    assert main(["show", str(folder), "--select", ""]) == 0
    assert "(partial)" in capsys.readouterr().out


@pytest.mark.parametrize("task", ["livecodebench", "musique", "toolrl"])
def test_missing_data_file_names_the_file_and_the_flag(task: str, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    missing = str(tmp_path / "nope.jsonl")
    assert main(["run", "--task", task, "--model", "mock:words", "--data-path", missing, "--out",
                 str(tmp_path / "r"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and missing in err and "no such data file" in err
    if task == "livecodebench":
        assert "--data-path" in err


def test_show_names_a_broken_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "config.json").write_text("")  # a disk that filled up, an editor that crashed
    assert main(["show", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "config.json: line 1: not valid JSON" in err and len(err.strip().splitlines()) == 1


def test_plot_writes_png(two_runs: list[Path], tmp_path: Path) -> None:
    png = tmp_path / "fig" / "best.png"
    assert main(["plot", *map(str, two_runs), "--out", str(png), "--labels", "chains,singles"]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_label_count_mismatch(two_runs: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plot", *map(str, two_runs), "--out", str(tmp_path / "x.png"), "--labels", "one"]) == 2
    assert "--labels has 1 names for 2 runs" in capsys.readouterr().err


def test_unknown_task_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--task", "nope", "--model", "hf:x", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "unknown task 'nope'" in err and "maze" in err


def test_show_non_run_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(tmp_path)]) == 2
    assert "not a run folder" in capsys.readouterr().err


def test_bad_k_list() -> None:
    with pytest.raises(SystemExit):
        main(["run", "--task", "maze", "--model", "hf:x", "--k", "1,two"])


def test_every_command_module_registers_and_dispatches() -> None:
    """Each entry of COMMANDS is a module with register/run, and the parser routes to its run()."""
    from vpo_harness.harness.app.cli import build_parser
    from vpo_harness.harness.app.commands import COMMANDS, load

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    funcs = {p.get_default("func") for p in sub.choices.values()}
    assert len(sub.choices) >= len(COMMANDS)  # a module may name its command differently (export-verl)
    for name in COMMANDS:
        assert load(name).run in funcs, f"vpo_harness.harness.app.commands.{name}.run is not dispatched"


def test_cli_import_is_light() -> None:
    """`import vpo_harness.harness.app.cli` (what `vpo --help` pays) pulls in neither the runner, training, torch nor pandas."""
    import subprocess
    import sys

    code = ("import sys, vpo_harness.harness.app.cli; heavy = [m for m in ('torch', 'pandas', 'vpo_harness.harness.eval.runner', 'vpo_harness.training', "
            "'vpo_harness.training.rl', 'transformers') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_ls_says_livecodebench_d_is_per_problem(capsys: pytest.CaptureFixture[str]) -> None:
    """LCB's reward has one component per selected test (<= max_tests): `vpo ls` says so instead of 16."""
    from vpo_harness.benchmarks import get_task

    assert main(["ls", "--json"]) == 0
    rows = {r["task"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["livecodebench"]["d"] == "per problem, <= 16" and rows["livecodebench"]["max_d"] == 16
    assert rows["maze"]["d"] == 4 and rows["maze"]["max_d"] == 4
    assert get_task("livecodebench", max_tests=8).d_label() == "per problem, <= 8"
    assert main(["ls"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("livecodebench"))
    assert "per problem, <= 16" in line and "one per test" in line


def test_closed_pipe_ends_quietly() -> None:
    """`vpo ls | head -1`: the reader closes the pipe early; vpo must stop without a traceback."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": child_pythonpath()}
    read_end, write_end = os.pipe()
    proc = subprocess.Popen([sys.executable, "-m", "vpo_harness.harness.app.cli", "ls"], stdout=write_end,
                            stderr=subprocess.PIPE, env=env)
    os.close(write_end)
    os.close(read_end)  # the reader is gone before vpo writes (deterministic, unlike reading a byte first)
    assert proc.stderr is not None
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141, err
    assert "Traceback" not in err and "error" not in err, err


def test_ls_says_what_loads_here_offline(capsys: pytest.CaptureFixture[str]) -> None:
    """The release's split sizes are not what an offline run gets: `vpo ls` prints both. The sizes here
    are counted from the offline files themselves, so a changed slice cannot make this test stale."""
    from vpo_harness.harness.core.paths import shared_data_dir

    def lines(rel: str) -> int:
        return sum(1 for ln in (shared_data_dir() / rel).read_text(encoding="utf-8").splitlines() if ln.strip())

    assert main(["ls", "--json"]) == 0
    rows = {r["task"]: r for r in json.loads(capsys.readouterr().out)}
    toolrl, maze, lcb = rows["toolrl"], rows["maze"], rows["livecodebench"]
    assert toolrl["splits"]["test"] == 80 and toolrl["here"]["test"] == lines("toolrl/rlla_4k_test.jsonl") < 80
    assert toolrl["here"]["train"] is None  # only the hub release has it
    assert maze["here"] == maze["splits"]  # generated: every split is local
    assert lcb["here"]["all"] == lines("livecodebench/code_generation_lite.v5v6.public.jsonl")
    assert lcb["here"]["test"] + lcb["here"]["train"] == lcb["here"]["all"]
    assert main(["ls"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("toolrl"))
    assert f"test (80; here {toolrl['here']['test']})" in line and "train (3920; hub only)" in line
