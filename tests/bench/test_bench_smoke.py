"""Every bench/ and scripts/ file runs, at its smallest setting, so a renamed API or model id fails CI
instead of a reader's rerun (bench/serve_throughput.py asked for a model id `vpo serve` no longer
answered to, and nothing noticed).

Each runnable file is started as a reader starts it (``python bench/NAME.py ...`` from the checkout's
root) with the smallest arguments that still go through its real path: a server is started and asked,
a model samples, a trainer steps. The figures printed are not checked (they need the full settings);
exit 0 and the output line the file always ends with are. Modules that only serve other benches are
imported; files whose smallest run needs what CI does not have say why in SKIP. Each run goes with a
second, broken ``vpo_harness`` installed ahead of site-packages on PYTHONPATH, so a file that ran some
other copy of the project instead of the checkout it sits in fails too.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.integration

#: file -> (smallest arguments, text the output must hold); "{tmp}" is a fresh folder
RUNS: dict[str, tuple[list[str], str]] = {
    "bench/checkpoint_digest.py": (["--mb", "1"], ""),
    "bench/compare_bootstrap.py": (["--smoke"], "resamples"),
    "bench/edit_distance.py": (["--pairs", "20"], "ratio"),
    "bench/estimators.py": (["--problems", "5", "--n", "16"], ""),
    "bench/evolve_throughput.py": (["--latency", "0.01", "--one", "2", "--many", "1", "--many-iterations", "1",
                                    "--widths", "1", "--concurrency", "2", "--lag", "1"], ""),
    "bench/fp16_check.py": (["maze-tiny-vpo", "--limit", "1", "--batch-size", "8", "--out", "{tmp}/fp16"], "fp16"),
    "bench/generation_cache.py": (["--problems", "2", "--chains", "2", "--rounds", "1"], ""),
    "bench/http_client_cpu.py": (["--requests", "4", "--repeat", "1"], ""),
    "bench/parsers.py": (["--smoke"], "parsers linear"),
    "bench/prefix_parse_rate.py": (["maze-tiny-vpo", "--n-mazes", "1", "--cuts", "1"], ""),
    "bench/read_validation.py": (["--rows", "50"], ""),
    "bench/runner_overhead.py": (["--problems", "2", "--chains", "2", "--rounds", "1", "--concurrency", "2"], ""),
    "bench/serve_throughput.py": (["--levels", "1", "--rounds", "1", "--repeats", "1", "--servers", "new"],
                                  "req/s"),
    "bench/training_throughput.py": (["--sft-steps", "1", "--sft-batch-size", "4", "--rl-steps", "1", "--methods",
                                      "vpo", "--threads", "1", "--eval-mazes", "0"], ""),
    "bench/view_scale.py": (["--problems", "2", "--chains", "2", "--m", "1", "--rounds", "1", "--evolve-problems", "1",
                             "--iterations", "2"], ""),
    "scripts/train_zoo.py": (["--dry-run"], "vpo train"),
}

#: library modules of other benches and tests: importing them is their smoke
IMPORTS = ("bench/loopback_openai.py", "bench/search_arms.py", "bench/vllm_server.py")

#: files not run here, and why (each is still imported, so a renamed import fails)
SKIP: dict[str, str] = {
    "bench/gpu_check.py": "its --dry-run runs in tests/bench/test_gpu_check.py (through gpu_check.sh)",
    "bench/evolve_maze_demo.py": "vpo evolve with the bundled policies on real mazes: minutes even at budget 3",
    "bench/evolve_operators.py": "ranks mazes by the demo's runs (runs/demo), which a fresh clone lacks",
    "bench/evolve_prefix.py": "ranks mazes by the demo's runs (runs/demo); its parts run in tests/bench/test_evolve_prefix.py",
    "bench/operator_snapshots.py": "needs an RL run folder with step_NNNN/ snapshots (--run)",
    "bench/grading_throughput.py": "compares with the official LiveCodeBench grader, whose venv (.venv-lcb) CI lacks",
    "bench/scaleout.py": "starts a local Ray cluster: tens of seconds before the first task",
    "bench/trl_throughput.py": "one TRL step on a CPU takes minutes (tests/training/test_trl_vpo.py covers the trainer)",
    "scripts/authors_pool_reference.py": "imports the VPO authors' own code from a checkout of their repository "
                                         "(--authors), which this project does not vendor",
}


def _other_checkout(tmp: Path) -> str:
    other = tmp / "other-checkout" / "vpo_harness"
    other.mkdir(parents=True)
    (other / "__init__.py").write_text("raise ImportError('the OTHER checkout was imported, not this one')\n")
    return str(other.parent)


def _env(tmp: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": _other_checkout(tmp), "VPO_CACHE": str(tmp / "cache"),
            "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}


def test_every_file_is_run_imported_or_skipped_with_a_reason() -> None:
    files = {str(p.relative_to(ROOT)) for p in [*ROOT.glob("bench/*.py"), *ROOT.glob("scripts/*.py")]
             if p.name != "__init__.py"}
    covered = set(RUNS) | set(IMPORTS) | set(SKIP)
    assert files - covered == set(), f"bench/scripts files with no smoke: {sorted(files - covered)}"
    assert covered - files == set(), f"smoke entries for files that do not exist: {sorted(covered - files)}"


@pytest.mark.parametrize("rel", sorted(RUNS))
def test_runs_at_its_smallest_setting(rel: str, tmp_path: Path) -> None:
    args, expect = RUNS[rel]
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    res = subprocess.run([sys.executable, str(ROOT / rel), *args], cwd=ROOT, env=_env(tmp_path),
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, f"{rel} {' '.join(args)} exited {res.returncode}:\n{res.stdout[-2000:]}\n{res.stderr[-3000:]}"
    assert expect in res.stdout, res.stdout[-2000:]


@pytest.mark.parametrize("rel", sorted(IMPORTS + tuple(SKIP)))
def test_imports(rel: str, tmp_path: Path) -> None:
    name = rel[:-3].replace("/", ".")
    code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); import {name}"
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=_env(tmp_path), capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, f"import {name}:\n{res.stderr[-3000:]}"
