"""Harness side of one zygote (see _zygote.py): start it, hand it jobs, relay its reports.

A job's stdout, stderr, result channel (and, for gated drivers, a reply channel) are pipes created
here; their far ends travel to the zygote as SCM_RIGHTS with the job, so the harness reads the
child's output directly and no byte of it passes through the zygote.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import struct
import subprocess
import sys
import sysconfig
import functools
from pathlib import Path
from typing import Any

_ZYGOTE = Path(__file__).with_name("_zygote.py")
#: environment of the zygote process itself (its children get the per-run environment)
_ZYGOTE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
               "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1",
               "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
START_TIMEOUT_S = 60.0


@functools.lru_cache(maxsize=1)
def site_paths() -> list[str]:
    """The interpreter's site-packages directories (what ``site`` would add, minus .pth hooks)."""
    paths = [sysconfig.get_paths()[k] for k in ("purelib", "platlib")]
    paths += [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
    return [p for p in dict.fromkeys(paths) if os.path.isdir(p)]


def python_paths() -> list[str]:
    """What of the host a sealed child sees besides the shared libraries: the Python installation."""
    paths = [sys.base_prefix, sys.prefix, os.path.dirname(os.path.realpath(sys.executable))] + site_paths()
    return list(dict.fromkeys(os.path.realpath(p) for p in paths))


def send_msg(sock: socket.socket, msg: dict[str, Any], fds: list[int] | None = None) -> None:
    data = json.dumps(msg).encode()
    head = struct.pack("!I", len(data))
    if fds:
        socket.send_fds(sock, [head], fds)
    else:
        sock.sendall(head)
    sock.sendall(data)


def recv_msg(sock: socket.socket) -> dict[str, Any] | None:
    buf = b""
    while len(buf) < 4:
        chunk = sock.recv(4 - len(buf))
        if not chunk:
            return None
        buf += chunk
    (n,) = struct.unpack("!I", buf)
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return json.loads(data)


class ZygoteError(RuntimeError):
    """The zygote could not start or died (the harness restarts it on the next run)."""


class Zygote:
    """One zygote process. Not thread-safe: the owning Sandbox serialises runs."""

    def __init__(self, unshare_argv: list[str] | tuple[str, ...], *, sealed: bool, uid: int | None,
                 gid: int | None, seccomp: bool = True, group: Any = None):
        """``group``: the slot's cgroups (cgroups.CandidateGroup), joined by the zygote before it
        reports ready, so every child is born inside; removed when the zygote is gone."""
        self.sealed = sealed
        self.known: set[str] = set()
        self.group = group
        #: set when the zygote died under a run (the next run starts a new one)
        self.lost = False
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        argv = list(unshare_argv) + [sys.executable, "-I", "-S", str(_ZYGOTE), str(child.fileno())]
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.PIPE, pass_fds=(child.fileno(),),
                                         start_new_session=True, env=_ZYGOTE_ENV, cwd="/")
        except OSError as exc:
            parent.close()
            if group is not None:
                group.remove()
            raise ZygoteError(f"cannot start the zygote: {exc}") from exc
        finally:
            child.close()
        self.sock = parent
        cfg = {"sealed": sealed, "uid": uid, "gid": gid, "seccomp": seccomp,
               "expose": python_paths(), "sys_path": site_paths(), "here": str(_ZYGOTE.parent),
               "pdeathsig": True}
        self.sock.settimeout(START_TIMEOUT_S)
        fds = group.procs_fds() if group is not None else []
        cfg["budget"] = bool(fds)
        try:
            send_msg(self.sock, cfg, fds)
            ready = recv_msg(self.sock)
        except OSError as exc:
            ready = {"ready": False, "error": f"no answer ({exc})"}
        finally:
            for fd in fds:
                os.close(fd)
        if not ready or not ready.get("ready"):
            err = (ready or {}).get("error") or self._stderr_tail() or "zygote exited at start"
            self.close()
            raise ZygoteError(err)
        self.sock.settimeout(None)
        self.notes: list[str] = list(ready.get("notes", []))
        if group is not None:
            group.keep = set(group.tasks())  # the zygote (its host pid); nothing else is there yet

    def _stderr_tail(self) -> str:
        try:
            self.proc.kill()
            _, err = self.proc.communicate(timeout=5)
            return err.decode("utf-8", "replace").strip()[-300:]
        except Exception:
            return ""

    def ensure_driver(self, key: str, source: str) -> None:
        if key in self.known:
            return
        send_msg(self.sock, {"op": "driver", "key": key, "source": source})
        ans = recv_msg(self.sock)
        if ans is None:
            raise ZygoteError("zygote died while loading a driver")
        if not ans.get("ok"):
            raise ValueError(f"driver failed to load: {ans.get('error')}")
        self.known.add(key)

    def alive(self) -> bool:
        return not self.lost and self.proc.poll() is None

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
        if self.proc.poll() is None:
            try:
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self.kill()
        if self.proc.stderr is not None:
            self.proc.stderr.close()
        self._drop_group()

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - a D-state process
            pass
        self._drop_group()

    def _drop_group(self) -> None:
        if self.group is not None:
            self.group.remove()  # kills whatever is left in it (the zygote is dead by now)
            self.group = None


def probe_sealed(unshare_argv: list[str]) -> str | None:
    """None when a sealed zygote starts here, else why not (one line)."""
    try:
        z = Zygote(unshare_argv, sealed=True, uid=None, gid=None)
    except (ZygoteError, OSError) as exc:
        return str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
    z.close()
    return None
