"""The generic sandbox API: records, isolation record, limits, cleanup, pool."""
from __future__ import annotations

import os
import time

import pytest

from harness.sandbox import Limits, Sandbox, SandboxPool, detect_isolation
from harness.sandbox.isolation import Isolation
from harness.sandbox.sandbox import live_pids_of_uid, live_pids_with_tag

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
    return Sandbox(Limits(wall_s=5), uid=62400, gid=62400)


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


def test_private_workdir_is_removed(sb):
    r = sb.run(ECHO, {"x": 1})
    cwd = r.records[0]["cwd"]
    if not r.isolation["mountns"]:
        assert not os.path.exists(cwd)
    # with a mount namespace the child saw the same path: it is gone on the host too
    assert not os.path.exists(os.path.dirname(cwd))


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
    if os.geteuid() == 0:
        # on CI/our machines (root) the strong mode must be in force: that is what the battery assumes
        assert iso.can_drop_privileges
        assert rec.records[0]["uid"] == 62400 and rec.isolation["privileges_dropped"]


def test_fallback_without_namespaces_still_isolates_processes():
    """No namespaces: setsid children are swept by uid after the run."""
    iso = Isolation(can_drop_privileges=os.geteuid() == 0, notes=("test: no namespaces",))
    sb = Sandbox(Limits(wall_s=3), uid=62410, gid=62410, isolation=iso)
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


def test_pool_runs_in_parallel_and_keeps_order():
    drv = "import time\ndef main(p, emit):\n    time.sleep(0.5)\n    emit({'i': p})\n"
    with SandboxPool(workers=2, limits=Limits(wall_s=10), uid_base=62420) as pool:
        t0 = time.monotonic()
        res = pool.map([(drv, i) for i in range(4)])
        wall = time.monotonic() - t0
    assert [r.records[0]["i"] for r in res] == [0, 1, 2, 3]
    assert {r.isolation["uid"] for r in res} <= ({62420, 62421} if os.geteuid() == 0 else {os.geteuid()})
    assert wall < 4 * 0.5 + 4 * 1.5  # clearly not 4 sequential runs plus start-up on a loaded host
