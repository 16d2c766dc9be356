"""One memory and process budget per candidate, through cgroups (v1 or v2, whichever carries the
controller).

Why cgroups: rlimits bind one process at a time, so a candidate that forks six children, fills memfds
or its tmpfs scratch dirs could take many times its "1 GiB". The memory controller charges every page
a candidate's processes touch (anonymous memory, threads' stacks, tmpfs and memfd pages, kernel memory)
to one group, and the pids controller counts its processes and threads; the kernel OOM-kills inside the
group when the budget is spent, so host pressure never decides a verdict.

Layout rules (the harness is a guest on shared machines): every group is created *below* the group the
harness itself is in (``/proc/self/cgroup``), one per sandbox slot, and removed when the slot closes;
nothing above it, nor its own limits, is ever written.

Why per slot, not per run: moving a process into a cgroup waits for an RCU grace period (about 13 ms
on a loaded 2-core machine, measured), more than the whole fixed cost of a run. So the slot's zygote
joins its group once (writing ``0`` to ``cgroup.procs`` files the harness opened: no pid crosses the PID
namespace) and every candidate it forks is born inside. A slot runs one candidate at a time, so the
group is that candidate's: before each run the limits are (re)written and the peak reset, and the OOM
kills are counted from there. The zygote itself is exempt from the OOM killer (``oom_score_adj``
-1000, the candidate is set back to 0) and costs the budget only what it allocates after joining.

Where the controllers are missing or not writable there, :func:`detect` says which path failed and the
sandbox refuses to grade (``--unsafe-sandbox`` opts out), as it does without namespaces.
"""
from __future__ import annotations

import errno
import functools
import itertools
import os
import signal
import time
from dataclasses import dataclass
from typing import Any

CONTROLLERS = ("memory", "pids")
PREFIX = "vpo-"
_COUNTER = itertools.count()


def kill_until_gone(find: Any, rounds: int = 10, pause_s: float = 0.02) -> int:
    """SIGKILL every pid ``find()`` returns until it returns none (or ``rounds`` passes): a forking
    program adds processes while the sweep runs. Returns how many kills were sent."""
    n = 0
    for _ in range(rounds):
        victims = find()
        if not victims:
            break
        for p in victims:
            try:
                os.kill(p, signal.SIGKILL)
                n += 1
            except OSError:
                pass
        time.sleep(pause_s)
    return n


@dataclass(frozen=True)
class Part:
    """Where one controller lives for this process: hierarchy version and the harness's own group."""

    controller: str
    version: int
    base: str


@dataclass(frozen=True)
class Setup:
    """The result of :func:`detect`: the parts, or why no budget can be enforced (one line)."""

    parts: tuple[Part, ...] = ()
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def version(self) -> str:
        return "+".join(sorted({f"v{p.version}" for p in self.parts})) or "none"

    def as_dict(self) -> dict[str, Any]:
        return {"cgroup": self.version if self.ok else None,
                "groups_below": sorted({p.base for p in self.parts}), **({"error": self.error} if self.error else {})}


def parse_self_cgroup(text: str) -> tuple[dict[str, str], str | None]:
    """``/proc/self/cgroup`` -> ({v1 controller: path}, v2 path or None)."""
    v1: dict[str, str] = {}
    v2 = None
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hid, ctrls, path = parts
        if hid == "0" and ctrls == "":
            v2 = path
        for c in ctrls.split(","):
            if c:
                v1[c] = path
    return v1, v2


def parse_mounts(text: str) -> tuple[dict[str, str], str | None]:
    """``/proc/self/mounts`` -> ({v1 controller: mount point}, cgroup2 mount point or None)."""
    v1: dict[str, str] = {}
    v2 = None
    for line in text.splitlines():
        f = line.split()
        if len(f) < 4:
            continue
        if f[2] == "cgroup2" and v2 is None:
            v2 = f[1]
        elif f[2] == "cgroup":
            for opt in f[3].split(","):
                if opt in CONTROLLERS:
                    v1.setdefault(opt, f[1])
    return v1, v2


def _read(path: str) -> str:
    with open(path) as fh:
        return fh.read()


def _write(path: str, value: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def _join(mount: str, path: str) -> str:
    return os.path.join(mount, path.lstrip("/")).rstrip("/") or "/"


def locate(self_cgroup: str, mounts: str) -> tuple[list[Part], str | None]:
    """The harness's own group per controller, or why a controller cannot be found."""
    own1, own2 = parse_self_cgroup(self_cgroup)
    mnt1, mnt2 = parse_mounts(mounts)
    parts = []
    for c in CONTROLLERS:
        if c in mnt1 and c in own1:
            parts.append(Part(c, 1, _join(mnt1[c], own1[c])))
            continue
        if mnt2 is not None and own2 is not None:
            try:
                available = _read(os.path.join(mnt2, "cgroup.controllers")).split()
            except OSError:
                available = []
            if c in available:
                parts.append(Part(c, 2, _join(mnt2, own2)))
                continue
        return [], f"no cgroup hierarchy carries the {c} controller (mounts: v1 {sorted(mnt1)}, v2 {mnt2})"
    return parts, None


def _v2_enable(base: str, controllers: list[str]) -> str | None:
    """Children of ``base`` get the controllers only if ``base`` delegates them (subtree_control)."""
    ctl = os.path.join(base, "cgroup.subtree_control")
    try:
        have = _read(ctl).split()
    except OSError as exc:
        return f"{ctl} is not readable ({exc.strerror})"
    missing = [c for c in controllers if c not in have]
    if not missing:
        return None
    try:
        _write(ctl, " ".join("+" + c for c in missing))
    except OSError as exc:
        return (f"{ctl} does not delegate {' '.join(missing)} and enabling it failed ({exc.strerror}); run "
                "the harness in a delegated group (e.g. systemd-run --user --scope -p Delegate=yes)")
    return None


def _sweep_stale(base: str) -> None:
    """Remove empty groups left by harness processes that died before their cleanup."""
    try:
        names = os.listdir(base)
    except OSError:
        return
    for name in names:
        if not name.startswith(PREFIX):
            continue
        try:
            pid = int(name[len(PREFIX):].split("-", 1)[0])
        except ValueError:
            continue
        if pid != os.getpid() and not os.path.exists(f"/proc/{pid}"):
            try:
                os.rmdir(os.path.join(base, name))
            except OSError:
                pass


def probe(parts: list[Part]) -> str | None:
    """Create, limit and remove one group below every base: the exact operations a run needs."""
    v2 = sorted({p.base for p in parts if p.version == 2})
    for base in v2:
        err = _v2_enable(base, [p.controller for p in parts if p.base == base])
        if err:
            return err
    for base in sorted({p.base for p in parts}):
        _sweep_stale(base)
        path = os.path.join(base, f"{PREFIX}{os.getpid()}-probe-{next(_COUNTER)}")
        try:
            os.mkdir(path)
        except OSError as exc:
            return f"cannot create a cgroup below {base} ({exc.strerror})"
        try:
            for p in parts:
                if p.base != base:
                    continue
                for knob, value in _limit_files(p, path, 1 << 30, 64):
                    try:
                        _write(knob, value)
                    except OSError as exc:
                        return f"{knob} is not writable ({exc.strerror})"
        finally:
            try:
                os.rmdir(path)
            except OSError:
                pass
    return None


@functools.lru_cache(maxsize=1)
def detect() -> Setup:
    """Probe once per process. ``VPO_SANDBOX_NO_CGROUPS=1`` pretends none is available (tests)."""
    if os.environ.get("VPO_SANDBOX_NO_CGROUPS") == "1":
        return Setup(error="cgroups disabled by VPO_SANDBOX_NO_CGROUPS=1")
    try:
        self_cg, mounts = _read("/proc/self/cgroup"), _read("/proc/self/mounts")
    except OSError as exc:
        return Setup(error=f"cannot read /proc/self/cgroup or /proc/self/mounts ({exc.strerror})")
    return detect_from(self_cg, mounts)


def detect_from(self_cgroup: str, mounts: str) -> Setup:
    parts, err = locate(self_cgroup, mounts)
    if err is None:
        err = probe(parts)
    return Setup(tuple(parts), err) if err is None else Setup(error=err)


def _limit_files(part: Part, path: str, memory_bytes: int, pids: int) -> list[tuple[str, str]]:
    """(file, value) pairs that set the budget, in the order the kernel needs them."""
    if part.controller == "pids":
        return [(os.path.join(path, "pids.max"), str(pids))]
    if part.version == 1:
        out = [(os.path.join(path, "memory.limit_in_bytes"), str(memory_bytes))]
        memsw = os.path.join(path, "memory.memsw.limit_in_bytes")  # memory + swap (if swap accounting)
        if os.path.exists(memsw):
            out.append((memsw, str(memory_bytes)))
        return out
    out = [(os.path.join(path, "memory.max"), str(memory_bytes))]
    swap = os.path.join(path, "memory.swap.max")
    if os.path.exists(swap):
        out.append((swap, "0"))
    return out


#: usage this close to the memory limit counts as having reached it (reclaim keeps it just below)
LIMIT_SLACK_BYTES = 1 << 20
#: v1 counters of the times a charge hit the limit: memory, and memory+swap where it is accounted
V1_FAILCNTS = ("memory.failcnt", "memory.memsw.failcnt")


def _counter(path: str, key: str) -> int:
    """The ``key N`` line of a flat-keyed cgroup file (memory.events, memory.oom_control)."""
    try:
        return _keyed(_read(path), key)
    except OSError:
        return 0


def _keyed(text: str, key: str) -> int:
    """The ``key N`` line of a flat-keyed cgroup file's text; 0 without one."""
    for line in text.splitlines():
        f = line.split()
        if len(f) == 2 and f[0] == key:
            try:
                return int(f[1])
            except ValueError:
                return 0
    return 0


def _plain(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        return 0


def _number(path: str) -> int:
    try:
        return int(_read(path).strip())
    except (OSError, ValueError):
        return 0


class CandidateGroup:
    """The groups of one sandbox slot (one directory per distinct hierarchy), the budget set; the
    candidate of the slot's current run is the only program in it (see the module docstring)."""

    def __init__(self, setup: Setup, memory_bytes: int, pids: int, tag: str = "slot"):
        if not setup.ok:
            raise OSError(errno.ENOTSUP, setup.error or "no cgroups")
        self.parts = setup.parts
        self._mem = next(p for p in self.parts if p.controller == "memory")
        self._pids = next(p for p in self.parts if p.controller == "pids")
        self.memory_bytes, self.pids = int(memory_bytes), int(pids)
        name = f"{PREFIX}{os.getpid()}-{tag}-{next(_COUNTER)}"
        self.dirs: dict[str, str] = {}  # base -> created group
        self._oom0 = self._max0 = 0
        #: host pids that belong to the slot, not to a candidate (the zygote): never swept
        self.keep: set[int] = set()
        try:
            for p in self.parts:
                d = self.dirs.get(p.base)
                if d is None:
                    d = os.path.join(p.base, name)
                    os.mkdir(d)
                    self.dirs[p.base] = d
                for f, v in _limit_files(p, d, self.memory_bytes, self.pids):
                    _write(f, v)
        except OSError:
            self.remove()
            raise

    def begin_run(self, memory_bytes: int, pids: int) -> None:
        """A new candidate: its limits (if they differ from the last run's), a fresh peak, and OOM
        kills counted from now."""
        memory_bytes, pids = int(memory_bytes), int(pids)
        if (memory_bytes, pids) != (self.memory_bytes, self.pids):
            for p in self.parts:
                files = _limit_files(p, self.dirs[p.base], memory_bytes, pids)
                if memory_bytes > self.memory_bytes:  # v1: memory+swap may never be below memory
                    files.reverse()
                for f, v in files:
                    _write(f, v)
            self.memory_bytes, self.pids = memory_bytes, pids
        if self._mem.version == 1:  # v2's memory.peak is only resettable per open file (6.12+)
            for knob in ("memory.max_usage_in_bytes", *V1_FAILCNTS):
                try:
                    _write(os.path.join(self._mdir(), knob), "0")
                except OSError:
                    pass
        self._oom0 = self._max0 = 0
        oom, hits = self._counters()  # the totals so far: this run counts from them
        self._oom0, self._max0 = oom, (0 if self._mem.version == 1 else hits)

    def procs_fds(self) -> list[int]:
        """Write-only fds of each group's ``cgroup.procs``: the child writes ``0`` to join."""
        return [os.open(os.path.join(d, "cgroup.procs"), os.O_WRONLY | os.O_CLOEXEC) for d in self.dirs.values()]

    def _mdir(self) -> str:
        return self.dirs[self._mem.base]

    def counter_files(self) -> list[str]:
        """The files whose text gives :meth:`counters_from` the OOM kills and limit hits: v2's
        ``memory.events``; v1's ``memory.oom_control`` and failure counters (those that exist). The
        sandbox hands the child read-only fds of them, so each record it emits carries the counts
        as they were when that test ended (see sandbox.py)."""
        d = self._mdir()
        if self._mem.version == 1:
            names = ["memory.oom_control", *(f for f in V1_FAILCNTS if os.path.exists(os.path.join(d, f)))]
        else:
            names = ["memory.events"]
        return [os.path.join(d, n) for n in names]

    def counters_from(self, texts: list[str]) -> tuple[int, int] | None:
        """(OOM kills, limit hits) of this run from the texts of :meth:`counter_files`, in that
        order; None when they are not that many strings. v1 resets ``memory.failcnt`` per run; v2's
        ``memory.events`` counts since the slot was made, so its counts at ``begin_run`` are taken off."""
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            return None
        if self._mem.version == 1:  # with memory+swap accounting the memsw counter is charged (and fails) first
            return _keyed(texts[0], "oom_kill") - self._oom0, sum(_plain(t) for t in texts[1:])
        return _keyed(texts[0], "oom_kill") - self._oom0, _keyed(texts[0], "max") - self._max0

    def _counters(self) -> tuple[int, int]:
        texts = []
        for f in self.counter_files():
            try:
                texts.append(_read(f))
            except OSError:
                texts.append("")
        got = self.counters_from(texts)
        return got if got is not None else (0, 0)

    def oom_kills(self) -> int:
        """Processes the kernel killed in this run because the group's memory budget was spent."""
        return self._counters()[0]

    def limit_hits(self) -> int:
        """Times the group's memory reached its limit in this run (reclaim or OOM followed)."""
        return self._counters()[1]

    def counter_fds(self) -> list[int]:
        """Read-only fds of :meth:`counter_files`, for the child (closed by the caller)."""
        fds: list[int] = []
        try:
            for f in self.counter_files():
                fds.append(os.open(f, os.O_RDONLY | os.O_CLOEXEC))
        except OSError:
            for fd in fds:
                os.close(fd)
            return []
        return fds

    def reached_limit(self) -> bool:
        """The group's memory reached its limit in this run: a failed charge was counted, or the peak
        is within a page-cache slack of the limit (some kernels leave v1's failcnt at 0 even across an
        OOM kill, while ``max_usage_in_bytes`` shows the limit)."""
        if self.limit_hits():
            return True
        d = self._mdir()
        peak = _number(os.path.join(d, "memory.max_usage_in_bytes" if self._mem.version == 1 else "memory.peak"))
        return peak >= self.memory_bytes - LIMIT_SLACK_BYTES

    def stats(self) -> dict[str, Any]:
        d = self._mdir()
        v1 = self._mem.version == 1
        peak = _number(os.path.join(d, "memory.max_usage_in_bytes" if v1 else "memory.peak"))
        return {"peak_bytes": peak, "limit_hits": self.limit_hits(), "oom_kills": self.oom_kills(),
                "pids_refused": _counter(os.path.join(self.dirs[self._pids.base], "pids.events"), "max")}

    def tasks(self) -> list[int]:
        """Host pids in the groups, except the slot's own (``keep``)."""
        out: set[int] = set()
        for d in self.dirs.values():
            try:
                out.update(int(x) for x in _read(os.path.join(d, "cgroup.procs")).split())
            except (OSError, ValueError):
                pass
        return sorted(out - self.keep)

    def kill(self) -> int:
        """SIGKILL every candidate process in the groups by walking ``cgroup.procs`` until it stays
        empty (pids.max bounds how many a forking program can add meanwhile); with nothing to keep,
        v2's ``cgroup.kill`` does it at once."""
        n = 0
        for d in self.dirs.values() if not self.keep else ():
            k = os.path.join(d, "cgroup.kill")
            if os.path.exists(k):
                try:
                    _write(k, "1")
                except OSError:
                    pass
        return n + kill_until_gone(self.tasks, rounds=50, pause_s=0.005)

    def remove(self) -> None:
        """Kill what is left and remove the groups (a dying task may keep one busy briefly). Called
        once the slot's zygote is gone."""
        self.keep = set()
        if self.dirs and self.tasks():
            self.kill()
        for d in list(self.dirs.values()):
            for attempt in range(200):
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    if exc.errno != errno.EBUSY or attempt == 199:
                        break
                    self.kill()
                    time.sleep(0.005)
        self.dirs = {}

    def record(self) -> dict[str, Any]:
        """The budget in force, for the result's isolation record."""
        return budget_record(self.parts, self.memory_bytes, self.pids)


def budget_record(parts: tuple[Part, ...], memory_bytes: int, pids: int) -> dict[str, Any]:
    return {"cgroup": "+".join(sorted({f"v{p.version}" for p in parts})), "memory_bytes": int(memory_bytes),
            "pids_max": int(pids), "scope": "per candidate: all its processes, threads, tmpfs and memfd pages"}
