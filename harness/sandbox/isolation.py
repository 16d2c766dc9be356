"""What isolation this machine can give a sandboxed child, probed once per process.

Why probe instead of assume: CI and our machines run as root (network/PID/mount namespaces and
dropping to an unprivileged uid all work), laptops usually do not (no root; maybe unprivileged user
namespaces). The harness must pick the strongest mode that actually works and say which one it used
in every result, because a "pass" from an unisolated run is weaker evidence.
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from typing import Any

#: nobody/nogroup; the default unprivileged identity of a sandboxed child
NOBODY = 65534


@dataclass(frozen=True)
class Isolation:
    """The isolation level a run gets. ``unshare_argv`` prefixes the child's command line."""

    netns: bool = False
    pidns: bool = False
    mountns: bool = False
    userns: bool = False
    #: whether the child can switch to an unprivileged uid (we are root)
    can_drop_privileges: bool = False
    unshare_argv: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["unshare_argv"] = list(self.unshare_argv)
        d["notes"] = list(self.notes)
        return d


def _works(argv: list[str]) -> bool:
    try:
        r = subprocess.run(argv + ["true"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return r.returncode == 0


@functools.lru_cache(maxsize=1)
def detect_isolation() -> Isolation:
    """Probe once: namespaces via util-linux ``unshare`` (as root, else through a user namespace)."""
    if os.environ.get("VPO_SANDBOX_NO_NAMESPACES") == "1":
        return Isolation(can_drop_privileges=os.geteuid() == 0,
                         notes=("namespaces disabled by VPO_SANDBOX_NO_NAMESPACES=1",))
    root = os.geteuid() == 0
    unshare = shutil.which("unshare")
    notes: list[str] = []
    if unshare is None:
        notes.append("no unshare binary: no network/PID/mount namespaces")
        return Isolation(can_drop_privileges=root, notes=tuple(notes))
    # --kill-child: if unshare itself dies (the parent kills the process group), PID 1 of the new
    # namespace is SIGKILLed, and with it every process in the namespace.
    full = [unshare, "--net", "--pid", "--mount", "--fork", "--kill-child", "--mount-proc"]
    if root and _works(full):
        return Isolation(netns=True, pidns=True, mountns=True, can_drop_privileges=True,
                         unshare_argv=tuple(full))
    user = [unshare, "--user", "--map-root-user", "--net", "--pid", "--mount", "--fork",
            "--kill-child", "--mount-proc"]
    if _works(user):
        notes.append("user namespace: uid 0 inside maps to the caller; no privilege drop")
        return Isolation(netns=True, pidns=True, mountns=True, userns=True, can_drop_privileges=False,
                         unshare_argv=tuple(user))
    net_only = [unshare, "--net"] if root else [unshare, "--user", "--map-root-user", "--net"]
    if _works(net_only):
        notes.append("only a network namespace works")
        return Isolation(netns=True, userns=not root, can_drop_privileges=root,
                         unshare_argv=tuple(net_only), notes=tuple(notes))
    notes.append("unshare present but no namespace could be created")
    return Isolation(can_drop_privileges=root, notes=tuple(notes))
