"""Seeds as an axis: `vpo run --seeds` writes one run per seed under a parent folder; `vpo show` and
`vpo compare` read the parent as the mean over seeds with the between-seed standard error next to
the within-run one (checked against numpy on the stored rows); a group resumes seed by seed after
kill -9; `--protocol paper` sets the authors' evaluation seed count."""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from vpo_harness.benchmarks import get_task
from vpo_harness.harness.app.cli import main
from vpo_harness.harness.core.metrics import Estimate, mean_over_seeds
from vpo_harness.harness.core.models import register_backend
from vpo_harness.harness.core.seed_groups import MARKER, parse_seeds
from vpo_harness.harness.core.paths import child_pythonpath
from tests.fakes.scripted_backend import ScriptedBackend

LIMIT, N, SEEDS = 8, 4, (0, 1, 2)


def _gold() -> dict[str, tuple[str, list[int]]]:
    with get_task("musique") as task:
        return {p.id: (p.data["answer"], list(p.data["support"])) for p in task.load("validation", limit=LIMIT)}


@pytest.fixture(scope="module")
def seedy() -> None:
    """``seedy:P``: MuSiQue replies right with probability P (supports and answer), drawn from the chain
    seed, so the score of a pool moves with the sampling seed and differs between P's."""
    gold = _gold()

    def factory(model: str, base_url: str | None, args: dict) -> ScriptedBackend:
        p = float(model)

        def reply(req, chain: int, seed: int) -> str:
            rng = random.Random(seed)
            answer, support = gold[req.problem_id]
            sup = support if rng.random() < p else [0]
            ans = answer if rng.random() < p else "nobody knows"
            return f"<support>{', '.join(map(str, sup))}</support>\n<answer>{ans}</answer>"

        return ScriptedBackend(reply, model=model)

    register_backend("seedy", factory)


def _run(out: Path, model: str = "seedy:0.5", extra: tuple[str, ...] = ("--seeds", "0,1,2")) -> int:
    return main(["run", "--task", "musique", "--split", "validation", "--model", model, "--limit", str(LIMIT),
                 "-n", str(N), "--no-progress", "--out", str(out), *extra])


def _rows(folder: Path) -> list[dict]:
    return [json.loads(ln) for ln in (folder / "samples.jsonl").read_text().splitlines() if ln.strip()]


def _per_problem(folder: Path, k_max: bool = False) -> dict[str, float]:
    """Per problem: the mean candidate scalar (best@1) or the pool's maximum (best@n), from the rows."""
    by: dict[str, list[float]] = {}
    for r in _rows(folder):
        by.setdefault(r["problem_id"], []).extend(r["scalars"])
    return {p: float(np.max(v) if k_max else np.mean(v)) for p, v in by.items()}


def _expected(parent: Path, k_max: bool = False) -> tuple[float, float, float]:
    """(mean over seeds, within-run s.e., between-seed s.e.) of best@1 (or best@n), by numpy."""
    means, ses = [], []
    for s in SEEDS:
        v = np.array(list(_per_problem(parent / f"seed-{s}", k_max).values()))
        means.append(v.mean())
        ses.append(v.std(ddof=1) / np.sqrt(v.size))
    means, ses = np.array(means), np.array(ses)
    return float(means.mean()), float(np.sqrt((ses ** 2).sum()) / len(SEEDS)), float(means.std(ddof=1) / np.sqrt(len(SEEDS)))


def test_run_seeds_then_show_prints_mean_over_seeds_checked_by_numpy(tmp_path, seedy, capsys) -> None:
    parent = tmp_path / "group"
    assert _run(parent) == 0
    capsys.readouterr()
    assert sorted(p.name for p in parent.iterdir()) == sorted([MARKER, "seed-0", "seed-1", "seed-2"])
    assert json.loads((parent / MARKER).read_text())["seeds"] == [0, 1, 2]
    for s in SEEDS:  # each seed is an ordinary run folder with its own seed in its identity
        cfg = json.loads((parent / f"seed-{s}" / "config.json").read_text())
        assert cfg["identity"]["sampling"]["seed"] == s and len(_rows(parent / f"seed-{s}")) == LIMIT * N
    texts = [{r["text"] for r in _rows(parent / f"seed-{s}")} for s in SEEDS]
    assert texts[0] != texts[1] != texts[2]  # the seeds sampled different pools

    assert main(["show", str(parent), "--select", ""]) == 0
    out = capsys.readouterr().out
    head, row = out.splitlines()[0].split(), next(ln for ln in out.splitlines() if ln.startswith("group (3 seeds)"))
    mean, se, sse = _expected(parent)
    assert sse > 0.005, "fixture premise: the seeds disagree"
    want = f"{mean:.3f}±{se:.3f} s±{sse:.3f}"
    assert want in row, (want, row)
    mean4, se4, sse4 = _expected(parent, k_max=True)
    assert f"{mean4:.3f}±{se4:.3f} s±{sse4:.3f}" in row and "best@4" in head
    assert "s±: standard error between seeds" in out

    assert main(["show", str(parent), "--json", "--select", ""]) == 0
    got = json.loads(capsys.readouterr().out)[0]
    assert got["seeds"] == [0, 1, 2] and set(got["per_seed"]) == {"0", "1", "2"}
    b1 = got["metrics"]["best@1"]
    assert b1["mean"] == pytest.approx(mean) and b1["stderr"] == pytest.approx(se)
    assert b1["seed_stderr"] == pytest.approx(sse) and b1["n_seeds"] == 3 and b1["n"] == LIMIT

    # other ks on the group are recomputed from every seed's rows (nothing sampled)
    assert main(["show", str(parent), "--k", "1,3", "--select", ""]) == 0
    assert "best@3" in capsys.readouterr().out


def test_plot_and_report_read_a_group(tmp_path, seedy) -> None:
    from vpo_harness.harness.core.results import load_run
    from vpo_harness.reports.plots import best_at_k_figure

    parent = tmp_path / "group"
    assert _run(parent) == 0
    fig = best_at_k_figure([load_run(parent)])
    ax = fig.axes[0]
    names = ax.get_legend_handles_labels()[1]
    assert names == ["0.5 (4x1), 3 seeds"]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "bars: ±1 standard error between seeds" in legend
    mean, _, sse = _expected(parent)
    bars = [c for c in ax.collections if type(c).__name__ == "LineCollection"][0].get_segments()
    lo, hi = bars[0][:, 1]  # the k = 1 bar spans mean ± between-seed s.e.
    assert lo == pytest.approx(mean - sse) and hi == pytest.approx(mean + sse)
    out = tmp_path / "r.html"
    assert main(["plot", str(parent), "--metric", "best,diversity", "--out", str(tmp_path / "p.png")]) == 0
    assert main(["report", str(parent), str(parent), "--out", str(out), "--resamples", "200"]) == 0
    assert "#seed-2" in out.read_text()  # the per-problem table lists (problem, seed) entries


def test_compare_two_groups_pairs_problem_and_seed(tmp_path, seedy, capsys) -> None:
    a, b = tmp_path / "weak", tmp_path / "strong"
    assert _run(a, "seedy:0.3") == 0 and _run(b, "seedy:0.8") == 0
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--json", "--resamples", "300", "--strategies", ""]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    best1 = next(r for r in rows if r["metric"] == "best" and r["k"] == 1)
    # numpy on the rows: one pair per (problem, seed), the difference averaged over all of them
    diffs, per_seed = [], []
    for s in SEEDS:
        pa, pb = _per_problem(a / f"seed-{s}"), _per_problem(b / f"seed-{s}")
        d = np.array([pb[p] - pa[p] for p in pa])
        diffs.append(d)
        per_seed.append(d.mean())
    alld = np.concatenate(diffs)
    assert best1["n"] == LIMIT * len(SEEDS) and best1["n_seeds"] == 3
    assert best1["diff"] == pytest.approx(alld.mean())
    # the within-run s.e. of a group's mean by the rule `vpo show` prints: sqrt(sum of the seeds' s.e.^2) / S
    within = np.sqrt(sum((d.std(ddof=1) / np.sqrt(d.size)) ** 2 for d in diffs)) / len(SEEDS)
    assert best1["diff_se"] == pytest.approx(within)
    assert best1["diff_seed_se"] == pytest.approx(np.std(per_seed, ddof=1) / np.sqrt(3))
    assert best1["ci_low"] > 0  # strong beats weak

    assert main(["compare", str(a), str(b), "--resamples", "300", "--strategies", ""]) == 0
    text = capsys.readouterr().out
    assert "(problem, seed) pairs" in text
    line = next(ln for ln in text.splitlines() if ln.startswith("best@1 "))
    assert f"{alld.mean():+.3f}±{within:.3f} s±" in line
    assert "strong: 24 shared problems" in text

    # a single run against a group is its own seed: it pairs with that seed of the group only
    single = tmp_path / "single"
    assert _run(single, "seedy:0.8", extra=("--seed", "1")) == 0
    capsys.readouterr()
    assert main(["compare", str(a), str(single), "--json", "--resamples", "300", "--strategies", ""]) == 0
    one = next(r for r in json.loads(capsys.readouterr().out)["rows"] if r["metric"] == "best" and r["k"] == 1)
    pa, pb = _per_problem(a / "seed-1"), _per_problem(single)
    assert one["n"] == LIMIT and one["diff"] == pytest.approx(np.mean([pb[p] - pa[p] for p in pa]))


def test_show_and_compare_print_one_standard_error_per_number(tmp_path, seedy, capsys) -> None:
    """`vpo show` and `vpo compare` read the same run and print the same mean and standard errors for
    every metric both print: a sampling-seed group (where compare once pooled the (problem, seed) pairs
    into a third s.e.) and a single run."""
    a, b = tmp_path / "weak", tmp_path / "strong"
    assert _run(a, "seedy:0.3") == 0 and _run(b, "seedy:0.8") == 0
    single = tmp_path / "single"
    assert _run(single, "seedy:0.6", extra=("--seed", "0")) == 0
    for base, other in ((a, b), (single, a / "seed-0")):
        capsys.readouterr()
        assert main(["compare", str(base), str(other), "--json", "--resamples", "200", "--strategies", ""]) == 0
        rows = json.loads(capsys.readouterr().out)["rows"]
        for folder, side in ((base, "baseline"), (other, "run")):
            assert main(["show", str(folder), "--json", "--select", ""]) == 0
            shown = json.loads(capsys.readouterr().out)[0]
            metrics = shown.get("metrics", shown)
            checked = 0
            for r in rows:
                name = {"best": f"best@{r['k']}", "pass": f"pass@{r['k']}", "pass^": f"pass^{r['k']}"}.get(
                    r["metric"], r["metric"])
                est = metrics.get(name)
                if not isinstance(est, dict) or "stderr" not in est:
                    continue
                checked += 1
                assert r[f"{side}_mean"] == pytest.approx(est["mean"]), name
                assert r[f"{side}_se"] == pytest.approx(est["stderr"]), (folder, name)
                if folder in (a, b):
                    assert r[f"{side}_seed_se"] == pytest.approx(est["seed_stderr"]), (folder, name)
            assert checked >= 8, (folder, sorted(metrics))
            if folder == a:  # premise: the pooled-pairs s.e. of the old compare differs from the one shown
                vals = np.concatenate([list(_per_problem(a / f"seed-{s}").values()) for s in SEEDS])
                pooled = vals.std(ddof=1) / np.sqrt(vals.size)
                assert abs(pooled - metrics["best@1"]["stderr"]) > 1e-4


def test_one_more_seed_joins_the_group_and_another_run_is_refused(tmp_path, seedy, capsys) -> None:
    parent = tmp_path / "group"
    assert _run(parent, extra=("--seeds", "0,1")) == 0
    assert _run(parent, extra=("--seed", "5")) == 0  # --out names a group: the run becomes PARENT/seed-5
    assert json.loads((parent / MARKER).read_text())["seeds"] == [0, 1, 5]
    assert len(_rows(parent / "seed-5")) == LIMIT * N
    capsys.readouterr()
    rc = main(["run", "--task", "musique", "--split", "validation", "--model", "seedy:0.5", "--limit", str(LIMIT),
               "-n", "3", "--no-progress", "--out", str(parent), "--seed", "7"])
    err = capsys.readouterr().err
    assert rc == 2 and "seeds.json" in err and "sampling.n" in err and len(err.strip().splitlines()) == 1
    assert not (parent / "seed-7").exists()
    assert _run(tmp_path / "x", extra=("--seeds", "0,1", "--seed", "2")) == 2
    assert "--seed and --seeds" in capsys.readouterr().err


def test_parse_seeds_and_bad_markers(tmp_path, capsys) -> None:
    assert parse_seeds("0,1,2") == [0, 1, 2] and parse_seeds("0-3") == [0, 1, 2, 3] and parse_seeds("4, 2") == [4, 2]
    for bad, why in (("0,0", "twice"), ("a", "integers"), ("", "no seed"), ("-1", ">= 0")):
        with pytest.raises(ValueError, match=why):
            parse_seeds(bad)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / MARKER).write_text(json.dumps({"kind": "seeds", "seeds": ["0"]}))
    assert main(["show", str(broken)]) == 2
    err = capsys.readouterr().err
    assert "seeds.json: field 'seeds'" in err and len(err.strip().splitlines()) == 1


def test_mean_over_seeds_matches_numpy() -> None:
    rng = np.random.default_rng(1)
    ests = [Estimate(float(m), float(s), 10) for m, s in zip(rng.random(4), rng.random(4) / 10)]
    got = mean_over_seeds(ests + [Estimate(float("nan"), float("nan"), 0)])  # an undefined seed is left out
    means, ses = np.array([e.mean for e in ests]), np.array([e.stderr for e in ests])
    assert got.mean == pytest.approx(means.mean()) and got.n_seeds == 4 and got.n == 10
    assert got.stderr == pytest.approx(np.sqrt(np.sum(ses ** 2)) / 4)
    assert got.seed_stderr == pytest.approx(means.std(ddof=1) / 2)
    assert Estimate.from_dict(got.as_dict()) == got
    assert set(Estimate(0.5, 0.1, 3).as_dict()) == {"mean", "stderr", "n"}  # single runs keep their shape


def test_protocol_paper_sets_the_authors_seed_count(capsys) -> None:
    from vpo_harness.harness.app.commands.run import resolve_seeds
    from vpo_harness.harness.eval.protocols import eval_seeds

    assert eval_seeds("paper", "eureqa") == 4 and eval_seeds("paper", "toolrl") == 4
    assert eval_seeds("paper", "maze") == 1 and eval_seeds(None, "eureqa") == 1
    ns = lambda **kw: argparse.Namespace(**{"seeds": None, "seed": None, "protocol": "paper", "task": "toolrl", **kw})  # noqa: E731
    assert resolve_seeds(ns()) == [0, 1, 2, 3]
    assert "4 evaluation seeds" in capsys.readouterr().err
    assert resolve_seeds(ns(seed=3)) is None  # an explicit --seed is one run
    assert resolve_seeds(ns(seeds="5,6")) == [5, 6]
    assert resolve_seeds(ns(task="maze")) is None and resolve_seeds(ns(protocol=None)) is None


def _vpo(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "vpo_harness.harness.app.cli", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": child_pythonpath()})


def _keys(folder: Path) -> list[tuple[str, int]]:
    p = folder / "samples.jsonl"
    lines = p.read_text().splitlines() if p.exists() else []
    return [(r["problem_id"], r["chain_index"]) for r in map(json.loads, (ln for ln in lines if ln.endswith("}")))]


def test_kill9_mid_group_then_rerun_samples_only_the_missing_chains(tmp_path, capsys) -> None:
    common = ["run", "--task", "maze", "--model", "mock:moves", "--model-args", "latency_s=0.01", "--limit", "6",
              "-n", "4", "--seeds", "0,1,2", "--no-progress", "--flush-every", "1",
              "--no-cache"]  # the reference run would otherwise supply the crashy run's chains
    ref, out = tmp_path / "ref", tmp_path / "crashy"
    assert _vpo(common + ["--out", str(ref)]).wait(timeout=300) == 0
    proc = _vpo(common + ["--out", str(out)])
    deadline = time.time() + 120  # kill once seed 1 is part-way: seed 0 done, seed 2 not started
    while time.time() < deadline and proc.poll() is None and len(_keys(out / "seed-1")) < 7:
        time.sleep(0.005)
    assert proc.poll() is None, "the run ended before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    part = len(_keys(out / "seed-1"))
    assert len(_keys(out / "seed-0")) == 24 and 7 <= part < 24 and not (out / "seed-2" / "samples.jsonl").exists()
    # the interrupted group reads as one: the seeds stored so far, marked partial
    assert main(["show", str(out), "--select", ""]) == 0
    shown = capsys.readouterr().out
    assert "crashy (2 of 3 seeds, partial: seed 1 unfinished, seed 2 missing)" in shown, shown
    again = _vpo(common + ["--out", str(out)])
    assert again.wait(timeout=300) == 0
    err = again.stderr.read().decode()
    assert f"{out / 'seed-0'}: run already complete" in err
    assert f"{out / 'seed-1'}: resuming, {part} chains done, {24 - part} to go" in err
    for s in (0, 1, 2):
        keys = _keys(out / f"seed-{s}")
        assert len(keys) == len(set(keys)) == 24, f"seed {s}: duplicated or missing chains"
        got = {(r["problem_id"], r["chain_index"], r["text"]) for r in _rows(out / f"seed-{s}")}
        assert got == {(r["problem_id"], r["chain_index"], r["text"]) for r in _rows(ref / f"seed-{s}")}
