"""The generic sandbox API: records, isolation record, limits, the sealed view, seccomp, cleanup, pool.

Machines like CI and ours (root, namespaces) must give the sealed view: tests that need it FAIL (not
skip) when it cannot be set up, so a CI image that lost it is noticed."""
from __future__ import annotations

import errno
import os
import time
from pathlib import Path

import pytest

from vpo_harness.harness.core.sandbox import Limits, Sandbox, SandboxPool, SandboxUnavailable, detect_isolation
from vpo_harness.harness.core.sandbox.isolation import Isolation
from vpo_harness.harness.core.sandbox.sandbox import live_pids_of_uid, live_pids_with_tag

pytestmark = pytest.mark.timeout(120)

ECHO = """
import os, sys
def main(payload, emit):
    print("noise on stdout", payload)
    sys.stderr.write("noise on stderr\\n")
    emit({"kind": "echo", "value": payload["x"] * 2, "uid": os.getuid(), "cwd": os.getcwd(),
          "env": sorted(os.environ)})
"""


@pytest.fixture(scope="module")
def sb():
    iso = detect_isolation()
    assert iso.sealed, f"this machine (like CI) must give the sealed sandbox: {iso.notes}"
    with Sandbox(Limits(wall_s=5), uid=62400, gid=62400) as s:
        yield s


def _zygotes() -> list[int]:
    out = []
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and b"_zygote.py" in open(f"/proc/{pid}/cmdline", "rb").read():
                out.append(int(pid))
        except OSError:
            pass
    return out


def test_records_come_back_and_stdout_is_separate(sb):
    r = sb.run(ECHO, {"x": 21})
    assert r.done and not r.tampered and not r.timed_out
    assert [rec["value"] for rec in r.records] == [42]
    assert "noise on stdout" in r.stdout_tail and "noise on stderr" in r.stderr_tail
    assert r.exit_code == 0


def test_environment_is_scrubbed(sb, monkeypatch):
    monkeypatch.setenv("VPO_TEST_LEAK", "secret")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-nope")
    env = sb.run(ECHO, {"x": 1}).records[0]["env"]
    assert "VPO_TEST_LEAK" not in env and "OPENAI_API_KEY" not in env
    assert "PATH" in env


SEALED_VIEW = """
import os
def main(p, emit):
    seen = {}
    for path in p:
        try:
            seen[path] = sorted(os.listdir(path))
        except OSError as exc:
            seen[path] = exc.__class__.__name__
    open("mine.txt", "w").write("x")
    open("/tmp/mine.txt", "w").write("x")
    emit({"seen": seen, "cwd": os.getcwd(), "pids": sorted(int(x) for x in os.listdir("/proc") if x.isdigit())})
"""


def test_sealed_view_shows_only_python_and_private_dirs(sb, tmp_path):
    import sys

    (tmp_path / "expected_outputs.jsonl").write_text("secret\n")
    os.chmod(tmp_path, 0o755)
    host = [str(tmp_path), "/", "/tmp", "/work", "/dev", os.path.expanduser("~"), "/etc", "/home",
            str(Path(__file__).resolve().parents[2]), "/root/.cache", "/run", "/var"]
    r = sb.run(SEALED_VIEW, host)
    seen = r.records[0]["seen"]
    assert seen["/"] == sorted(set(seen["/"]) & {"bin", "dev", "lib", "lib32", "lib64", "proc", "root",
                                                   "tmp", "usr", "work", "opt", "home"})
    assert seen["/dev"] == ["null", "urandom"]
    assert seen["/tmp"] == [] and seen["/work"] == []  # fresh, private, empty
    for gone in (str(tmp_path), "/etc", "/run", "/var", os.path.expanduser("~/.cache"),
                 str(Path(__file__).resolve().parents[2])):
        assert seen[gone] == "FileNotFoundError" or gone.startswith(sys.base_prefix), (gone, seen[gone])
    assert r.records[0]["cwd"] == "/work"
    assert len(r.records[0]["pids"]) == 1  # its own PID namespace; the zygote (PID 1) is hidden
    # a second run does not see what the first one wrote
    r2 = sb.run(SEALED_VIEW, ["/work", "/tmp"])
    assert r2.records[0]["seen"] == {"/work": [], "/tmp": []}
    assert r.isolation["sealed"] and r.isolation["seccomp"]


def test_python_installation_is_read_only(sb):
    import sys

    drv = ("import os, sys\ndef main(p, emit):\n    try:\n        open(os.path.join(sys.base_prefix, 'x'), 'w')\n"
           "        emit({'w': True})\n    except OSError as e:\n        emit({'w': e.errno})\n")
    r = sb.run(drv, None)
    assert r.records[0]["w"] in (13, 30)  # EACCES / EROFS
    assert not os.path.exists(os.path.join(sys.base_prefix, "x"))


def test_seccomp_denies_new_namespaces_and_mounts(sb):
    drv = """
import ctypes, errno, os, subprocess
def main(p, emit):
    libc = ctypes.CDLL(None, use_errno=True)
    out = {}
    for name, flag in (("user", 0x10000000), ("net", 0x40000000), ("mnt", 0x00020000)):
        out[name] = libc.unshare(flag) == 0 or ctypes.get_errno()
    out["mount"] = libc.mount(b"tmpfs", b"/tmp", b"tmpfs", 0, None) == 0 or ctypes.get_errno()
    nr = {"x86_64": 56, "aarch64": 220}[os.uname().machine]  # raw clone(CLONE_NEWUSER | SIGCHLD)
    out["clone_newuser"] = libc.syscall(nr, 0x10000000 | 17, 0, 0, 0, 0) == 0 or ctypes.get_errno()
    r = subprocess.run(["unshare", "-Ur", "true"], capture_output=True)
    out["unshare_binary"] = r.returncode
    pid = os.fork()  # plain fork and threads still work
    if pid == 0:
        os._exit(0)
    out["fork"] = os.waitpid(pid, 0)[1]
    emit(out)
"""
    r = sb.run(drv, None)
    rec = r.records[0]
    assert rec["user"] == rec["net"] == rec["mnt"] == errno.EPERM
    assert rec["mount"] == errno.EPERM and rec["clone_newuser"] == errno.EPERM
    assert rec["unshare_binary"] != 0 and rec["fork"] == 0


def test_unsealed_machine_is_refused_unless_unsafe(monkeypatch):
    monkeypatch.delenv("VPO_UNSAFE_SANDBOX", raising=False)
    iso = Isolation(notes=("test: no namespaces",))
    with pytest.raises(SandboxUnavailable, match="--unsafe-sandbox"):
        Sandbox(isolation=iso)
    with Sandbox(Limits(wall_s=5), isolation=iso, unsafe=True, uid=62405, gid=62405) as s:
        r = s.run(ECHO, {"x": 2})
        assert r.records[0]["value"] == 4
        assert not r.isolation["sealed"] and any("UNSAFE" in n for n in r.isolation["notes"])


def test_zygote_is_restarted_after_it_dies(sb):
    assert sb.run(ECHO, {"x": 1}).done
    os.killpg(sb._zygote.proc.pid, 9)
    sb._zygote.proc.wait()
    assert sb.run(ECHO, {"x": 3}).records[0]["value"] == 6


def test_on_record_answers_on_fd4(sb):
    drv = ("import os\ndef main(p, emit):\n    for i in range(5):\n        emit({'i': i})\n"
           "        if os.read(4, 1) != b'c':\n            return\n")
    r = sb.run(drv, None, on_record=lambda rec: b"c" if rec.get("i", 0) < 2 else b"s")
    assert [x["i"] for x in r.records] == [0, 1, 2] and r.done


def test_on_record_stop_ends_the_run_at_once(sb):
    from vpo_harness.harness.core.sandbox import STOP

    drv = ("import time\ndef main(p, emit):\n    for i in range(5):\n        emit({'i': i})\n"
           "        time.sleep(0.5 if i < 2 else 100)\n")
    t0 = time.monotonic()
    r = sb.run(drv, None, on_record=lambda rec: STOP if rec.get("i") == 2 else None)
    assert [x["i"] for x in r.records] == [0, 1, 2] and not r.done and not r.timed_out
    assert time.monotonic() - t0 < 4.0  # not the 5 s wall limit
    assert sb.run(ECHO, {"x": 1}).done  # the slot carries on


def test_peak_memory_is_reported(sb):
    drv = "def main(p, emit):\n    x = bytearray(200 << 20)\n    x[::4096] = b'1' * len(x[::4096])\n    emit({})\n"
    r = sb.run(drv, None)
    assert r.done and r.maxrss_kb > 200 * 1024


def test_files_are_placed_in_workdir(sb):
    drv = "def main(p, emit):\n    emit({'text': open('data/in.txt').read()})\n"
    r = sb.run(drv, None, files={"data/in.txt": "hello"})
    assert r.records == [{"text": "hello"}]
    with pytest.raises(ValueError):
        sb.run(drv, None, files={"../escape.txt": "x"})


def test_records_without_nonce_mark_tampering(sb):
    drv = ("import os\ndef main(p, emit):\n    emit({'ok': 1})\n"
           "    os.write(3, b'{\"kind\": \"test\", \"i\": 0, \"status\": \"ok\"}\\n')\n")
    r = sb.run(drv, None)
    assert r.tampered
    assert r.records == [{"ok": 1}]


def test_wall_clock_timeout_kills_the_child(sb):
    drv = "import time\ndef main(p, emit):\n    emit({'started': 1})\n    time.sleep(100)\n"
    t0 = time.monotonic()
    r = sb.run(drv, None, limits=Limits(wall_s=1.0))
    assert r.timed_out and not r.done
    assert r.records == [{"started": 1}]
    assert time.monotonic() - t0 < 1.0 + 3.0


def test_stdout_is_capped(sb):
    drv = "import os\ndef main(p, emit):\n    for _ in range(200):\n        os.write(1, b'a' * 10000)\n"
    r = sb.run(drv, None, limits=Limits(wall_s=3, output_cap_bytes=1000))
    assert len(r.stdout_tail) <= 1000
    assert r.stdout_bytes > 1000


def test_rlimits_apply_in_child(sb):
    drv = ("import resource\ndef main(p, emit):\n"
           "    emit({k: resource.getrlimit(getattr(resource, k))[0] for k in "
           "('RLIMIT_AS', 'RLIMIT_CPU', 'RLIMIT_NOFILE', 'RLIMIT_NPROC', 'RLIMIT_FSIZE')})\n")
    lim = Limits(cpu_s=7, open_files=99, processes=33, file_size_bytes=12345, address_space_bytes=1 << 30)
    r = sb.run(drv, None, limits=lim)
    assert r.records == [{"RLIMIT_AS": 1 << 30, "RLIMIT_CPU": 7, "RLIMIT_NOFILE": 99,
                          "RLIMIT_NPROC": 33, "RLIMIT_FSIZE": 12345}]
    assert r.isolation["rlimits"]["processes"] == 33


def test_isolation_matches_probe(sb):
    iso = detect_isolation()
    rec = sb.run(ECHO, {"x": 1})
    assert rec.isolation["netns"] == iso.netns and rec.isolation["pidns"] == iso.pidns
    assert rec.isolation["sealed"] and rec.isolation["rlimits"]["address_space_bytes"] == 1 << 30
    if os.geteuid() == 0:
        # on CI/our machines (root) the strong mode must be in force: that is what the battery assumes
        assert iso.can_drop_privileges
        assert rec.records[0]["uid"] == 62400 and rec.isolation["privileges_dropped"]


def test_fallback_without_namespaces_still_isolates_processes():
    """No namespaces (unsafe mode): setsid children are swept by uid after the run."""
    iso = Isolation(can_drop_privileges=os.geteuid() == 0, notes=("test: no namespaces",))
    sb = Sandbox(Limits(wall_s=3), uid=62410, gid=62410, isolation=iso, unsafe=True)
    drv = ("import os, time\ndef main(p, emit):\n    if os.fork() == 0:\n        os.setsid()\n"
           "        time.sleep(100)\n    emit({'parent': os.getpid()})\n")
    r = sb.run(drv, None)
    assert r.records and r.records[0]["parent"] > 1
    assert not r.isolation["netns"]
    time.sleep(0.05)
    assert live_pids_with_tag(r.extra["tag"]) == []
    assert r.leftover_killed >= 1
    if r.isolation["privileges_dropped"]:
        assert live_pids_of_uid(62410) == []
    sb.close()


def test_pool_runs_in_parallel_and_keeps_order():
    drv = "import time\ndef main(p, emit):\n    time.sleep(0.5)\n    emit({'i': p})\n"
    with SandboxPool(workers=2, limits=Limits(wall_s=10), uid_base=62420) as pool:
        t0 = time.monotonic()
        res = pool.map([(drv, i) for i in range(4)])
        wall = time.monotonic() - t0
        ours = {s._zygote.proc.pid for s in pool._all if s._zygote is not None}
    assert len(ours) == 2 and not any(os.path.exists(f"/proc/{p}") for p in ours)
    assert [r.records[0]["i"] for r in res] == [0, 1, 2, 3]
    assert {r.isolation["uid"] for r in res} <= ({62420, 62421} if os.geteuid() == 0 else {os.geteuid()})
    assert wall < 4 * 0.5 + 4 * 1.5  # clearly not 4 sequential runs plus start-up on a loaded host
    time.sleep(0.1)
    assert not any(live_pids_of_uid(u) for u in (62420, 62421))


def test_seccomp_allows_only_unix_and_inet_sockets(sb):
    drv = """
import errno, socket
def main(p, emit):
    out = {}
    for fam, typ in ((1, 1), (2, 1), (10, 2), (40, 1), (16, 3), (17, 3), (38, 5)):
        try:
            socket.socket(fam, typ).close()
            out[str(fam)] = 0
        except OSError as exc:
            out[str(fam)] = exc.errno
    for fam in (1, 40):
        try:
            socket.socketpair(fam)
            out[f"pair{fam}"] = 0
        except OSError as exc:
            out[f"pair{fam}"] = exc.errno
    emit(out)
"""
    rec = sb.run(drv, None).records[0]
    assert rec["1"] == rec["2"] == rec["10"] == rec["pair1"] == 0  # AF_UNIX, AF_INET, AF_INET6
    for fam in ("40", "16", "17", "38", "pair40"):  # vsock, netlink, packet, alg; a vsock pair
        assert rec[fam] == errno.EAFNOSUPPORT, (fam, rec)


def test_parent_kills_a_run_that_stops_reporting(sb):
    """``progress_s``: the parent's deadline between records, whatever the child does with signals."""
    deaf = ("import signal, time\ndef main(p, emit):\n    for s in range(1, signal.NSIG):\n        try:\n"
            "            signal.signal(s, signal.SIG_IGN)\n        except (OSError, ValueError, RuntimeError):\n"
            "            pass\n    for i in range(3):\n        emit({'i': i})\n        time.sleep(p[i])\n")
    r = sb.run(deaf, [0.1, 0.1, 100], limits=Limits(wall_s=30, progress_s=1.0))
    assert r.stalled and not r.timed_out and not r.done
    assert [x["i"] for x in r.records] == [0, 1, 2]
    # records that keep coming in time reset the deadline: 3 x 0.6 s > 1 s in all, never 1 s apart
    ok = sb.run(deaf, [0.6, 0.6, 0.6], limits=Limits(wall_s=30, progress_s=1.0))
    assert ok.done and not ok.stalled


# ---- the sandbox seals wherever Python lives ----------------------------------------------------------
_GRADE_IN_VENV = """
import json, sys
from vpo_harness.benchmarks.livecodebench_judge import grade_program
from vpo_harness.harness.core.sandbox import Limits, Sandbox

code = ("import os, sys\\nprint(sys.executable, os.path.exists(sys.executable))\\n"
        "print(sum(map(int, input().split())))\\nprint(os.getcwd())\\n")
with Sandbox(Limits()) as sb:
    g = grade_program(sb, code, "stdin", None, [{"input": "2 3", "output": sys.executable + " True\\n5\\n" + sys.argv[1]}])
print(json.dumps({"verdicts": g.verdicts, "details": g.details, "notes": g.isolation.get("notes"),
                  "prefix": sys.prefix, "executable": sys.executable}))
"""


def _grade_in_a_venv_at(where: Path, workdir: str) -> dict:
    """Make a venv at ``where`` and grade a real program with it, the home folder read-only; the
    program prints the interpreter it really runs (the venv's, placed in the sealed tree: it must be
    there) and its working folder."""
    import json
    import subprocess
    import sys

    from vpo_harness.harness.core.paths import child_pythonpath

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(where)],
                   check=True, timeout=120)
    home = where / "home"
    home.mkdir()
    home.chmod(0o555)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "PYTHONPATH": child_pythonpath(),
           "VPO_SHARED_DATA": os.environ.get("VPO_SHARED_DATA", "")}
    out = subprocess.run([str(where / "bin" / "python"), "-c", _GRADE_IN_VENV, workdir], env=env,
                         capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["prefix"] == str(where) and got["executable"] == str(where / "bin" / "python")
    return got


@pytest.mark.integration
def test_a_venv_under_the_host_temporary_folder_grades(tmp_path: Path) -> None:
    """The sealed root is a tmpfs over the host's /tmp: a venv there is placed from the host's
    folder (held open before that tmpfs covers it), and the child's own /tmp gets another name, so
    it does not shadow the venv either."""
    got = _grade_in_a_venv_at(tmp_path / "venv", "/work")
    assert got["verdicts"] == ["pass"], got
    assert any("/tmp holds the Python installation" in n for n in got["notes"]), got["notes"]


@pytest.mark.integration
def test_a_venv_under_a_top_level_work_folder_grades() -> None:
    """A venv inside a checkout under /work (a common container working folder): the child's
    working folder, /work elsewhere, gets another name. Needs a writable top-level /work."""
    import shutil
    import tempfile

    if not (os.path.isdir("/work") and os.access("/work", os.W_OK)):
        pytest.skip("no writable top-level /work on this machine (test_the_scratch_folders_step_aside_for_an_exposed_path covers the naming)")
    where = Path(tempfile.mkdtemp(prefix="vpo-venv-test-", dir="/work"))
    try:
        got = _grade_in_a_venv_at(where / "venv", "/work-sandbox")
    finally:
        shutil.rmtree(where, ignore_errors=True)
    assert got["verdicts"] == ["pass"], got
    assert any("/work holds the Python installation" in n for n in got["notes"]), got["notes"]


def test_the_scratch_folders_step_aside_for_an_exposed_path(tmp_path: Path) -> None:
    """A mocked sealed root whose Python installation was placed under /work and /tmp: the child's
    scratch folders take free names (what a machine without a writable top-level /work checks)."""
    from vpo_harness.harness.core.sandbox import _zygote

    assert _zygote._free_name(str(tmp_path), "work") == "/work"
    (tmp_path / "work" / "venv").mkdir(parents=True)
    (tmp_path / "tmp").mkdir()
    (tmp_path / "tmp-sandbox").mkdir()
    assert _zygote._free_name(str(tmp_path), "work") == "/work-sandbox"
    assert _zygote._free_name(str(tmp_path), "tmp") == "/tmp-sandbox-2"
