"""`vpo evolve` identifies its runs by `vpo run`'s rule: a zoo model's name, its checkpoint folder
(relative or absolute) and "temperature unset" vs the task's default name one folder, and the same
command resumes it with nothing new sampled; a folder named and recorded before that rule (the
model as typed, temperature null, an unsorted-JSON hash) still resumes under its old name.

The hf model is "served" by a loopback scripted server standing in for the `vpo serve` child (the
identity, folder and resume logic under test are the real ones; only the model's replies are faked)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from vpo_harness.harness.core.paths import BUNDLED_CHECKPOINTS
from vpo_harness.search.evolve import EvolveConfig, run_evolve
from tests.fakes.scripted_openai import ScriptedOpenAIServer, maze_routes_responder

VPO = BUNDLED_CHECKPOINTS / "maze-tiny-vpo"


class FakeServe:
    """Stands in for vpo_harness.search.server_process.ManagedServer: a scripted loopback server; counts starts."""

    starts: list[str] = []

    def __init__(self, spec: str, **_: Any) -> None:
        self.spec = spec
        self._srv = ScriptedOpenAIServer(maze_routes_responder(1))

    def start(self) -> "FakeServe":
        FakeServe.starts.append(self.spec)
        self._srv.__enter__()
        return self

    @property
    def base_url(self) -> str:
        return self._srv.base_url

    def stop(self) -> None:
        self._srv.__exit__(None, None, None)


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Runs land in tmp_path/runs; tmp_path/checkpoints is the bundled folder (a relative spelling)."""
    import vpo_harness.search.server_process as server_process

    monkeypatch.chdir(tmp_path)
    (tmp_path / "checkpoints").symlink_to(BUNDLED_CHECKPOINTS, target_is_directory=True)
    monkeypatch.setattr(server_process, "ManagedServer", FakeServe)
    FakeServe.starts = []
    return tmp_path


def cfg(model: str, **kw: Any) -> EvolveConfig:
    base = dict(task="maze", model=model, problems="all", limit=2, iterations=2, prompt_mode="task", progress=False)
    base.update(kw)
    return EvolveConfig(**base)


def rows(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines() if line.strip()]


def test_spellings_of_one_run_share_its_folder(workdir: Path, capsys: pytest.CaptureFixture) -> None:
    first = run_evolve(cfg("hf:maze-tiny-vpo"))
    assert first.parent == Path("runs") and FakeServe.starts == ["hf:maze-tiny-vpo"]
    written = (first / "samples.jsonl").read_bytes()
    assert len(rows(first)) == 2 * 3
    record = json.loads((first / "config.json").read_text())
    assert record["identity"]["model"]["spec"] == "hf:maze-tiny-vpo"
    assert record["identity"]["sampling"]["temperature"] == 0.7 and record["ks"] == [1]
    # the baseline is an ordinary run of the same sections: the next seed, no limit (problems given)
    base = json.loads((first / "baseline" / "config.json").read_text())["identity"]
    for sec in ("model", "sampling"):
        assert {k: v for k, v in base[sec].items() if k != "seed"} == \
            {k: v for k, v in record["identity"][sec].items() if k != "seed"}
    assert base["sampling"]["seed"] == record["identity"]["sampling"]["seed"] + 1
    assert base["task"] == {**record["identity"]["task"], "limit": None}
    capsys.readouterr()
    for spelled in (f"hf:{VPO}", f"hf:{VPO}/", "hf:checkpoints/maze-tiny-vpo", "hf:./checkpoints/maze-tiny-vpo"):
        again = cfg(spelled, temperature=0.7, top_p=1.0)
        assert again.default_out() == first
        assert run_evolve(again) == first
        assert "evolve run already complete" in capsys.readouterr().err
    # nothing sampled again, and no model served for it
    assert (first / "samples.jsonl").read_bytes() == written and FakeServe.starts == ["hf:maze-tiny-vpo"]
    assert sorted(p.name for p in (workdir / "runs").iterdir()) == [first.name]


def test_an_old_style_folder_resumes_under_its_name(workdir: Path, capsys: pytest.CaptureFixture) -> None:
    """A run an older version started (folder named from the typed config, config.json with the typed
    model, temperature null and ks in the identity) and interrupted before its baseline: the same
    command finds it, says so, and only adds the baseline."""
    typed = cfg("hf:checkpoints/maze-tiny-vpo")
    done = run_evolve(cfg("hf:checkpoints/maze-tiny-vpo", baseline=False))
    written = (done / "samples.jsonl").read_bytes()
    legacy = typed.legacy_out()
    assert legacy != typed.default_out() and legacy.name.startswith("evo-maze-maze-tiny-vpo-task-m1-")
    done.rename(legacy)
    record = json.loads((legacy / "config.json").read_text())
    ident = record["identity"]
    ident["model"]["spec"] = "hf:checkpoints/maze-tiny-vpo"
    ident["sampling"].update(temperature=None, top_p=None, ks=[1])
    ident["evolve"]["baseline"] = True
    record.pop("ks")
    (legacy / "config.json").write_text(json.dumps(record))
    (legacy / "results.json").unlink()
    capsys.readouterr()
    FakeServe.starts = []
    assert run_evolve(typed) == legacy
    err = capsys.readouterr().err
    assert f"resuming {legacy} (named before run identities were canonical" in err
    assert (legacy / "samples.jsonl").read_bytes() == written  # no evolve iteration redone
    assert (legacy / "baseline" / "results.json").is_file() and (legacy / "results.json").is_file()
    assert FakeServe.starts == ["hf:checkpoints/maze-tiny-vpo"]  # served for the baseline only
    assert not typed.default_out().exists()
    # a new command of other settings is not sent to the old folder
    other = cfg("hf:maze-tiny-vpo", temperature=0.5)
    assert other.legacy_out() != legacy and other.default_out() != legacy
