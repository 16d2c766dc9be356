"""RunConfig sections and run identity: what a folder records, what a resume may change, what it refuses."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator, Sequence

import pytest

import vpo_harness.harness.eval.runner as runner
from vpo_harness.benchmarks import get_task
from vpo_harness.benchmarks.maze import Maze
from vpo_harness.harness.core.config import ExecutionSpec, RunConfig
from vpo_harness.harness.core.models.base import Backend, GenRequest, Generation, SamplingConfig
from vpo_harness.harness.core.results import read_results
from vpo_harness.harness.core.store import RunStoreError
from tests.harness.scripted import ScriptedBackend


def cfg(tmp_path: Path, **kw) -> RunConfig:
    base = dict(task="maze", model="scripted:x", limit=3, n=4, m=1, ks=(1, 2, 4), out=str(tmp_path / "run"),
                progress=False)
    base.update(kw)
    return RunConfig.of(**base)


def test_flat_keywords_land_in_their_sections() -> None:
    c = RunConfig.of(task="musique", model="hf:x", task_options={"a": 1}, model_args={"b": 2}, n=3, m=2,
                     temperature=0.5, concurrency=4, limit=7, base_url="http://h")
    assert (c.task.name, c.task.options, c.task.limit) == ("musique", {"a": 1}, 7)
    assert (c.model.spec, c.model.args, c.execution.base_url) == ("hf:x", {"b": 2}, "http://h")
    assert (c.sampling.n, c.sampling.m, c.sampling.temperature) == (3, 2, 0.5)
    assert c.execution.concurrency == 4 and c.pool_size == 6
    with pytest.raises(TypeError, match="unknown field 'bogus'"):
        RunConfig.of(task="maze", model="hf:x", bogus=1)
    assert RunConfig.from_json(json.loads(json.dumps(c.to_json()))) == c


def test_identity_is_everything_but_execution(tmp_path: Path) -> None:
    a = cfg(tmp_path)
    b = cfg(tmp_path, concurrency=1, flush_every=1, score_workers=3, retry_errors=True)
    assert a.identity() == b.identity() and a.default_out() == b.default_out() and "execution" not in a.identity()
    assert cfg(tmp_path, n=5).default_out() != a.default_out()
    assert cfg(tmp_path, seed=1).default_out() != a.default_out()
    # a resume with other execution settings is the same run
    run = runner.run
    run(a, backend=ScriptedBackend())
    b2 = ScriptedBackend()
    run(b, backend=b2)
    assert b2.calls == []


def test_config_records_backend_problems_and_metric_seed(tmp_path: Path) -> None:
    folder = runner.run(cfg(tmp_path), backend=ScriptedBackend())
    rec = json.loads((folder / "config.json").read_text())
    ident = rec["identity"]
    assert rec["backends"] == [{"backend": "scripted"}]
    assert ident["problems"]["n"] == 3 and ident["problems"]["source"] == "loaded"
    assert ident["problems"]["ids"] == ["maze-test-0000", "maze-test-0001", "maze-test-0002"]
    assert len(ident["problems"]["sha256"]) == 64 and ident["metric_seed"] == 0
    assert ident["resolved_sampling"]["temperature"] == 0.7 and rec["execution"]["progress"] is False


def test_given_problems_are_recorded_and_a_data_change_is_refused(tmp_path: Path) -> None:
    problems = get_task("maze").load("test", limit=3)
    c = cfg(tmp_path)
    folder = runner.run(c, backend=ScriptedBackend(), problems=problems)
    ident = json.loads((folder / "config.json").read_text())["identity"]
    assert ident["problems"]["source"] == "given"
    # the same problems: a no-op; edited problem data: refused (it used to say "already complete")
    b = ScriptedBackend()
    runner.run(c, backend=b, problems=problems)
    assert b.calls == []
    edited = [problems[0].__class__(problems[0].id, {**problems[0].data, "budget": 1}, problems[0].meta)] + problems[1:]
    with pytest.raises(RunStoreError, match=r"problems\.sha256"):
        runner.run(c, backend=ScriptedBackend(), problems=edited)


class SameText(Backend):
    """Every chain is the same route whatever its seed: the pool does not depend on the run seed."""

    name = "same"

    def __init__(self, texts: dict[str, str]):
        self.texts = texts

    def generate(self, requests: Sequence[GenRequest], sampling: SamplingConfig) -> Iterator[Generation]:
        for req in requests:
            for c in req.chain_indices:
                yield Generation(req.problem_id, c, self.texts[req.problem_id][c % 2])


def test_vpo_objective_does_not_depend_on_the_run_seed(tmp_path: Path) -> None:
    """The metric's Dirichlet weights use a fixed seed: equal pools give equal VPO objectives across
    run seeds (they used the run seed before, so two seeds of one model were not comparable)."""
    from vpo_harness.benchmarks.maze import MazeInstance, best_route

    task = get_task("maze")
    probs = task.load("test", limit=3)
    texts = {p.id: [f"<answer>{', '.join(best_route(MazeInstance.from_problem(p), w))}</answer>"
                    for w in ([1, 0, 0, 0], [0, 1, 0, 1])] for p in probs}
    objs = []
    for seed in (0, 1):
        folder = runner.run(cfg(tmp_path, seed=seed, out=str(tmp_path / f"s{seed}")), backend=SameText(texts))
        res = read_results(folder)
        assert res is not None and res.get("vpo_objective").mean > 0
        objs.append(res.get("vpo_objective").mean)
    assert objs[0] == objs[1]


def test_old_format_folder_is_a_clear_error(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"task": "maze", "model": "scripted:x", "n": 4}))
    with pytest.raises(RunStoreError, match="older vpo-harness.*another --out"):
        runner.run(cfg(tmp_path), backend=ScriptedBackend())


def test_runner_closes_the_task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    closed: list[bool] = []

    class Counting(Maze):
        def close(self) -> None:
            closed.append(True)

    monkeypatch.setattr(runner, "get_task", lambda name, **kw: Counting(**kw))
    runner.run(cfg(tmp_path), backend=ScriptedBackend())
    assert closed == [True]
    with pytest.raises(ValueError):  # closed on the error path too
        runner.run(cfg(tmp_path, out=str(tmp_path / "r2")), backend=ScriptedBackend(), problems=[])
    assert closed == [True, True]
    assert ExecutionSpec().progress is True


def test_ks_are_metrics_not_identity(tmp_path: Path) -> None:
    """Other ks on a finished run recompute the metrics from the stored rows; nothing is sampled."""
    a = cfg(tmp_path, ks=(1, 2, 4))
    b = cfg(tmp_path, ks=(1, 3))
    assert a.identity() == b.identity() and a.default_out() == b.default_out()
    folder = runner.run(a, backend=ScriptedBackend())
    rows_before = (folder / "samples.jsonl").read_bytes()
    first = read_results(folder)
    assert first is not None and first.ks == [1, 2, 4]
    b2 = ScriptedBackend()
    runner.run(b, backend=b2)
    assert b2.calls == [] and (folder / "samples.jsonl").read_bytes() == rows_before
    res = read_results(folder)
    assert res is not None and res.ks == [1, 3]
    assert res.best[1].mean == pytest.approx(first.best[1].mean)
    assert first.best[2].mean <= res.best[3].mean <= first.best[4].mean
    assert json.loads((folder / "config.json").read_text())["ks"] == [1, 3]


def test_folder_written_with_ks_in_its_identity_resumes_with_other_ks(tmp_path: Path) -> None:
    """Folders from before ks left the identity (``identity.sampling.ks``) still resume."""
    folder = runner.run(cfg(tmp_path), backend=ScriptedBackend())
    rec = json.loads((folder / "config.json").read_text())
    rec["identity"]["sampling"]["ks"] = [1, 2, 4]
    rec.pop("ks", None)
    (folder / "config.json").write_text(json.dumps(rec))
    b2 = ScriptedBackend()
    runner.run(cfg(tmp_path, ks=(2,)), backend=b2)
    assert b2.calls == [] and read_results(folder).ks == [2]


def test_execution_model_args_are_not_identity(tmp_path: Path) -> None:
    """A resume may change timeouts, retries, batch sizes or the API key; those never re-sample, and
    the API key is not written into the run folder."""
    a = cfg(tmp_path, model="openai:m", model_args={"timeout": 5, "api_key": "sk-secret", "use_n": False})
    b = cfg(tmp_path, model="openai:m", model_args={"timeout": 60, "max_retries": 2, "use_n": False})
    assert a.identity() == b.identity() and a.default_out() == b.default_out()
    assert cfg(tmp_path, model="openai:m", model_args={"use_n": True}).identity() != a.identity()
    folder = runner.run(cfg(tmp_path, model="mock:moves", model_args={"latency_s": 0.001}))
    rows = (folder / "samples.jsonl").read_bytes()
    b2 = ScriptedBackend()
    runner.run(cfg(tmp_path, model="mock:moves", model_args={"latency_s": 0}), backend=b2)
    assert b2.calls == [] and (folder / "samples.jsonl").read_bytes() == rows
    c = cfg(tmp_path, model="openai:m", model_args={"api_key": "sk-secret"}, out=str(tmp_path / "o"))
    folder = runner.run(c, backend=ScriptedBackend())
    assert "sk-secret" not in (folder / "config.json").read_text()


def test_base_url_is_execution_not_identity(tmp_path: Path) -> None:
    """Where an openai: model is served is how the run ran: the same served model on another port is
    the same run (same folder name, resumable); the served model's name stays identity."""
    a = cfg(tmp_path, model="openai:m", base_url="http://127.0.0.1:8000/v1")
    b = cfg(tmp_path, model="openai:m", base_url="http://10.0.0.2:9000/v1")
    assert a.identity() == b.identity() and a.default_out() == b.default_out()
    assert "base_url" not in a.identity()["model"]
    assert cfg(tmp_path, model="openai:other", base_url="http://127.0.0.1:8000/v1").identity() != a.identity()
    assert a.to_json()["execution"]["base_url"] == "http://127.0.0.1:8000/v1"
    assert RunConfig.from_json(json.loads(json.dumps(a.to_json()))) == a


def test_chat_template_args_are_identity(tmp_path: Path) -> None:
    """Template arguments change the prompt the model sees, so they are part of the run; left out of
    the identity while empty, so folders from before the field resume under the same name."""
    plain = cfg(tmp_path)
    off = cfg(tmp_path, chat_template_args={"enable_thinking": False})
    on = cfg(tmp_path, chat_template_args={"enable_thinking": True})
    assert "chat_template_args" not in plain.identity()["sampling"]
    assert off.identity()["sampling"]["chat_template_args"] == {"enable_thinking": False}
    assert len({plain.default_out(), off.default_out(), on.default_out()}) == 3
    assert RunConfig.from_json(json.loads(json.dumps(off.to_json()))) == off
    with pytest.raises(ValueError, match="chat_template_args"):
        cfg(tmp_path, chat_template_args={"": 1}).validate()


def test_template_args_reach_the_backend_and_config(tmp_path: Path) -> None:
    seen: list[SamplingConfig] = []

    class Recording(ScriptedBackend):
        def generate(self, requests, sampling):
            seen.append(sampling)
            yield from super().generate(requests, sampling)

    c = cfg(tmp_path, chat_template_args={"enable_thinking": False, "a": 1})
    folder = runner.run(c, backend=Recording())
    assert seen and all(s.chat_template_args == (("a", 1), ("enable_thinking", False)) for s in seen)
    rec = json.loads((folder / "config.json").read_text())
    assert rec["identity"]["sampling"]["chat_template_args"] == {"a": 1, "enable_thinking": False}
    with pytest.raises(RunStoreError, match="chat_template_args"):  # other template args: another run
        runner.run(cfg(tmp_path, chat_template_args={"enable_thinking": True}), backend=ScriptedBackend())


def test_folder_with_base_url_in_its_identity_resumes_on_another_port(tmp_path: Path) -> None:
    """Folders written while base_url was identity resume against another URL."""
    folder = runner.run(cfg(tmp_path), backend=ScriptedBackend())
    rec = json.loads((folder / "config.json").read_text())
    rec["identity"]["model"]["base_url"] = "http://127.0.0.1:1/v1"
    (folder / "config.json").write_text(json.dumps(rec))
    b2 = ScriptedBackend()
    runner.run(cfg(tmp_path, base_url="http://127.0.0.1:2/v1"), backend=b2)
    assert b2.calls == []


def test_openai_run_resumes_against_a_server_on_another_port(tmp_path: Path) -> None:
    """A run cut short against one server is finished by the same command against the same model
    served on another port: only the missing chains are sampled, and config.json records the URL
    the run last used (a changed base_url used to be refused as another run)."""
    from vpo_harness.harness.app.cli import main
    from tests.fakes.scripted_openai import ScriptedOpenAIServer, maze_routes_responder

    out = tmp_path / "run"
    cmd = ["run", "--task", "maze", "--model", "openai:scripted", "--limit", "2", "-n", "3", "--out", str(out),
           "--no-progress", "--model-args", "use_n=false,max_retries=0"]
    with ScriptedOpenAIServer(maze_routes_responder(1)) as a:
        assert main([*cmd, "--base-url", a.base_url]) == 0
        assert len(a.requests) == 6
    lines = (out / "samples.jsonl").read_text().splitlines()
    (out / "samples.jsonl").write_text("\n".join(lines[:4]) + "\n")  # as if the first server died after 4
    with ScriptedOpenAIServer(maze_routes_responder(1)) as b:
        assert b.base_url != a.base_url
        assert main([*cmd, "--base-url", b.base_url]) == 0
        assert len(b.requests) == 2  # only the missing chains
    rec = json.loads((out / "config.json").read_text())
    assert rec["execution"]["base_url"] == a.base_url and "base_url" not in rec["identity"]["model"]
    assert [d["base_url"] for d in rec["backends"]] == [a.base_url, b.base_url]
    assert len((out / "samples.jsonl").read_text().splitlines()) == 6
