"""Run a driver in a fresh, locked-down Python child and collect the JSON records it emits.

The child is ``[unshare ...] python -I _bootstrap.py JOB`` in its own session/process group. The
driver (source code defining ``main(payload, emit)``) runs in the worker under rlimits as an
unprivileged uid; ``emit`` writes JSON lines to a dedicated pipe, never to stdout, so nothing a
program prints can be mistaken for a record. Each record carries a per-run nonce and is validated;
anything else on that pipe marks the run ``tampered``. What the records *mean* is up to the caller
(e.g. the LiveCodeBench grader compares outputs in the parent, where the program cannot reach).
"""
from __future__ import annotations

import functools
import json
import os
import secrets
import selectors
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from harness.sandbox.isolation import NOBODY, Isolation, detect_isolation
from harness.sandbox.limits import Limits

_BOOTSTRAP = Path(__file__).with_name("_bootstrap.py")
SAFE_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "PYTHONHASHSEED": "0",
    "PYTHONDONTWRITEBYTECODE": "1",
}


@dataclass
class SandboxResult:
    """What came back from one child. ``records`` are the validated driver records (nonce removed)."""

    records: list[dict[str, Any]]
    isolation: dict[str, Any]
    wall_s: float
    exit_code: int | None
    #: signal that ended the worker (from the reaper's 128+N convention), if any
    signal: int | None
    timed_out: bool
    done: bool
    tampered: bool = False
    result_overflow: bool = False
    stdout_tail: str = ""
    stderr_tail: str = ""
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    leftover_killed: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


class _Tail:
    """Keeps the last ``cap`` bytes and counts the rest; stops being read after 8x cap."""

    def __init__(self, cap: int):
        self.cap, self.buf, self.total = cap, bytearray(), 0

    def add(self, data: bytes) -> bool:
        self.total += len(data)
        self.buf += data
        if len(self.buf) > self.cap:
            del self.buf[: len(self.buf) - self.cap]
        return self.total <= 8 * self.cap

    def text(self) -> str:
        return self.buf.decode("utf-8", "replace")


@functools.lru_cache(maxsize=1)
def _site_paths() -> list[str]:
    """The interpreter's site-packages directories (what ``site`` would add, minus .pth hooks)."""
    paths = [sysconfig.get_paths()[k] for k in ("purelib", "platlib")]
    paths += [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
    return [p for p in dict.fromkeys(paths) if os.path.isdir(p)]


def _python_paths() -> list[str]:
    return ([sys.base_prefix, sys.prefix, os.path.dirname(os.path.realpath(sys.executable))]
            + _site_paths())


def _reachable_by_others(paths: list[str]) -> bool:
    """True when every ancestor directory of every path is world-searchable (o+x)."""
    for path in paths:
        cur = "/"
        for comp in os.path.realpath(path).strip("/").split("/"):
            try:
                if not os.stat(cur).st_mode & 0o001:
                    return False
            except OSError:
                return False
            cur = os.path.join(cur, comp)
    return True


def _live_pids(match: Callable[[str], bool]) -> list[int]:
    """Pids for which ``match(pid)`` holds and that are not zombies (a zombie is dead; only its
    parent's wait is due). ``match`` may raise OSError for processes that vanish meanwhile."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if not match(name):
                continue
            with open(f"/proc/{name}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in (b"Z", b"X"):
            out.append(int(name))
    return out


def live_pids_of_uid(uid: int) -> list[int]:
    """Live pids owned by ``uid``."""
    return _live_pids(lambda pid: os.stat(f"/proc/{pid}").st_uid == uid)


def live_pids_with_tag(tag: str) -> list[int]:
    """Live pids whose initial environment holds ``VPO_SANDBOX_TAG=<tag>`` (readable: same uid/root)."""
    needle = f"VPO_SANDBOX_TAG={tag}".encode()

    def tagged(pid: str) -> bool:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return needle in fh.read().split(b"\0")

    return _live_pids(tagged)


def _kill_until_gone(find: Callable[[], list[int]]) -> int:
    n = 0
    for _ in range(10):
        victims = find()
        if not victims:
            break
        for p in victims:
            try:
                os.kill(p, signal.SIGKILL)
                n += 1
            except OSError:
                pass
        time.sleep(0.02)
    return n


def kill_tagged(tag: str) -> int:
    """Best-effort sweep for the no-PID-namespace fallback: a program can only escape it by
    re-exec'ing itself with a different environment."""
    return _kill_until_gone(lambda: live_pids_with_tag(tag))


def kill_uid(uid: int) -> int:
    """SIGKILL every process owned by ``uid``. Only safe for uids reserved to one sandbox slot."""
    return _kill_until_gone(lambda: live_pids_of_uid(uid))


class Sandbox:
    """One isolated run per call. Thread-safe: each run gets its own directory, pipe and child.

    ``uid``/``gid``: identity of the program when we can drop privileges (default nobody). A pool
    gives each concurrent slot its own uid so RLIMIT_NPROC and the leftover sweep never couple two
    candidates.
    """

    def __init__(self, limits: Limits | None = None, *, uid: int | None = NOBODY, gid: int | None = NOBODY,
                 isolation: Isolation | None = None, tmp_root: str | None = None):
        self.limits = limits or Limits()
        self.iso = isolation or detect_isolation()
        drop = self.iso.can_drop_privileges and uid is not None
        self.notes = list(self.iso.notes)
        if drop and not self.iso.mountns and not _reachable_by_others(_python_paths()):
            # without a mount namespace we cannot expose a 0700-protected interpreter (pyenv under
            # /root) to the unprivileged uid; running the program as that uid would fail every import
            drop = False
            self.notes.append("interpreter not reachable by other users and no mount namespace: "
                              "privileges not dropped")
        self.uid = uid if drop else None
        self.gid = (gid if gid is not None else uid) if drop else None
        self.tmp_root = tmp_root

    def isolation_record(self, limits: Limits | None = None) -> dict[str, Any]:
        """What is in force for a run; written into every result."""
        lim = limits or self.limits
        return {"netns": self.iso.netns, "pidns": self.iso.pidns, "mountns": self.iso.mountns,
                "fs_readonly": self.iso.mountns, "userns": self.iso.userns,
                "uid": self.uid if self.uid is not None else os.geteuid(),
                "privileges_dropped": self.uid is not None, "rlimits": lim.as_dict(),
                "notes": list(self.notes)}

    def run(self, driver_source: str, payload: Any, *, limits: Limits | None = None,
            files: dict[str, str] | None = None) -> SandboxResult:
        """Run ``driver_source``'s ``main(payload, emit)`` in a fresh child; never raises for what the
        child does (only for harness-side failures such as an unwritable temp dir)."""
        lim = limits or self.limits
        root = Path(tempfile.mkdtemp(prefix="vpo-sbx-", dir=self.tmp_root))
        rfd = wfd = -1
        try:
            os.chmod(root, 0o711)
            work = root / "work"
            work.mkdir(mode=0o700)
            for rel, text in (files or {}).items():
                p = (work / rel).resolve()
                if work.resolve() not in p.parents:
                    raise ValueError(f"file {rel!r} escapes the sandbox dir")
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_text(text)
            if self.uid is not None:
                for dirpath, dirnames, filenames in os.walk(work):
                    for n in [dirpath] + [os.path.join(dirpath, f) for f in dirnames + filenames]:
                        os.chown(n, self.uid, self.gid)
            rfd, wfd = os.pipe()
            nonce = secrets.token_hex(16)
            job = {"driver_source": driver_source, "payload": payload, "limits": lim.as_dict(),
                   "uid": self.uid, "gid": self.gid, "workdir": str(work), "nonce": nonce,
                   "result_fd": wfd, "lock_fs": self.iso.mountns, "sys_path": _site_paths(),
                   "expose": _python_paths() + [str(work)]}
            job_path = root / "job.json"
            fd = os.open(job_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as fh:
                json.dump(job, fh)
            tag = secrets.token_hex(8)
            env = dict(SAFE_ENV, HOME=str(work), TMPDIR=str(work), VPO_SANDBOX_TAG=tag)
            argv = list(self.iso.unshare_argv) + [sys.executable, "-I", "-S", str(_BOOTSTRAP), str(job_path)]
            t0 = time.monotonic()
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, pass_fds=(wfd,), start_new_session=True,
                                    env=env, cwd=str(root))
            os.close(wfd)
            wfd = -1  # never close a number twice: other threads reuse fd numbers at once
            res = self._supervise(proc, t0, rfd, nonce, lim, tag)
            res.extra["tag"] = tag
            return res
        finally:
            for fd_ in (rfd, wfd):
                if fd_ >= 0:
                    try:
                        os.close(fd_)
                    except OSError:
                        pass
            shutil.rmtree(root, ignore_errors=True)

    # ------------------------------------------------------------------------------------------
    def _supervise(self, proc: subprocess.Popen, t0: float, rfd: int, nonce: str,
                   lim: Limits, tag: str) -> SandboxResult:
        pgid = proc.pid
        out, err = _Tail(lim.output_cap_bytes), _Tail(lim.output_cap_bytes)
        result_buf = bytearray()
        overflow = False
        sel = selectors.DefaultSelector()
        assert proc.stdout is not None and proc.stderr is not None
        streams: dict[int, Callable[[bytes], bool]] = {
            proc.stdout.fileno(): out.add, proc.stderr.fileno(): err.add}

        def _result_add(data: bytes) -> bool:
            nonlocal overflow
            result_buf.extend(data)
            if len(result_buf) > lim.result_cap_bytes:
                overflow = True
                return False
            return True

        streams[rfd] = _result_add
        for fd_ in streams:
            os.set_blocking(fd_, False)
            sel.register(fd_, selectors.EVENT_READ)
        deadline = t0 + lim.wall_s
        timed_out = False
        exited_at: float | None = None
        try:
            while sel.get_map():
                now = time.monotonic()
                if proc.poll() is not None and exited_at is None:
                    exited_at = now
                if exited_at is not None and now - exited_at > 0.2:
                    break  # pipes held open by stray processes (no PID namespace): stop waiting
                if now >= deadline:
                    timed_out = proc.poll() is None
                    break
                if overflow:
                    break
                for key, _ in sel.select(timeout=min(0.05, max(0.0, deadline - now))):
                    fd_ = key.fd
                    try:
                        data = os.read(fd_, 1 << 16)
                    except BlockingIOError:
                        continue
                    except OSError:
                        data = b""
                    if not data or not streams[fd_](data):
                        sel.unregister(fd_)
        finally:
            sel.close()
            try:
                os.killpg(pgid, signal.SIGKILL)
            except OSError:
                pass
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover - a D-state child
                proc.kill()
                proc.wait()
            leftovers = 0
            if not self.iso.pidns:  # the namespace's teardown did not kill stragglers for us
                leftovers = kill_tagged(tag) + (kill_uid(self.uid) if self.uid is not None else 0)
            proc.stdout.close()
            proc.stderr.close()
        wall = time.monotonic() - t0
        records, tampered, done = self._parse_records(bytes(result_buf), nonce)
        code = proc.returncode
        sig = None
        if code is not None and code < 0:
            sig = -code
        elif code is not None and code > 128 and code - 128 < 65:
            sig = code - 128
        return SandboxResult(records=records, isolation=self.isolation_record(lim), wall_s=wall,
                             exit_code=code, signal=sig, timed_out=timed_out, done=done,
                             tampered=tampered, result_overflow=overflow, stdout_tail=out.text(),
                             stderr_tail=err.text(), stdout_bytes=out.total, stderr_bytes=err.total,
                             leftover_killed=leftovers)

    @staticmethod
    def _parse_records(buf: bytes, nonce: str) -> tuple[list[dict[str, Any]], bool, bool]:
        records: list[dict[str, Any]] = []
        tampered = done = False
        lines = buf.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        elif lines:
            lines.pop()  # a partial last line: the writer died mid-record
        for line in lines:
            try:
                rec = json.loads(line)
            except (ValueError, UnicodeDecodeError):
                tampered = True
                continue
            if not isinstance(rec, dict) or rec.pop("nonce", None) != nonce:
                tampered = True
                continue
            if rec.get("kind") == "done":
                done = True
                continue
            records.append(rec)
        return records, tampered, done
