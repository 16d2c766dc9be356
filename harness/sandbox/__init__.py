"""Sandbox for untrusted generated code: one fresh, locked-down Python child per candidate.

Layers (each recorded in ``SandboxResult.isolation``): network/PID/mount namespaces via ``unshare``
when available, an unprivileged uid (so RLIMIT_NPROC contains fork bombs even when we run as root),
rlimits (address space, CPU, file size, open files, processes), its own session killed as a whole on
a wall-clock timeout, a private working directory removed afterwards, a scrubbed environment, capped
stdout/stderr, and a result channel separate from stdout.
"""
from harness.sandbox.isolation import NOBODY, Isolation, detect_isolation
from harness.sandbox.limits import Limits
from harness.sandbox.pool import SandboxPool, default_workers
from harness.sandbox.sandbox import Sandbox, SandboxResult

__all__ = ["Isolation", "Limits", "NOBODY", "Sandbox", "SandboxPool", "SandboxResult",
           "default_workers", "detect_isolation"]
