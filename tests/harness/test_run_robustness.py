"""Runs that nothing can brick: each test reproduces a failure found by trying (issue 8) and failed
before its fix."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator, Sequence

import pytest

from vpo_harness.harness.app.cli import main
from vpo_harness.harness.core.models.base import GenRequest, Generation, SamplingConfig
from vpo_harness.harness.core.results import load_run
from vpo_harness.harness.eval.runner import RunConfig, run
from vpo_harness.harness.core.store import RESULTS, SAMPLES, RunStore, RunStoreError, iter_samples
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
    import vpo_harness.harness.core.store as store_mod

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


# ---------------------------------------------------------------------------------------------------
# read paths total (issue 20): damaged or odd runs give one line and a non-zero exit, never a
# traceback or a silently wrong number
def _varied_run(folder: Path) -> Path:
    from tests.reports.conftest import write_run

    return write_run(folder, "hf:x", 4, 2, 4, spread=0.6, seed=1)


def _rows_of(folder: Path) -> list[dict]:
    return [json.loads(x) for x in (folder / SAMPLES).read_text().splitlines() if x.strip()]


def _write_rows(folder: Path, rows: list[dict]) -> None:
    (folder / SAMPLES).write_text("".join(json.dumps(r) + "\n" for r in rows))


def _one_line(capsys, rc: int) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1, err
    return err[0]


def _every_reader(folder: Path, ref: Path, tmp_path: Path) -> list[list[str]]:
    return [["show", str(folder)], ["compare", str(ref), str(folder), "--resamples", "200"],
            ["report", str(folder), "--out", str(tmp_path / "r.html"), "--resamples", "200"],
            ["plot", str(folder), "--out", str(tmp_path / "p.png")]]


def test_empty_run_is_one_line_in_report_compare_and_show(tmp_path: Path, capsys) -> None:
    ref = _varied_run(tmp_path / "ref")
    folder = run(cfg(tmp_path), backend=ScriptedBackend())
    (folder / SAMPLES).write_text("")  # started, nothing sampled yet
    (folder / RESULTS).unlink()
    for args in _every_reader(folder, ref, tmp_path)[:3]:  # report raised IndexError; compare exited 0
        line = _one_line(capsys, main(args))
        assert str(folder) in line and "no rows" in line, (args, line)
    assert not (tmp_path / "r.html").exists()
    # runs with no problem in common: nothing to pair (it printed a table of dashes and exited 0)
    from tests.reports.conftest import write_run

    apart = write_run(tmp_path / "apart", "hf:x", 4, 2, 2, spread=0.6, seed=2, problem_offset=4)
    line = _one_line(capsys, main(["compare", str(ref), str(apart), "--resamples", "200"]))
    assert "share no problem" in line and str(apart) in line


def test_nan_and_inf_rows_are_refused_with_file_and_line(tmp_path: Path, capsys) -> None:
    ref = _varied_run(tmp_path / "ref")
    folder = _varied_run(tmp_path / "nan")
    rows = _rows_of(folder)
    rows[2]["scalars"][0] = float("nan")  # json writes NaN / Infinity, and reads them back as floats
    _write_rows(folder, rows)
    for args in _every_reader(folder, ref, tmp_path):  # show and compare printed "diversity inf+-nan"
        line = _one_line(capsys, main(args))
        assert f"{folder / SAMPLES}: line 3: field 'scalars'" in line and "nan" in line, (args, line)
    rows[2]["scalars"][0] = 0.5
    rows[5]["rewards"][1][2] = float("inf")
    _write_rows(folder, rows)
    line = _one_line(capsys, main(["show", str(folder)]))
    assert "line 6: field 'rewards': answer 2, component 3 is inf (not finite" in line
    rows[5]["rewards"][1][2] = 1.5
    _write_rows(folder, rows)
    assert "outside [0, 1]" in _one_line(capsys, main(["report", str(folder), "--out", str(tmp_path / "r.html")]))


def test_wrong_typed_fields_name_file_line_and_field(tmp_path: Path, capsys) -> None:
    ref = _varied_run(tmp_path / "ref")
    folder = _varied_run(tmp_path / "typed")
    rows = _rows_of(folder)
    rows[3]["chain_index"] = "x"
    _write_rows(folder, rows)
    for args in _every_reader(folder, ref, tmp_path):
        assert f"{folder / SAMPLES}: line 4: field 'chain_index'" in _one_line(capsys, main(args)), args
    rows[3]["chain_index"] = 3
    rows[3]["passed"] = ["yes", False]
    _write_rows(folder, rows)
    assert "line 4: field 'passed'" in _one_line(capsys, main(["show", str(folder)]))
    rows[3]["passed"] = [False]  # one flag for two answers: zip would drop an answer silently
    _write_rows(folder, rows)
    assert "line 4: fields" in _one_line(capsys, main(["show", str(folder)]))
    # results.json and config.json fields too
    good = _varied_run(tmp_path / "good")
    res = json.loads((good / RESULTS).read_text())
    res["n_errors"] = "many"
    (good / RESULTS).write_text(json.dumps(res))
    line = _one_line(capsys, main(["show", str(good)]))
    assert f"{good / RESULTS}: field 'n_errors'" in line


def test_results_older_than_samples_are_recomputed_and_marked_partial(tmp_path: Path, capsys) -> None:
    full = _varied_run(tmp_path / "full")
    cut = tmp_path / "cut"
    import shutil

    shutil.copytree(full, cut)
    lines = (cut / SAMPLES).read_text().splitlines(keepends=True)
    (cut / SAMPLES).write_text("".join(lines[: len(lines) // 2]))  # cut in half under the full results.json
    # what the rows left say: the same folder with no results.json (metrics over the rows stored so far)
    bare = tmp_path / "bare"
    shutil.copytree(cut, bare)
    (bare / RESULTS).unlink()
    assert main(["show", str(bare), "--select", ""]) == 0
    want = capsys.readouterr().out.split("\n")[1].split()[2:]
    assert main(["show", str(full), "--select", ""]) == 0
    old = capsys.readouterr().out.split("\n")[1].split()[1:]
    assert main(["show", str(cut), "--select", ""]) == 0
    got = capsys.readouterr()
    row = got.out.split("\n")[1].split()
    assert row[:2] == ["cut", "(partial)"] and row[2:] == want and row[2:] != old
    assert "results.json was computed from other rows" in got.err
    # a plot reads the same recomputed numbers
    run_ = load_run(cut)
    assert run_.summary.raw["partial"] and run_.summary.n_chains == len(lines) // 2
    # the runner's results.json records the samples.jsonl size it was computed from: that decides,
    # whatever the file times say (a copy may reorder them)
    import os

    folder = run(cfg(tmp_path), backend=ScriptedBackend())
    assert load_run(folder).summary.n_chains == 12 and not load_run(folder).summary.raw.get("partial")
    lines = (folder / SAMPLES).read_text().splitlines(keepends=True)
    (folder / SAMPLES).write_text("".join(lines[:5]))
    later = (folder / SAMPLES).stat().st_mtime + 60
    os.utime(folder / RESULTS, (later, later))
    got = load_run(folder).summary
    assert got.n_chains == 5 and got.raw["partial"]
    # every row still there (a results.json of an older version, its file time behind the rows'):
    # recomputed from the same rows, not called partial
    touched = tmp_path / "touched"
    shutil.copytree(full, touched)
    res = json.loads((touched / RESULTS).read_text())
    res.pop("samples_bytes", None)
    (touched / RESULTS).write_text(json.dumps(res))
    os.utime(touched / RESULTS, (later - 3600, later - 3600))
    assert main(["show", str(touched), "--select", ""]) == 0
    row = capsys.readouterr().out.split("\n")[1].split()
    assert row[:2] == ["touched", "(recomputed)"] and row[2:] == old


def test_reward_outside_unit_interval_is_an_error_row_naming_task_and_component(tmp_path: Path,
                                                                                 monkeypatch) -> None:
    import numpy as np

    from vpo_harness.benchmarks.maze import Maze

    real = Maze.score

    def broken(self, problem, answers):  # a scorer bug on one problem: NaN gold, then 1.5 diamond
        r, det = real(self, problem, answers)
        r = np.array(r, dtype=float)
        if problem.id.endswith("1"):
            r[:, 1] = np.nan
        return r, det

    monkeypatch.setattr(Maze, "score", broken)
    folder = run(cfg(tmp_path), backend=ScriptedBackend())
    rows = list(iter_samples(folder / SAMPLES))  # the stored rows read back: no NaN was written
    bad = [r for r in rows if r["error"]]
    assert len(bad) == 4 and {r["problem_id"] for r in bad} == {"maze-test-0001"}
    assert all("task 'maze'" in r["error"] and "component 'gold'" in r["error"] and "nan" in r["error"]
               for r in bad)
    assert all(r["answers"] == [] and r["rewards"] == [] for r in bad)
    res = json.loads((folder / RESULTS).read_text())
    assert res["n_errors"] == 4

    def too_big(self, problem, answers):
        r, det = real(self, problem, answers)
        return np.array(r, dtype=float) + np.array([0.0, 0.0, 1.5, 0.0]), det

    monkeypatch.setattr(Maze, "score", too_big)
    from vpo_harness.benchmarks import get_task
    from vpo_harness.benchmarks.scoring import score_generation

    task = get_task("maze")
    prob = task.load("test", limit=1)[0]
    row = score_generation(task, prob, Generation(prob.id, 0, "<answer>UP</answer>"), 1, seed=1)
    assert row.error and "component 'diamond'" in row.error and "1.5" in row.error


class EventfulExecutor:
    """The local executor, plus what a Ray executor reports: a replica lost and restarted mid-run."""

    def __init__(self, inner):
        self.inner, self.on_event = inner, None

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def rows(self, *a, **kw):
        for i, row in enumerate(self.inner.rows(*a, **kw)):
            if i == 2 and self.on_event is not None:
                self.on_event({"event": "replica_lost", "slot": 1, "error": "ActorDiedError"})
                self.on_event({"event": "replica_restarted", "slot": 1, "restarts": 1})
            yield row


def test_replica_events_are_recorded_in_config_json_and_shown(tmp_path: Path, capsys) -> None:
    from vpo_harness.harness.core.executors.local import LocalExecutor

    c = cfg(tmp_path)
    ex = EventfulExecutor(LocalExecutor(backend=ScriptedBackend()))
    folder = run(c, executor=ex)
    config = json.loads((folder / "config.json").read_text())
    events = config["execution"]["events"]
    assert [e["event"] for e in events] == ["replica_lost", "replica_restarted"]
    assert all(e["time"] for e in events)
    # not identity: the same command resumes (a no-op here) and keeps the record
    run(c, backend=ScriptedBackend())
    assert RunStore(folder).events() == events
    assert main(["show", str(folder), "--select", ""]) == 0
    out = capsys.readouterr().out
    assert "2 execution events" in out and "replica_lost" in out and "slot=1" in out


def test_ray_executor_reports_losses_and_restarts(tmp_path: Path) -> None:
    """RayExecutor._replace (what a dead actor triggers) emits the events, with no cluster needed."""
    from vpo_harness.harness.core.executors import BackendSpec, ExecutorConfig
    from vpo_harness.harness.core.executors.ray_executor import RayExecutor

    ex = RayExecutor(BackendSpec("mock:moves", None, {}), ExecutorConfig(kind="ray", replicas=2, max_restarts=1))
    ex.actors, ex._generation = [object(), object()], [1, 1]
    ex._spawn = lambda slot: ex._generation.__setitem__(slot, ex._generation[slot] + 1)  # type: ignore[method-assign]
    got: list[dict] = []
    ex.on_event = got.append
    ex._replace(0, 1, RuntimeError("gone"))
    ex._replace(0, 1, RuntimeError("gone"))  # the same dead actor failing another call: no new event
    ex._replace(1, 1, RuntimeError("gone"))  # restart budget spent
    assert [e["event"] for e in got] == ["replica_lost", "replica_restarted", "replica_lost", "replica_given_up"]
    assert got[0]["slot"] == 0 and got[0]["error"] == "RuntimeError" and got[1]["actor"] == 2
    store = RunStore(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"identity": {}, "execution": {"executor": "ray"}}))
    for e in got:
        store.append_event(e)
    assert [e["event"] for e in store.events()] == [e["event"] for e in got]
    assert json.loads((tmp_path / "config.json").read_text())["execution"]["executor"] == "ray"


def _closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_run_that_fails_before_its_first_row_leaves_no_folder(tmp_path: Path, capsys) -> None:
    """An unreachable server fails the run after its folder was made: the folder (and the parents the
    command made) go again, for one run and for a --seeds group; a folder that held a run before
    stays, and so does a run that stored a row before it failed."""
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    argv = ["run", "--task", "maze", "--model", "openai:x", "--base-url", url, "--limit", "2", "-n", "2",
            "--no-progress"]
    assert main(argv + ["--out", str(tmp_path / "new" / "run")]) != 0
    assert "cannot connect" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()
    assert main(argv + ["--seeds", "0,1", "--out", str(tmp_path / "group")]) != 0
    assert not (tmp_path / "group").exists()
    (tmp_path / "empty").mkdir()  # a folder made by hand for the run: kept, but holds nothing of it
    assert main(argv + ["--out", str(tmp_path / "empty")]) != 0
    assert list((tmp_path / "empty").iterdir()) == []
    # a run folder from before is the user's: kept as it was
    old = run(cfg(tmp_path, out=str(tmp_path / "old")), backend=ScriptedBackend())
    before = sorted(p.name for p in old.iterdir())
    assert main(argv + ["--out", str(old)]) != 0
    assert sorted(p.name for p in old.iterdir()) == before
    # so is a folder some earlier command began (its config.json, no rows yet): not this command's to remove
    begun = tmp_path / "begun"
    begun.mkdir()
    (begun / "config.json").write_text((old / "config.json").read_text())
    assert main(argv + ["--out", str(begun)]) != 0
    assert (begun / "config.json").is_file()


class FailsAfterOne(ScriptedBackend):
    """Yields one chain, then fails: the run has a row to keep."""

    def generate(self, requests: Sequence[GenRequest], sampling: SamplingConfig) -> Iterator[Generation]:
        for g in super().generate(requests, sampling):
            yield g
            raise RuntimeError("the server went away")


def test_a_run_that_failed_after_a_row_keeps_its_folder(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="went away"):
        run(cfg(tmp_path, out=str(tmp_path / "kept"), flush_every=1), backend=FailsAfterOne())
    assert len(list(iter_samples(tmp_path / "kept" / SAMPLES))) == 1  # resumable: the row is there
