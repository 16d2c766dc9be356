"""`vpo evolve` starts `vpo serve` for local models: a child process on a free loopback port.

The child is started in its own process group with a parent-death signal (Linux ``prctl``), so it
goes away when the evolve run ends normally, on an error, on Ctrl-C, and even when the run is killed
with -9. Readiness is an HTTP ``/health`` poll; a child that dies while loading is reported with the
tail of its stderr instead of a wait that never ends.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from harness.paths import REPO_ROOT


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - non-Linux: the normal stop path still applies
        pass


def needs_server(spec: str) -> bool:
    return spec.split(":", 1)[0].strip().lower() != "openai"


class ManagedServer:
    """``with ManagedServer(spec) as srv: srv.base_url``."""

    def __init__(self, spec: str, *, model_args: dict[str, Any] | None = None, host: str = "127.0.0.1",
                 startup_timeout_s: float = 600.0, max_batch: int = 64, log_path: Path | None = None,
                 threads: int | None = 1):
        self.spec, self.model_args, self.host = spec, dict(model_args or {}), host
        self.startup_timeout_s, self.max_batch = startup_timeout_s, max_batch
        self.log_path, self.threads = log_path, threads
        self.proc: subprocess.Popen | None = None
        self.port: int | None = None
        self._log = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def command(self) -> list[str]:
        cmd = [sys.executable, "-m", "harness.serve", "--model", self.spec, "--host", self.host,
               "--port", str(self.port), "--max-batch", str(self.max_batch)]
        if self.threads:
            cmd += ["--threads", str(self.threads)]
        if self.model_args:
            cmd += ["--model-args", ",".join(f"{k}={v}" for k, v in self.model_args.items())]
        return cmd

    def start(self) -> "ManagedServer":
        self.port = free_port(self.host)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        self._log = open(self.log_path, "ab") if self.log_path else tempfile.TemporaryFile()
        self.proc = subprocess.Popen(self.command(), stdout=self._log, stderr=subprocess.STDOUT, env=env,
                                     start_new_session=True, preexec_fn=_die_with_parent)
        self.wait_ready()
        return self

    def _tail(self) -> str:
        if self._log is None:
            return ""
        self._log.flush()
        self._log.seek(0, os.SEEK_END)
        size = self._log.tell()
        self._log.seek(max(0, size - 2000))
        return self._log.read().decode("utf-8", "replace").strip()

    def wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout_s
        url = f"http://{self.host}:{self.port}/health"
        while True:
            assert self.proc is not None
            if self.proc.poll() is not None:
                tail = self._tail().splitlines()[-1:] or ["(no output)"]
                raise RuntimeError(f"vpo serve for {self.spec} exited with code {self.proc.returncode} "
                                   f"while loading: {tail[0]}")
            try:
                with urllib.request.urlopen(url, timeout=2) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"vpo serve for {self.spec} was not ready after {self.startup_timeout_s:.0f}s")
            time.sleep(0.2)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait(timeout=10)
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> "ManagedServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
