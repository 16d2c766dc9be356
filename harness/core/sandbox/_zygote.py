"""The sandbox zygote: one long-lived interpreter per sandbox slot that forks one child per run.

Started by the harness as ``[unshare --net --pid --mount --ipc --uts --fork --kill-child] python -I -S
_zygote.py CTL_FD``. Why a zygote: a fresh interpreter per candidate spends most of its time on
imports (site, json, the driver, LiveCodeBench's prelude) and namespace creation; here they happen
once per slot and every run is a ``fork`` of an interpreter that has done them.

Sealed mode (the default; PID 1 of fresh PID/network/mount/IPC/UTS namespaces):
1. ``seal``: builds a minimal root on a tmpfs (the Python installation and the shared libraries it
   needs, bind-mounted read-only; ``/dev/null``, ``/dev/urandom``; a fresh ``/proc`` of this PID
   namespace; empty ``/tmp`` and ``/work`` mount points) and ``pivot_root``s into it. The host's
   folders (project, data, home, hub caches, host ``/tmp`` and its sockets) no longer exist here.
2. join the slot's cgroups (fds in the start message; see cgroups.py), so every child is born in
   the candidate's memory and process budget.
3. loop: per job (a JSON message plus the pipe ends, passed as SCM_RIGHTS on the control socket),
   fork a child that takes a private mount namespace with fresh tmpfs ``/tmp`` and ``/work``, sets
   the rlimits, drops to the slot's uid, installs the seccomp filter (no new namespaces) and runs the
   driver's ``main(payload, emit)``. The zygote waits (wall-clock limit), then kills every other
   process of the PID namespace and reaps them, so nothing survives a run.

Unsafe mode (``--unsafe-sandbox`` on machines without namespaces): the same loop without step 1;
leftovers are swept by process group and uid instead.

Standard library only: this file runs in isolated mode outside the repository's import path.
"""
import ctypes
import fcntl
import json
import os
import resource
import select
import signal
import socket
import struct
import sys
import time

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
#: the child's fds: 0-2 stdio, 3 the result channel, 4 the reply channel (gated drivers), from 5 the
#: candidate group's counter files
FIRST_COUNTER_FD = 5
CLONE_NEWNS = 0x00020000
#: what a program sees besides the Python installation: the shared libraries it links against
LIB_DIRS = ("/usr/lib", "/usr/lib64", "/usr/lib32", "/usr/local/lib", "/lib", "/lib64", "/lib32",
            "/usr/bin", "/bin")
DEVICES = ("null", "urandom")
_LIBC = ctypes.CDLL(None, use_errno=True)


def _check(ret, what):
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(src, target, fstype, flags, data=None):
    enc = lambda s: None if s is None else s.encode()  # noqa: E731
    _check(_LIBC.mount(enc(src), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
           f"mount {target}")


def _bind_ro(src, dst):
    _mount(src, dst, None, MS_BIND | MS_REC)
    _mount(None, dst, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


# ---- sealing -------------------------------------------------------------------------------------
#: the folders the sealed tree makes for itself: the child's scratch (fresh tmpfs per run) and, only
#: while sealing, the old root. An exposed path may already live under one of these names (a venv
#: in a checkout under /work, one under the host's /tmp): then the scratch folder gets another name
SCRATCH = ("tmp", "work")


def _plan(path, seen, ops):
    """Append to ``ops`` what makes ``path`` (absolute, on the host) appear read-only at the same
    place under the new root: folders to make, symlinks to recreate (pointing where they point on
    the host, their targets placed too), and the path itself to bind, held open as an ``O_PATH`` fd.
    Planned before the root's tmpfs is mounted: that tmpfs shadows a host folder (``/tmp``), and a
    path under it must be looked at, and opened, as the host has it."""
    cur = ""
    for comp in path.strip("/").split("/"):
        cur += "/" + comp
        if cur in seen:
            continue
        if os.path.islink(cur):
            target = os.readlink(cur)
            ops.append(("link", cur, target))
            seen.add(cur)
            resolved = os.path.normpath(os.path.join(os.path.dirname(cur), target))
            _plan(resolved + path[len(cur):], seen, ops)
            return
        if cur == path.rstrip("/"):
            ops.append(("bind", cur, os.open(cur, os.O_PATH | os.O_CLOEXEC), os.path.isdir(cur)))
            seen.add(cur)
            return
        ops.append(("dir", cur))


def _build(root, ops):
    """Carry out :func:`_plan`'s ``ops`` under ``root``; binds come from the held fds, so what is
    placed is the host's file even where ``root``'s tmpfs now covers its path."""
    for op in ops:
        inside = root + op[1]
        if op[0] == "dir":
            os.makedirs(inside, mode=0o755, exist_ok=True)
        elif op[0] == "link":
            if not os.path.lexists(inside):
                os.symlink(op[2], inside)
        else:
            _, _, fd, is_dir = op
            try:
                if is_dir:
                    os.makedirs(inside, exist_ok=True)
                else:
                    open(inside, "a").close()
                _bind_ro(f"/proc/self/fd/{fd}", inside)
            finally:
                os.close(fd)


def _free_name(root, name):
    """``/name``, or ``/name-sandbox[-N]`` where an exposed path already holds ``/name``."""
    for k in range(100):
        cand = f"/{name}" if k == 0 else f"/{name}-sandbox" + (f"-{k}" if k > 1 else "")
        if not os.path.lexists(root + cand):
            return cand
    raise OSError(17, f"no free name for the sandbox's {name} folder")


def seal(expose):
    """pivot_root into a minimal tree. Returns (the notes to record: what could not be placed, a
    scratch folder renamed; the scratch folders' paths, ``{"tmp": ..., "work": ...}``)."""
    notes = []
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    seen, ops = set(), []
    wanted = [p for p in dict.fromkeys(list(expose) + list(LIB_DIRS)) if os.path.lexists(p)]
    # nested paths: place the outer one only (its bind mount brings the inner one along)
    wanted = [p for p in wanted
              if not any(p != q and p.startswith(q.rstrip("/") + "/") for q in wanted)]
    for path in wanted:
        before = len(ops)
        try:
            _plan(os.path.abspath(path), seen, ops)
        except OSError as exc:
            for op in ops[before:]:
                if op[0] == "bind":
                    os.close(op[2])
            del ops[before:]
            notes.append(f"not placed: {path} ({exc.strerror})")
    root = "/tmp"  # any existing directory: the tmpfs over it only exists in this mount namespace
    _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,nr_inodes=4096,mode=0755")
    _build(root, ops)
    os.makedirs(root + "/dev", mode=0o755, exist_ok=True)
    for dev in DEVICES:
        open(f"{root}/dev/{dev}", "a").close()
        _mount(f"/dev/{dev}", f"{root}/dev/{dev}", None, MS_BIND)
    os.makedirs(root + "/proc", mode=0o755, exist_ok=True)
    scratch = {}
    for name in SCRATCH:
        scratch[name] = _free_name(root, name)
        if scratch[name] != "/" + name:
            notes.append(f"/{name} holds the Python installation: the sandbox's {name} folder is {scratch[name]}")
        os.mkdir(root + scratch[name], 0o755)
    old = _free_name(root, ".old")
    os.mkdir(root + old, 0o755)
    os.chdir(root)
    _check(_LIBC.syscall(155 if os.uname().machine == "x86_64" else 41, b".", old[1:].encode()), "pivot_root")
    os.chdir("/")
    _check(_LIBC.umount2(old.encode(), MNT_DETACH), "umount old root")
    os.rmdir(old)
    try:
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2")
    except OSError:
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        notes.append("/proc without hidepid")
    _mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    return notes, scratch


# ---- the child -----------------------------------------------------------------------------------
def _set_limits(lim):
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CPU, (lim["cpu_s"], lim["cpu_s"] + 1))
    resource.setrlimit(resource.RLIMIT_AS, (lim["address_space_bytes"],) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (lim["file_size_bytes"],) * 2)
    resource.setrlimit(resource.RLIMIT_NOFILE, (lim["open_files"],) * 2)
    resource.setrlimit(resource.RLIMIT_NPROC, (lim["processes"],) * 2)


def _write_file(path, text):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def join_budget(fds):
    """Join the slot's cgroups (each fd: a ``cgroup.procs`` the harness opened; ``0`` means the
    writer), exempt from the OOM killer where that is allowed (CAP_SYS_RESOURCE). Candidates raise
    their own score to the maximum, so the kernel picks them first either way; a candidate that
    lowers it again and gets the zygote killed ends its own run with memory_limit (sandbox.py)."""
    try:
        _write_file("/proc/self/oom_score_adj", "-1000")
    except OSError:
        pass  # no CAP_SYS_RESOURCE (this machine kind): the candidates' 1000 below still comes first
    for fd in fds:
        os.write(fd, b"0")
        os.close(fd)


def _child(cfg, job, fds, drivers, seccomp_code):
    """Runs in the forked child; never returns."""
    code = 71
    redirected, err_w = False, fds[1]
    try:
        if cfg.get("budget"):  # born in the slot's cgroup: the OOM killer's first choice, not the zygote
            _write_file("/proc/self/oom_score_adj", "1000")
        n_counters = int(job.get("counters") or 0)
        # the candidate group's counter files (read-only, see cgroups.counter_fds) come last: moved
        # out of the way first, so the redirections below cannot close one of them
        counters = [fcntl.fcntl(fd, fcntl.F_DUPFD, 64) for fd in fds[len(fds) - n_counters:]]
        fds = fds[:len(fds) - n_counters]
        out_w, err_w, res_w = fds[:3]
        reply_r = fds[3] if len(fds) > 3 else None
        lim, uid, gid = job["limits"], cfg.get("uid"), cfg.get("gid")
        if cfg["sealed"]:
            _check(_LIBC.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
            own = f",uid={uid},gid={gid}" if uid is not None else ""
            size = lim["scratch_bytes"]
            tmp, workdir = cfg["scratch"]["tmp"], cfg["scratch"]["work"]
            _mount("tmpfs", tmp, "tmpfs", MS_NOSUID | MS_NODEV, f"size={size},nr_inodes=4096,mode=1777")
            _mount("tmpfs", workdir, "tmpfs", MS_NOSUID | MS_NODEV, f"size={size},nr_inodes=4096,mode=0700{own}")
        else:
            os.setsid()
            workdir = job["workdir"]
        os.chdir(workdir)
        for rel, text in (job.get("files") or {}).items():
            path = os.path.join(workdir, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as fh:
                fh.write(text)
            if uid is not None:
                os.chown(path, uid, gid)
        null = os.open("/dev/null", os.O_RDONLY)
        for fd, num in ((null, 0), (out_w, 1), (err_w, 2), (res_w, 3)):
            os.dup2(fd, num)
        redirected = True
        if reply_r is not None:
            os.dup2(reply_r, 4)
        else:
            os.closerange(4, FIRST_COUNTER_FD)
        for k, fd in enumerate(counters):
            os.dup2(fd, FIRST_COUNTER_FD + k)
        job["counter_fds"] = list(range(FIRST_COUNTER_FD, FIRST_COUNTER_FD + len(counters)))
        os.closerange(FIRST_COUNTER_FD + len(counters), 1 << 16)
        _set_limits(lim)
        if uid is not None:
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
        os.umask(0o077)
        if seccomp_code is not None:
            sys.modules["_seccomp"].install(seccomp_code)
        job["tmpdir"] = cfg["scratch"]["tmp"] if cfg["sealed"] else workdir
        run_driver(drivers[job["driver_key"]], job, workdir)
        code = 0
    except BaseException:
        try:
            import traceback
            if not redirected:  # stderr is still the zygote's (/dev/null): use the run's pipe
                os.dup2(err_w, 2)
            traceback.print_exc()
            sys.stderr.flush()
        except BaseException:
            pass
    os._exit(code)


def _counter_texts(fds):
    """The texts of the candidate group's counter files now, or None when one cannot be read (the
    program closed it): the parent then attributes by arrival (sandbox.py)."""
    out = []
    for fd in fds:
        try:
            out.append(os.pread(fd, 4096, 0).decode("ascii", "replace"))
        except OSError:
            return None
    return out


def run_driver(ns, job, workdir):
    """The worker's part: emit records on fd 3 and call the driver's ``main``. Each record carries
    the memory counters of the candidate's group as they were when it was emitted (``mem``), so the
    parent can tell which test an OOM kill or a limit hit belongs to, whenever the record is read."""
    nonce = job["nonce"]
    counter_fds = job.get("counter_fds") or []
    me = os.getpid()
    out = os.fdopen(3, "w", buffering=1, closefd=False)
    os.environ.clear()
    os.environ.update(job["env"], HOME=workdir, TMPDIR=job.get("tmpdir") or workdir)

    def emit(record):
        """Send one JSON record to the parent; silently dropped in processes the program forked."""
        if os.getpid() != me:
            return
        record = dict(record)
        record["nonce"] = nonce
        if counter_fds:
            record["mem"] = _counter_texts(counter_fds)
        out.write(json.dumps(record, separators=(",", ":")) + "\n")
        out.flush()

    payload = job["payload"]
    del job
    try:
        ns["main"](payload, emit)
        emit({"kind": "done"})
    except BaseException as exc:  # the driver should catch everything; this is the last resort
        try:
            emit({"kind": "driver_error", "error": repr(exc)[:500]})
        except BaseException:
            pass
    for stream in (sys.stdout, sys.stderr):  # os._exit skips the flush of Python's buffers
        try:
            stream.flush()
        except BaseException:
            pass


# ---- the zygote loop -----------------------------------------------------------------------------
def _send(sock, msg):
    data = json.dumps(msg).encode()
    sock.sendall(struct.pack("!I", len(data)) + data)


def _recv(sock):
    """One message and the fds that came with it; None on EOF."""
    head, fds, _, _ = socket.recv_fds(sock, 4, 8)
    if not head:
        return None, []
    while len(head) < 4:
        more = sock.recv(4 - len(head))
        if not more:
            return None, fds
        head += more
    (n,) = struct.unpack("!I", head)
    buf = bytearray()
    while len(buf) < n:
        chunk, more_fds, _, _ = socket.recv_fds(sock, n - len(buf), 8)
        if not chunk:
            return None, fds
        buf += chunk
        fds += more_fds
    return json.loads(buf), fds


def _load_driver(source):
    ns = {"__name__": "sandbox_driver", "__builtins__": __builtins__}
    exec(compile(source, "<sandbox-driver>", "exec"), ns)
    warm = ns.get("warm")
    if callable(warm):  # imports the driver wants done once (LCB: the prelude's modules)
        warm()
    return ns


def _sweep(cfg, child_pgid):
    """Kill everything the run left behind and reap it."""
    if cfg["sealed"]:
        try:
            os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return 0  # no process left in the namespace: the common case
        try:
            os.kill(-1, signal.SIGKILL)  # PID 1 of the namespace: everyone here but us
        except OSError:
            pass
    else:
        try:
            os.killpg(child_pgid, signal.SIGKILL)
        except OSError:
            pass
        for p in _orphans():  # setsid'd descendants re-parented to us (subreaper)
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        uid = cfg.get("uid")
        if uid is not None:  # setsid'd grandchildren: find them by their (slot-private) uid
            for _ in range(10):
                pids = [int(p) for p in os.listdir("/proc") if p.isdigit() and _owned(p, uid)]
                if not pids:
                    break
                for p in pids:
                    try:
                        os.kill(p, signal.SIGKILL)
                    except OSError:
                        pass
                time.sleep(0.01)
    n = 0
    deadline = time.monotonic() + 5
    while True:
        try:
            pid, _ = os.waitpid(-1, 0 if cfg["sealed"] else os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:  # unsafe mode: SIGKILLed children not dead yet
            if time.monotonic() > deadline:
                break
            time.sleep(0.002)
            continue
        n += 1
    return n


def _orphans():
    me = str(os.getpid()).encode()
    out = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/stat", "rb") as fh:
                    if fh.read().rsplit(b")", 1)[1].split()[1] == me:
                        out.append(int(p))
            except (OSError, IndexError):
                pass
    return out


def _owned(pid, uid):
    try:
        if os.stat(f"/proc/{pid}").st_uid != uid:
            return False
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except (OSError, IndexError):
        return False


def _run_job(sock, cfg, job, fds, drivers, seccomp_code):
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        sock.close()
        _child(cfg, job, fds, drivers, seccomp_code)
    for fd in fds:
        os.close(fd)
    pidfd = os.pidfd_open(pid)
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    poller.register(sock.fileno(), select.POLLIN)
    deadline = t0 + job["limits"]["wall_s"]
    timed_out = killed = False
    status = None
    while status is None:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        events = poller.poll(max(1, int(left * 1000)))
        for fd, _ in events:
            if fd == sock.fileno():  # the harness asked for a kill (result flood), or went away
                msg, extra = _recv(sock)
                for x in extra:
                    os.close(x)
                killed = True
                if msg is None:
                    os.kill(pid, signal.SIGKILL)
                    raise SystemExit(0)
        if killed:
            break
        got, st, ru = os.wait4(pid, os.WNOHANG)
        if got == pid:
            status, maxrss = st, ru.ru_maxrss
    if status is None:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
        _, status, ru = os.wait4(pid, 0)
        maxrss = ru.ru_maxrss
    os.close(pidfd)
    leftovers = _sweep(cfg, pid)
    return {"status": status, "timed_out": timed_out, "killed": killed, "maxrss_kb": maxrss,
            "leftovers": leftovers, "wall_s": time.monotonic() - t0}


def main():
    sock = socket.socket(fileno=int(sys.argv[1]))
    cfg, budget_fds = _recv(sock)
    if cfg is None:  # the helper closed the socket before sending the configuration: nothing to serve
        os._exit(0)
    notes = []
    seccomp_code = None
    try:
        if cfg.get("pdeathsig"):
            _LIBC.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: die with the harness's helper
        _LIBC.prctl(36, 1)  # PR_SET_CHILD_SUBREAPER: orphans of a run become ours (unsafe mode)
        sys.path[:0] = [cfg["here"]]
        import _seccomp  # noqa: F401  (before sealing: this folder is not inside the sealed root)
        if cfg.get("seccomp", True):
            seccomp_code = _seccomp.build_filter()
        del sys.path[0]
        drivers = {}
        for key, src in cfg.get("drivers", {}).items():
            drivers[key] = _load_driver(src)
        if cfg["sealed"]:
            sealed_notes, cfg["scratch"] = seal(cfg["expose"])
            notes += sealed_notes
        sys.path.extend(p for p in cfg.get("sys_path", []) if p not in sys.path)
        join_budget(budget_fds)  # last: what the zygote allocated so far is not charged to the budget
    except BaseException as exc:
        _send(sock, {"ready": False, "error": f"{type(exc).__name__}: {exc}"})
        os._exit(70)
    _send(sock, {"ready": True, "notes": notes, "pid": os.getpid()})
    null = os.open("/dev/null", os.O_WRONLY)  # from now on nobody reads our stderr: never block on it
    os.dup2(null, 2)
    os.close(null)
    while True:
        msg, fds = _recv(sock)
        if msg is None:
            os._exit(0)
        if msg.get("op") == "driver":
            try:
                drivers[msg["key"]] = _load_driver(msg["source"])
                _send(sock, {"ok": True})
            except BaseException as exc:
                _send(sock, {"ok": False, "error": repr(exc)[:500]})
            continue
        if msg.get("op") == "kill":  # a late kill for a run that already ended
            continue
        msg["sealed"] = cfg["sealed"]
        _send(sock, _run_job(sock, cfg, msg, fds, drivers, seccomp_code))


if __name__ == "__main__":
    main()
