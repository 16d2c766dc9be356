"""Runner + run store: folder layout, metrics, resume after a crash, config mismatch, errors kept."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from vpo_harness.harness.eval.runner import RunConfig, run
from vpo_harness.harness.core.results import load_run
from vpo_harness.harness.core.store import RunStore, RunStoreError
from tests.harness.scripted import ScriptedBackend


def cfg(tmp_path: Path, **kw) -> RunConfig:
    base = dict(task="maze", model="scripted:x", split="test", limit=3, n=4, m=1, ks=(1, 2, 4),
                out=str(tmp_path / "run"), progress=False, flush_every=2)
    base.update(kw)
    return RunConfig.of(**base)


def sample_set(folder: Path) -> set[tuple[str, int, str]]:
    rows = [json.loads(l) for l in (folder / "samples.jsonl").read_text().splitlines()]
    return {(r["problem_id"], r["chain_index"], r["text"]) for r in rows}


def test_run_writes_folder_and_metrics(tmp_path: Path) -> None:
    folder = run(cfg(tmp_path, m=3), backend=ScriptedBackend(m=3))
    assert {p.name for p in folder.iterdir()} >= {"config.json", "samples.jsonl", "results.json"}
    loaded = load_run(folder)
    assert len(loaded.chains) == 12 and len(loaded.candidates) == 36
    assert list(loaded.candidates.columns[-4:]) == ["completion", "gold", "diamond", "avoid_lava"]
    res = loaded.results
    assert res["metrics"]["n_candidates"] == 36 and res["pool_size"] == 12
    for k in (1, 2, 4):
        assert 0.0 <= res["metrics"][f"best@{k}"]["mean"] <= 1.0
    b = [res["metrics"][f"best@{k}"]["mean"] for k in (1, 2, 4)]
    assert b[0] <= b[1] <= b[2]
    # best@1 is the mean candidate scalar
    assert res["metrics"]["best@1"]["mean"] == pytest.approx(
        loaded.candidates.groupby("problem_id")["scalar"].mean().mean(), abs=1e-6)
    assert loaded.config["identity"]["components"] == ["completion", "gold", "diamond", "avoid_lava"]
    assert loaded.config["versions"]["numpy"]


def test_seeds_make_chains_distinct(tmp_path: Path) -> None:
    folder = run(cfg(tmp_path), backend=ScriptedBackend())
    texts = [t for _, _, t in sample_set(folder)]
    assert len(set(texts)) == len(texts)


def test_finished_run_is_noop(tmp_path: Path) -> None:
    c = cfg(tmp_path)
    folder = run(c, backend=ScriptedBackend())
    before = (folder / "samples.jsonl").read_bytes()
    b2 = ScriptedBackend()
    run(c, backend=b2)
    assert b2.calls == [] and (folder / "samples.jsonl").read_bytes() == before


def test_resume_after_crash_equals_uninterrupted(tmp_path: Path) -> None:
    ref = run(cfg(tmp_path, out=str(tmp_path / "ref")), backend=ScriptedBackend())
    c = cfg(tmp_path)
    folder = Path(c.execution.out)
    # simulate a crash: keep 5 complete rows and half of the sixth
    lines = (ref / "samples.jsonl").read_text().splitlines(keepends=True)
    RunStore(folder).init(json.loads((ref / "config.json").read_text()))
    (folder / "samples.jsonl").write_text("".join(lines[:5]) + lines[5][: len(lines[5]) // 2])
    b = ScriptedBackend()
    run(c, backend=b)
    assert len(b.calls) == 12 - 5
    assert sample_set(folder) == sample_set(ref)
    assert len((folder / "samples.jsonl").read_text().splitlines()) == 12


def test_config_mismatch_is_refused(tmp_path: Path) -> None:
    run(cfg(tmp_path), backend=ScriptedBackend())
    with pytest.raises(RunStoreError, match=r"sampling.n is 4 there, 5 now \(-n\).*to resume it, run the command with -n 4"):
        run(cfg(tmp_path, n=5), backend=ScriptedBackend())


def test_folder_without_rows_takes_the_corrected_command(tmp_path: Path) -> None:
    """A first attempt that failed before any chain was stored (a typo in --model) leaves no folder
    behind; the corrected command starts the run there, not refused as "a different run"."""
    from vpo_harness.harness.app.cli import main

    out = str(tmp_path / "run")
    assert main(["run", "--task", "maze", "--model", "mok:moves", "--limit", "2", "-n", "2", "--out", out,
                 "--no-progress"]) == 2
    assert not (tmp_path / "run").exists()
    assert main(["run", "--task", "maze", "--model", "mock:moves", "--limit", "2", "-n", "2", "--out", out,
                 "--no-progress"]) == 0
    rec = json.loads((tmp_path / "run" / "config.json").read_text())
    assert rec["identity"]["model"]["spec"] == "mock:moves" and len(load_run(out).chains) == 4
    with pytest.raises(RunStoreError, match="different run"):  # once rows exist, a change is refused
        run(cfg(tmp_path, model="mock:words"), backend=ScriptedBackend())


def test_failures_are_recorded_and_retryable(tmp_path: Path) -> None:
    c = cfg(tmp_path)
    folder = run(c, backend=ScriptedBackend(fail=[1]))
    res = load_run(folder).results
    assert res["n_errors"] == 3 and res["metrics"]["n_candidates"] == 9
    c.execution.retry_errors = True
    b = ScriptedBackend()
    run(c, backend=b)
    assert sorted(b.calls) == sorted((p, 1) for p in {p for p, _ in b.calls})
    res2 = load_run(folder).results
    assert res2["n_errors"] == 0 and res2["metrics"]["n_candidates"] == 12


def test_malformed_samples_line_names_file_and_line(tmp_path: Path) -> None:
    folder = run(cfg(tmp_path), backend=ScriptedBackend())
    p = folder / "samples.jsonl"
    lines = p.read_text().splitlines(keepends=True)
    lines[2] = "{not json\n"
    p.write_text("".join(lines))
    with pytest.raises(RunStoreError, match=r"samples.jsonl: line 3"):
        load_run(folder)


def test_pool_counts_chain_answers(tmp_path: Path) -> None:
    folder = run(cfg(tmp_path, m=3, n=2, ks=(1, 6)), backend=ScriptedBackend(m=3))
    res = load_run(folder).results
    assert res["metrics"]["best@6"]["n"] == 3  # pool of 2 chains x 3 answers supports k = 6
    cand = load_run(folder).candidates
    # k = pool size: best@6 is the pool maximum, best@1 the pool mean (varied pools: tests/harness/test_pools.py)
    per = cand.groupby("problem_id")["scalar"]
    assert res["metrics"]["best@6"]["mean"] == pytest.approx(float(per.max().mean()), abs=1e-6)
    assert res["metrics"]["best@1"]["mean"] == pytest.approx(float(per.mean().mean()), abs=1e-6)


def test_changed_weights_are_refused(tmp_path: Path) -> None:
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "config.json").write_text("{}")
    (ckpt / "model.safetensors").write_bytes(b"weights-v1")
    c = cfg(tmp_path, model=f"hf:{ckpt}")
    run(c, backend=ScriptedBackend())
    run(c, backend=ScriptedBackend())  # same weights: a no-op resume
    (ckpt / "model.safetensors").write_bytes(b"weights-v2")
    with pytest.raises(RunStoreError, match="model_fingerprint"):
        run(c, backend=ScriptedBackend())
