"""Run a driver in a fresh, locked-down child and collect the JSON records it emits.

Each Sandbox owns one zygote (_zygote.py: a pre-warmed interpreter inside its own namespaces and a
sealed root) that forks one child per run. The driver (source code defining ``main(payload, emit)``,
passed per run: the sandbox knows nothing about tasks) runs in that child under rlimits as an
unprivileged uid behind a seccomp filter; ``emit`` writes JSON lines to a dedicated pipe, never to
stdout, so nothing a program prints can be mistaken for a record. Each record carries a per-run
nonce and is validated; anything else on that pipe marks the run ``tampered``. The nonce is not a
secret from the program (it runs in the same process as the driver): what the records *mean* is up to
the caller, which must judge them against data the child never saw (the LiveCodeBench judge compares
outputs in the parent). ``on_record`` sees each record as it arrives and may end the run early by
returning ``STOP`` (the LiveCodeBench judge stops at the first failing test this way, without a round
trip per test) or answer on the child's fd 4 by returning bytes.
"""
from __future__ import annotations

import hashlib
import json
import os
import secrets
import selectors
import shutil
import signal
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from vpo_harness.harness.core.sandbox import cgroups
from vpo_harness.harness.core.sandbox.isolation import (NOBODY, Isolation, SandboxUnavailable, detect_isolation,
                                       unavailable_message, unsafe_allowed)
from vpo_harness.harness.core.sandbox.limits import Limits
from vpo_harness.harness.core.sandbox.zygote import Zygote, ZygoteError, python_paths, recv_msg, send_msg
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
    #: peak resident memory of the child (and what it waited for), KiB
    maxrss_kb: int = 0
    #: the parent killed the run: no valid record within ``Limits.progress_s`` (a stalled test)
    stalled: bool = False
    #: the kernel OOM-killed a process of the candidate's cgroup (its memory budget was spent)
    memory_limit: bool = False
    #: index into ``records`` of the first record not yet received when that kill was seen
    memory_at: int | None = None
    #: index into ``records`` of the first record not yet received when the group's memory first hit
    #: its limit (``CandidateGroup.reached_limit``), None if it never did. Why: at the
    #: limit without swap the kernel reclaims the program's own code pages, so a memory bomb often
    #: crawls into a time limit instead of an OOM kill; a test that times out from here on spent its
    #: memory budget, not its time
    limit_at: int | None = None
    #: what the candidate's cgroups measured: peak_bytes, limit_hits, oom_kills, pids_refused
    budget: dict[str, Any] = field(default_factory=dict)
    #: per record (parallel to ``records``): the (OOM kills, limit hits) in the candidate's group
    #: since the previous record that carried the group's counters, read by the child when it emitted
    #: this one, so whatever the order the parent reads them in, a test's own; None for a record
    #: without counters (no group, or the program closed their fds)
    record_memory: list[tuple[int, int] | None] = field(default_factory=list)
    #: OOM kills and limit hits counted after the last record that carried counters (the whole run's
    #: when none did): what a test that never reported (it was killed) spent
    oom_after: int = 0
    limits_after: int = 0
    #: how many records had arrived when the last one carrying counters did (0: none did)
    counted_through: int = 0
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


_kill_until_gone = cgroups.kill_until_gone


def kill_tagged(tag: str) -> int:
    """Best-effort sweep for the no-PID-namespace fallback: a program can only escape it by
    re-exec'ing itself with a different environment."""
    return _kill_until_gone(lambda: live_pids_with_tag(tag))


def kill_uid(uid: int) -> int:
    """SIGKILL every process owned by ``uid``. Only safe for uids reserved to one sandbox slot."""
    return _kill_until_gone(lambda: live_pids_of_uid(uid))


def budget_unavailable_message(setup: cgroups.Setup) -> str:
    return (f"sandbox: cannot give each candidate its own memory and process budget ({setup.error}); "
            "refusing to grade. Run where the memory and pids cgroup controllers are writable below the "
            "harness's own group (root, or a delegated cgroup v2 subtree), or pass --unsafe-sandbox to "
            "grade with per-process rlimits only")


#: extra seconds ``Limits.progress_s`` allows before the first record: fork, mounts, privilege drop
#: and seccomp of the child, slow on a loaded machine, are not the program's time
START_GRACE_S = 1.0

#: returned by an ``on_record`` callback: kill the run now (its records so far are kept)
STOP = object()


class Sandbox:
    """One isolated slot: a zygote plus one fresh child per ``run``. Runs on one Sandbox are
    serialised (a lock); a pool gives each concurrent slot its own Sandbox.

    ``uid``/``gid``: identity of the program when we can drop privileges (default nobody). A pool
    gives each slot its own uid so RLIMIT_NPROC and the leftover sweep never couple two candidates.
    ``unsafe``: allow grading without the sealed view (default: the process-wide setting of
    ``allow_unsafe`` / ``VPO_UNSAFE_SANDBOX=1``); otherwise an unsealed machine raises
    :class:`SandboxUnavailable` here, before any program runs.
    """

    def __init__(self, limits: Limits | None = None, *, uid: int | None = NOBODY, gid: int | None = NOBODY,
                 isolation: Isolation | None = None, tmp_root: str | None = None,
                 unsafe: bool | None = None, seccomp: bool = True, budget: cgroups.Setup | None = None):
        self.limits = limits or Limits()
        self.iso = isolation or detect_isolation()
        if not self.iso.sealed and not unsafe_allowed(unsafe):
            raise SandboxUnavailable(unavailable_message(self.iso))
        self.budget = budget or cgroups.detect()
        if not self.budget.ok and not unsafe_allowed(unsafe):
            raise SandboxUnavailable(budget_unavailable_message(self.budget))
        drop = self.iso.can_drop_privileges and uid is not None
        self.notes = list(self.iso.notes)
        if not self.budget.ok:
            self.notes.append(f"UNSAFE: no per-candidate memory/process budget ({self.budget.error}); "
                              "rlimits per process only (--unsafe-sandbox)")
        if not self.iso.sealed:
            self.notes.append("UNSAFE: no sealed filesystem view (--unsafe-sandbox)")
            if drop and not _reachable_by_others(python_paths()):
                # unsealed, a 0700-protected interpreter (pyenv under /root) cannot be exposed to
                # the unprivileged uid; running the program as that uid would fail every import
                drop = False
                self.notes.append("interpreter not reachable by other users: privileges not dropped")
        self.uid = uid if drop else None
        self.gid = (gid if gid is not None else uid) if drop else None
        self.tmp_root = tmp_root
        self.seccomp = seccomp
        self._zygote: Zygote | None = None
        self._lock = threading.Lock()

    def isolation_record(self, limits: Limits | None = None) -> dict[str, Any]:
        """What is in force for a run; written into every result."""
        lim = limits or self.limits
        return {"sealed": self.iso.sealed, "netns": self.iso.netns, "pidns": self.iso.pidns,
                "mountns": self.iso.mountns, "fs_readonly": self.iso.sealed, "userns": self.iso.userns,
                "seccomp": self.seccomp and self.iso.sealed,
                "uid": self.uid if self.uid is not None else os.geteuid(),
                "privileges_dropped": self.uid is not None, "rlimits": lim.as_dict(),
                "budget": (cgroups.budget_record(self.budget.parts, lim.memory_bytes, lim.processes)
                           if self.budget.ok else {"cgroup": None, "error": self.budget.error}),
                "notes": list(self.notes) + (list(self._zygote.notes) if self._zygote is not None else [])}

    # ---- zygote lifecycle ----------------------------------------------------------------------
    def _ensure_zygote(self) -> Zygote:
        if self._zygote is not None and not self._zygote.alive():
            self._zygote.kill()
            self._zygote = None
        if self._zygote is None:
            group = None
            if self.budget.ok:
                try:  # the zygote's slot group: +1 process for the zygote itself
                    group = cgroups.CandidateGroup(self.budget, self.limits.memory_bytes, self.limits.processes + 1,
                                                   tag=str(self.uid if self.uid is not None else "root"))
                except OSError as exc:
                    raise SandboxUnavailable(
                        f"sandbox: cannot create the slot's cgroup below "
                        f"{', '.join(sorted({p.base for p in self.budget.parts}))}: {exc}") from exc
            try:
                self._zygote = Zygote(self.iso.unshare_argv, sealed=self.iso.sealed, uid=self.uid,
                                      gid=self.gid, seccomp=self.seccomp and self.iso.sealed, group=group)
            except ZygoteError as exc:
                raise SandboxUnavailable(f"sandbox: the zygote failed to start: {exc}") from exc
        return self._zygote

    def close(self) -> None:
        """Stop the zygote (it is restarted by the next run)."""
        with self._lock:
            if self._zygote is not None:
                self._zygote.close()
                self._zygote = None

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # pragma: no cover - best effort for callers that forget close()
        z = getattr(self, "_zygote", None)
        if z is not None:
            try:
                z.kill()
            except Exception:
                pass

    # ---- one run -------------------------------------------------------------------------------
    def run(self, driver_source: str, payload: Any, *, limits: Limits | None = None,
            files: dict[str, str] | None = None,
            on_record: Callable[[dict[str, Any]], Any] | None = None) -> SandboxResult:
        """Run ``driver_source``'s ``main(payload, emit)`` in a fresh child; never raises for what the
        child does (only for harness-side failures such as a zygote that cannot start).

        ``on_record(record)`` is called for each valid record as it arrives; ``STOP`` ends the run at
        once, bytes are written to the child's fd 4 (only open when ``on_record`` is given)."""
        lim = limits or self.limits
        for rel in files or {}:
            if os.path.isabs(rel) or ".." in rel.split("/"):
                raise ValueError(f"file {rel!r} escapes the sandbox dir")
        with self._lock:
            for attempt in range(2):
                z = self._ensure_zygote()
                try:
                    return self._run_on(z, driver_source, payload, lim, files or {}, on_record)
                except ZygoteError:
                    z.kill()
                    self._zygote = None
                    if attempt:
                        raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _run_on(self, z: Zygote, driver_source: str, payload: Any, lim: Limits, files: dict[str, str],
                on_record: Callable[[dict[str, Any]], Any] | None) -> SandboxResult:
        key = hashlib.sha256(driver_source.encode()).hexdigest()
        try:
            z.ensure_driver(key, driver_source)
        except OSError as exc:
            raise ZygoteError(str(exc)) from exc
        workdir = None
        if not z.sealed:  # unsafe mode: a host directory, removed afterwards
            workdir = tempfile.mkdtemp(prefix="vpo-sbx-", dir=self.tmp_root)
            os.chmod(workdir, 0o700)
            if self.uid is not None:
                os.chown(workdir, self.uid, self.gid)
        group = z.group
        if group is not None:
            try:
                group.begin_run(lim.memory_bytes, lim.processes + 1)
            except OSError as exc:
                if workdir is not None:
                    shutil.rmtree(workdir, ignore_errors=True)
                raise ZygoteError(f"cannot set the candidate's budget in {list(group.dirs.values())}: {exc}") from exc
        pipes = [os.pipe() for _ in range(4 if on_record else 3)]
        counters = group.counter_fds() if group is not None else []
        far = [w for _, w in pipes[:3]] + ([pipes[3][0]] if on_record else []) + counters
        near = [r for r, _ in pipes[:3]] + ([pipes[3][1]] if on_record else [])
        nonce = secrets.token_hex(16)
        tag = secrets.token_hex(8)
        job = {"driver_key": key, "payload": payload, "nonce": nonce, "files": files, "counters": len(counters),
               "limits": dict(lim.as_dict(), scratch_bytes=max(lim.file_size_bytes, 1 << 20) * 4),
               "env": dict(SAFE_ENV, VPO_SANDBOX_TAG=tag), "workdir": workdir}
        t0 = time.monotonic()
        try:
            try:
                send_msg(z.sock, job, far)
            except OSError as exc:
                raise ZygoteError(f"zygote gone: {exc}") from exc
            finally:
                for fd in far:
                    os.close(fd)
            res = self._supervise(z, near, t0, nonce, lim, on_record, group)
            res.extra["tag"] = tag
            if group is not None and group.tasks():  # what the zygote's sweep missed (unsafe mode)
                res.leftover_killed += group.kill()
            return res
        finally:
            for fd in near:
                if fd >= 0:  # -1: already closed by _supervise (never close a number twice)
                    os.close(fd)
            if workdir is not None:
                shutil.rmtree(workdir, ignore_errors=True)

    @staticmethod
    def _zygote_lost(z: Zygote, group: cgroups.CandidateGroup | None) -> dict[str, Any]:
        """The zygote died under a run. Killed by the OOM killer of the slot's group, it is the
        candidate's doing (its memory budget was spent; the kernel killed every process of the PID
        namespace with it): a verdict, not a harness failure. Anything else is a lost zygote."""
        z.lost = True
        if group is None or not group.oom_kills():
            raise ZygoteError("zygote died during a run")
        return {"status": signal.SIGKILL, "timed_out": False, "killed": False, "leftovers": 0,
                "maxrss_kb": 0}

    def _supervise(self, z: Zygote, near: list[int], t0: float, nonce: str, lim: Limits,
                   on_record: Callable[[dict[str, Any]], Any] | None,
                   group: cgroups.CandidateGroup | None = None) -> SandboxResult:
        out, err = _Tail(lim.output_cap_bytes), _Tail(lim.output_cap_bytes)
        result_buf = bytearray()
        scanned = 0
        records: list[dict[str, Any]] = []
        record_memory: list[tuple[int, int] | None] = []
        tampered = done = overflow = stop = stalled = False
        memory_at: int | None = None
        limit_at: int | None = None
        counted = (0, 0)  # (OOM kills, limit hits) at the last record that carried the counters
        counted_through = 0
        last_progress = t0 + START_GRACE_S  # the first record also waits for the child's start-up
        reply_fd = near[3] if on_record else -1
        report: dict[str, Any] | None = None
        sel = selectors.DefaultSelector()
        streams: dict[int, Callable[[bytes], bool]] = {near[0]: out.add, near[1]: err.add}

        def _result_add(data: bytes) -> bool:
            """Records are parsed as they arrive: each valid one is progress (the parent's per-test
            deadline) and goes to ``on_record``; anything else on the channel marks the run tampered."""
            nonlocal overflow, scanned, stop, tampered, done, last_progress, memory_at, limit_at, counted, \
                counted_through
            if group is not None and memory_at is None and group.oom_kills():
                memory_at = len(records)  # the records parsed so far were complete before the kill
            if group is not None and limit_at is None and group.reached_limit():
                limit_at = len(records)
            result_buf.extend(data)
            if len(result_buf) > lim.result_cap_bytes:
                overflow = True
                return False
            end = result_buf.rfind(b"\n", scanned)
            if end < scanned:
                return True
            for line in bytes(result_buf[scanned:end]).split(b"\n"):
                rec = _valid_record(line, nonce)
                if rec is None:
                    tampered = True
                    continue
                last_progress = time.monotonic()
                now = group.counters_from(rec.pop("mem", None)) if group is not None else None
                if rec.get("kind") == "done":
                    done = True
                else:
                    own = None
                    if now is not None and now[0] >= counted[0] and now[1] >= counted[1]:
                        own = (now[0] - counted[0], now[1] - counted[1])  # since the last counted record
                        counted, counted_through = now, len(records) + 1
                    records.append(rec)
                    record_memory.append(own)
                if on_record is None:
                    continue
                reply = on_record(rec)
                if reply is STOP:
                    stop = True
                elif reply:
                    try:
                        os.write(reply_fd, reply)
                    except OSError:  # the program closed fd 4: it loses its answers
                        pass
            scanned = end + 1
            return True

        streams[near[2]] = _result_add
        for fd in near[:3]:
            os.set_blocking(fd, False)
            sel.register(fd, selectors.EVENT_READ)
        sel.register(z.sock, selectors.EVENT_READ)
        hard_deadline = t0 + lim.wall_s + 10.0  # the zygote enforces wall_s; this guards the zygote
        kill_sent = False
        try:
            while report is None or sel.get_map():
                now = time.monotonic()
                if report is not None and now - report["_at"] > 1.0:
                    break  # a pipe still open after every process died: stop waiting for it
                if now >= hard_deadline:
                    raise ZygoteError("zygote did not report in time")
                if (report is None and not kill_sent and lim.progress_s is not None
                        and now - last_progress > lim.progress_s):
                    stalled = True  # checked after the events were read: a late reader never kills
                if (overflow or stop or stalled) and not kill_sent and report is None:
                    send_msg(z.sock, {"op": "kill"})
                    kill_sent = True
                wait = 0.25
                if lim.progress_s is not None and report is None and not kill_sent:
                    wait = min(wait, max(0.005, last_progress + lim.progress_s - now + 0.001))
                for skey, _ in sel.select(timeout=wait):
                    if skey.fileobj is z.sock:
                        report = recv_msg(z.sock)
                        if report is None:
                            report = self._zygote_lost(z, group)
                        report["_at"] = time.monotonic()
                        sel.unregister(z.sock)
                        continue
                    fd = skey.fd
                    try:
                        data = os.read(fd, 1 << 16)
                    except BlockingIOError:
                        continue
                    except OSError:
                        data = b""
                    if not data or not streams[fd](data):
                        sel.unregister(fd)
                        if data and fd != near[2]:  # an output flood: the writer gets EPIPE
                            i = near.index(fd)
                            os.close(fd)
                            near[i] = -1
        except OSError as exc:
            raise ZygoteError(f"lost the zygote: {exc}") from exc
        finally:
            sel.close()
        wall = time.monotonic() - t0
        budget: dict[str, Any] = {}
        if group is not None:
            budget = group.stats()
            if memory_at is None and budget["oom_kills"]:
                memory_at = len(records)
            if limit_at is None and group.reached_limit():
                limit_at = len(records)
        oom_after = max(0, int(budget.get("oom_kills", 0)) - counted[0])
        limits_after = max(0, int(budget.get("limit_hits", 0)) - counted[1])
        status = int(report["status"])
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
        code = -sig if sig else os.WEXITSTATUS(status)
        return SandboxResult(records=records, isolation=self.isolation_record(lim), wall_s=wall,
                             exit_code=code, signal=sig, timed_out=bool(report["timed_out"]), done=done,
                             tampered=tampered, result_overflow=overflow, stdout_tail=out.text(),
                             stderr_tail=err.text(), stdout_bytes=out.total, stderr_bytes=err.total,
                             leftover_killed=int(report.get("leftovers", 0)),
                             maxrss_kb=int(report.get("maxrss_kb", 0)), stalled=stalled,
                             memory_limit=memory_at is not None, memory_at=memory_at, limit_at=limit_at,
                             budget=budget, record_memory=record_memory, oom_after=oom_after,
                             limits_after=limits_after,
                             counted_through=counted_through)


def _valid_record(line: bytes, nonce: str) -> dict[str, Any] | None:
    """The record on one line of the result channel, nonce removed; None if it is not one."""
    try:
        rec = json.loads(line)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(rec, dict) or rec.pop("nonce", None) != nonce:
        return None
    return rec
