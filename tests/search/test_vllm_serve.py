"""``vllm:`` specs: the model's arguments as vLLM server flags, which vLLM is used, and one-line errors."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from vpo_harness.harness.core.paths import REPO_ROOT
from vpo_harness.search import vllm_serve
from vpo_harness.search.server_process import ManagedServer
from vpo_harness.search.vllm_serve import find_vllm_python, flag_args, server_command


def test_model_args_become_vllm_flags() -> None:
    cmd = server_command("vllm:maze-tiny-vpo", host="127.0.0.1", port=8123, served_name="vllm:maze-tiny-vpo",
                         model_args={"tensor_parallel_size": 2, "max_model_len": 512, "dtype": "bfloat16", "seed": 3,
                                     "enforce_eager": True, "trust_remote_code": False, "revision": None,
                                     "hf_overrides": {"a": 1}},
                         chat_template_args={"enable_thinking": False}, python="/py", cpu=False)
    assert cmd[:3] == ["/py", "-m", "vllm.entrypoints.openai.api_server"]
    args = cmd[3:]

    def value(flag: str) -> str:
        return args[args.index(flag) + 1]

    assert value("--model") == str(REPO_ROOT / "checkpoints" / "maze-tiny-vpo")  # zoo name resolved
    assert value("--served-model-name") == "vllm:maze-tiny-vpo" and value("--port") == "8123"
    assert value("--host") == "127.0.0.1" and value("--tensor-parallel-size") == "2"
    assert value("--max-model-len") == "512" and value("--dtype") == "bfloat16" and value("--seed") == "3"
    assert "--enforce-eager" in args and "--no-trust-remote-code" in args and "--revision" not in args
    assert json.loads(value("--hf-overrides")) == {"a": 1}
    assert json.loads(value("--default-chat-template-kwargs")) == {"enable_thinking": False}
    assert "--no-enable-chunked-prefill" not in args  # GPU build: vLLM's own defaults


def test_cpu_build_gets_whole_prompt_prefill_unless_the_user_says_otherwise() -> None:
    cpu = server_command("vllm:/m", host="h", port=1, served_name="s", python="/py", cpu=True)
    assert "--no-enable-chunked-prefill" in cpu and cpu[cpu.index("--max-num-batched-tokens") + 1] == "8192"
    mine = server_command("vllm:/m", host="h", port=1, served_name="s", python="/py", cpu=True,
                          model_args={"enable_chunked_prefill": True})
    assert "--enable-chunked-prefill" in mine and "--no-enable-chunked-prefill" not in mine
    assert flag_args({"x_y": 1.5, "z": [1, 2]}) == ["--x-y", "1.5", "--z", "[1, 2]"]


@pytest.mark.parametrize("arg", ["chunk_size", "use_chat_template", "port", "served_model_name"])
def test_options_vllm_serve_does_not_take_are_one_line(arg: str) -> None:
    with pytest.raises(ValueError, match=f"--model-args {arg}"):
        server_command("vllm:/m", host="h", port=1, served_name="s", python="/py", cpu=False, model_args={arg: 1})


def test_which_vllm(monkeypatch, tmp_path: Path) -> None:
    for var in ("VPO_VLLM_PYTHON", "VPO_VLLM_VENV"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(vllm_serve, "CPU_VENV", tmp_path / "no-venv")
    monkeypatch.setattr(vllm_serve.importlib.util, "find_spec", lambda name: None)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(RuntimeError, match="vllm is not installed.*setup_vllm_cpu.sh"):
        find_vllm_python()
    # a `vllm` script on PATH: its interpreter
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "vllm").write_text(f"#!{sys.executable}\nimport vllm\n")
    (tmp_path / "bin" / "vllm").chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert find_vllm_python() == sys.executable
    monkeypatch.setenv("VPO_VLLM_PYTHON", "/nowhere/python")
    with pytest.raises(RuntimeError, match="VPO_VLLM_PYTHON=/nowhere/python does not exist"):
        find_vllm_python()


def test_managed_server_without_vllm_is_one_error_and_no_process(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(vllm_serve, "find_vllm_python", lambda: (_ for _ in ()).throw(RuntimeError(vllm_serve.INSTALL_HINT)))
    srv = ManagedServer("vllm:/some/model", log_path=tmp_path / "serve.log")
    with pytest.raises(RuntimeError, match="vllm is not installed"):
        srv.start()
    assert srv.proc is None and not (tmp_path / "serve.log").exists()


def test_managed_server_reports_a_vllm_that_dies_at_start(monkeypatch, tmp_path: Path) -> None:
    """A "vLLM" that exits at once (a stand-in interpreter): the error names the server, its last log
    line and the log's path, without waiting for the startup timeout."""
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'loading'\necho 'ValueError: max_model_len 99999 is too large' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setenv("VPO_VLLM_PYTHON", str(fake))
    srv = ManagedServer("vllm:/m", log_path=tmp_path / "serve.log", startup_timeout_s=600)
    with pytest.raises(RuntimeError) as err:
        srv.start()
    msg = str(err.value)
    assert msg.startswith("vLLM's OpenAI server for vllm:/m exited with code 3 while loading: ValueError: max_model_len")
    assert f"(log: {tmp_path / 'serve.log'})" in msg and "\n" not in msg
