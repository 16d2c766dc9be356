"""selected@k next to best@k in `vpo show` / `vpo plot`, and public-tests on a code run's stored verdicts."""
from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from vpo_harness.harness.app.cli import main
from vpo_harness.harness.eval.selection import selected_at_k
from vpo_harness.reports.pools import load_pools


def write_code_run(folder: Path, visible_tests: str | None, seed: int = 0) -> Path:
    """An LCB-shaped run: per-problem test counts, one 0/1 reward per test, programs as answers."""
    rng = np.random.default_rng(seed)
    opts = {"visible_tests": visible_tests} if visible_tests else {}
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({
        "task": "livecodebench", "split": "test", "task_options": opts, "prompt_style": "full", "m": 1, "n": 6,
        "ks": [1, 2, 4, 6], "seed": 0, "components": [f"test_{i}" for i in range(1, 17)]}))
    rows = []
    for p in range(5):
        n_tests = int(rng.integers(2, 7))
        for c in range(6):
            r = (rng.random(n_tests) < rng.uniform(0.2, 0.9)).astype(float)
            prog = f"def f(x):\n    return x + {int(rng.integers(0, 3))}\n"
            rows.append({"problem_id": f"lcb-{p}", "chain_index": c, "answers": [prog], "rewards": [r.tolist()],
                         "scalars": [float(r.mean())], "passed": [bool(r.all())], "error": None})
    (folder / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def test_public_tests_ranks_on_visible_and_scores_hidden(tmp_path):
    run = load_pools(write_code_run(tmp_path / "lcb", "half"))
    pools = run.pools()
    for pool, r in zip(pools, run.rewards):
        assert np.allclose(pool.visible, r[:, ::2].mean(axis=1)) and np.allclose(pool.hidden, r[:, 1::2].mean(axis=1))
        for k in (1, 2, 4):
            subsets = list(itertools.combinations(range(pool.n), k))
            ref = np.mean([np.mean([pool.hidden[i] for i in s if pool.visible[i] == max(pool.visible[j] for j in s)])
                           for s in subsets])
            (got,), _ = selected_at_k([pool], k, "public-tests")
            assert got == pytest.approx(ref, abs=1e-12)
    # the AST vote groups programs that differ only in formatting
    assert len({key for key in pools[0].keys}) <= 3


def test_public_tests_needs_the_split(tmp_path, capsys):
    plain = write_code_run(tmp_path / "plain", None)
    assert all(p.visible is None for p in load_pools(plain).pools())
    rc = main(["plot", str(plain), "--metric", "selected:public-tests", "--out", str(tmp_path / "x.png")])
    assert rc == 2 and "visible_tests=half" in capsys.readouterr().err


def test_show_prints_selected_at_k_next_to_best(demo_like_runs, capsys):
    vpo, grpo = demo_like_runs
    assert main(["show", str(grpo), str(vpo)]) == 0
    out = capsys.readouterr().out
    lines = [ln for ln in out.splitlines() if ln.startswith("maze-tiny-vpo") and " majority " in ln]
    assert len(lines) == 1
    expect = selected_at_k(load_pools(vpo).pools(), 4, "majority")[0].mean()
    assert f"{expect:.3f}±" in lines[0]


def test_plot_selected_and_bad_strategy(demo_like_runs, tmp_path, capsys):
    vpo, grpo = demo_like_runs
    out = tmp_path / "sel.png"
    assert main(["plot", str(grpo), str(vpo), "--metric", "selected:majority", "--out", str(out)]) == 0
    assert out.stat().st_size > 10_000
    assert main(["plot", str(grpo), "--metric", "selected:psychic", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown selection strategy 'psychic'" in err[0]


def test_public_tests_with_private_tests_ranks_on_the_public_ones(tmp_path):
    """test_source=all: the kept tests are sorted by size, so public and private ones interleave;
    the selection must follow each test's origin, not its position."""
    from vpo_harness.benchmarks import get_task
    from vpo_harness.harness.core.config import RunConfig
    from vpo_harness.harness.core.models.base import SamplingConfig
    from vpo_harness.harness.eval.runner import build_config_record

    def tests(sizes):
        return json.dumps([{"input": "x" * s, "output": "1", "testtype": "stdin"} for s in sizes])

    data = tmp_path / "lcb.jsonl"
    data.write_text(json.dumps({
        "question_id": "q1", "question_content": "echo", "platform": "atcoder", "contest_date": "2025-03-01T00:00:00",
        "public_test_cases": tests([5, 1]), "private_test_cases": tests([3, 2, 9]), "metadata": "{}",
        "starter_code": "", "difficulty": "easy"}) + "\n")
    opts = {"test_source": "all", "trust_private_tests": True, "visible_tests": "public"}
    with get_task("livecodebench", **opts) as task:
        (prob,) = task.load("test", path=str(data))
        assert prob.data["public"] == [True, False, False, True, False]  # sizes 1, 2, 3, 5, 9
        cfg = RunConfig.of(task="livecodebench", model="hf:x", data_path=str(data), task_options=opts, n=4, ks=(1, 2))
        record = build_config_record(cfg, task, SamplingConfig(), [prob], "loaded")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.json").write_text(json.dumps(record))
    verdicts = [[1, 0, 0, 1, 0], [1, 1, 1, 0, 1], [0, 1, 1, 1, 1], [1, 1, 0, 1, 1]]
    (run_dir / "samples.jsonl").write_text("".join(json.dumps(
        {"problem_id": "q1", "chain_index": i, "answers": [f"print({i})"], "rewards": [v],
         "scalars": [float(np.mean(v))], "passed": [all(v)], "error": None}) + "\n" for i, v in enumerate(verdicts)))
    (pool,) = load_pools(run_dir).pools()
    assert pool.visible.tolist() == [1.0, 0.5, 0.5, 1.0]
    assert pool.hidden.tolist() == pytest.approx([0.0, 1.0, 1.0, 2 / 3])
    (v,), _ = selected_at_k([pool], 1, "public-tests")
    assert v == pytest.approx(np.mean(pool.hidden))
    (v,), _ = selected_at_k([pool], 4, "public-tests")
    assert v == pytest.approx((0.0 + 2 / 3) / 2)  # candidates 0 and 3 tie on the public tests
    with pytest.raises(ValueError, match="test_source=all"):
        get_task("livecodebench", visible_tests="public")


def test_the_mc_note_is_explained_where_it_is_printed(tmp_path):
    """A majority vote's Monte Carlo error is printed as [mc x] beside its number, and the table says
    what that is; a table without one carries no such line."""
    from vpo_harness.reports.selected import MC_LEGEND, format_selected

    run = write_code_run(tmp_path / "r", None)
    text = format_selected([run], ["majority"], ks=[1, 2, 4])
    assert "[mc " in text and MC_LEGEND in text
    plain = format_selected([run], ["oracle"], ks=[1, 2])
    assert "[mc " not in plain and MC_LEGEND not in plain
