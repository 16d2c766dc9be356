"""scripts/train_zoo.py: the twelve runs' plan, its order, skipping finished steps, failures."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from vpo_harness.harness.core.models import zoo

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tz():
    spec = importlib.util.spec_from_file_location("train_zoo", REPO / "scripts" / "train_zoo.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["train_zoo"] = mod          # dataclasses look their module up by name
    spec.loader.exec_module(mod)
    return mod


def _value(argv, flag):
    return argv[argv.index(flag) + 1]


def test_plan_covers_the_row_with_one_warm_start_per_seed(tz, tmp_path):
    steps = tz.plan([0, 1, 2], list(zoo.ROW_METHODS), tmp_path / "runs", tmp_path / "ck")
    kinds = [s.name.split("-")[-1] for s in steps]
    # per seed: a warm start, its evaluation and its card; per (seed, method): an RL run and its card
    assert kinds.count("sft") == 3 and kinds.count("card") == 15 and kinds.count("eval") == 3 and len(steps) == 33
    seen = set()
    for s in steps:                       # needs always come earlier (the executor relies on it)
        assert all(n in seen for n in s.needs), s.name
        seen.add(s.name)
    rl = [s for s in steps if "--stage" in s.argv and _value(s.argv, "--stage") == "rl"]
    assert len(rl) == 12
    for s in rl:
        seed = int(_value(s.argv, "--seed"))
        assert _value(s.argv, "--init") == str(tmp_path / "runs" / f"s{seed}" / "sft" / "checkpoint")
        assert _value(s.argv, "--val-every") == str(tz.RULE["rl"]["--val-every"])
        assert float(_value(s.argv, "--prefix-fraction")) > 0
    cards = {_value(s.argv, "--dest") for s in steps if s.name.endswith("-card")}
    assert cards == {str(tmp_path / "ck" / zoo.policy_folder_name(m, sd))
                     for m in (*zoo.ROW_METHODS, zoo.WARM_START) for sd in (0, 1, 2)}
    for s in steps:   # an RL card waits for its warm start's numbers, which every card carries
        if s.name.endswith("-card") and "warm" not in s.name:
            assert s.needs[-1] == s.name.split("-")[0] + "-warm-eval"
    assert all(s.shown().startswith(("vpo train ", "python -m vpo_harness.training.")) for s in steps)


def _fake(tmp_path, name, needs=(), ok=True):
    flag = tmp_path / f"{name}.done"
    code = f"open({str(flag)!r}, 'w').write('x')" if ok else "raise SystemExit(3)"
    return flag, [sys.executable, "-c", code], list(needs)


def test_execute_skips_finished_steps_and_blocks_dependents_of_a_failure(tz, tmp_path, capsys):
    specs = {"a": _fake(tmp_path, "a"), "b": _fake(tmp_path, "b", ["a"], ok=False), "c": _fake(tmp_path, "c", ["b"]),
             "d": _fake(tmp_path, "d", ["a"])}
    steps = [tz.Step(n, argv, (lambda f=flag: f.exists()), needs) for n, (flag, argv, needs) in specs.items()]
    assert tz.execute(steps, tmp_path / "logs", jobs=2) == 1
    out = capsys.readouterr().out
    assert "[b] FAILED (exit 3)" in out and "[c] not run: b did not finish" in out and "[d] done" in out
    assert not (tmp_path / "c.done").exists() and (tmp_path / "d.done").exists()
    steps[1] = tz.Step("b", _fake(tmp_path, "b")[1], steps[1].done, ["a"])
    assert tz.execute(steps, tmp_path / "logs", jobs=1) == 0
    out = capsys.readouterr().out
    assert "[a] skipped" in out and "[d] skipped" in out and "[b] done" in out and "[c] done" in out


def test_dry_run_prints_every_step_and_smoke_stays_out_of_checkpoints(tz, tmp_path, capsys):
    assert tz.main(["--dry-run", "--runs", str(tmp_path / "r"), "--seeds", "1", "--methods", "vpo,grpo"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 7 and all("to run" in x for x in lines)
    smoke = tz.plan([0], ["vpo"], tmp_path / "r", tmp_path / "r" / "checkpoints", smoke=True)
    assert int(_value(smoke[1].argv, "--rl-steps")) < tz.RULE["rl"]["--rl-steps"]
    with pytest.raises(SystemExit):
        tz.main(["--dry-run", "--methods", "ppo"])


def test_policies_go_to_runs_zoo_unless_install_is_given(tz, tmp_path, capsys):
    """A plain run packages into <runs>/checkpoints; the bundled checkpoints/ needs --install, and a
    --dest naming it without --install (or --install with --smoke) is refused in one line."""
    def dests(argv):
        seen = {}
        real_plan = tz.plan
        tz.plan = lambda *a, **k: seen.setdefault("dest", a[3]) and []
        try:
            assert tz.main(["--dry-run", "--seeds", "0", "--methods", "vpo"] + argv) == 0
        finally:
            tz.plan = real_plan
        return seen["dest"]

    runs = tmp_path / "r"
    assert dests(["--runs", str(runs)]) == runs / "checkpoints"
    assert dests(["--runs", str(runs), "--install"]) == tz.REPO / "checkpoints"
    for argv in (["--dest", str(tz.REPO / "checkpoints")], ["--install", "--smoke"]):
        with pytest.raises(SystemExit) as exc:
            tz.main(["--dry-run", "--runs", str(runs)] + argv)
        assert exc.value.code == 2
        assert "--install" in capsys.readouterr().err.splitlines()[-1]


def test_summary_of_seeds_never_trained_is_one_line_and_fails(tz, tmp_path, capsys):
    """--summary where no seed has a finished RL run: one line naming the folder and the command that
    trains them, exit 2 (not a table of NaNs)."""
    assert tz.main(["--summary", "--seeds", "7-8", "--runs", str(tmp_path / "r")]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    err = cap.err.strip()
    assert len(err.splitlines()) == 1 and str(tmp_path / "r") in err and "--seeds 7,8" in err, err
