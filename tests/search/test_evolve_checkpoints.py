"""Checkpoint writing in `vpo evolve` costs the search as little as it can: program files unchanged since
the previous checkpoint are hard links, and a checkpoint still queued behind a slow write is dropped for
the newer one (resume takes the newest, and only two are kept)."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest

from vpo_harness.search.engine import ProblemEvolution
from vpo_harness.search.evolve import EvolveConfig, run_evolve
from tests.fakes.scripted_openai import ScriptedOpenAIServer, maze_routes_responder


def _run(url: str, out: Path, yaml: Path, iterations: int = 6) -> Path:
    cfg = EvolveConfig(task="maze", model="openai:scripted", base_url=url, problems="all", limit=1,
                       iterations=iterations, m=3, prompt_mode="task", prompt_style="compact", out=str(out),
                       progress=False, baseline=False, lag=1, parallel=1, config_path=str(yaml))
    return run_evolve(cfg)


def _checkpoints(folder: Path) -> list[Path]:
    found = [p for p in folder.glob("openevolve/*/checkpoints/checkpoint_*") if p.name[11:].isdigit()]
    return sorted(found, key=lambda p: int(p.name[11:]))


def test_unchanged_program_files_are_links_to_the_previous_checkpoint(tmp_path: Path) -> None:
    yaml = tmp_path / "oe.yaml"
    yaml.write_text("checkpoint_interval: 1\n")
    with ScriptedOpenAIServer(maze_routes_responder(3)) as srv:
        folder = _run(srv.base_url, tmp_path / "evo", yaml)
    prev, last = _checkpoints(folder)[-2:]
    assert int(last.name[11:]) == 6
    shared = [f for f in (last / "programs").iterdir() if (prev / "programs" / f.name).exists()]
    assert shared and all(f.stat().st_ino == (prev / "programs" / f.name).stat().st_ino
                          for f in shared if f.read_bytes() == (prev / "programs" / f.name).read_bytes())
    assert any(f.stat().st_nlink >= 2 for f in shared)


def test_a_checkpoint_queued_behind_a_write_is_superseded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer is held inside its first write (iteration 0) until the search drains it: every
    checkpoint asked for meanwhile but the newest is dropped, so exactly 0 and the last are written."""
    yaml = tmp_path / "oe.yaml"
    yaml.write_text("checkpoint_interval: 1\n")
    release, written = threading.Event(), []
    write, drain = ProblemEvolution._write_checkpoint, ProblemEvolution._drain_checkpoints

    def held_write(self, it, *a):
        if not written:
            assert release.wait(60), "the search never drained its checkpoints"
        written.append(it)
        return write(self, it, *a)

    async def releasing_drain(self):
        release.set()
        await drain(self)

    monkeypatch.setattr(ProblemEvolution, "_write_checkpoint", held_write)
    monkeypatch.setattr(ProblemEvolution, "_drain_checkpoints", releasing_drain)
    with ScriptedOpenAIServer(maze_routes_responder(3)) as srv:
        folder = _run(srv.base_url, tmp_path / "evo", yaml)
    assert written == [0, 6]
    assert [int(p.name[11:]) for p in _checkpoints(folder)] == [0, 6]
