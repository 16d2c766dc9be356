"""Canonical run identity: a zoo name and its checkpoint folder (relative or absolute) are one model,
and "unset" temperature / top-p and the task's default are one run. So `vpo demo`'s runs are the
runs the README Quickstart's commands name, and folders written before still resume."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from vpo_harness.benchmarks.maze import Maze
from vpo_harness.harness.app.cli import build_parser, main
from vpo_harness.harness.app.demo import demo_config
from vpo_harness.harness.core.config import RunConfig, canonical_identity
from vpo_harness.harness.core.models.zoo import canonical_model, canonical_spec
from vpo_harness.harness.core.paths import BUNDLED_CHECKPOINTS
from vpo_harness.harness.core.store import RunStore, RunStoreError
from vpo_harness.harness.eval.runner import build_config_record, canonical_config, run

README = Path(__file__).resolve().parents[2] / "README.md"
VPO = BUNDLED_CHECKPOINTS / "maze-tiny-vpo"


def test_a_zoo_model_has_one_spelling(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(BUNDLED_CHECKPOINTS.parent)
    for spelled in ("maze-tiny-vpo", str(VPO), f"{VPO}/", "checkpoints/maze-tiny-vpo", "./checkpoints/maze-tiny-vpo/",
                    "checkpoints/../checkpoints/maze-tiny-vpo"):
        assert canonical_model(spelled) == "maze-tiny-vpo", spelled
    assert canonical_spec(f"hf:{VPO}") == canonical_spec("vllm:maze-tiny-vpo").replace("vllm", "hf") == "hf:maze-tiny-vpo"
    # another local folder: relative and absolute are one model (its absolute path)
    own = tmp_path / "ckpt"
    own.mkdir()
    monkeypatch.chdir(tmp_path)
    assert canonical_spec("hf:ckpt") == canonical_spec(f"hf:{own}/") == f"hf:{own.resolve()}"
    # names that are not local folders, and other backends, are left as typed
    for spec in ("hf:Qwen/Qwen3-1.7B", "openai:maze-tiny-vpo", "mock:moves", "openai:ckpt"):
        assert canonical_spec(spec) == spec


def test_unset_and_the_default_are_one_run(tmp_path: Path) -> None:
    task = Maze()
    unset = RunConfig.of(task="maze", model="mock:moves", n=2)
    typed = RunConfig.of(task="maze", model="mock:moves", n=2, temperature=task.default_temperature,
                         top_p=task.default_top_p)
    a, b = canonical_config(unset, task), canonical_config(typed, task)
    assert a.identity() == b.identity() and a.default_out() == b.default_out()
    assert a.sampling.temperature == 0.7 and unset.sampling.temperature is None  # the input is not edited
    other = canonical_config(RunConfig.of(task="maze", model="mock:moves", n=2, temperature=0.5), task)
    assert other.identity() != a.identity()


def _quickstart_runs() -> list[list[str]]:
    """The `vpo run` lines of the README's Quickstart block that sample a bundled checkpoint."""
    text = README.read_text(encoding="utf-8")
    block = text.split("## Quickstart", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    lines = [ln.split("#", 1)[0].strip() for ln in block.splitlines()]
    runs = [shlex.split(ln)[1:] for ln in lines if re.match(r"vpo run .*--model hf:maze-tiny-", ln)]
    assert len(runs) == 2, block
    return runs


def _with_out(argv: list[str], out: Path, *extra: str) -> list[str]:
    i = argv.index("--out")
    return argv[:i] + argv[i + 2:] + ["--out", str(out), "--no-progress", *extra]


def test_demo_runs_are_the_quickstart_runs(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from vpo_harness.harness.app.commands.run import build_config

    task = Maze()
    for argv in _quickstart_runs():
        method = argv[argv.index("--model") + 1].split("maze-tiny-", 1)[1]
        demo = demo_config(BUNDLED_CHECKPOINTS / f"maze-tiny-{method}", method == "vpo", tmp_path / method, None, 200)
        cli = build_config(build_parser().parse_args(_with_out(argv, tmp_path / method)))
        assert canonical_config(cli, task).identity() == canonical_config(demo, task).identity(), method
        # the record the runner writes (what a resume checks) agrees too, and names the zoo model
        recs = [build_config_record(canonical_config(c, task), task, _sampling(c, task), [], "loaded")["identity"]
                for c in (cli, demo)]
        assert recs[0] == recs[1] and recs[0]["model"]["spec"] == f"hf:maze-tiny-{method}"
    capsys.readouterr()


def _sampling(cfg: RunConfig, task: Maze):
    from vpo_harness.harness.core.models.base import SamplingConfig

    c = canonical_config(cfg, task)
    return SamplingConfig(temperature=c.sampling.temperature, top_p=c.sampling.top_p, max_tokens=c.sampling.max_tokens)


def test_quickstart_command_reuses_the_demos_rows(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """The demo's run step (on 2 mazes), then the Quickstart's first command on the same 2 mazes
    into the demo's folder: 0 new chains."""
    out = tmp_path / "demo" / "maze-tiny-vpo"
    cfg = demo_config(VPO, True, out, 2, 200)
    cfg.execution.progress = False
    run(cfg)
    rows = (out / "samples.jsonl").read_bytes()
    assert len(rows.splitlines()) == 2 * 10
    capsys.readouterr()
    argv = _quickstart_runs()[0]
    assert main(_with_out(argv, out, "--limit", "2")) == 0
    assert "run already complete" in capsys.readouterr().err
    assert (out / "samples.jsonl").read_bytes() == rows


def _old_record(tmp_path: Path, spec: str, temperature: float | None = None) -> dict:
    """config.json as versions before canonical identities wrote it: the model as typed, an unset
    temperature as None (the value used only in resolved_sampling)."""
    task = Maze()
    cfg = RunConfig.of(task="maze", model=spec, n=2, temperature=temperature, limit=1, out=str(tmp_path / "run"))
    rec = build_config_record(cfg, task, _sampling(cfg, task), [], "loaded")
    return rec


def test_folders_written_before_still_resume(tmp_path: Path) -> None:
    old = _old_record(tmp_path, f"hf:{VPO}")
    assert old["identity"]["model"]["spec"] == f"hf:{VPO}" and old["identity"]["sampling"]["temperature"] is None
    store = RunStore(tmp_path / "run")
    assert store.init(old) is False
    (tmp_path / "run" / "samples.jsonl").write_text('{"problem_id": "p", "chain_index": 0}\n')
    task = Maze()
    now = canonical_config(RunConfig.of(task="maze", model="hf:maze-tiny-vpo", n=2, limit=1), task)
    rec = build_config_record(now, task, _sampling(now, task), [], "loaded")
    assert rec["identity"]["model"]["spec"] == "hf:maze-tiny-vpo" and rec["identity"]["sampling"]["temperature"] == 0.7
    assert RunStore(tmp_path / "run").init(rec) is True  # resumes: the canonical forms match
    assert canonical_identity(old["identity"])["sampling"] == rec["identity"]["sampling"]
    # a real difference is still refused, and named
    other = canonical_config(RunConfig.of(task="maze", model="hf:maze-tiny-vpo", n=2, limit=1, temperature=0.9), task)
    with pytest.raises(RunStoreError, match=r"sampling\.temperature is 0\.7 there, 0\.9 now \(--temperature\)"):
        RunStore(tmp_path / "run").init(build_config_record(other, task, _sampling(other, task), [], "loaded"))


def test_old_default_folder_name_is_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture) -> None:
    """A command without --out that ran before identities were canonical wrote a folder named from
    the unresolved config; the same command now resumes that folder instead of starting anew."""
    monkeypatch.chdir(tmp_path)
    given = RunConfig.of(task="maze", model="mock:moves", n=2, limit=1, progress=False)
    canon = canonical_config(given, Maze())
    assert given.default_out() != canon.default_out()
    first = run(canonical_config(given, Maze()))  # writes the rows under the new name ...
    legacy = given.default_out()
    first.rename(legacy)  # ... moved to the name an older version gave the same command
    rows = (legacy / "samples.jsonl").read_bytes()
    capsys.readouterr()
    assert run(given) == legacy
    err = capsys.readouterr().err
    assert "named before run identities were canonical" in err and "already complete" in err
    assert (legacy / "samples.jsonl").read_bytes() == rows and not canon.default_out().exists()


def test_quickstart_into_its_own_folder_takes_the_demos_chains_from_the_cache(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """The README's first Quickstart command writes its own folder (`--out runs/vpo`), not the demo's:
    after the demo's run step, every one of its chains comes from the generation cache, with rows
    equal to the demo's (the run identity and the cache key name the same work)."""
    import json

    demo_out = tmp_path / "demo" / "maze-tiny-vpo"
    cfg = demo_config(VPO, True, demo_out, 2, 200)
    cfg.execution.progress = False
    run(cfg)
    capsys.readouterr()
    own = tmp_path / "vpo"
    assert main(_with_out(_quickstart_runs()[0], own, "--limit", "2")) == 0
    assert "20 of 20 chains found" in capsys.readouterr().err
    rec = json.loads((own / "config.json").read_text())
    assert rec["cache"]["enabled"] is True and rec["cache"]["found"] == 20 and rec["cache"]["sampled"] == 0
    texts = lambda folder: sorted((r["problem_id"], r["chain_index"], r["text"])  # noqa: E731
                                  for r in map(json.loads, (folder / "samples.jsonl").read_text().splitlines()))
    assert texts(own) == texts(demo_out)


def test_execution_only_model_args_are_not_identity() -> None:
    """A stored identity that carries request-only model args (an openai timeout, written by older
    versions) is the same run as one without them; an identity arg still differs."""
    from vpo_harness.harness.core.store import identity_diff

    base = {"model": {"spec": "openai:policy", "args": {}}, "sampling": {"n": 2}}
    old = {"model": {"spec": "openai:policy", "args": {"timeout": 60, "max_retries": 2}}, "sampling": {"n": 2}}
    assert identity_diff(old, base)[0] == []
    other = {"model": {"spec": "openai:policy", "args": {"use_n": False}}, "sampling": {"n": 2}}
    assert identity_diff(other, base)[0] == ["model.args"]
