"""Hostile battery: programs that attack the grader. Each must end in a failure verdict with the
expected code, leave no process behind, change no file outside its sandbox and finish within the
wall limit plus a margin, while the harness itself carries on.

Issue 9 added: reading expected outputs from data files on the host, frame/heap inspection, host
unix sockets (path and abstract), new namespaces, outputs the judge must survive (sNaN, NaN, Infinity,
huge numbers, lone surrogates, 10^6 tokens, objects equal to everything) and forging records with the
nonce read from the driver. The sealed view is required here (this machine and CI can set it up).

The candidate's budget (second fixture, one program at a time): forks with large allocations,
memfds, tmpfs fill, vsock and programs deaf to every signal, each graded while a thread samples the
host's MemAvailable; the host must lose less than the budget + 10%.

The first battery's programs run in parallel (one private sandbox slot, i.e. one uid, per thread) so the whole
battery takes well under a minute on 2 cores.
"""
from __future__ import annotations

import os
import queue
import socket
import stat
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from vpo_harness.benchmarks.livecodebench_judge import CE, MLE, RTE, TLE, WRONG, grade_program, run_limits
from vpo_harness.harness.core.sandbox import Limits, Sandbox, detect_isolation
from vpo_harness.harness.core.sandbox.sandbox import kill_uid, live_pids_of_uid

TIMEOUT_S = 1.0
MARGIN_S = 4.0  # process start-up + namespace teardown on a loaded 2-core machine
UID_BASE = 62500
SLOTS = 4
SECRET = "vpo-hostile-secret-7f3a"

pytestmark = pytest.mark.timeout(300)


# the judge must survive whatever is printed where a number is expected (expected output: "3")
_NUMERIC = {
    "print_snan": "print('sNaN')\n", "print_neg_snan": "print('-sNaN 1')\n", "print_nan": "print('NaN')\n",
    "print_infinity": "print('Infinity')\n", "print_huge_exponent": "print('1e999999999999999999')\n",
    "print_huge_int": "print('9' * 200000)\n", "print_lone_surrogate": "print('\\udcff')\n",
    "print_million_tokens": "print(' '.join(['3'] * 10**6))\n",
    "print_million_lines": "print('\\n'.join(['3'] * 10**6))\n",
}
# functional programs (expected return: 1) returning values the judge must survive
_RETURNS = {
    "return_nan": "return float('nan')", "return_inf": "return float('inf')",
    "return_huge_int": "import sys; sys.set_int_max_str_digits(0); return 10**100000",
    "return_circular": "x = []; x.append(x); return x",
    "return_equals_everything": "class E:\n            def __eq__(self, o): return True\n        return E()",
    "return_deep_list": "x = []\n        for _ in range(10**5): x = [x]\n        return x",
}


def _battery(canary_dir: str, canary_file: str, port: int, data_file: str = "/nonexistent",
             sock_path: str = "/nonexistent") -> dict[str, tuple]:
    """name -> (mode, program, allowed verdicts[, expected output]). Functional programs define
    Solution.f; stdin programs are judged against SECRET unless an expected output is given."""
    c, cf = canary_dir, canary_file
    numeric = {name: ("stdin", code, {WRONG, RTE}, "3") for name, code in _NUMERIC.items()}
    returns = {name: ("functional", f"class Solution:\n    def f(self, x):\n        {body}\n", {WRONG, RTE})
               for name, body in _RETURNS.items()}
    return {**numeric, **returns,
        "read_host_data_file": ("stdin", "import glob, os\nfound = 'none'\n"
                                f"for p in [{data_file!r}] + glob.glob('/tmp/*/*.jsonl') + glob.glob('/work/**/*.jsonl', recursive=True)"
                                " + glob.glob(os.path.expanduser('~/.cache/**/*'), recursive=True):\n"
                                "    try:\n        text = open(p).read()\n    except OSError:\n        continue\n"
                                f"    if {SECRET!r} in text:\n        found = {SECRET!r}\nprint(found)\n", {WRONG}),
        "list_host_dirs": ("stdin", "import os\nfound = []\nfor d in ['/tmp', '/work', '/root', '/home', '/etc', '/var/run', '/run']:\n"
                           "    try:\n        found += os.listdir(d)\n    except OSError:\n        pass\n"
                           "print(len(found))\n", {WRONG}),
        # looks for the expected output (prefix built at run time, so its own source cannot match)
        # in every frame and every container on the heap, and prints what it finds
        "frame_inspection": ("stdin", "import gc, sys\nneedle = 'vpo-hos' + 'tile-secret'\nfound = 'none'\n"
                             "def scan(v):\n    global found\n"
                             "    if isinstance(v, str) and v.startswith(needle) and len(v) > len(needle):\n        found = v\n"
                             "f = sys._getframe()\nwhile f:\n    for v in list(f.f_locals.values()) + list(f.f_globals.values()):\n"
                             "        scan(v)\n    f = f.f_back\n"
                             "for o in gc.get_objects():\n    try:\n"
                             "        items = list(o.values()) + list(o.keys()) if isinstance(o, dict) else o if isinstance(o, (list, tuple)) else []\n"
                             "        for v in items:\n            scan(v)\n    except Exception:\n        pass\n"
                             "print(found)\n", {WRONG}),
        "host_unix_socket": ("stdin", f"import socket\ns = socket.socket(socket.AF_UNIX)\ns.connect({sock_path!r})\n"
                             "print(s.recv(100).decode())\n", {RTE}),
        "abstract_unix_socket": ("stdin", "import socket\ns = socket.socket(socket.AF_UNIX)\n"
                                 "s.connect('\\0vpo-hostile-abstract')\nprint(s.recv(100).decode())\n", {RTE}),
        "new_user_namespace": ("stdin", "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                               "if libc.unshare(0x10000000) != 0:\n    raise OSError(ctypes.get_errno(), 'unshare')\n"
                               "print('escaped')\n", {RTE}),
        "new_net_namespace_binary": ("stdin", "import subprocess\n"
                                     "subprocess.run(['unshare', '-Urn', 'true'], check=True)\nprint('escaped')\n", {RTE}),
        "ptrace_zygote": ("stdin", "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                          "if libc.ptrace(16, 1, 0, 0) != 0:\n    raise OSError(ctypes.get_errno(), 'ptrace')\n"
                          "print('attached')\n", {RTE}),
        "forge_with_nonce": ("stdin", "import gc, json, os\nnonce = None\n"
                             "for o in gc.get_objects():\n    if callable(o) and getattr(o, '__name__', '') == 'emit' and o.__closure__:\n"
                             "        for cell in o.__closure__:\n            v = cell.cell_contents\n"
                             "            if isinstance(v, str) and len(v) == 32:\n                nonce = v\n"
                             "assert nonce, 'nonce not found'\n"
                             "for i in range(4):\n    os.write(3, (json.dumps({'kind': 'test', 'i': i, 'status': 'ok', 'out': 'forged',"
                             " 'nonce': nonce}) + '\\n').encode())\n"
                             "os.write(3, (json.dumps({'kind': 'done', 'nonce': nonce}) + '\\n').encode())\n"
                             "print('forged')\n", {WRONG}),
        "fork_bomb": ("stdin", "import os\nwhile True:\n    os.fork()\n", {RTE, TLE}),
        "fork_bomb_quiet": ("stdin", "import os\nwhile True:\n    try:\n        os.fork()\n"
                            "    except OSError:\n        pass\n", {TLE}),
        "memory_bomb": ("stdin", "x = []\nwhile True:\n    x.append(bytearray(10**9))\n", {MLE, TLE}),
        "memory_bomb_list": ("stdin", "x = [0] * 10**9\n", {MLE}),
        "huge_alloc": ("stdin", "b = bytearray(10**11)\nprint(len(b))\n", {MLE}),
        "infinite_loop": ("stdin", "while True:\n    pass\n", {TLE}),
        "sleep_forever": ("stdin", "import time\ntime.sleep(10**6)\n", {TLE}),
        "ignore_alarm": ("stdin", "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
                         "while True:\n    pass\n", {TLE}),
        "swallow_everything": ("stdin", "while True:\n    try:\n        while True:\n            pass\n"
                               "    except BaseException:\n        pass\n", {TLE}),
        "print_flood": ("stdin", "while True:\n    print('x' * 1000)\n", {WRONG}),
        "fd1_flood": ("stdin", "import os\nwhile True:\n    os.write(1, b'y' * 65536)\n", {TLE, RTE}),
        "stderr_flood": ("stdin", "import os\nwhile True:\n    os.write(2, b'z' * 65536)\n", {TLE, RTE}),
        "deep_recursion": ("stdin", "def f(n):\n    return f(n + 1)\nf(0)\n", {RTE}),
        "c_stack_overflow": ("stdin", "import sys, json\nsys.setrecursionlimit(10**8)\n"
                             "print(json.loads('[' * 10**7 + ']' * 10**7))\n", {RTE}),
        "segfault": ("stdin", "import ctypes\nctypes.string_at(0)\n", {RTE}),
        "threads_spinning": ("stdin", "import threading\ndef spin():\n    while True:\n        pass\n"
                             "ts = [threading.Thread(target=spin) for _ in range(8)]\n"
                             "for t in ts:\n    t.start()\nfor t in ts:\n    t.join()\n", {TLE}),
        "thread_bomb": ("stdin", "import threading, time\nts = []\nwhile True:\n"
                        "    t = threading.Thread(target=time.sleep, args=(100,))\n    t.start()\n"
                        "    ts.append(t)\n", {RTE}),
        "write_outside": ("stdin", f"open({c + '/new.txt'!r}, 'w').write('x')\nprint('done')\n", {RTE}),
        "overwrite_canary": ("stdin", f"open({cf!r}, 'w').write('hacked')\n", {RTE}),
        "delete_canary": ("stdin", f"import os\nos.remove({cf!r})\n", {RTE}),
        "write_scratch_dirs": ("stdin", "import os\nn = 0\n"
                               "for d in ['/tmp', '/var/tmp', '/dev/shm', '/run/lock', os.path.expanduser('~/..'), '..']:\n"
                               "    try:\n        open(os.path.join(d, 'vpo_hostile_probe'), 'w').write('x')\n"
                               "        n += 1\n    except OSError:\n        pass\nprint('written', n)\n",
                               {WRONG}),
        "chmod_parent": ("stdin", "import os\nos.chmod('..', 0o777)\n", {RTE}),
        "socket_localhost": ("stdin", f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=0.5)\n"
                             "print('connected')\n", {RTE}),
        "socket_outside": ("stdin", "import socket\ns = socket.create_connection(('1.1.1.1', 80), timeout=0.5)\n"
                           "print('connected')\n", {RTE}),
        # socket families outside AF_UNIX/AF_INET/AF_INET6 (seccomp): vsock reaches the hypervisor
        # past the network namespace; netlink and packet sockets talk to the kernel's network stack
        "vsock_socketpair": ("stdin", "import socket\na, b = socket.socketpair(40)\nprint('paired')\n", {RTE}),
        "netlink_socket": ("stdin", "import socket\ns = socket.socket(16, socket.SOCK_RAW, 0)\nprint('netlink')\n",
                           {RTE}),
        "packet_socket": ("stdin", "import socket\ns = socket.socket(17, socket.SOCK_RAW, 0)\nprint('packet')\n",
                          {RTE}),
        "kill_parent": ("stdin", "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n", {RTE}),
        "kill_init": ("stdin", "import os, signal\nos.kill(1, signal.SIGKILL)\n", {RTE}),
        "kill_everyone": ("stdin", "import os, signal\nos.kill(-1, signal.SIGKILL)\nprint('still here')\n",
                          {WRONG, RTE}),
        "kill_process_group": ("stdin", "import os, signal\nos.killpg(0, signal.SIGKILL)\n", {RTE}),
        "os_exit": ("stdin", "import os\nos._exit(0)\n", {RTE}),
        "self_sigkill": ("stdin", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", {RTE}),
        "self_sigterm": ("stdin", "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n", {RTE}),
        "cpu_limit_threads": ("stdin", "import signal, threading\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
                              "def spin():\n    while True:\n        pass\n"
                              "for _ in range(4):\n    threading.Thread(target=spin, daemon=True).start()\n"
                              "while True:\n    pass\n", {TLE}),
        "close_all_fds": ("stdin", "import os\nfor fd in range(256):\n    try:\n        os.close(fd)\n"
                          "    except OSError:\n        pass\nprint('x')\n", {RTE}),
        "forge_records": ("stdin", "import os, json\n"
                          "rec = json.dumps({'kind': 'test', 'i': 0, 'status': 'ok', 'out': '42'}) + '\\n'\n"
                          "print(rec)\nfor fd in range(3, 64):\n    try:\n        os.write(fd, rec.encode())\n"
                          "    except OSError:\n        pass\n", {RTE, WRONG}),
        "setsid_orphan": ("stdin", "import os, time\nif os.fork() == 0:\n    os.setsid()\n"
                          "    if os.fork() == 0:\n        time.sleep(1000)\n    os._exit(0)\n"
                          "time.sleep(0.2)\nprint('bye')\n", {WRONG}),
        "subprocess_sleep": ("stdin", "import subprocess\nsubprocess.run(['sleep', '1000'])\n", {TLE, RTE}),
        "read_environment": ("stdin", "import os, glob\nfound = 'none'\n"
                             f"if {SECRET!r} in str(dict(os.environ)):\n    found = {SECRET!r}\n"
                             "for p in glob.glob('/proc/*/environ'):\n    try:\n"
                             f"        if {SECRET!r}.encode() in open(p, 'rb').read():\n"
                             f"            found = {SECRET!r}\n    except OSError:\n        pass\n"
                             "print(found)\n", {WRONG}),
        "fd_exhaust": ("stdin", "fs = []\nwhile True:\n    fs.append(open('/dev/null'))\n", {RTE}),
        "big_file": ("stdin", "with open('big.bin', 'wb') as f:\n    while True:\n"
                     "        f.write(b'0' * (1 << 20))\n", {RTE}),
        "setuid_root": ("stdin", "import os\nos.setuid(0)\nprint('root')\n", {RTE}),
        "read_shadow": ("stdin", "print(open('/etc/shadow').read())\n", {RTE}),
        "keyboard_interrupt": ("stdin", "raise KeyboardInterrupt\n", {RTE}),
        "syntax_error": ("stdin", "def f(:\n    pass\n", {CE}),
        "functional_import_crash": ("functional", "import os\nos._exit(3)\nclass Solution:\n"
                                    "    def f(self, x):\n        return x\n", {RTE}),
        "functional_exit": ("functional", "import sys\nclass Solution:\n    def f(self, x):\n"
                            "        sys.exit(0)\n", {RTE}),
    }


def _sbx_dirs() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("vpo-sbx-*")}


@pytest.fixture(scope="module")
def battery_results():
    iso = detect_isolation()
    assert iso.sealed, f"this machine (like CI) must give the sealed sandbox: {iso.notes}"
    dirs_before = _sbx_dirs()
    # expected outputs in a world-readable host folder, as a data set on disk would be
    data_dir = tempfile.mkdtemp(prefix="vpo-hostile-data-")
    os.chmod(data_dir, 0o755)
    data_file = os.path.join(data_dir, "expected_outputs.jsonl")
    Path(data_file).write_text(f'{{"input": "1", "output": "{SECRET}"}}\n')
    os.chmod(data_file, 0o644)
    # a world-writable unix socket on the host that answers with the expected output, plus an
    # abstract one (those live in the network namespace)
    sock_path = os.path.join(data_dir, "answers.sock")
    usrv = socket.socket(socket.AF_UNIX)
    usrv.bind(sock_path)
    os.chmod(sock_path, 0o777)
    usrv.listen(8)
    asrv = socket.socket(socket.AF_UNIX)
    asrv.bind("\0vpo-hostile-abstract")
    asrv.listen(8)
    for srv_ in (usrv, asrv):
        srv_.settimeout(0.2)
    canary_dir = tempfile.mkdtemp(prefix="vpo-canary-")
    os.chmod(canary_dir, 0o777)  # world-writable: only the sandbox's read-only view protects it
    canary_file = os.path.join(canary_dir, "canary.txt")
    Path(canary_file).write_text("untouched\n")
    os.chmod(canary_file, 0o666)
    before = {p.name: p.read_bytes() for p in Path(canary_dir).iterdir()}
    scratch_probes = [Path(d) / "vpo_hostile_probe" for d in ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")]
    for p in scratch_probes:
        p.unlink(missing_ok=True)
    # a listener on the host's loopback: a sandboxed program must not reach it
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(0.2)
    port = srv.getsockname()[1]
    accepted: list[object] = []
    stop = threading.Event()

    def _accept(server: socket.socket) -> None:
        while not stop.is_set():
            try:
                conn, addr = server.accept()
                accepted.append(addr)
                conn.sendall(SECRET.encode())
                conn.close()
            except OSError:
                pass

    accs = [threading.Thread(target=_accept, args=(x,), daemon=True) for x in (srv, usrv, asrv)]
    for acc in accs:
        acc.start()
    os.environ["VPO_HOSTILE_SECRET"] = SECRET
    slots: "queue.Queue[Sandbox]" = queue.Queue()
    for i in range(SLOTS):
        slots.put(Sandbox(Limits(), uid=UID_BASE + i, gid=UID_BASE + i, isolation=iso))
    battery = _battery(canary_dir, canary_file, port, data_file, sock_path)
    tests = [{"input": "1", "output": SECRET}]
    limit = run_limits(len(tests), TIMEOUT_S).wall_s

    def _one(item):
        name, (mode, code, _, *expected) = item
        sb = slots.get()
        try:
            t0 = time.monotonic()
            cases = ([{"input": "1", "output": expected[0]}] if expected else
                     tests if mode == "stdin" else [{"input": "1", "output": "1"}])
            grade = grade_program(sb, code, mode, "f", cases, timeout_s=TIMEOUT_S, max_restarts=0)
            wall = time.monotonic() - t0
            time.sleep(0.05)
            left = live_pids_of_uid(sb.uid)
            if left:
                kill_uid(sb.uid)  # keep the other checks meaningful; the test still fails
            return name, grade, wall, left
        finally:
            slots.put(sb)

    t0 = time.monotonic()
    try:
        with ThreadPoolExecutor(SLOTS) as ex:
            results = {name: (g, w, left) for name, g, w, left in ex.map(_one, battery.items())}
    finally:
        total = time.monotonic() - t0
        stop.set()
        for acc in accs:
            acc.join(timeout=2)
        for x in (srv, usrv, asrv):
            x.close()
        os.environ.pop("VPO_HOSTILE_SECRET", None)
        zygotes = []
        while not slots.empty():
            sb = slots.get()
            if sb._zygote is not None:
                zygotes.append(sb._zygote.proc.pid)
            sb.close()
    after = {p.name: p.read_bytes() for p in Path(canary_dir).iterdir()}
    probes_found = [str(p) for p in scratch_probes if p.exists()]
    time.sleep(0.1)
    yield {"results": results, "battery": battery, "limit": limit, "total_s": total,
           "files_before": before, "files_after": after, "probes": probes_found,
           "accepted": accepted, "iso": iso, "new_dirs": _sbx_dirs() - dirs_before,
           "zygotes_left": [p for p in zygotes if os.path.exists(f"/proc/{p}")],
           "uids_left": [u for u in range(UID_BASE, UID_BASE + SLOTS) if live_pids_of_uid(u)]}
    for p in Path(canary_dir).iterdir():
        p.unlink()
    os.rmdir(canary_dir)
    for p in Path(data_dir).iterdir():
        p.unlink()
    os.rmdir(data_dir)


def test_battery_is_large_enough(battery_results):
    assert len(battery_results["battery"]) >= 25


def test_battery_total_runtime(battery_results):
    print(f"hostile battery: {len(battery_results['battery'])} programs in "
          f"{battery_results['total_s']:.1f}s")
    assert battery_results["total_s"] < 90


@pytest.mark.parametrize("name", sorted(_battery("/c", "/c/f", 1)))
def test_hostile_program(battery_results, name):
    grade, wall, left = battery_results["results"][name]
    allowed = battery_results["battery"][name][2]
    assert grade.verdicts and all(v in allowed for v in grade.verdicts), (name, grade.as_dict())
    assert not grade.passed
    assert left == [], f"{name} left processes behind: {left}"
    assert wall <= battery_results["limit"] + MARGIN_S, (name, wall)
    assert grade.isolation["uid"] != 0


def test_no_file_outside_sandbox_changed(battery_results):
    assert battery_results["files_after"] == battery_results["files_before"]
    assert battery_results["probes"] == []


def test_nothing_left_behind(battery_results):
    assert battery_results["new_dirs"] == set()  # sealed runs use tmpfs only: no host temp dirs
    assert battery_results["zygotes_left"] == [] and battery_results["uids_left"] == []


def test_host_listeners_never_reached(battery_results):
    """TCP on loopback, a unix socket on the host filesystem, an abstract unix socket."""
    assert battery_results["accepted"] == []


def test_harness_environment_not_visible(battery_results):
    grade = battery_results["results"]["read_environment"][0]
    assert grade.verdicts == [WRONG]  # the secret was not found (the expected output is the secret)


def test_isolation_recorded(battery_results):
    grade = battery_results["results"]["infinite_loop"][0]
    iso = grade.isolation
    for key in ("netns", "pidns", "mountns", "uid", "rlimits", "privileges_dropped"):
        assert key in iso
    if os.geteuid() == 0:
        assert iso["privileges_dropped"] and iso["uid"] >= UID_BASE
    assert stat.S_IMODE(os.stat(tempfile.gettempdir()).st_mode) & 0o1000  # sanity: /tmp sticky


# ---- the candidate's budget, measured on the host ---------------------------------------------------
#: per-test limit of the memory attacks: long enough for them to reach their full size without a
#: budget (4.8 GiB for the forks) on a loaded machine; the deaf programs get a short one
MEMORY_TIMEOUT_S, DEAF_TIMEOUT_S = 8.0, 2.0
#: every signal ignored, every timer cleared: only the parent's deadline can end these
_DEAF = ("import signal\nfor s in range(1, signal.NSIG):\n    try:\n        signal.signal(s, signal.SIG_IGN)\n"
         "    except (OSError, ValueError, RuntimeError):\n        pass\n"
         "for t in (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF):\n    signal.setitimer(t, 0)\n")
#: name -> (program, allowed verdicts, per-test limit). Without the candidate's cgroup the first two
#: take far more than the budget from the host (about 4.8 GiB and 1.9 GiB) and the third a little
#: more than it (its tmpfs pages on top of 950 MiB that RLIMIT_AS alone allows)
_BUDGET_ATTACKS = {
    "fork_large_allocations": (
        "import os, time\nkids = []\nfor _ in range(6):\n    pid = os.fork()\n    if pid == 0:\n"
        "        b = bytearray(800 << 20)\n        b[::4096] = b'\\1' * len(range(0, len(b), 4096))\n"
        "        time.sleep(2)\n        os._exit(0)\n    kids.append(pid)\n"
        "print([os.waitpid(k, 0)[1] for k in kids])\n", {MLE}, MEMORY_TIMEOUT_S),
    "memfd_fallocate": (
        "import os, time\nfds = []\nfor i in range(120):\n    fd = os.memfd_create('m%d' % i)\n"
        "    os.posix_fallocate(fd, 0, 16 << 20)\n    fds.append(fd)\ntime.sleep(1)\nprint(len(fds))\n", {MLE},
        MEMORY_TIMEOUT_S),
    "tmpfs_fill_then_allocate": (
        "import os\nn = 0\nfor d in ('/tmp', '/work'):\n    for i in range(64):\n        try:\n"
        "            with open(os.path.join(d, 'f%d' % i), 'wb') as f:\n                for _ in range(16):\n"
        "                    f.write(b'x' * (1 << 20))\n                    n += 1\n        except OSError:\n"
        "            break\nheld = []\nfor _ in range(19):\n    b = bytearray(50 << 20)\n"
        "    b[::4096] = b'\\1' * len(range(0, len(b), 4096))\n    held.append(b)\nprint(n, len(held))\n", {MLE},
        MEMORY_TIMEOUT_S),
    # the candidate lowers its OOM score back to the zygote's (dumpable again, so it may write its
    # own /proc file) and then spends the budget in memfds, where its RSS is no bigger than the
    # zygote's: whichever the kernel kills, the verdict is the candidate's and the slot carries on
    "memfd_after_lowering_oom_score": (
        "import ctypes, os\nctypes.CDLL(None).prctl(4, 1, 0, 0, 0)\n"
        "open('/proc/self/oom_score_adj', 'w').write('0')\nfds = []\nfor i in range(120):\n"
        "    fd = os.memfd_create('m%d' % i)\n    os.posix_fallocate(fd, 0, 16 << 20)\n    fds.append(fd)\n"
        "print(len(fds))\n", {MLE}, MEMORY_TIMEOUT_S),
    # prints the expected output once it holds a vsock socket: passes if the family is open
    "vsock_hypervisor": ("import socket\ns = socket.socket(40, socket.SOCK_STREAM)\ns.settimeout(1)\n"
                         "try:\n    s.connect((2, 9999))\nexcept OSError:\n    pass\n"
                         f"print({SECRET!r})\n", {RTE}, DEAF_TIMEOUT_S),
    "deaf_busy_loop": (_DEAF + "while True:\n    pass\n", {TLE}, DEAF_TIMEOUT_S),
    "deaf_sleep": (_DEAF + "import time\nwhile True:\n    time.sleep(100)\n", {TLE}, DEAF_TIMEOUT_S),
}


def _mem_available() -> int:
    with open("/proc/meminfo") as fh:
        for line in fh:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) << 10
    raise AssertionError("no MemAvailable in /proc/meminfo")


class _Sampler(threading.Thread):
    """The host's lowest MemAvailable while a program is graded (every 5 ms)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.low = _mem_available()
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            self.low = min(self.low, _mem_available())
            self.halt.wait(0.005)

    def stop(self) -> int:
        self.halt.set()
        self.join()
        self.low = min(self.low, _mem_available())
        return self.low


@pytest.fixture(scope="module")
def budget_results():
    """One attack at a time on one warm slot, with the host's MemAvailable sampled meanwhile. The
    machine is shared: other processes can only add to a drop, so an attack whose drop is over the
    bound is measured again (three tries at most) and the smallest drop is the attack's."""
    iso = detect_isolation()
    assert iso.sealed, f"this machine (like CI) must give the sealed sandbox: {iso.notes}"
    limits = Limits()
    bound = int(limits.memory_bytes * 1.1)
    out = {}
    uid = UID_BASE + SLOTS
    with Sandbox(limits, uid=uid, gid=uid, isolation=iso) as sb:
        grade_program(sb, "print(1)", "stdin", None, [{"input": "", "output": "1"}])  # zygote up
        for name, (code, _, timeout) in _BUDGET_ATTACKS.items():
            drops = []
            for _ in range(3):
                base = sorted(_mem_available() for _ in range(5))[2]
                sampler = _Sampler()
                sampler.start()
                t0 = time.monotonic()
                grade = grade_program(sb, code, "stdin", None, [{"input": "1", "output": SECRET}],
                                      timeout_s=timeout, max_restarts=0)
                wall = time.monotonic() - t0
                drops.append(base - sampler.stop())
                if drops[-1] < bound:
                    break
            time.sleep(0.05)
            left = live_pids_of_uid(uid)
            if left:
                kill_uid(uid)
            out[name] = {"grade": grade, "wall": wall, "drops": drops, "left": left}
    return {"results": out, "bound": bound, "limits": limits}


@pytest.mark.parametrize("name", sorted(_BUDGET_ATTACKS))
def test_budget_attack(budget_results, name):
    """The host loses less than the candidate's budget + 10%, whatever the candidate does, and the
    verdict says why it failed (memory_limit for the budget, never a verdict of host pressure)."""
    r = budget_results["results"][name]
    _, allowed, timeout = _BUDGET_ATTACKS[name]
    grade = r["grade"]
    mib = min(r["drops"]) / (1 << 20)
    print(f"{name}: {grade.verdicts} host MemAvailable drop {mib:.0f} MiB (tries {len(r['drops'])}), "
          f"{r['wall']:.1f}s, cgroup peak {grade.budget_peak_kb >> 10} MiB")
    assert grade.verdicts and all(v in allowed for v in grade.verdicts), (name, grade.as_dict())
    assert min(r["drops"]) < budget_results["bound"], (name, [d >> 20 for d in r["drops"]])
    assert r["left"] == []
    assert grade.budget_peak_kb << 10 <= budget_results["limits"].memory_bytes
    assert r["wall"] <= run_limits(1, timeout).wall_s + MARGIN_S, (name, r["wall"])
    budget = grade.isolation["budget"]
    assert budget.get("memory_bytes") == budget_results["limits"].memory_bytes and budget["cgroup"], budget
    if MLE in allowed:
        assert "OOM kill in its cgroup" in grade.details[0] or grade.details[0].startswith("MemoryError")


@pytest.mark.parametrize("name", ["deaf_busy_loop", "deaf_sleep"])
def test_signal_ignoring_program_is_killed_by_the_parent(budget_results, name):
    """Its own timers are gone and no signal reaches it: the parent's deadline (1.5x the per-test
    limit after its last record) ended it, not the run's wall limit (run_limits: 8 s here)."""
    grade = budget_results["results"][name]["grade"]
    assert grade.verdicts == [TLE]
    assert "killed by the parent" in grade.details[0], grade.details


def test_signal_ignoring_program_on_three_tests_is_killed_per_test():
    """Full mode, 3 tests at 1 s: each test is killed 1.5 s after it started (a fresh process for
    the next), where the run's wall limit alone took (1 + 1) x 3 + 5 s for the first test."""
    from vpo_harness.benchmarks.livecodebench_judge import KILL_FACTOR

    uid = UID_BASE + SLOTS + 1
    tests = [{"input": str(i), "output": "x"} for i in range(3)]
    with Sandbox(Limits(), uid=uid, gid=uid) as sb:
        grade = grade_program(sb, _DEAF + "while True:\n    pass\n", "stdin", None, tests, timeout_s=1.0)
    assert grade.verdicts == [TLE] * 3 and grade.runs == 3
    assert all("killed by the parent" in d for d in grade.details), grade.details
    # loose: each run's own wall limit (7 s for the last test, 11 s for the first) was not needed
    assert grade.wall_s < 3 * (KILL_FACTOR * 1.0 + MARGIN_S), grade.wall_s
    assert live_pids_of_uid(uid) == []


# ---- one verdict per test ------------------------------------------------------------------------------
#: the budget of these cases: a quarter of the default, so that they spend it in a fraction of the time
PER_TEST_BUDGET = 256 << 20
PER_TEST_TIMEOUT_S = 4.0


def _children(n: int, mib: int, indent: str = "") -> str:
    """Program lines: ``n`` children at once, each touching ``mib`` MiB, waited for."""
    body = ("kids = []\nfor _ in range(%d):\n    pid = os.fork()\n    if pid == 0:\n"
            "        b = bytearray(%d << 20)\n        b[::4096] = b'\\1' * len(range(0, len(b), 4096))\n"
            "        time.sleep(1)\n        os._exit(0)\n    kids.append(pid)\n"
            "statuses = [os.waitpid(k, 0)[1] for k in kids]\n") % (n, mib)
    return "".join(indent + line + "\n" for line in body.splitlines())


#: name -> (program, tests, verdicts). Each test's verdict must be the one it gets when graded alone:
#: the memory budget it spent is its own, not the next test's, and the other tests are judged on their
#: own output. The issue's two programs, scaled to PER_TEST_BUDGET: six children of 200 MiB on every
#: test (6 x 800 MiB against 1 GiB), and children that spend the budget before the program prints the
#: right answer. Several children at once: the OOM killer acts, where one child at the limit often
#: crawls into a time limit while the kernel reclaims. (A mix of passing and failing tests is checked
#: on replayed records in tests/benchmarks/test_livecodebench_judge.py, and the counters each record
#: carries in tests/harness/test_sandbox_cgroups.py.)
_PER_TEST = {
    "fork_six_children": ("import os, time\ninput()\n" + _children(6, 200) + "print(statuses)\n", 3, [MLE] * 3),
    "bomb_then_right_answer": ("import os, time\nx = input()\n" + _children(4, 150) + "print(x)\n", 2, [MLE] * 2),
}


@pytest.mark.integration
@pytest.mark.parametrize("name", sorted(_PER_TEST))
def test_memory_verdicts_are_per_test_as_when_run_alone(name: str) -> None:
    code, n, expect = _PER_TEST[name]
    tests = [{"input": str(i), "output": str(i)} for i in range(n)]
    uid = UID_BASE + SLOTS + 2
    limits = Limits(memory_bytes=PER_TEST_BUDGET)
    with Sandbox(limits, uid=uid, gid=uid) as sb:
        def grade(some: list[dict[str, str]]) -> Any:
            return grade_program(sb, code, "stdin", None, some, timeout_s=PER_TEST_TIMEOUT_S, base_limits=limits)

        together = grade(tests)
        alone = [grade([t]).verdicts[0] for t in tests]
    assert together.verdicts == alone == expect, (together.as_dict(), alone)
    assert all("OOM kill in its cgroup" in d for v, d in zip(together.verdicts, together.details) if v == MLE)
    assert live_pids_of_uid(uid) == []
