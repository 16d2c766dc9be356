"""bench/gpu_check.sh --dry-run: the GPU check's own steps on the CPU path (tiny sizes), so the script a
lent GPU machine runs is known to work before it gets there."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.integration
def test_gpu_check_dry_run_runs_every_part(tmp_path):
    out = tmp_path / "gc"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(["bash", str(REPO / "bench" / "gpu_check.sh"), "--dry-run", "--out", str(out)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:])
    lines = [x for x in proc.stdout.splitlines() if x.startswith(("ok", "FAIL", "skip"))]
    res = json.loads((out / "gpu_check.json").read_text())
    want = ["hf backend", "native trainer"] + (["TRL round"] if _have("trl") else [])
    for name in want:
        assert any(x.startswith("ok") and name in x for x in lines), lines
        (key,) = [k for k in res if name in k]
        r = res[key]
        assert r["device"] == "cpu" and r["check"] == "ok" and r["ratio"] == 1.0    # the dry run runs each part once
    hf = res[next(k for k in res if "hf backend" in k)]
    assert hf["cpu"]["answers"] == 1 * 2 * 3 and 0 <= hf["cpu"]["parsed"] <= 1


def _have(mod: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(mod) is not None


def test_gpu_check_lists_its_wheels_and_refuses_a_missing_folder(tmp_path):
    sh = str(REPO / "bench" / "gpu_check.sh")
    listed = subprocess.run(["bash", sh, "--list-wheels"], capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0 and "trl==1.16.0" in listed.stdout and "--no-deps" in listed.stdout
    bad = subprocess.run(["bash", sh, "--wheels", str(tmp_path / "nope"), "--dry-run"], capture_output=True, text=True,
                         timeout=60)
    assert bad.returncode == 2 and "is not a folder" in bad.stderr
