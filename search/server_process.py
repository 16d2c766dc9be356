"""`vpo evolve` starts a server for local models: a child process on a free loopback port.

``hf:``, zoo and ``mock:`` specs get `vpo serve` (``python -m vpo_harness.search.serve``); ``vllm:`` specs get
vLLM's own OpenAI server (search/vllm_serve.py). Either way the child is started in its own process
group with a parent-death signal (Linux ``prctl``), so it goes away when the evolve run ends normally,
on an error, on Ctrl-C, and even when the run is killed with -9. Readiness is an HTTP ``/health``
poll; a child that dies while loading is reported in one line (its last log line and the log's path)
instead of a wait that never ends.
"""
from __future__ import annotations

import json
import logging
import os
import secrets
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

from vpo_harness.harness.core.paths import child_pythonpath

_log = logging.getLogger(__name__)  # notes and warnings: the caller decides where they go (harness/core/log.py)

#: the child flag through which the served model gets its model and chat-template arguments as one
#: JSON object, types as given: k=v text parsed again would turn the string "true" into True and
#: could not carry a comma inside a value (``python -m search.serve`` reads it)
CHILD_ARGS_FLAG = "--args-json"
CHILD_ARGS = ("model_args", "chat_template_args")


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


def is_vllm(spec: str) -> bool:
    return spec.split(":", 1)[0].strip().lower() == "vllm"


class ManagedServer:
    """``with ManagedServer(spec) as srv: srv.base_url``.

    ``threads`` (torch CPU threads; None: the server's default) and ``max_batch`` apply to `vpo serve`;
    vLLM schedules its own batches (``--model-args max_num_seqs=N``)."""

    def __init__(self, spec: str, *, model_args: dict[str, Any] | None = None, host: str = "127.0.0.1",
                 startup_timeout_s: float = 600.0, max_batch: int = 64, log_path: Path | None = None,
                 threads: int | None = 1, port: int | None = None, served_name: str | None = None,
                 chat_template_args: dict[str, Any] | None = None, max_body_mb: float | None = None,
                 env: dict[str, str] | None = None):
        self.spec, self.model_args, self.host = spec, dict(model_args or {}), host
        self.startup_timeout_s, self.max_batch = startup_timeout_s, max_batch
        self.log_path, self.threads = log_path, threads
        self.served_name = served_name or spec
        self.chat_template_args = dict(chat_template_args or {})
        self.max_body_mb, self.env = max_body_mb, env
        self.proc: subprocess.Popen | None = None
        self.port: int | None = port
        self._fixed_port = port is not None
        self._log: Any = None
        self._own_log = log_path is None
        #: where the child's output goes (a kept temporary file when no log_path was given)
        self.log_file: Path = (Path(log_path) if log_path else
                               Path(tempfile.gettempdir()) / f"vpo-serve-{secrets.token_hex(6)}.log")

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def what(self) -> str:
        return f"vLLM's OpenAI server for {self.spec}" if is_vllm(self.spec) else f"vpo serve for {self.spec}"

    def command(self) -> list[str]:
        if is_vllm(self.spec):
            from vpo_harness.search.vllm_serve import server_command

            return server_command(self.spec, host=self.host, port=int(self.port or 0), served_name=self.served_name,
                                  model_args=self.model_args, chat_template_args=self.chat_template_args)
        cmd = [sys.executable, "-m", "vpo_harness.search.serve", "--model", self.spec, "--host", self.host,
               "--port", str(self.port), "--max-batch", str(self.max_batch)]
        cmd += ["--served-name", self.served_name]
        if self.threads:
            cmd += ["--threads", str(self.threads)]
        structured = {"model_args": self.model_args, "chat_template_args": self.chat_template_args}
        if any(structured.values()):  # as they are, not as k=v text parsed again (CHILD_ARGS_FLAG)
            cmd += [CHILD_ARGS_FLAG, json.dumps({k: v for k, v in structured.items() if v})]
        if self.max_body_mb is not None:
            cmd += ["--max-body-mb", str(self.max_body_mb)]
        return cmd

    def start(self) -> "ManagedServer":
        if not self._fixed_port:
            self.port = free_port(self.host)
        cmd = self.command()  # before opening the log: a missing vllm is one error, no empty file
        env = dict(os.environ if self.env is None else self.env)
        if not is_vllm(self.spec):  # vLLM runs from its own environment and needs none of this repo
            env["PYTHONPATH"] = child_pythonpath(env)
        self._log = open(self.log_file, "ab")
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env=env, start_new_session=True, preexec_fn=_die_with_parent)
        self.wait_ready()
        return self

    def _tail(self) -> str:
        try:
            with open(self.log_file, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 4000))
                return f.read().decode("utf-8", "replace").strip()
        except OSError:
            return ""

    def wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout_s
        url = f"http://{self.host}:{self.port}/health"
        while True:
            assert self.proc is not None
            if self.proc.poll() is not None:
                lines = [ln for ln in self._tail().splitlines() if ln.strip()]
                self._close_log()
                raise RuntimeError(f"{self.what} exited with code {self.proc.returncode} while loading: "
                                   f"{lines[-1].strip() if lines else '(no output)'} (log: {self.log_file})")
            try:
                with urllib.request.urlopen(url, timeout=2) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                self.stop(keep_log=True)
                raise RuntimeError(f"{self.what} was not ready after {self.startup_timeout_s:.0f}s (log: {self.log_file})")
            time.sleep(0.2 if not is_vllm(self.spec) else 1.0)

    def stop(self, keep_log: bool = False) -> None:
        """SIGTERM the child's process group, SIGKILL it after 10 s (and 30 s for vLLM's engine)."""
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=30 if is_vllm(self.spec) else 10)
            except subprocess.TimeoutExpired:
                pass
        if self.proc is not None:  # the group outlives its leader when vLLM's engine is still exiting
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        failed = self.proc is not None and self.proc.returncode not in (0, -signal.SIGTERM, -signal.SIGKILL)
        self._close_log()
        if self._own_log and not (keep_log or failed):
            try:
                self.log_file.unlink()
            except OSError:
                pass

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> "ManagedServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve_vllm(spec: str, *, host: str, port: int, model_args: dict[str, Any], served_name: str | None,
               chat_template_args: dict[str, Any], log_path: str | None = None,
               startup_timeout_s: float = 1800.0) -> int:
    """`vpo serve` for a vllm: spec: start vLLM's server, print one ``ready`` line once ``/health``
    answers, and stop it (its whole process group) on SIGINT/SIGTERM."""
    import signal

    srv = ManagedServer(spec, model_args=model_args, host=host, port=port, served_name=served_name,
                        chat_template_args=chat_template_args, startup_timeout_s=startup_timeout_s,
                        log_path=Path(log_path) if log_path else None)
    srv.command()  # a missing vllm or a bad argument is one error line before anything starts
    stopping: list[int] = []

    def stop(signum: int, frame: Any) -> None:
        stopping.append(signum)
        if srv.proc is not None and srv.proc.poll() is None:
            try:
                os.killpg(srv.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    _log.info(f"vpo serve: starting vLLM's OpenAI server for {spec} (log: {srv.log_file})")
    try:
        srv.start()
    except RuntimeError:
        if stopping:  # Ctrl-C while it loaded
            srv.stop()
            return 130
        raise
    print(f"vpo serve: ready {srv.served_name} at {srv.base_url} (vLLM's OpenAI server; log: {srv.log_file})",
          flush=True)
    assert srv.proc is not None
    rc = srv.proc.wait()
    srv.stop()
    if stopping:
        return 0
    _log.warning(f"vpo serve: vLLM's server exited with code {rc}; log: {srv.log_file}")
    return 1
