"""Sandbox for untrusted generated code: a pre-warmed zygote per slot forks one locked-down child
per candidate.

Layers (each recorded in ``SandboxResult.isolation``): a sealed filesystem view (pivot_root into a
tree holding only the Python installation read-only, private tmpfs /tmp and /work, /dev/null,
/dev/urandom and a fresh /proc), PID/network/mount/IPC/UTS namespaces, a seccomp filter that denies
new namespaces and mounts, an unprivileged uid per slot (so RLIMIT_NPROC contains fork bombs even when
we run as root), one memory and process budget per candidate (cgroups: every process, thread, tmpfs
page and memfd of the candidate counts against it, see cgroups.py), rlimits (address space, CPU, file
size, open files, processes), socket families limited to unix and the namespace's loopback inet, a
per-test deadline and a wall-clock limit enforced by the parent after which every process of the run
is killed, a scrubbed environment, capped stdout/stderr, and a result channel separate from stdout.
Without namespaces or a writable cgroup below the harness's own, the sandbox refuses to start unless
the unsafe mode was asked for (``allow_unsafe`` / ``--unsafe-sandbox``).
"""
from vpo_harness.harness.core.sandbox.isolation import (NOBODY, Isolation, SandboxUnavailable, allow_unsafe,
                                       detect_isolation, unsafe_allowed)
from vpo_harness.harness.core.sandbox.limits import Limits
from vpo_harness.harness.core.sandbox.pool import SandboxPool, default_workers
from vpo_harness.harness.core.sandbox.sandbox import STOP, Sandbox, SandboxResult

__all__ = ["Isolation", "Limits", "NOBODY", "STOP", "Sandbox", "SandboxPool", "SandboxResult",
           "SandboxUnavailable", "allow_unsafe", "default_workers", "detect_isolation", "unsafe_allowed"]
