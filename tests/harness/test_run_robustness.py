"""Runs that nothing can brick: each test reproduces a failure found by trying (issue 8) and failed
before its fix."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator, Sequence

import pytest

from harness.cli import main
from harness.models.base import GenRequest, Generation, SamplingConfig
from harness.results import load_run
from harness.runner import RunConfig, run
from harness.store import RESULTS, SAMPLES, RunStore, RunStoreError, iter_samples
from tests.harness.scripted import ScriptedBackend


def cfg(tmp_path: Path, **kw) -> RunConfig:
    base = dict(task="maze", model="scripted:x", split="test", limit=3, n=4, m=1, ks=(1, 2, 4),
                out=str(tmp_path / "run"), progress=False, flush_every=64)
    base.update(kw)
    return RunConfig.of(**base)


class SurrogateBackend(ScriptedBackend):
    """Appends a lone surrogate (legal in a Python str, not encodable as UTF-8) to every chain."""

    def generate(self, requests: Sequence[GenRequest], sampling: SamplingConfig) -> Iterator[Generation]:
        for g in super().generate(requests, sampling):
            g.text = g.text.replace("<answer>", "\ud800 <answer>\udfff ")
            yield g


def test_lone_surrogate_is_stored_escaped_and_scored(tmp_path: Path) -> None:
    ref = run(cfg(tmp_path, out=str(tmp_path / "ref")), backend=ScriptedBackend())
    folder = run(cfg(tmp_path), backend=SurrogateBackend())  # raised UnicodeEncodeError, losing 12 rows
    rows = list(iter_samples(folder / SAMPLES))
    assert len(rows) == 12 and all("\ud800" in r["text"] for r in rows)  # the exact text is kept
    assert b"\\ud800" in (folder / SAMPLES).read_bytes()  # ... escaped on disk, which stays valid UTF-8
    (folder / SAMPLES).read_bytes().decode("utf-8")
    # scored like the same routes without the surrogate
    want = {(r["problem_id"], r["chain_index"]): r["scalars"] for r in iter_samples(ref / SAMPLES)}
    assert {(r["problem_id"], r["chain_index"]): r["scalars"] for r in rows} == want
    assert load_run(folder).summary.best[4].mean == load_run(ref).summary.best[4].mean


def test_resume_killed_before_results_rewrite_recomputes_metrics(tmp_path: Path) -> None:
    c = cfg(tmp_path)
    folder = run(c, backend=ScriptedBackend(fail=[1]))
    stale = json.loads((folder / RESULTS).read_text())
    assert stale["n_errors"] == 3
    # a --retry-errors resume that was killed after appending its rows, before writing results.json:
    # write the retried rows, leave results.json as it was
    full = run(cfg(tmp_path, out=str(tmp_path / "full")), backend=ScriptedBackend())
    retried = [ln for ln in (full / SAMPLES).read_text().splitlines(keepends=True) if '"chain_index": 1,' in ln]
    assert len(retried) == 3
    with open(folder / SAMPLES, "a") as fh:
        fh.writelines(retried)
    (folder / RESULTS).write_text(json.dumps(stale))  # what the killed resume left behind
    b = ScriptedBackend()
    run(c, backend=b)  # said "already complete" and kept the stale metrics forever
    assert b.calls == []
    res = json.loads((folder / RESULTS).read_text())
    assert res["n_errors"] == 0 and res["metrics"]["n_candidates"] == 12
    assert res["metrics"]["best@4"] == json.loads((full / RESULTS).read_text())["metrics"]["best@4"]


def test_results_are_removed_before_new_rows_are_appended(tmp_path: Path) -> None:
    c = cfg(tmp_path)
    folder = run(c, backend=ScriptedBackend(fail=[1]))
    c.execution.retry_errors = True

    class Killed(ScriptedBackend):
        def generate(self, requests, sampling):
            yield from super().generate(requests, sampling)
            assert not (folder / RESULTS).exists()  # no stale metrics while new rows are written
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(c, backend=Killed())
    assert not (folder / RESULTS).exists()
    assert len(list(iter_samples(folder / SAMPLES))) == 15  # the buffered rows were flushed
    c.execution.retry_errors = False
    b = ScriptedBackend()
    run(c, backend=b)
    assert b.calls == [] and json.loads((folder / RESULTS).read_text())["n_errors"] == 0


def test_second_run_on_the_same_folder_is_refused(tmp_path: Path, capsys) -> None:
    c = cfg(tmp_path)
    holder = RunStore(Path(c.execution.out))
    holder.lock()
    try:
        with pytest.raises(RunStoreError, match="another vpo run is writing this folder"):
            run(c, backend=ScriptedBackend())
        rc = main(["run", "--task", "maze", "--model", "mock:moves", "--limit", "1", "-n", "2",
                   "--out", c.execution.out, "--no-progress"])
        err = capsys.readouterr().err.strip()
        assert rc != 0 and len(err.splitlines()) == 1 and "another vpo run" in err
        assert not (Path(c.execution.out) / SAMPLES).exists()
    finally:
        holder.unlock()
    run(c, backend=ScriptedBackend())  # free again once the first one ends


def test_cut_multibyte_last_line_is_skipped(tmp_path: Path, capsys) -> None:
    folder = run(cfg(tmp_path), backend=ScriptedBackend())
    data = (folder / SAMPLES).read_bytes()
    (folder / SAMPLES).write_bytes(data + '{"problem_id": "é'.encode()[:-1])  # cut inside "é"
    assert len(list(iter_samples(folder / SAMPLES))) == 12
    assert main(["show", str(folder), "--select", ""]) == 0
    assert "best@4" in capsys.readouterr().out


def test_unwritable_out_is_one_line(tmp_path: Path, capsys) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")  # even root cannot create a folder under a file
    rc = main(["run", "--task", "maze", "--model", "mock:moves", "--limit", "1", "-n", "2",
               "--out", str(blocker / "run"), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert rc != 0 and len(err.splitlines()) == 1 and "cannot write" in err and str(blocker / "run") in err


def test_full_disk_is_one_line_and_keeps_rows(tmp_path: Path, monkeypatch, capsys) -> None:
    import errno
    import harness.store as store_mod

    real_open = open
    writes = {"n": 0}

    class FullFile:
        def __init__(self, fh):
            self.fh = fh

        def write(self, data):
            writes["n"] += 1
            if writes["n"] > 1:
                raise OSError(errno.ENOSPC, "No space left on device")
            return self.fh.write(data)

        def __getattr__(self, name):
            return getattr(self.fh, name)

    def fake_open(path, mode="r", *a, **kw):
        fh = real_open(path, mode, *a, **kw)
        return FullFile(fh) if str(path).endswith(SAMPLES) and "a" in mode else fh

    monkeypatch.setattr(store_mod, "open", fake_open, raising=False)
    out = tmp_path / "full"
    rc = main(["run", "--task", "maze", "--model", "mock:moves", "--limit", "2", "-n", "4", "--flush-every", "4",
               "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc != 0 and len(err) == 1 and "no space left on device" in err[0] and SAMPLES in err[0]
    assert len(list(iter_samples(out / SAMPLES))) == 4  # the batch written before the disk filled
