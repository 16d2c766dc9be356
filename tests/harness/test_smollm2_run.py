"""A short real run: SmolLM2-135M-Instruct (from the zoo) answers a few mazes through `vpo run`."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from vpo_harness.harness.core.results import load_run
from vpo_harness.search.serve import default_threads


@pytest.mark.integration
def test_smollm2_maze_run_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "smol"
    cmd = [sys.executable, "-m", "vpo_harness.harness.app.cli", "run", "--task", "maze", "--model", "hf:smollm2-135m",
           "--limit", "2", "-n", "2", "-m", "3", "--k", "1,2,6", "--max-tokens", "64", "--no-progress",
           "--model-args", "batch_size=4", "--out", str(out)]
    # `vpo serve`'s thread count (one on 2 cores): torch's every-core default spin-waits whenever another
    # process holds a core, which made each decoding step ~9x slower on a loaded 2-core machine
    env = {**os.environ, "OMP_NUM_THREADS": str(default_threads())}
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    run = load_run(out)
    assert len(run.chains) == 4 and run.chains["error"].isna().all()
    assert (run.chains["completion_tokens"] > 0).all() and run.chains["text"].str.len().min() > 0
    ident = run.config["identity"]
    assert ident["model"]["spec"] == "hf:smollm2-135m" and ident["sampling"]["m"] == 3
    m = run.results["metrics"]
    assert m["n_candidates"] == 12 and 0.0 <= m["best@6"]["mean"] <= 1.0
    assert m["best@1"]["mean"] <= m["best@2"]["mean"] + 1e-12 <= m["best@6"]["mean"] + 2e-12
    assert "best@6" in res.stdout  # the table printed at the end
