"""A wheel that works: built from this checkout, installed into a fresh virtualenv, `vpo demo` runs
from an empty folder on the policies the wheel carries.

Done once, as cheaply as it can be done honestly: the wheel is built without build isolation (the
installed setuptools; no index), the virtualenv sees the system's site-packages for torch and the
other dependencies (the wheel itself installs with ``--no-deps --no-index``), and the demo evaluates
one policy on two mazes with an empty generation cache, so it really samples. What it shows: the wheel
holds only ``vpo_harness/`` with the bundled checkpoints as package data, the demo imports the
installed copy (not this checkout: no PYTHONPATH, and the empty folder is not the checkout), and the
weights it evaluated are the checkout's (the same model fingerprint).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.integration


def _source_copy(dest: Path) -> Path:
    """The files a clone holds (tracked, and new ones git does not ignore), links kept as links: the
    build writes its build/ and egg-info there, never into the checkout under test."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard", "-z"],
                            capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src, dst = ROOT / rel, dest / rel
        if not src.exists() and not src.is_symlink():
            continue  # deleted in the working tree, not yet in git
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            dst.symlink_to(os.readlink(src))
        else:
            shutil.copy2(src, dst)
    return dest


def test_wheel_in_a_fresh_venv_runs_the_demo_from_an_empty_folder(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    src = _source_copy(tmp_path / "src")
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist),
                    str(src)], check=True, env=env, capture_output=True, timeout=900)
    (wheel,) = dist.glob("vpo_harness-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names} == {"vpo_harness", wheel.name.split("-py3")[0] + ".dist-info"}
    ckpt = [n for n in names if n.startswith("vpo_harness/checkpoints/maze-tiny-vpo/")]
    assert "vpo_harness/checkpoints/maze-tiny-vpo/model.safetensors" in ckpt
    assert "vpo_harness/checkpoints/maze-tiny-vpo/tokenizer.json" in ckpt
    assert "vpo_harness/reports/view/static/app.js" in names

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=300)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
                   check=True, env=env, capture_output=True, timeout=600)

    empty = tmp_path / "empty"
    empty.mkdir()
    env["VPO_CACHE"] = str(tmp_path / "cache")  # an empty generation cache: the demo samples
    where = subprocess.run([str(venv / "bin" / "python"), "-c",
                            "import vpo_harness.harness.core.paths as p; print(p.BUNDLED_CHECKPOINTS)"],
                           cwd=empty, env=env, capture_output=True, text=True, timeout=300)
    assert where.returncode == 0, where.stderr[-2000:]
    assert Path(where.stdout.strip()).is_relative_to(venv) and Path(where.stdout.strip()).is_dir()

    res = subprocess.run([str(venv / "bin" / "vpo"), "demo", "--only", "vpo", "--limit", "2", "--threads", "1"],
                         cwd=empty, env=env, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "| VPO | 0 |" in res.stdout and "paper best@30" in res.stdout, res.stdout[-3000:]
    assert (empty / "runs" / "demo" / "report.html").is_file() and (empty / "runs" / "demo" / "best_at_k.png").is_file()

    from vpo_harness.harness.core.provenance import model_fingerprint

    ran = json.loads((empty / "runs" / "demo" / "maze-tiny-vpo" / "config.json").read_text())["identity"]
    assert ran["model_fingerprint"] == model_fingerprint("hf:maze-tiny-vpo", {})
