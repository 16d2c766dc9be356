"""The per-candidate budget (harness/core/sandbox/cgroups.py): where the groups go, what they limit, that
they bind across processes, tmpfs and memfds, and that grading is refused without them.

This machine and CI run as root with cgroup v1 memory and pids controllers: tests that need a
writable hierarchy FAIL (not skip) when it is missing, so a CI image that lost it is noticed."""
from __future__ import annotations

import os

import pytest

from vpo_harness.harness.core.sandbox import Limits, Sandbox, SandboxUnavailable, cgroups, detect_isolation
from vpo_harness.harness.core.sandbox.cgroups import CandidateGroup, Part, Setup

pytestmark = pytest.mark.timeout(120)
MiB = 1 << 20
UID = 62460

V1_SELF = "8:pids:/\n4:memory:/process_api/abc\n1:cpu:/\n0::/\n"
V1_MOUNTS = ("cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0\n"
             "cgroup /sys/fs/cgroup/pids cgroup rw,relatime,pids 0 0\n"
             "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n")


@pytest.fixture(scope="module")
def setup() -> Setup:
    s = cgroups.detect()
    assert s.ok, f"this machine (like CI) must give a writable memory and pids cgroup: {s.error}"
    return s


def _own(controller: str) -> str:
    own1, own2 = cgroups.parse_self_cgroup(open("/proc/self/cgroup").read())
    return own1.get(controller, own2 or "/")


def _our_groups(setup: Setup) -> list[str]:
    tag = f"{cgroups.PREFIX}{os.getpid()}-"
    return sorted(n for b in {p.base for p in setup.parts} for n in os.listdir(b) if n.startswith(tag))


def test_parse_v1_and_v2_layouts(tmp_path):
    own1, own2 = cgroups.parse_self_cgroup(V1_SELF)
    assert own1["memory"] == "/process_api/abc" and own1["pids"] == "/" and own2 == "/"
    mnt1, mnt2 = cgroups.parse_mounts(V1_MOUNTS)
    assert mnt1 == {"memory": "/sys/fs/cgroup/memory", "pids": "/sys/fs/cgroup/pids"}
    assert mnt2 == "/sys/fs/cgroup/unified"
    # v2 only: both controllers in the one group the harness is in
    (tmp_path / "cgroup.controllers").write_text("cpu memory pids\n")
    parts, err = cgroups.locate("0::/user.slice/me\n", f"cgroup2 {tmp_path} cgroup2 rw 0 0\n")
    assert err is None
    assert parts == [Part("memory", 2, f"{tmp_path}/user.slice/me"), Part("pids", 2, f"{tmp_path}/user.slice/me")]
    files = dict(cgroups._limit_files(parts[0], str(tmp_path), 256 * MiB, 9))
    assert files == {f"{tmp_path}/memory.max": str(256 * MiB)}  # memory.swap.max only where it exists
    assert cgroups._limit_files(parts[1], "/g", 1, 9) == [("/g/pids.max", "9")]
    # a v2 hierarchy without the memory controller: no budget, and the message says so
    (tmp_path / "cgroup.controllers").write_text("cpu pids\n")
    parts, err = cgroups.locate("0::/x\n", f"cgroup2 {tmp_path} cgroup2 rw 0 0\n")
    assert parts == [] and "memory controller" in err


def test_unwritable_place_is_refused_with_the_path():
    s = cgroups.detect_from("8:pids:/\n4:memory:/vpo-no-such-group/below\n", V1_MOUNTS)
    assert not s.ok and "/sys/fs/cgroup/memory/vpo-no-such-group/below" in s.error
    with pytest.raises(SandboxUnavailable) as exc:
        Sandbox(budget=s, unsafe=False)
    msg = str(exc.value)
    assert "\n" not in msg and "/sys/fs/cgroup/memory/vpo-no-such-group/below" in msg and "--unsafe-sandbox" in msg


def test_unsafe_mode_grades_without_a_budget_and_says_so():
    s = Setup(error="test: no cgroups")
    with Sandbox(Limits(wall_s=5), uid=UID, gid=UID, budget=s, unsafe=True) as sb:
        r = sb.run("def main(p, emit):\n    emit({'ok': 1})\n", None)
    assert r.records == [{"ok": 1}] and r.budget == {} and not r.memory_limit
    assert r.isolation["budget"] == {"cgroup": None, "error": "test: no cgroups"}
    assert any("no per-candidate memory/process budget" in n for n in r.isolation["notes"])


def test_groups_sit_below_the_harness_group_and_are_removed(setup):
    for p in setup.parts:
        assert p.base.endswith(_own(p.controller).rstrip("/")), (p, _own(p.controller))
    g = CandidateGroup(setup, 300 * MiB, 17)
    try:
        for p in setup.parts:
            d = g.dirs[p.base]
            assert os.path.dirname(d) == p.base and os.path.isdir(d)
        mem = next(p for p in setup.parts if p.controller == "memory")
        pids = next(p for p in setup.parts if p.controller == "pids")
        knob = "memory.limit_in_bytes" if mem.version == 1 else "memory.max"
        assert int(open(os.path.join(g.dirs[mem.base], knob)).read()) == 300 * MiB
        assert open(os.path.join(g.dirs[pids.base], "pids.max")).read().strip() == "17"
    finally:
        g.remove()
    assert _our_groups(setup) == []


DRIVER = """
import os, threading, time
def main(p, emit):
    emit({"cgroup": open("/proc/self/cgroup").read()})
    if p == "threads":
        started, errors = 0, 0
        for _ in range(40):
            try:
                threading.Thread(target=time.sleep, args=(2,), daemon=True).start()
                started += 1
            except RuntimeError:
                errors += 1
        emit({"started": started, "errors": errors})
    elif p == "memfd":
        fds = [os.memfd_create("m%d" % i) for i in range(40)]
        for fd in fds:  # 400 MiB, none of it in this process's address space
            os.posix_fallocate(fd, 0, 10 << 20)
        emit({"survived": True})
    elif p == "children":
        kids = []
        for _ in range(3):  # 3 x 100 MiB: each process is far below its RLIMIT_AS
            pid = os.fork()
            if pid == 0:
                b = bytearray(100 << 20)
                b[::4096] = b"1" * len(range(0, len(b), 4096))
                time.sleep(1)
                os._exit(0)
            kids.append(pid)
        emit({"status": [os.waitpid(k, 0)[1] for k in kids]})
"""


def test_child_runs_inside_its_own_group(setup):
    with Sandbox(Limits(wall_s=10), uid=UID, gid=UID) as sb:
        r = sb.run(DRIVER, None)
    lines = dict(line.split(":", 2)[1:] for line in r.records[0]["cgroup"].splitlines())
    mem = lines["memory"] if "memory" in lines else lines[""]
    assert os.path.basename(mem).startswith(f"{cgroups.PREFIX}{os.getpid()}-{UID}-")
    assert os.path.dirname(mem) == _own("memory").rstrip("/") or os.path.dirname(mem) == "/"
    assert r.isolation["budget"]["memory_bytes"] == Limits().memory_bytes
    assert r.isolation["budget"]["pids_max"] == Limits().processes
    assert _our_groups(setup) == []  # removed with the run


def test_process_budget_binds_even_as_root(setup):
    """uid=None: the child stays root inside the sandbox, where RLIMIT_NPROC does not bind; the
    group's pids.max does."""
    with Sandbox(Limits(wall_s=10, processes=8), uid=None, gid=None) as sb:
        r = sb.run(DRIVER, "threads")
    rec = r.records[1]
    assert rec["started"] <= 7 and rec["errors"] >= 33, rec
    assert r.budget["pids_refused"] >= 1


@pytest.mark.parametrize("attack", ["memfd", "children"])
def test_memory_budget_counts_memfds_and_every_process(setup, attack):
    """128 MiB for the candidate; each process alone stays far below its 1 GiB RLIMIT_AS."""
    with Sandbox(Limits(wall_s=20, memory_bytes=128 * MiB), uid=UID, gid=UID) as sb:
        r = sb.run(DRIVER, attack)
        assert r.memory_limit and r.budget["oom_kills"] >= 1, (r.records, r.budget)
        assert r.limit_at is not None  # the limit was reached (before the kill)
        assert r.budget["peak_bytes"] <= 128 * MiB
        # with the budget of the default limits the same program is untouched
        ok = sb.run(DRIVER, attack, limits=Limits(wall_s=20))
    assert not ok.memory_limit and ok.budget["oom_kills"] == 0 and ok.limit_at is None
    assert ok.records[1] in ({"survived": True}, {"status": [0, 0, 0]})
    assert _our_groups(setup) == []


def test_zygote_killed_by_the_candidates_oom_is_a_verdict_not_a_crash():
    """The zygote shares the slot's group: if the OOM killer picks it, the run is the candidate's
    memory_limit (and the next run gets a new zygote); a zygote lost any other way is still an error."""
    from vpo_harness.harness.core.sandbox.zygote import ZygoteError

    class FakeGroup:
        def __init__(self, kills: int):
            self.kills = kills

        def oom_kills(self) -> int:
            return self.kills

    class FakeZygote:
        lost = False

    z = FakeZygote()
    report = Sandbox._zygote_lost(z, FakeGroup(1))
    assert z.lost and os.WIFSIGNALED(report["status"]) and os.WTERMSIG(report["status"]) == 9
    with pytest.raises(ZygoteError):
        Sandbox._zygote_lost(FakeZygote(), FakeGroup(0))
    with pytest.raises(ZygoteError):
        Sandbox._zygote_lost(FakeZygote(), None)


def test_livecodebench_memory_mb_sets_the_candidates_budget(setup):
    """``--task-args memory_mb=`` reaches the cgroup (and RLIMIT_AS): two processes of 150 MiB each
    pass under the default 1 GiB and spend a 192 MiB budget; the record says which was in force."""
    from vpo_harness.benchmarks.base import Problem
    from vpo_harness.benchmarks.livecodebench import LiveCodeBench
    from vpo_harness.benchmarks.livecodebench_judge import MLE, PASS

    code = ("import os, time\npid = os.fork()\nb = bytearray(150 << 20)\n"
            "b[::4096] = b'1' * len(range(0, len(b), 4096))\n"
            "time.sleep(0.5)\nif pid == 0:\n    os._exit(0)\nos.waitpid(pid, 0)\nprint(input())\n")
    prob = Problem(id="p", data={"mode": "stdin", "func_name": None, "n_tests": 1,
                                  "tests": [{"input": "7", "output": "7"}]})
    with pytest.raises(ValueError, match="memory_mb"):
        LiveCodeBench(memory_mb="lots")
    small, default = LiveCodeBench(workers=1, memory_mb=192), LiveCodeBench(workers=1)
    try:
        assert small.describe()["isolation"]["budget"]["memory_bytes"] == 192 * MiB
        g = small.grade(prob, code)
        assert g.verdicts == [MLE] and g.isolation["budget"]["memory_bytes"] == 192 * MiB, g.as_dict()
        assert g.isolation["rlimits"]["address_space_bytes"] == 192 * MiB
        ok = default.grade(prob, code)
        assert ok.verdicts == [PASS] and ok.budget_peak_kb > 300 * 1024, ok.as_dict()
    finally:
        small.close()
        default.close()


PER_TEST_DRIVER = """
import os

def main(payload, emit):
    for i, bomb in enumerate(payload):
        if bomb:  # three children that each hold 60 MiB until released, against the 128 MiB budget: none
                  # leaves by itself, so the OOM killer must act; the rest are released once one has died
            r, w = os.pipe()
            kids = []
            for _ in range(3):
                pid = os.fork()
                if pid == 0:
                    os.close(w)
                    b = bytearray(60 << 20)
                    b[::4096] = b"\\\\1" * len(range(0, len(b), 4096))
                    os.read(r, 1)
                    os._exit(0)
                kids.append(pid)
            os.close(r)
            dead, status = os.wait()
            os.close(w)
            for k in kids:
                if k != dead:
                    os.waitpid(k, 0)
            # how the first child ended, for the failure message (SIGKILL 9 is the OOM killer's)
            os.write(2, f"step {i}: first child ended by signal {os.WTERMSIG(status) if os.WIFSIGNALED(status) else None}, "
                        f"exit {os.WEXITSTATUS(status) if os.WIFEXITED(status) else None}\\n".encode())
        emit({"kind": "test", "i": i})
"""


@pytest.mark.xfail(reason="open: in two full-suite runs on the loaded VM one bomb step recorded no OOM kill "
                          "(alone and beside two CPU hogs it passes); the cause (reclaim or swap instead of a kill, "
                          "or a child refused by the address-space limit) is not yet found", strict=False)
def test_each_record_carries_its_own_tests_oom_kills(setup):
    """The child reads the group's counters as it emits each record, so the kills belong to the step
    that caused them, however late the parent reads the records (LiveCodeBench's per-test verdicts)."""
    with Sandbox(Limits(wall_s=30, memory_bytes=128 * MiB), uid=UID, gid=UID) as sb:
        r = sb.run(PER_TEST_DRIVER, [False, True, False, True, False])
    assert [rec["i"] for rec in r.records] == list(range(5)), (r.records, r.stderr_tail)
    assert len(r.record_memory) == 5 and all(m is not None for m in r.record_memory)
    kills = [m[0] for m in r.record_memory]
    assert [k > 0 for k in kills] == [False, True, False, True, False], (kills, r.budget, r.stderr_tail)
    assert sum(kills) == r.budget["oom_kills"] and r.oom_after == 0 and r.counted_through == 5
    assert all(set(rec) == {"kind", "i"} for rec in r.records)  # the driver's records, as it emitted them
