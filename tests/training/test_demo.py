"""`vpo demo` end to end on the bundled checkpoints, with a reduced number of test mazes."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from vpo_harness.harness.core.paths import BUNDLED_CHECKPOINTS as BUNDLED

pytestmark = pytest.mark.integration


@pytest.mark.skipif(not (BUNDLED / "maze-tiny-vpo" / "config.json").exists(), reason="no bundled checkpoints")
def test_demo_runs_on_bundled_checkpoints(tmp_path, capsys):
    from vpo_harness.harness.app.cli import main

    rc = main(["demo", "--limit", "2", "--out", str(tmp_path), "--only", "vpo", "grpo", "--batch-size", "30"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "| VPO |" in out and "| GRPO |" in out and "best@30" in out and "paper best@30" in out
    assert "| 0.593 |" in out and "| 0.432 |" in out  # the paper's values beside ours
    metrics = json.loads((tmp_path / "demo_metrics.json").read_text())
    for name in ("VPO", "GRPO"):
        assert metrics[name]["n_problems"] == 2
        assert metrics[name]["n_candidates"] == 60           # pool of 30 per maze for both methods
        assert 0.0 <= metrics[name]["best@30"]["mean"] <= 1.0
        assert metrics[name]["best@1"]["mean"] <= metrics[name]["best@30"]["mean"] + 1e-9
    assert (tmp_path / "best_at_k.png").exists() and (tmp_path / "diversity.png").exists()
    report = (tmp_path / "report.html").read_text()
    assert "<h2>Paired comparison</h2>" in report and report.count("data:image/png;base64,") == 5


@pytest.mark.parametrize("name", ["maze-tiny-vpo", "maze-tiny-grpo"])
def test_bundled_checkpoint_is_small_and_has_a_card(name):
    folder = BUNDLED / name
    if not (folder / "config.json").exists():
        pytest.skip("not bundled")
    assert (folder / "model.safetensors").stat().st_size <= 10_000_000
    assert not (folder / "state.pt").exists()
    card = (folder / "README.md").read_text()
    for needle in ("How it was trained", "Seed", "Machine", "best@30"):
        assert needle in card
