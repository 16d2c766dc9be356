"""`vpo evolve` that fails before its first row leaves no run folder behind (a mistyped model, a
missing checkpoint, a server that is not there), as `vpo run` does; the served model's log it points
at is kept outside the folder; what was in the folder before the command stays."""
from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest

from vpo_harness.harness.app.cli import main


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _evolve(out: Path, *model: str) -> int:
    return main(["evolve", "--task", "maze", "--limit", "1", "--iterations", "1", "--no-progress",
                 "--out", str(out), "--model", *model])


def test_an_unreachable_server_leaves_no_folder(tmp_path: Path, capsys) -> None:
    out = tmp_path / "runs" / "es"
    rc = _evolve(out, "openai:foo", "--base-url", f"http://127.0.0.1:{_closed_port()}")
    err = capsys.readouterr().err
    assert rc != 0 and "cannot connect" in err
    assert not (tmp_path / "runs").exists()  # the folders it made on the way are gone too

    out.mkdir(parents=True)
    (out / "notes.txt").write_text("mine")  # a folder the user wrote into before: only the run's files go
    assert _evolve(out, "openai:foo", "--base-url", f"http://127.0.0.1:{_closed_port()}") != 0
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


@pytest.mark.integration  # starts a `vpo serve` child (seconds)
def test_a_model_that_does_not_load_leaves_no_folder_and_keeps_its_log(tmp_path: Path, capsys) -> None:
    out = tmp_path / "es"
    rc = _evolve(out, f"hf:{tmp_path / 'no-such-checkpoint'}")
    err = capsys.readouterr().err
    assert rc == 2 and "does not exist" in err and not out.exists()
    log = re.search(r"\(log: ([^)]+)\)", err)
    assert log and Path(log.group(1)).is_file() and str(out) not in log.group(1), err
    Path(log.group(1)).unlink()
