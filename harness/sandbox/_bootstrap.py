"""First code of every sandboxed child (run as a script: ``python -I _bootstrap.py JOB.json``).

Runs with the parent's privileges, usually as PID 1 of fresh network/PID/mount namespaces:
1. reads the job (driver source, payload, limits, identity) while it still may;
2. makes the filesystem read-only except the private working directory, and gives the child private
   empty /tmp-like directories, so nothing outside the sandbox dir can change;
3. forks the worker, which sets rlimits, drops to the unprivileged uid and runs the driver;
4. stays behind as the namespace's reaper and exits with the worker's status. When it exits the kernel
   kills every process left in the PID namespace (setsid'd grandchildren included).

The worker is deliberately not PID 1: PID 1 ignores signals it has no handler for, which would change
what `os.kill(os.getpid(), SIGTERM)` does to a candidate program.

Standard library only: this file runs in isolated mode outside the repository's import path.
"""
import ctypes
import json
import os
import resource
import signal
import sys

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
_OPT_FLAGS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": MS_NOATIME,
              "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME}
#: world-writable places a non-root program could otherwise write to
_SCRATCH = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/run/shm")


def _mount(libc, src, target, fstype, flags, data=None):
    enc = lambda s: None if s is None else s.encode()  # noqa: E731
    if libc.mount(enc(src), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)) != 0:
        raise OSError(ctypes.get_errno(), f"mount {target}")


def _unescape(path):
    return path.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")


def _mounts():
    out = []
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            parts = line.split()
            flags = 0
            for opt in parts[5].split(","):
                flags |= _OPT_FLAGS.get(opt, 0)
            out.append((_unescape(parts[4]), flags))
    return out


def _expose(libc, paths):
    """Make ``paths`` reachable for the unprivileged uid inside this mount namespace only.

    Interpreters often live under a directory others cannot traverse (pyenv under /root, mode 0700).
    For such an ancestor A on the way to a needed path A/C/..., A is covered by an empty tmpfs
    (mode 0755) into which only A/C is bind-mounted back: the program can reach Python's files and
    nothing else that was in A. The host's permissions are never touched.
    """
    exposed = set()
    for path in paths:
        parts = os.path.realpath(path).strip("/").split("/")
        cur = "/"
        for comp in parts:
            if not comp:
                break
            try:
                st = os.stat(cur)
            except OSError:
                break
            child = os.path.join(cur, comp)
            if not st.st_mode & 0o001 and (cur, comp) not in exposed:
                keep = [c for (a, c) in exposed if a == cur] + [comp]
                fds = [os.open(os.path.join(cur, c), os.O_RDONLY | os.O_DIRECTORY) for c in keep]
                _mount(libc, "tmpfs", cur, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=0755")
                for c, fd in zip(keep, fds):
                    os.mkdir(os.path.join(cur, c), 0o755)
                    _mount(libc, f"/proc/self/fd/{fd}", os.path.join(cur, c), None, MS_BIND | MS_REC)
                    os.close(fd)
                exposed.add((cur, comp))
            cur = child


def lock_filesystem(workdir, expose=()):
    """Read-only everything but ``workdir``; empty private tmpfs over the world-writable dirs."""
    libc = ctypes.CDLL(None, use_errno=True)
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)
    _expose(libc, expose)
    for d in _SCRATCH:
        if os.path.isdir(d) and not os.path.islink(d) and not workdir.startswith(d + "/"):
            try:
                _mount(libc, "tmpfs", d, "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=1777")
            except OSError:
                pass
    _mount(libc, workdir, workdir, None, MS_BIND)
    failed = 0
    for target, flags in _mounts():
        if target == workdir or target == "/proc" or target.startswith("/proc/") or target in _SCRATCH:
            continue
        try:
            _mount(libc, None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)
        except OSError:
            failed += 1
    # the world-writable scratch dirs above the workdir (e.g. /tmp itself) are now read-only with /
    return failed


def _set_limits(lim):
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CPU, (lim["cpu_s"], lim["cpu_s"] + 1))
    resource.setrlimit(resource.RLIMIT_AS, (lim["address_space_bytes"],) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (lim["file_size_bytes"],) * 2)
    resource.setrlimit(resource.RLIMIT_NOFILE, (lim["open_files"],) * 2)
    resource.setrlimit(resource.RLIMIT_NPROC, (lim["processes"],) * 2)


def _worker(job):
    fd = job["result_fd"]
    if fd != 3:
        os.dup2(fd, 3)
        os.close(fd)
    os.closerange(4, 1 << 16)
    os.chdir(job["workdir"])
    _set_limits(job["limits"])
    uid, gid = job.get("uid"), job.get("gid")
    if uid is not None:
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    os.umask(0o077)
    nonce = job["nonce"]
    me = os.getpid()
    out = os.fdopen(3, "w", buffering=1, closefd=False)

    def emit(record):
        """Send one JSON record to the parent; silently dropped in processes the program forked."""
        if os.getpid() != me:
            return
        record = dict(record)
        record["nonce"] = nonce
        out.write(json.dumps(record, separators=(",", ":")) + "\n")
        out.flush()

    # -S skipped site.py (its .pth processing costs tens of ms per child); the parent passes the
    # site-packages directories so programs can still import numpy & co.
    sys.path.extend(p for p in job.get("sys_path", []) if p not in sys.path)
    ns = {"__name__": "sandbox_driver", "__builtins__": __builtins__}
    driver_src, payload = job["driver_source"], job["payload"]
    del job
    exec(compile(driver_src, "<sandbox-driver>", "exec"), ns)
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
    os._exit(0)


def main():
    with open(sys.argv[1]) as fh:
        job = json.load(fh)
    os.unlink(sys.argv[1])  # the payload never becomes readable to the program
    if job.get("lock_fs"):
        try:
            job["fs_remount_failures"] = lock_filesystem(job["workdir"], job.get("expose", ()))
        except OSError as exc:
            sys.stderr.write(f"sandbox: filesystem lock failed: {exc}\n")
            os._exit(70)
    pid = os.fork()
    if pid == 0:
        try:
            _worker(job)
        except BaseException:
            import traceback
            traceback.print_exc()
            sys.stderr.flush()
        finally:
            os._exit(71)
    del job
    # reaper: wait for the worker, collect orphans re-parented to us
    status = None
    signal.signal(signal.SIGTERM, lambda *a: os.kill(pid, signal.SIGKILL))
    while True:
        try:
            got, st = os.wait()
        except ChildProcessError:
            break
        if got == pid:
            status = st
            break
    if status is None:
        os._exit(72)
    if os.WIFSIGNALED(status):
        os._exit(128 + os.WTERMSIG(status))
    os._exit(os.WEXITSTATUS(status))


if __name__ == "__main__":
    main()
