"""`vpo rescore`: stored completions graded again under other task options, into a new folder."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from vpo_harness.benchmarks import get_task
from vpo_harness.harness.app.cli import main
from vpo_harness.harness.app.rescore import rescore
from vpo_harness.harness.core.store import latest_rows
from tests.reports.conftest import write_run


def rows_by_key(folder: Path) -> dict[tuple[str, int], dict]:
    return {(r["problem_id"], r["chain_index"]): r for r in latest_rows(folder)}


def test_rescore_with_another_reward_mode(tmp_path, capsys):
    src = write_run(tmp_path / "src", "hf:x", n=4, m=2, n_problems=5, spread=0.6, seed=4,
                    task_options={"reward_mode": "linear"})
    out = tmp_path / "convex"
    rc = main(["rescore", str(src), "--out", str(out), "--task-args", "reward_mode=convex_bonus", "--no-progress"])
    assert rc == 0 and "rescored run folder" in capsys.readouterr().out
    cfg = json.loads((out / "config.json").read_text())
    ident = cfg["identity"]
    assert ident["task"]["options"]["reward_mode"] == "convex_bonus"
    assert ident["rescored_from"]["path"] == str(src.resolve()) and ident["rescored_from"]["task_args"] == {
        "reward_mode": "convex_bonus"}
    old, new = rows_by_key(src), rows_by_key(out)
    assert old.keys() == new.keys()
    task = get_task("maze", reward_mode="convex_bonus")
    problems = {p.id: p for p in task.load("test", limit=5)}
    changed = 0
    for key, row in new.items():
        assert row["text"] == old[key]["text"] and row["answers"] == old[key]["answers"]  # nothing generated
        expect = np.stack([task.reward(problems[key[0]], a) for a in row["answers"]])
        assert np.allclose(row["rewards"], expect, atol=1e-6)
        changed += not np.allclose(row["rewards"], old[key]["rewards"])
    assert changed > 0  # the bonus mode really regraded something
    res = json.loads((out / "results.json").read_text())
    assert res["metrics"]["n_candidates"] == 40
    # resuming a finished rescore appends nothing; another source for the same folder is refused
    size = (out / "samples.jsonl").stat().st_size
    rescore(src, out, {"reward_mode": "convex_bonus"}, progress=False)
    assert (out / "samples.jsonl").stat().st_size == size
    rc = main(["rescore", str(src), "--out", str(out), "--task-args", "reward_mode=linear", "--no-progress"])
    assert rc == 2 and "differ" in capsys.readouterr().err


def test_rescore_of_a_runner_folder_reproduces_it(tmp_path):
    """Same task code, same options: the regraded rows equal what the runner stored."""
    from vpo_harness.harness.eval.runner import RunConfig, run
    from tests.harness.scripted import ScriptedBackend

    kw = dict(task="maze", model="scripted:x", split="test", limit=2, n=3, m=2, ks=(1, 2, 6),
              out=str(tmp_path / "run"), progress=False)
    cfg = RunConfig.of(**kw)
    src = run(cfg, backend=ScriptedBackend(m=2, fail=[1]))
    out = rescore(src, tmp_path / "again", progress=False)
    old, new = rows_by_key(src), rows_by_key(out)
    assert old.keys() == new.keys()
    for key in old:
        for f in ("answers", "rewards", "scalars", "passed", "error", "n_unique"):
            assert new[key].get(f) == old[key].get(f), (key, f)
    a = json.loads((src / "results.json").read_text())["metrics"]
    b = json.loads((out / "results.json").read_text())["metrics"]
    assert a["best@6"] == b["best@6"] and a["diversity"] == b["diversity"]


def test_rescore_refuses_bad_input(tmp_path, capsys):
    assert main(["rescore", str(tmp_path / "nope"), "--out", str(tmp_path / "x")]) == 2
    assert "not a run folder" in capsys.readouterr().err
    src = write_run(tmp_path / "src", "hf:x", n=1, m=1, n_problems=1, spread=0.6, seed=1)
    assert main(["rescore", str(src), "--out", str(src)]) == 2
    assert "is the source run" in capsys.readouterr().err
    flat = tmp_path / "flat"
    flat.mkdir()
    (flat / "config.json").write_text(json.dumps({"task": "maze", "split": "test"}))
    assert main(["rescore", str(flat), "--out", str(tmp_path / "y")]) == 2
    assert "older vpo-harness" in capsys.readouterr().err


@pytest.mark.integration
def test_rescore_runs_code_in_the_sandbox(tmp_path):
    task = get_task("livecodebench")
    prob = next(p for p in task.load("test") if p.data["mode"] == "stdin")
    task.close()
    src = tmp_path / "lcb"
    src.mkdir()
    from vpo_harness.harness.core.config import RunConfig
    from vpo_harness.harness.core.models.base import SamplingConfig
    from vpo_harness.harness.eval.runner import build_config_record

    cfg = RunConfig.of(task="livecodebench", model="hf:x", split="test", n=2, ks=(1, 2))
    (src / "config.json").write_text(json.dumps(build_config_record(cfg, task, SamplingConfig(), [prob], "loaded")))
    texts = ["```python\nprint(input())\n```", "no code here"]
    rows = [{"problem_id": prob.id, "chain_index": i, "text": t, "answers": [None], "rewards": [[0.0]],
             "scalars": [0.0], "passed": [False], "error": None} for i, t in enumerate(texts)]
    (src / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = rescore(src, tmp_path / "graded", progress=False)
    new = rows_by_key(out)
    graded = new[(prob.id, 0)]
    assert graded["answers"] == ["print(input())"]
    assert len(graded["rewards"][0]) == prob.data["n_tests"]
    assert graded["details"][0]["verdicts"] and len(graded["details"][0]["verdicts"]) == prob.data["n_tests"]
    assert "isolation" in graded["details"][0]
    assert new[(prob.id, 1)]["answers"] == [None] and not any(new[(prob.id, 1)]["rewards"][0])
